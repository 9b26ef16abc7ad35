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

use super::commit::{commit_instance, commit_item, Provenance};
use super::env::ExecEnv;
use crate::artifact::{load_tables, KeyParts, Manifest};
use crate::error::StageError;
use crate::kind::{Execution, InputTable, PreparedKind, StageContext, Tables};
use crate::plan::Instance;
use crate::retry::{Retry, RetryPolicy};
use crate::usage::UsageMeter;

/// How the message of an item that was never started begins (see [`attempt_unit`]).
pub(super) const NOT_STARTED: &str = "not started";

/// How the message of an item given up while it ran begins (see [`attempt_unit`]).
pub(super) const STOPPED: &str = "stopped while running";

/// One piece of work and its key.
#[derive(Debug, Clone)]
pub struct Unit {
    /// The item's value; `None` for a whole stage.
    pub item: Option<String>,
    /// The item's rows in the main input (a whole stage sees every row).
    pub rows: Option<Vec<u32>>,
    /// What the key is computed from.
    pub parts: KeyParts,
    /// The item key, or the recipe key of a whole stage.
    pub key: String,
}

/// A unit's outcome: its manifest and tables, or the attempts made and the error.
pub type UnitResult = std::result::Result<(Manifest, Tables), (u32, StageError)>;

/// Everything the attempts of one unit need.
pub struct Work {
    /// The instance the unit belongs to.
    pub inst: Arc<Instance>,
    /// The unit.
    pub unit: Arc<Unit>,
    /// The instance's prepared kind (see [`super::prepare`]).
    pub prepared: Arc<dyn PreparedKind>,
    /// The instance's inputs, whole (an item's rows are taken per attempt).
    pub inputs: Arc<Vec<InputTable>>,
    /// The instance's item slots (`concurrency`); `None` for a whole stage.
    pub slots: Option<Arc<Semaphore>>,
    /// The resource pools each attempt holds a slot of.
    pub pools: Vec<Arc<Semaphore>>,
    /// Where the unit's usage is counted, across attempts.
    pub meter: Arc<UsageMeter>,
}

/// Runs `work` until it succeeds, fails for good or its retries are spent; commits success
/// under the unit's key (an item manifest, or the recipe manifest of a whole stage).
pub async fn run_unit(env: &Arc<ExecEnv>, work: Work) -> UnitResult {
    let inst = work.inst.clone();
    let work = &work;
    retry_policy(&inst)
        .run(
            |attempt| attempt_unit(env, work, attempt),
            |e| classify(&inst, e),
        )
        .await
        .map(|(done, _)| done)
        .map_err(|gave_up| (gave_up.attempts, gave_up.error))
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

/// One attempt: wait for the slot and pools, run, give the pools back, commit on success, give
/// the slot back. Once the run is halted (a failed store write, an interrupt), nothing new
/// starts, and work in flight is given up when [`ExecEnv::give_up`] says so; a commit under
/// way is never cut short.
async fn attempt_unit(
    env: &Arc<ExecEnv>,
    work: &Work,
    attempt: u32,
) -> Result<(Manifest, Tables), StageError> {
    let mut permits = permits(work).await?;
    if let Some(why) = env.halted() {
        return Err(StageError::Failed(format!("{NOT_STARTED}: {why}")));
    }
    let how = Provenance {
        started: Instant::now(),
        attempts: attempt + 1,
    };
    let computed = tokio::select! {
        biased;
        tables = compute(env, work, attempt) => tables,
        why = env.give_up() => Err(StageError::Failed(format!("{STOPPED}: {why}"))),
    };
    // The resource pools (model endpoints…) are free at once. The stage slot passes to the
    // next item as soon as this one is in the commit backlog; while the backlog is full (a
    // store slow to take results), no new item starts.
    let slot = match work.slots.is_some() && !permits.is_empty() {
        true => Some(permits.remove(0)),
        false => None,
    };
    drop(permits);
    let tables = computed?;
    let queued = env
        .commit_backlog
        .clone()
        .acquire_owned()
        .await
        .map_err(|_| StageError::Failed("scheduler closed".into()))?;
    drop(slot);
    let committed = commit_async(env, work, tables, how).await;
    drop(queued);
    committed
}

/// Runs the unit's kind: on a blocking thread, or awaited for async kinds.
async fn compute(env: &Arc<ExecEnv>, work: &Work, attempt: u32) -> Result<Tables, StageError> {
    match work.prepared.execution() {
        Execution::Blocking => {
            let (env, inst, unit) = (env.clone(), work.inst.clone(), work.unit.clone());
            let (prepared, inputs, meter) = (
                work.prepared.clone(),
                work.inputs.clone(),
                work.meter.clone(),
            );
            tokio::task::spawn_blocking(move || {
                call_blocking(&env, &inst, &unit, &*prepared, &inputs, attempt, &meter)
            })
            .await
            .unwrap_or_else(|e| Err(StageError::Failed(format!("internal error: {e}"))))
        }
        Execution::Async => call_async(env, work, attempt).await,
    }
}

/// The unit's stage slot (for items) and its resource pools.
async fn permits(work: &Work) -> Result<Vec<OwnedSemaphorePermit>, StageError> {
    let closed = |_| StageError::Failed("scheduler closed".into());
    let mut permits = Vec::new();
    if let Some(slots) = &work.slots {
        permits.push(slots.clone().acquire_owned().await.map_err(closed)?);
    }
    for pool in &work.pools {
        permits.push(pool.clone().acquire_owned().await.map_err(closed)?);
    }
    Ok(permits)
}

/// Calls a blocking kind on this (blocking) thread; a panic becomes a failure.
fn call_blocking(
    env: &ExecEnv,
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
    let ctx = context(env, inst, &variant, unit, inputs, attempt, meter);
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| prepared.run(&ctx)))
        .unwrap_or_else(|panic| Err(panicked(&*panic)))
        .and_then(|t| check_outputs(inst, t))
}

/// Awaits an async kind in a task of its own, so a panic becomes this unit's failure.
async fn call_async(env: &Arc<ExecEnv>, work: &Work, attempt: u32) -> Result<Tables, StageError> {
    let (env, inst, unit) = (env.clone(), work.inst.clone(), work.unit.clone());
    let (prepared, inputs, meter) = (
        work.prepared.clone(),
        work.inputs.clone(),
        work.meter.clone(),
    );
    let task = tokio::spawn(async move {
        let local = unit_inputs(&inputs, &unit)?;
        let inputs = local.as_deref().unwrap_or(&inputs);
        let variant = inst.variant.name();
        let ctx = context(&env, &inst, &variant, &unit, inputs, attempt, &meter);
        let tables = prepared.run_async(&ctx).await?;
        check_outputs(&inst, tables)
    });
    // Given up (the run halted): the kind's task ends with this future.
    let _abort = AbortOnDrop(task.abort_handle());
    let joined = task.await;
    joined.unwrap_or_else(|e| match e.try_into_panic() {
        Ok(panic) => Err(panicked(&*panic)),
        Err(e) => Err(StageError::Failed(format!("internal error: {e}"))),
    })
}

/// Aborts a spawned task when dropped (a no-op once it has finished).
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Commits a unit on a blocking thread, at most a few at once: writing is blocking work, and
/// bounding it keeps hundreds of finishing items from each taking a thread.
async fn commit_async(
    env: &Arc<ExecEnv>,
    work: &Work,
    tables: Tables,
    how: Provenance,
) -> Result<(Manifest, Tables), StageError> {
    let _slot = env
        .commit_slots
        .clone()
        .acquire_owned()
        .await
        .map_err(|_| StageError::Failed("scheduler closed".into()))?;
    let (env, inst, unit, meter) = (
        env.clone(),
        work.inst.clone(),
        work.unit.clone(),
        work.meter.clone(),
    );
    tokio::task::spawn_blocking(move || commit_unit(&env, &inst, &unit, tables, how, &meter))
        .await
        .unwrap_or_else(|e| Err(StageError::Failed(format!("internal error: {e}"))))
}

/// Commits an item under its item key, a whole stage under its recipe key; returns the manifest
/// and tables that stand under the key (another writer's when it committed the key first).
fn commit_unit(
    env: &ExecEnv,
    inst: &Instance,
    unit: &Unit,
    tables: Tables,
    how: Provenance,
    meter: &UsageMeter,
) -> Result<(Manifest, Tables), StageError> {
    let recipe = (&unit.parts, unit.key.as_str());
    let usage = meter.snapshot();
    let commit = match unit.item {
        Some(_) => commit_item(env, inst, recipe, &tables, how, usage),
        None => commit_instance(env, inst, recipe, &tables, how, usage, None),
    }?;
    if !commit.theirs {
        return Ok((commit.manifest, tables));
    }
    // Another writer committed this key first: its result stands, for us as for everyone.
    let theirs = load_tables(env.store.as_ref(), &commit.manifest).map_err(|e| {
        StageError::Failed(format!(
            "could not read the result another writer committed under {}: {e}",
            unit.key
        ))
    })?;
    Ok((commit.manifest, theirs))
}

/// The context of one attempt of `unit`.
fn context<'a>(
    env: &'a ExecEnv,
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
        workdir: &env.workdir,
        inputs,
        cache: env.store.as_ref(),
        offline: env.offline,
        state: &(),
        usage,
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
pub fn seed_of(key: &str) -> u64 {
    u64::from_str_radix(&key[..16.min(key.len())], 16).unwrap_or(0)
}

/// The kind's result, when it is exactly what the kind declares (see [`crate::kind::DynKind::check_output`]).
fn check_outputs(inst: &Instance, tables: Tables) -> Result<Tables, StageError> {
    inst.kind.check_output(&tables)?;
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
