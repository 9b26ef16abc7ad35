//! Running a per-item stage: every item without a complete committed result runs on its own
//! (holding a stage slot and the stage's resource pools) and commits as soon as it finishes;
//! then the instance's tables are assembled from all items, in item order.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use indexmap::IndexMap;
use polars::prelude::*;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::commit::Provenance;
use super::unit::{Unit, UnitResult, Work};
use super::{Outcome, Runner};
use crate::artifact::{load_tables, ItemCounts, Manifest, TableEntry};
use crate::decision::{decide_items, Decision, ItemDecisions};
use crate::error::StageError;
use crate::kind::{InputTable, PreparedKind, Tables};
use crate::plan::Instance;
use crate::progress::Task;
use crate::record::{ErrorRow, Status};
use crate::usage::{Usage, UsageMeter};

/// What the items that ran produced, by item position.
#[derive(Default)]
struct Ran {
    fresh: HashMap<usize, (Manifest, Tables)>,
    failures: Vec<ErrorRow>,
}

impl Runner {
    /// Prepares instance `id` when some of its items are missing, runs those, then assembles
    /// and commits the instance. Returns its manifest and what this run spent on it.
    pub(super) async fn run_items(
        self: Arc<Self>,
        id: usize,
        decision: Decision,
        inputs: Arc<Vec<InputTable>>,
        started: Instant,
    ) -> Result<(Manifest, Usage), Outcome> {
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
        let meter = Arc::new(UsageMeter::new());
        let ran = if cached == total {
            Ran::default()
        } else {
            match self.prepare(id, &decision.key, &inputs, &meter).await {
                Ok(prepared) => {
                    self.clone()
                        .run_missing(id, &items, prepared, inputs, &task)
                        .await
                }
                Err((attempts, e)) => {
                    if let Ok(t) = Arc::try_unwrap(task) {
                        t.finish("failed");
                    }
                    return Err(self.fail(inst, None, attempts, &e));
                }
            }
        };
        let task = Arc::try_unwrap(task).ok();
        let counts = ItemCounts {
            total,
            executed: ran.fresh.len(),
            cached,
        };
        if !ran.failures.is_empty() {
            return Err(self.items_failed(inst, &items, counts, ran.failures, task));
        }
        let mut spent = meter.snapshot();
        for (m, _) in ran.fresh.values() {
            spent.merge(&m.usage);
        }
        let assembled = self
            .clone()
            .assemble_and_commit(id, decision, items, ran.fresh, meter.snapshot(), started)
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
                Ok((m, spent))
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
        prepared: Arc<dyn PreparedKind>,
        inputs: Arc<Vec<InputTable>>,
        task: &Arc<Task>,
    ) -> Ran {
        let inst = &self.plan.instances[id];
        let slots = Arc::new(Semaphore::new(inst.concurrency));
        let mut running: JoinSet<(usize, UnitResult)> = JoinSet::new();
        for (i, item) in items.items.iter().enumerate() {
            if item.hit.is_some() {
                continue;
            }
            let work = Work {
                id,
                unit: Arc::new(Unit {
                    item: Some(item.group.value.clone()),
                    rows: Some(item.group.rows.clone()),
                    parts: item.parts.clone(),
                    key: item.key.clone(),
                }),
                prepared: prepared.clone(),
                inputs: inputs.clone(),
                slots: Some(slots.clone()),
                meter: Arc::new(UsageMeter::new()),
            };
            let (this, task) = (self.clone(), task.clone());
            running.spawn(async move {
                let result = this.run_unit(work).await;
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

    /// Assembles the instance's tables from cached and fresh items and commits them, with the
    /// usage of `prepare` and of every item.
    async fn assemble_and_commit(
        self: Arc<Self>,
        id: usize,
        decision: Decision,
        items: ItemDecisions,
        fresh: HashMap<usize, (Manifest, Tables)>,
        mut usage: Usage,
        started: Instant,
    ) -> Result<Manifest, StageError> {
        let counts = ItemCounts {
            total: items.items.len(),
            executed: fresh.len(),
            cached: items.cached(),
        };
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            let inst = &this.plan.instances[id];
            let keys = items.keys();
            for (i, item) in items.items.iter().enumerate() {
                let manifest = fresh.get(&i).map(|(m, _)| m).or(item.hit.as_ref());
                if let Some(m) = manifest {
                    usage.merge(&m.usage);
                }
            }
            let tables = this.assemble(inst, items, fresh)?;
            let how = Provenance {
                started,
                attempts: 1,
            };
            let recipe = (&decision.parts, decision.key.as_str());
            this.commit_instance(inst, recipe, &tables, how, usage, Some((counts, keys)))
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
