//! Running a per-item stage: every item without a complete committed result runs on its own
//! (holding a stage slot and the stage's resource pools) and commits as soon as it finishes;
//! then the instance's tables are assembled from all items, in item order.
//!
//! [`run_items_locally`] is the step a cluster executor replaces: given the instance's item
//! decisions, compute and commit the missing items.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use indexmap::IndexMap;
use polars::prelude::*;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::commit::{commit_instance, Provenance};
use super::prepare::prepare;
use super::unit::{run_unit, Unit, UnitResult, Work};
use super::{ExecEnv, Outcome, Runner};
use crate::artifact::{load_tables, ItemCounts, Manifest, TableEntry};
use crate::decision::{decide_items, Decision, ItemDecisions};
use crate::error::StageError;
use crate::kind::{InputTable, PreparedKind, Tables};
use crate::plan::Instance;
use crate::progress::Task;
use crate::record::{ErrorRow, Status};
use crate::usage::{Usage, UsageMeter};

/// What the missing items of an instance came to, by item position in its [`ItemDecisions`].
#[derive(Default)]
pub struct ItemsRan {
    /// Items committed, with their manifest and tables.
    pub fresh: HashMap<usize, (Manifest, Tables)>,
    /// Items that failed: position (`None` when an internal error lost it), attempts made,
    /// error.
    pub failures: Vec<(Option<usize>, u32, StageError)>,
}

/// Runs every item of `items` without a cached result through [`run_unit`], at most the
/// instance's `concurrency` at once, each holding a slot of every pool in `pools`;
/// `on_done` is called as each one finishes.
pub async fn run_items_locally(
    env: &Arc<ExecEnv>,
    inst: &Arc<Instance>,
    items: &ItemDecisions,
    prepared: Arc<dyn PreparedKind>,
    inputs: Arc<Vec<InputTable>>,
    pools: Vec<Arc<Semaphore>>,
    on_done: Arc<dyn Fn() + Send + Sync>,
) -> ItemsRan {
    let slots = Arc::new(Semaphore::new(inst.concurrency));
    let mut running: JoinSet<(usize, UnitResult)> = JoinSet::new();
    for (i, item) in items.items.iter().enumerate() {
        if item.hit.is_some() {
            continue;
        }
        let work = Work {
            inst: inst.clone(),
            unit: Arc::new(Unit {
                item: Some(item.group.value.clone()),
                rows: Some(item.group.rows.clone()),
                parts: item.parts.clone(),
                key: item.key.clone(),
            }),
            prepared: prepared.clone(),
            inputs: inputs.clone(),
            slots: Some(slots.clone()),
            pools: pools.clone(),
            meter: Arc::new(UsageMeter::new()),
        };
        let (env, on_done) = (env.clone(), on_done.clone());
        running.spawn(async move {
            let result = run_unit(&env, work).await;
            on_done();
            (i, result)
        });
    }
    let mut ran = ItemsRan::default();
    while let Some(joined) = running.join_next().await {
        match joined {
            Ok((i, Ok(done))) => {
                ran.fresh.insert(i, done);
            }
            Ok((i, Err((attempts, e)))) => ran.failures.push((Some(i), attempts, e)),
            Err(e) => {
                ran.failures
                    .push((None, 1, StageError::Failed(format!("internal error: {e}"))))
            }
        }
    }
    ran
}

/// Concatenates the items' tables in item order: fresh ones from `fresh`, cached ones loaded
/// from the store.
pub fn assemble(
    env: &ExecEnv,
    inst: &Instance,
    items: ItemDecisions,
    mut fresh: HashMap<usize, (Manifest, Tables)>,
) -> Result<Tables, StageError> {
    let mut out: IndexMap<String, DataFrame> = IndexMap::new();
    for (i, item) in items.items.into_iter().enumerate() {
        let tables = match (item.hit, fresh.remove(&i)) {
            (_, Some((_, t))) => t,
            (Some(m), None) => load_tables(env.store.as_ref(), &m)
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

impl Runner {
    /// Decides the items of `inst`, prepares it when some are missing, runs those, then
    /// assembles and commits the instance. Returns its manifest and what this run spent on it.
    pub(super) async fn run_items(
        self: Arc<Self>,
        inst: Arc<Instance>,
        decision: Decision,
        inputs: Arc<Vec<InputTable>>,
        started: Instant,
    ) -> Result<(Manifest, Usage), Outcome> {
        let items = match self.decide_items(&inst, &decision, &inputs).await {
            Ok(items) => items,
            Err(e) => return Err(self.fail(&inst, None, 1, &e)),
        };
        let (total, cached) = (items.items.len(), items.cached());
        let task = Arc::new(
            self.progress
                .start(&inst.label(), total as u64, cached as u64),
        );
        let meter = Arc::new(UsageMeter::new());
        let ran = if cached == total {
            ItemsRan::default()
        } else {
            match prepare(&self.env, &inst, &decision.key, &inputs, &meter).await {
                Ok(prepared) => {
                    let progress = task.clone();
                    let pools = self.pools_of(&inst);
                    let on_done = Arc::new(move || progress.inc());
                    run_items_locally(&self.env, &inst, &items, prepared, inputs, pools, on_done)
                        .await
                }
                Err((attempts, e)) => {
                    if let Ok(t) = Arc::try_unwrap(task) {
                        t.finish("failed");
                    }
                    return Err(self.fail(&inst, None, attempts, &e));
                }
            }
        };
        let task = Arc::try_unwrap(task).ok();
        if !ran.failures.is_empty() {
            return Err(self.items_failed(&inst, &items, ran, task));
        }
        let mut spent = meter.snapshot();
        for (m, _) in ran.fresh.values() {
            spent.merge(&m.usage);
        }
        let assembled = self
            .clone()
            .assemble_and_commit(
                inst.clone(),
                decision,
                items,
                ran.fresh,
                spent.clone(),
                started,
            )
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
                Err(self.fail(&inst, None, 1, &e))
            }
        }
    }

    /// The item decisions of `inst`, taken on a blocking thread (they read the store).
    async fn decide_items(
        &self,
        inst: &Arc<Instance>,
        decision: &Decision,
        inputs: &[InputTable],
    ) -> Result<ItemDecisions, StageError> {
        let (env, inst) = (self.env.clone(), inst.clone());
        let parts = decision.parts.clone();
        let main = inputs[0].clone();
        tokio::task::spawn_blocking(move || {
            decide_items(env.store.as_ref(), &inst, &parts, &main.label(), &main.df)
                .map_err(|e| StageError::Input(e.to_string()))
        })
        .await
        .unwrap_or_else(|e| Err(StageError::Failed(format!("internal error: {e}"))))
    }

    /// The record of an instance some of whose items failed (the others stay committed).
    fn items_failed(
        &self,
        inst: &Instance,
        items: &ItemDecisions,
        ran: ItemsRan,
        task: Option<Task>,
    ) -> Outcome {
        let total = items.items.len();
        let failures: Vec<ErrorRow> = ran
            .failures
            .iter()
            .map(|(i, attempts, e)| {
                let value = i.map(|i| items.items[i].group.value.clone());
                self.error_row(inst, value, *attempts, e)
            })
            .collect();
        if let Some(t) = task {
            t.finish(&format!("{} of {total} items failed", failures.len()));
        }
        let mut rec = self.record(inst, Status::Failed);
        let names: Vec<String> = failures.iter().filter_map(|f| f.item.clone()).collect();
        rec.message = Some(format!(
            "{} item(s) failed: {}",
            failures.len(),
            names.join(", ")
        ));
        rec.items = Some(ItemCounts {
            total,
            executed: ran.fresh.len(),
            cached: items.cached(),
        });
        rec.item_keys = items.keys();
        (rec, failures)
    }

    /// Assembles the instance's tables from cached and fresh items and commits them, with
    /// `usage` (what prepare and the fresh items spent) plus the cached items' usage.
    async fn assemble_and_commit(
        self: Arc<Self>,
        inst: Arc<Instance>,
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
        let env = self.env.clone();
        tokio::task::spawn_blocking(move || {
            let keys = items.keys();
            for item in &items.items {
                if let Some(m) = &item.hit {
                    usage.merge(&m.usage);
                }
            }
            let tables = assemble(&env, &inst, items, fresh)?;
            let how = Provenance {
                started,
                attempts: 1,
            };
            let recipe = (&decision.parts, decision.key.as_str());
            commit_instance(
                &env,
                &inst,
                recipe,
                &tables,
                how,
                usage,
                Some((counts, keys)),
            )
        })
        .await
        .unwrap_or_else(|e| Err(StageError::Failed(format!("internal error: {e}"))))
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
