//! One unit of work — a whole stage, or one item of a per-item stage — run with the stage's
//! retry policy and committed.
//!
//! Each attempt waits for the unit's stage slot and resource pools, runs the kind (on a blocking
//! thread, or awaited on the runtime for async kinds), gives the slot and pools back, and, when
//! it succeeded, commits. Between attempts nothing is held, so a waiting retry never blocks
//! other work. Panics become failures; the kind must return the tables it declares.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::commit::Provenance;
use super::Runner;
use crate::artifact::{KeyParts, Manifest};
use crate::error::StageError;
use crate::kind::{Execution, InputTable, PreparedKind, StageContext, Tables};
use crate::plan::Instance;
use crate::retry::{Retry, RetryPolicy};
use crate::usage::UsageMeter;

/// One piece of work and its key.
pub(super) struct Unit {
    /// The item's value; `None` for a whole stage.
    pub item: Option<String>,
    /// The item's rows in the main input (a whole stage sees every row).
    pub rows: Option<Vec<u32>>,
    /// What the key is computed from.
    pub parts: KeyParts,
    /// The (item or recipe) key.
    pub key: String,
}

/// A unit's outcome: its manifest and tables, or the attempts made and the error.
pub(super) type UnitResult = std::result::Result<(Manifest, Tables), (u32, StageError)>;

/// What every attempt of a unit needs.
pub(super) struct Work {
    pub id: usize,
    pub unit: Arc<Unit>,
    pub prepared: Arc<dyn PreparedKind>,
    pub inputs: Arc<Vec<InputTable>>,
    /// The instance's item slots (`concurrency`); `None` for a whole stage.
    pub slots: Option<Arc<Semaphore>>,
    /// Where the unit's usage is counted, across attempts.
    pub meter: Arc<UsageMeter>,
}

impl Runner {
    /// Runs `work` until it succeeds, fails for good or its retries are spent; commits success.
    pub(super) async fn run_unit(self: Arc<Self>, work: Work) -> UnitResult {
        let inst = &self.plan.instances[work.id];
        let policy = retry_policy(inst);
        let work = &work;
        let outcome = policy
            .run(
                |attempt| {
                    let (this, meter) = (self.clone(), work.meter.clone());
                    async move { this.attempt(work, attempt, meter).await }
                },
                |e| classify(inst, e),
            )
            .await;
        outcome
            .map(|(done, _)| done)
            .map_err(|gave_up| (gave_up.attempts, gave_up.error))
    }

    /// One attempt: wait for the slot and pools, run, release them, commit on success.
    async fn attempt(
        self: Arc<Self>,
        work: &Work,
        attempt: u32,
        meter: Arc<UsageMeter>,
    ) -> Result<(Manifest, Tables), StageError> {
        let inst = &self.plan.instances[work.id];
        let permits = self.permits(inst, work.slots.as_ref()).await?;
        let how = Provenance {
            started: Instant::now(),
            attempts: attempt + 1,
        };
        match work.prepared.execution() {
            Execution::Blocking => {
                let (this, unit) = (self.clone(), work.unit.clone());
                let (prepared, inputs) = (work.prepared.clone(), work.inputs.clone());
                let id = work.id;
                tokio::task::spawn_blocking(move || {
                    let inst = &this.plan.instances[id];
                    let tables =
                        this.call_blocking(inst, &unit, &*prepared, &inputs, attempt, &meter);
                    drop(permits);
                    let tables = tables?;
                    this.commit_unit(inst, &unit, &tables, how, &meter)
                        .map(|m| (m, tables))
                })
                .await
                .unwrap_or_else(|e| Err(StageError::Failed(format!("internal error: {e}"))))
            }
            Execution::Async => {
                let tables = self.call_async(work, attempt, meter.clone()).await;
                drop(permits);
                let tables = tables?;
                self.commit_async(work, tables, how, meter).await
            }
        }
    }

    /// The unit's stage slot (for items) and the stage's resource pools, in that order.
    async fn permits(
        &self,
        inst: &Instance,
        slots: Option<&Arc<Semaphore>>,
    ) -> Result<Vec<OwnedSemaphorePermit>, StageError> {
        let slot = match slots {
            Some(s) => Some(
                s.clone()
                    .acquire_owned()
                    .await
                    .map_err(|_| StageError::Failed("scheduler closed".into()))?,
            ),
            None => None,
        };
        let mut permits = self.acquire_pools(inst).await;
        permits.extend(slot);
        Ok(permits)
    }

    /// Calls a blocking kind on this (blocking) thread; a panic becomes a failure.
    fn call_blocking(
        &self,
        inst: &Instance,
        unit: &Unit,
        prepared: &dyn PreparedKind,
        inputs: &[InputTable],
        attempt: u32,
        meter: &UsageMeter,
    ) -> Result<Tables, StageError> {
        let local = unit_inputs(inputs, unit)?;
        let inputs = local.as_deref().unwrap_or(inputs);
        let variant = inst.variant.name();
        let ctx = self.context(inst, &variant, unit, inputs, attempt, meter);
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| prepared.run(&ctx)))
            .unwrap_or_else(|panic| Err(panicked(&*panic)))
            .and_then(|t| check_outputs(inst, t))
    }

    /// Awaits an async kind in a task of its own, so a panic becomes this unit's failure.
    async fn call_async(
        self: &Arc<Self>,
        work: &Work,
        attempt: u32,
        meter: Arc<UsageMeter>,
    ) -> Result<Tables, StageError> {
        let (this, unit) = (self.clone(), work.unit.clone());
        let (prepared, inputs) = (work.prepared.clone(), work.inputs.clone());
        let id = work.id;
        let joined = tokio::spawn(async move {
            let inst = &this.plan.instances[id];
            let local = unit_inputs(&inputs, &unit)?;
            let inputs = local.as_deref().unwrap_or(&inputs);
            let variant = inst.variant.name();
            let ctx = this.context(inst, &variant, &unit, inputs, attempt, &meter);
            let tables = prepared.run_async(&ctx).await?;
            check_outputs(inst, tables)
        })
        .await;
        joined.unwrap_or_else(|e| match e.try_into_panic() {
            Ok(panic) => Err(panicked(&*panic)),
            Err(e) => Err(StageError::Failed(format!("internal error: {e}"))),
        })
    }

    /// Commits an async unit on a blocking thread, at most a few at once: writing files is
    /// blocking work, and bounding it keeps hundreds of finishing items from each taking a
    /// thread of their own.
    async fn commit_async(
        self: &Arc<Self>,
        work: &Work,
        tables: Tables,
        how: Provenance,
        meter: Arc<UsageMeter>,
    ) -> Result<(Manifest, Tables), StageError> {
        let _slot = self
            .commit_slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| StageError::Failed("scheduler closed".into()))?;
        let (this, unit, id) = (self.clone(), work.unit.clone(), work.id);
        tokio::task::spawn_blocking(move || {
            let inst = &this.plan.instances[id];
            this.commit_unit(inst, &unit, &tables, how, &meter)
                .map(|m| (m, tables))
        })
        .await
        .unwrap_or_else(|e| Err(StageError::Failed(format!("internal error: {e}"))))
    }

    /// Commits an item under its item key, a whole stage under its recipe key.
    fn commit_unit(
        &self,
        inst: &Instance,
        unit: &Unit,
        tables: &Tables,
        how: Provenance,
        meter: &UsageMeter,
    ) -> Result<Manifest, StageError> {
        let recipe = (&unit.parts, unit.key.as_str());
        let usage = meter.snapshot();
        match unit.item {
            Some(_) => self.commit_item(inst, recipe, tables, how, usage),
            None => self.commit_instance(inst, recipe, tables, how, usage, None),
        }
    }

    /// The context of one attempt of `unit`.
    fn context<'a>(
        &'a self,
        inst: &'a Instance,
        variant: &'a str,
        unit: &'a Unit,
        inputs: &'a [InputTable],
        attempt: u32,
        usage: &'a UsageMeter,
    ) -> StageContext<'a> {
        StageContext {
            stage: &inst.stage,
            variant,
            item: unit.item.as_deref(),
            seed: seed_of(&unit.key),
            attempt,
            workdir: &self.workdir,
            inputs,
            cache: self.store.as_ref(),
            offline: self.offline,
            state: &(),
            usage,
        }
    }
}

/// The stage's retry policy (`retries:`, `retry_backoff_ms:`), for items and `prepare` alike.
pub(super) fn retry_policy(inst: &Instance) -> RetryPolicy {
    RetryPolicy::new(inst.retries, Duration::from_millis(inst.backoff_ms))
}

/// Whether the engine retries `e`: only transient failures nobody below it retried already.
pub(super) fn classify(inst: &Instance, e: &StageError) -> Retry {
    match e {
        StageError::Transient(msg) => {
            tracing::debug!("{}: transient failure ({msg}); retrying", inst.label());
            Retry::After(None)
        }
        _ => Retry::No,
    }
}

/// For an item, its own rows of the main (first) input with every other input whole; `None`
/// for a whole stage (it sees the inputs as they are).
fn unit_inputs(inputs: &[InputTable], unit: &Unit) -> Result<Option<Vec<InputTable>>, StageError> {
    let Some(rows) = &unit.rows else {
        return Ok(None);
    };
    let mut local: Vec<InputTable> = inputs.to_vec();
    let idx = polars::prelude::IdxCa::from_vec("idx".into(), rows.clone());
    local[0].df = inputs[0].df.take(&idx)?;
    Ok(Some(local))
}

/// The seed a kind sees: the first 64 bits of its (item) key, stable across runs.
pub(super) fn seed_of(key: &str) -> u64 {
    u64::from_str_radix(&key[..16.min(key.len())], 16).unwrap_or(0)
}

fn check_outputs(inst: &Instance, tables: Tables) -> Result<Tables, StageError> {
    let expected = inst.kind.outputs();
    let got: Vec<&str> = tables.0.keys().map(String::as_str).collect();
    if got.len() != expected.len() || expected.iter().any(|e| !got.contains(e)) {
        return Err(StageError::Failed(format!(
            "kind `{}` returned tables [{}] but declares [{}] (a bug in the kind)",
            inst.kind.name(),
            got.join(", "),
            expected.join(", ")
        )));
    }
    Ok(tables)
}

/// A panic's message as a failure.
pub(super) fn panicked(panic: &(dyn std::any::Any + Send)) -> StageError {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    StageError::Failed(format!("stage panicked: {text}"))
}
