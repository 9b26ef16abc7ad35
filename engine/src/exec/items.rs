//! Running a per-item stage: every item without a complete committed result runs on its own
//! (holding a stage slot and the stage's resource pools) and commits as soon as it finishes;
//! then the instance's tables are assembled from all items, in item order.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use indexmap::IndexMap;
use polars::prelude::*;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use super::attempt::seed_of;
use super::commit::Provenance;
use super::{Outcome, Runner};
use crate::artifact::{load_tables, ItemCounts, Manifest, TableEntry};
use crate::decision::{decide_items, Decision, ItemDecision, ItemDecisions};
use crate::error::StageError;
use crate::kind::{InputTable, Tables};
use crate::plan::Instance;
use crate::progress::Task;
use crate::record::{ErrorRow, Status};

/// One item's outcome: its manifest and tables, or the attempts made and the error.
type ItemResult = std::result::Result<(Manifest, Tables), (u32, StageError)>;

/// What the items that ran produced, by item position.
#[derive(Default)]
struct Ran {
    fresh: HashMap<usize, (Manifest, Tables)>,
    failures: Vec<ErrorRow>,
}

impl Runner {
    /// Runs the missing items of instance `id`, then assembles and commits the instance.
    pub(super) async fn run_items(
        self: Arc<Self>,
        id: usize,
        decision: Decision,
        inputs: Vec<InputTable>,
        started: Instant,
    ) -> Result<Manifest, Outcome> {
        let inst = &self.plan.instances[id];
        let items = match self.decide_items(id, &decision, &inputs).await {
            Ok(items) => items,
            Err(e) => return Err(self.fail(inst, None, 1, &e)),
        };
        let (total, cached) = (items.items.len(), items.cached());
        let task = Arc::new(
            self.progress
                .start(&inst.label(), total as u64, cached as u64),
        );
        let ran = self.clone().run_missing(id, &items, inputs, &task).await;
        let task = Arc::try_unwrap(task).ok();
        let counts = ItemCounts {
            total,
            executed: ran.fresh.len(),
            cached,
        };
        if !ran.failures.is_empty() {
            return Err(self.items_failed(inst, &items, counts, ran.failures, task));
        }
        let assembled = self
            .clone()
            .assemble_and_commit(id, decision, items, ran.fresh, counts, started)
            .await;
        match assembled {
            Ok(m) => {
                if let Some(t) = task {
                    let c = m.items.clone().unwrap_or_default();
                    t.finish(&format!(
                        "executed ({}; {} items run, {} cached)",
                        rows_summary(&m),
                        c.executed,
                        c.cached
                    ));
                }
                Ok(m)
            }
            Err(e) => {
                if let Some(t) = task {
                    t.finish("failed");
                }
                Err(self.fail(inst, None, 1, &e))
            }
        }
    }

    /// The item decisions of instance `id`, taken on a blocking thread (they read the store).
    async fn decide_items(
        self: &Arc<Self>,
        id: usize,
        decision: &Decision,
        inputs: &[InputTable],
    ) -> Result<ItemDecisions, StageError> {
        let this = self.clone();
        let parts = decision.parts.clone();
        let main = inputs[0].clone();
        tokio::task::spawn_blocking(move || {
            let inst = &this.plan.instances[id];
            decide_items(this.store.as_ref(), inst, &parts, &main.label(), &main.df)
                .map_err(|e| StageError::Input(e.to_string()))
        })
        .await
        .unwrap_or_else(|e| Err(StageError::Failed(format!("internal error: {e}"))))
    }

    /// Runs every item without a cached result, at most `concurrency` at once.
    async fn run_missing(
        self: Arc<Self>,
        id: usize,
        items: &ItemDecisions,
        inputs: Vec<InputTable>,
        task: &Arc<Task>,
    ) -> Ran {
        let inst = &self.plan.instances[id];
        let slots = Arc::new(Semaphore::new(inst.concurrency));
        let inputs = Arc::new(inputs);
        let mut running: JoinSet<(usize, ItemResult)> = JoinSet::new();
        for (i, item) in items.items.iter().enumerate() {
            if item.hit.is_some() {
                continue;
            }
            let work = self
                .clone()
                .item_task(id, item.clone(), inputs.clone(), slots.clone());
            let task = task.clone();
            running.spawn(async move {
                let result = work.await;
                task.inc();
                (i, result)
            });
        }
        let mut ran = Ran::default();
        while let Some(joined) = running.join_next().await {
            match joined {
                Ok((i, Ok(done))) => {
                    ran.fresh.insert(i, done);
                }
                Ok((i, Err((attempts, e)))) => {
                    let value = items.items[i].group.value.clone();
                    ran.failures
                        .push(self.error_row(inst, Some(value), attempts, &e));
                }
                Err(e) => ran.failures.push(self.error_row(
                    inst,
                    None,
                    1,
                    &StageError::Failed(format!("internal error: {e}")),
                )),
            }
        }
        ran
    }

    /// One item: waits for a stage slot and the stage's pools, then runs and commits it on a
    /// blocking thread.
    async fn item_task(
        self: Arc<Self>,
        id: usize,
        item: ItemDecision,
        inputs: Arc<Vec<InputTable>>,
        slots: Arc<Semaphore>,
    ) -> ItemResult {
        let Ok(slot) = slots.acquire_owned().await else {
            return Err((0, StageError::Failed("scheduler closed".into())));
        };
        let mut permits = self.acquire_pools(&self.plan.instances[id]).await;
        permits.push(slot);
        let worker = self.clone();
        tokio::task::spawn_blocking(move || worker.run_item(id, &item, &inputs, permits))
            .await
            .unwrap_or_else(|e| Err((1, StageError::Failed(format!("internal error: {e}")))))
    }

    /// Runs one item while holding `permits` (its stage slot and resource pools), then commits
    /// it without them: storing the result uses neither, so the next item starts meanwhile.
    fn run_item(
        &self,
        id: usize,
        item: &ItemDecision,
        inputs: &[InputTable],
        permits: Vec<OwnedSemaphorePermit>,
    ) -> ItemResult {
        let inst = &self.plan.instances[id];
        let started = Instant::now();
        let local = item_inputs(inputs, &item.group.rows).map_err(|e| (0, e))?;
        let seed = seed_of(&item.key);
        let (result, attempts) = self.attempt(inst, Some(&item.group.value), seed, &local);
        drop(permits);
        let tables = result.map_err(|e| (attempts, e))?;
        let how = Provenance { started, attempts };
        let manifest = self
            .commit_item(inst, (&item.parts, &item.key), &tables, how)
            .map_err(|e| (attempts, e))?;
        Ok((manifest, tables))
    }

    /// The record of an instance some of whose items failed (the others stay committed).
    fn items_failed(
        &self,
        inst: &Instance,
        items: &ItemDecisions,
        counts: ItemCounts,
        failures: Vec<ErrorRow>,
        task: Option<Task>,
    ) -> Outcome {
        if let Some(t) = task {
            t.finish(&format!(
                "{} of {} items failed",
                failures.len(),
                counts.total
            ));
        }
        let mut rec = self.record(inst, Status::Failed);
        let names: Vec<String> = failures.iter().filter_map(|f| f.item.clone()).collect();
        rec.message = Some(format!(
            "{} item(s) failed: {}",
            failures.len(),
            names.join(", ")
        ));
        rec.items = Some(counts);
        rec.item_keys = items.keys();
        (rec, failures)
    }

    /// Assembles the instance's tables from cached and fresh items and commits them.
    async fn assemble_and_commit(
        self: Arc<Self>,
        id: usize,
        decision: Decision,
        items: ItemDecisions,
        fresh: HashMap<usize, (Manifest, Tables)>,
        counts: ItemCounts,
        started: Instant,
    ) -> Result<Manifest, StageError> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            let inst = &this.plan.instances[id];
            let keys = items.keys();
            let tables = this.assemble(inst, items, fresh)?;
            let how = Provenance {
                started,
                attempts: 1,
            };
            let recipe = (&decision.parts, decision.key.as_str());
            this.commit_instance(inst, recipe, &tables, how, Some((counts, keys)))
        })
        .await
        .unwrap_or_else(|e| Err(StageError::Failed(format!("internal error: {e}"))))
    }

    /// Concatenates item outputs in item order.
    fn assemble(
        &self,
        inst: &Instance,
        items: ItemDecisions,
        mut fresh: HashMap<usize, (Manifest, Tables)>,
    ) -> Result<Tables, StageError> {
        let mut out: IndexMap<String, DataFrame> = IndexMap::new();
        for (i, item) in items.items.into_iter().enumerate() {
            let tables = match (item.hit, fresh.remove(&i)) {
                (_, Some((_, t))) => t,
                (Some(m), None) => load_tables(self.store.as_ref(), &m)
                    .map_err(|e| StageError::Failed(e.to_string()))?,
                (None, None) => {
                    return Err(StageError::Failed(format!(
                        "item `{}` has no result",
                        item.group.value
                    )))
                }
            };
            for (name, df) in tables.0 {
                append(&mut out, name, df).map_err(|e| {
                    StageError::Failed(format!(
                        "{}: item `{}` returned table `{}` with a different schema: {e}",
                        inst.label(),
                        item.group.value,
                        e.table
                    ))
                })?;
            }
        }
        for name in inst.kind.outputs() {
            out.entry(name.to_string()).or_insert_with(DataFrame::empty);
        }
        Ok(Tables(out))
    }
}

/// The inputs one item sees: its own rows of the main (first) input, every other input whole.
fn item_inputs(inputs: &[InputTable], rows: &[u32]) -> Result<Vec<InputTable>, StageError> {
    let mut local: Vec<InputTable> = inputs.to_vec();
    let idx = IdxCa::from_vec("idx".into(), rows.to_vec());
    local[0].df = inputs[0].df.take(&idx)?;
    Ok(local)
}

/// A table whose item parts do not stack.
struct SchemaClash {
    table: String,
    source: PolarsError,
}

impl std::fmt::Display for SchemaClash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.source.fmt(f)
    }
}

/// Appends one item's table to the accumulated one. An item with nothing to say may return a
/// column-less table.
fn append(
    out: &mut IndexMap<String, DataFrame>,
    name: String,
    df: DataFrame,
) -> Result<(), SchemaClash> {
    match out.get_mut(&name) {
        _ if df.width() == 0 => {
            out.entry(name).or_insert(df);
        }
        Some(acc) if acc.width() == 0 => *acc = df,
        Some(acc) => {
            acc.vstack_mut(&df).map_err(|source| SchemaClash {
                table: name.clone(),
                source,
            })?;
        }
        None => {
            out.insert(name, df);
        }
    }
    Ok(())
}

/// `table: N rows, …` for progress lines.
pub(super) fn rows_summary(m: &Manifest) -> String {
    m.tables
        .iter()
        .map(|(k, t): (&String, &TableEntry)| format!("{k}: {} rows", t.rows))
        .collect::<Vec<_>>()
        .join(", ")
}
