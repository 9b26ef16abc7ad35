//! The worker: `prefflow work --store URL --job ID --shard i/N`, one array task.
//!
//! It reads the job from the store, builds the same plan as the coordinator (same pipeline
//! file, same `--set`), checks that its instance has the job's recipe (same kind version,
//! params and external files — a compute node with other datasets or another binary would
//! compute something else), then computes the items of its shard that are not committed yet
//! with the local executor's own functions, committing each as it finishes. A whole-stage job
//! (a whole-table stage marked `executor: slurm`, one task) computes the instance in one piece
//! and commits it under its recipe key, as a local run would. It ends with a report in the
//! store and an exit code that says what happened ([`WorkExit`]). Nothing else needs to be
//! shared with the coordinator, so the same command runs under any scheduler.
//!
//! A worker holds a run lease in the store for as long as it may commit, announcing the
//! instance and items it computes, so `gc` refuses (or waits) while it works even when its
//! coordinator is gone, and it waits for a `gc` in progress before starting, as a run does.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::Semaphore;

use super::job::{self, ItemFailure, JobSpec, ShardReport};
use crate::artifact::{blobs_present, load_manifest, recipe_path, ENGINE_VERSION};
use crate::config::PipelineFile;
use crate::decision::{decide_items, ItemDecisions};
use crate::error::{Error, StageError};
use crate::exec::{
    load_inputs, prepare, run_items_locally, run_unit, ExecEnv, InputBlob, Unit, Work,
};
use crate::keys::hash_path;
use crate::kind::{InputTable, Registry};
use crate::params::Override;
use crate::plan::{Instance, Plan};
use crate::store::lease::{self, Holder, Lease, Protected};
use crate::store::Store;

/// What a worker's exit code means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkExit {
    /// 0: every item of the shard is committed.
    Done = 0,
    /// 1: some items failed (after the stage's retries); worth re-submitting.
    Failed = 1,
    /// 2: the input is at fault (bad data, bad pipeline); re-submitting cannot help.
    BadInput = 2,
    /// 3: the worker could not start: no such job, an unreadable store, or a plan that does
    /// not match the job (another pipeline file, binary or dataset on this node).
    Setup = 3,
}

/// `--shard i/N`, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This task's index.
    pub index: u32,
    /// How many tasks there are.
    pub count: u32,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!("--shard `{s}`: write INDEX/COUNT with 0 <= INDEX < COUNT, e.g. --shard 3/16 (under Slurm: --shard $SLURM_ARRAY_TASK_ID/16)")
        };
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

/// What a worker ran with.
pub struct WorkRequest<'a> {
    /// The shared store.
    pub store: Arc<dyn Store>,
    /// The job id.
    pub job: &'a str,
    /// This task's shard.
    pub shard: Shard,
    /// The kinds this binary knows.
    pub registry: &'a Registry,
    /// The working directory relative paths resolve against.
    pub workdir: PathBuf,
}

/// Runs one shard of a job and writes its report; returns the exit code and the report.
pub fn work(req: WorkRequest<'_>) -> (WorkExit, ShardReport) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_time()
        .build();
    let mut report = ShardReport {
        shard: req.shard.index,
        slurm: slurm_task_id(),
        host: hostname(),
        committed: 0,
        already: 0,
        failures: Vec::new(),
        exit_code: 0,
    };
    let mut held = None;
    let exit = match runtime {
        Ok(rt) => rt.block_on(run_shard(&req, &mut report, &mut held)),
        Err(e) => setup_failure(&mut report, format!("cannot start a runtime: {e}")),
    };
    report.exit_code = exit as i32;
    let key = job::report_key(req.job, req.shard.index);
    if let Err(e) = job::save(req.store.as_ref(), &key, &report) {
        tracing::error!("cannot write the shard report {key}: {e}");
    }
    // The lease ends after the report: everything this worker writes is written under it.
    if let Some(lease) = held {
        if let Err(e) = lease.release() {
            tracing::warn!("could not release the worker's lease {}: {e}", lease.id());
        }
    }
    (exit, report)
}

/// Takes the worker's run lease (for `pipeline`), waits for a `gc` in progress, and announces
/// what it computes: the instance's recipe key and this shard's item keys.
fn hold_lease(
    store: &Arc<dyn Store>,
    pipeline: &str,
    inst: &Instance,
    spec: &JobSpec,
    shard: u32,
) -> Result<Arc<Lease>, ItemFailure> {
    let failure = |kind: &str, message: String| ItemFailure {
        item: None,
        key: None,
        attempts: 1,
        kind: kind.into(),
        message,
    };
    let lease = Lease::acquire(store.clone(), Holder::Run, pipeline)
        .map_err(|e| failure("failed", format!("cannot take a lease in the store: {e}")))?;
    let busy = lease::wait_for_gc(store.as_ref(), &lease.id(), crate::exec::GC_WAIT)
        .map_err(|e| failure("failed", format!("cannot read the store's leases: {e}")))?;
    if let Some(gc) = busy.first() {
        return Err(failure(
            "transient",
            format!(
                "the store {} is being garbage-collected by {}; re-submit when it is done",
                store.describe(),
                gc.describe(crate::artifact::unix_now())
            ),
        ));
    }
    let item_keys = match spec.whole_stage {
        true => Vec::new(),
        false => spec
            .shard_items(shard)
            .into_iter()
            .map(String::from)
            .collect(),
    };
    let entry = Protected {
        label: inst.label(),
        recipe_key: spec.job.clone(),
        item_keys,
    };
    lease
        .protect(&entry)
        .map_err(|e| failure("failed", format!("cannot update the worker's lease: {e}")))?;
    Ok(lease)
}

fn setup_failure(report: &mut ShardReport, message: String) -> WorkExit {
    tracing::error!("{message}");
    report.failures.push(ItemFailure {
        item: None,
        key: None,
        attempts: 1,
        kind: "failed".into(),
        message,
    });
    WorkExit::Setup
}

fn input_failure(report: &mut ShardReport, message: String) -> WorkExit {
    tracing::error!("{message}");
    report.failures.push(ItemFailure {
        item: None,
        key: None,
        attempts: 1,
        kind: "input".into(),
        message,
    });
    WorkExit::BadInput
}

/// Computes this worker's shard of the job: loads the job and its instance, holds a lease
/// on the items, loads the inputs, then commits the whole stage or the shard's missing items.
async fn run_shard(
    req: &WorkRequest<'_>,
    report: &mut ShardReport,
    held: &mut Option<Arc<Lease>>,
) -> WorkExit {
    match shard_work(req, report, held).await {
        Ok(exit) | Err(exit) => exit,
    }
}

/// [`run_shard`], with every setup failure (already in `report`) as `Err`.
async fn shard_work(
    req: &WorkRequest<'_>,
    report: &mut ShardReport,
    held: &mut Option<Arc<Lease>>,
) -> Result<WorkExit, WorkExit> {
    let store = req.store.clone();
    let spec = load_spec(req, report)?;
    let (plan, inst) = job_instance(req, &spec, report)?;
    let lease = match hold_lease(&store, &plan.name, &inst, &spec, req.shard.index) {
        Ok(lease) => held.insert(lease).clone(),
        Err(f) => {
            tracing::error!("{}", f.message);
            let exit = match f.kind.as_str() {
                "transient" => WorkExit::Failed,
                _ => WorkExit::Setup,
            };
            report.failures.push(f);
            return Err(exit);
        }
    };
    let env = ExecEnv::new(
        store.clone(),
        req.workdir.clone(),
        spec.offline,
        plan.name.clone(),
    );
    env.attach_lease(lease);
    let inputs = job_inputs(&store, &spec, report).await?;
    if spec.whole_stage {
        return Ok(run_whole_stage(&env, &inst, &spec, inputs, report).await);
    }
    let todo = shard_items(req, (&inst, &spec), &inputs, report)?;
    if todo.items.is_empty() {
        return Ok(WorkExit::Done);
    }
    Ok(compute_items(&env, (&inst, &spec), inputs, &todo, report).await)
}

/// The job the coordinator wrote to the store, when it has the shard count `--shard` says.
fn load_spec(req: &WorkRequest<'_>, report: &mut ShardReport) -> Result<JobSpec, WorkExit> {
    let spec: JobSpec = match job::load(req.store.as_ref(), &job::spec_key(req.job)) {
        Ok(Some(spec)) => spec,
        Ok(None) => {
            return Err(setup_failure(
                report,
                format!(
                    "no job `{}` in the store (looked for {}); is --store the coordinator's store?",
                    req.job,
                    job::spec_key(req.job)
                ),
            ))
        }
        Err(e) => {
            return Err(setup_failure(
                report,
                format!("cannot read job `{}`: {e}", req.job),
            ))
        }
    };
    if spec.shards != req.shard.count {
        return Err(setup_failure(
            report,
            format!(
                "--shard {}/{}: job `{}` has {} shards; pass --shard INDEX/{}",
                req.shard.index, req.shard.count, req.job, spec.shards, spec.shards
            ),
        ));
    }
    Ok(spec)
}

/// The job's pipeline planned as the coordinator planned it, and the job's instance in it.
fn job_instance(
    req: &WorkRequest<'_>,
    spec: &JobSpec,
    report: &mut ShardReport,
) -> Result<(Plan, Arc<Instance>), WorkExit> {
    let plan = match build_plan(spec, req.registry) {
        Ok(plan) => plan,
        Err(e) if e.is_user_error() => return Err(input_failure(report, e.to_string())),
        Err(e) => return Err(setup_failure(report, e.to_string())),
    };
    match find_instance(&plan, spec, &req.workdir) {
        Ok(inst) => Ok((plan, inst)),
        Err(message) => Err(setup_failure(report, message)),
    }
}

/// The job's input tables, loaded from the store on a blocking thread.
async fn job_inputs(
    store: &Arc<dyn Store>,
    spec: &JobSpec,
    report: &mut ShardReport,
) -> Result<Arc<Vec<InputTable>>, WorkExit> {
    let blobs: Vec<InputBlob> = spec.inputs.iter().map(InputBlob::from).collect();
    let loaded = {
        let store = store.clone();
        tokio::task::spawn_blocking(move || load_inputs(store.as_ref(), blobs)).await
    };
    match loaded {
        Ok(Ok(inputs)) => Ok(Arc::new(inputs)),
        Ok(Err(e)) => Err(setup_failure(
            report,
            format!("cannot load the job's inputs: {e}"),
        )),
        Err(e) => Err(setup_failure(report, format!("internal error: {e}"))),
    }
}

/// The shard's items still to compute (those already committed are counted in the report).
fn shard_items(
    req: &WorkRequest<'_>,
    (inst, spec): (&Arc<Instance>, &JobSpec),
    inputs: &[InputTable],
    report: &mut ShardReport,
) -> Result<ItemDecisions, WorkExit> {
    let Some(main) = inputs.first() else {
        return Err(setup_failure(report, "the job has no input tables".into()));
    };
    let decided = decide_items(
        req.store.as_ref(),
        inst,
        &spec.parts,
        &main.label(),
        &main.df,
    );
    let all = match decided {
        Ok(d) => d,
        Err(crate::decision::ItemsError::Store(e)) => {
            return Err(setup_failure(
                report,
                format!("cannot decide the items: {e}"),
            ))
        }
        Err(e) => return Err(input_failure(report, e.to_string())),
    };
    let wanted: HashSet<&str> = spec.shard_items(req.shard.index).into_iter().collect();
    let mine: Vec<_> = all
        .items
        .into_iter()
        .filter(|i| wanted.contains(i.key.as_str()))
        .collect();
    report.already = mine.iter().filter(|i| i.hit.is_some()).count();
    let todo = ItemDecisions {
        items: mine.into_iter().filter(|i| i.hit.is_none()).collect(),
    };
    tracing::info!(
        "{}: shard {}/{}: {} items to compute, {} already committed",
        inst.label(),
        req.shard.index,
        req.shard.count,
        todo.items.len(),
        report.already
    );
    Ok(todo)
}

/// Prepares the kind and computes `todo`, marking each committed item for the coordinator;
/// the failures go into the report (and the log).
async fn compute_items(
    env: &Arc<ExecEnv>,
    (inst, spec): (&Arc<Instance>, &JobSpec),
    inputs: Arc<Vec<InputTable>>,
    todo: &ItemDecisions,
    report: &mut ShardReport,
) -> WorkExit {
    let meter = env.meter(inst);
    let prepared = match prepare(env, inst, &spec.job, &inputs, &meter).await {
        Ok(p) => p,
        Err((attempts, e)) => {
            report.failures.push(ItemFailure {
                item: None,
                key: None,
                attempts,
                kind: kind_of(&e).into(),
                message: message_of(&e),
            });
            return exit_for(&report.failures);
        }
    };
    let pools = worker_pools(inst, &spec.pools);
    let ran = run_items_locally(
        env,
        inst,
        todo,
        prepared,
        inputs.clone(),
        pools,
        mark_committed(env.store.clone(), &spec.job),
    )
    .await;
    env.say_retries(inst);
    report.committed = ran.fresh.len();
    for f in ran.failures {
        let item = f.position.map(|p| &todo.items[p]);
        report.failures.push(ItemFailure {
            item: item.map(|i| i.group.value.clone()),
            key: item.map(|i| i.key.clone()),
            attempts: f.attempts,
            kind: kind_of(&f.error).into(),
            message: message_of(&f.error),
        });
    }
    for f in &report.failures {
        tracing::error!(
            "item `{}` failed ({}): {}",
            f.item.as_deref().unwrap_or("-"),
            f.kind,
            f.message
        );
    }
    exit_for(&report.failures)
}

/// Computes a whole-stage job's instance and commits it under its recipe key (the job id),
/// through the same unit of work as a local run; nothing when it is committed already.
async fn run_whole_stage(
    env: &Arc<ExecEnv>,
    inst: &Arc<Instance>,
    spec: &JobSpec,
    inputs: Arc<Vec<InputTable>>,
    report: &mut ShardReport,
) -> WorkExit {
    let store = env.store.clone();
    let done = mark_committed(store.clone(), &spec.job);
    let path = recipe_path(&spec.job);
    let cached = load_manifest(store.as_ref(), &path)
        .ok()
        .flatten()
        .is_some_and(|m| blobs_present(store.as_ref(), &m).unwrap_or(false));
    tracing::info!(
        "{}: the whole stage ({})",
        inst.label(),
        if cached {
            "already committed"
        } else {
            "to compute"
        }
    );
    if cached {
        report.already = 1;
        done(Some(&spec.job));
        return WorkExit::Done;
    }
    let meter = env.meter(inst);
    let failure = |attempts: u32, e: &StageError| ItemFailure {
        item: None,
        key: Some(spec.job.clone()),
        attempts,
        kind: kind_of(e).into(),
        message: message_of(e),
    };
    let prepared = match prepare(env, inst, &spec.job, &inputs, &meter).await {
        Ok(p) => p,
        Err((attempts, e)) => {
            report.failures.push(failure(attempts, &e));
            return exit_for(&report.failures);
        }
    };
    let work = Work {
        inst: inst.clone(),
        unit: Arc::new(Unit {
            item: None,
            rows: None,
            parts: spec.parts.clone(),
            key: spec.job.clone(),
        }),
        prepared,
        inputs,
        slots: None,
        pools: worker_pools(inst, &spec.pools),
        meter,
    };
    let ran = run_unit(env, work).await;
    env.say_retries(inst);
    match ran {
        Ok(_) => {
            report.committed = 1;
            done(Some(&spec.job));
            WorkExit::Done
        }
        Err((attempts, e)) => {
            let (kind, message) = (kind_of(&e), message_of(&e));
            tracing::error!("{}: failed ({kind}): {message}", inst.label());
            report.failures.push(failure(attempts, &e));
            exit_for(&report.failures)
        }
    }
}

/// Leaves a mark under the job's `done/` prefix as each item is committed, so the coordinator
/// sees progress with one listing per poll (a failed mark only delays it until the task ends).
fn mark_committed(store: Arc<dyn Store>, job: &str) -> crate::exec::ItemDone {
    let job = job.to_string();
    Arc::new(move |key: Option<&str>| {
        if let Some(key) = key {
            if let Err(e) = store.put(&super::job::done_key(&job, key), b"") {
                tracing::warn!("cannot mark item {key} committed: {e}");
            }
        }
    })
}

/// The exit code for a shard's failures.
fn exit_for(failures: &[ItemFailure]) -> WorkExit {
    if failures.is_empty() {
        WorkExit::Done
    } else if failures.iter().all(|f| f.kind == "input") {
        WorkExit::BadInput
    } else {
        WorkExit::Failed
    }
}

/// A stage error's message without its kind prefix (the kind travels separately).
pub fn message_of(e: &StageError) -> String {
    match e {
        StageError::Input(m)
        | StageError::Transient(m)
        | StageError::Exhausted(m)
        | StageError::Failed(m) => m.clone(),
    }
}

/// The errors table's `kind` of a stage error.
pub fn kind_of(e: &StageError) -> &'static str {
    match e {
        StageError::Input(_) => "input",
        StageError::Transient(_) | StageError::Exhausted(_) => "transient",
        StageError::Failed(_) => "failed",
    }
}

fn build_plan(spec: &JobSpec, registry: &Registry) -> crate::error::Result<Plan> {
    let overrides = spec
        .overrides
        .iter()
        .map(|s| Override::parse(s).map_err(Error::Usage))
        .collect::<crate::error::Result<Vec<_>>>()?;
    let file = PipelineFile::load(Path::new(&spec.file))?;
    Plan::build(&file, registry, &overrides)
}

/// The job's instance in this worker's plan, refused when its recipe differs from the job's.
fn find_instance(plan: &Plan, spec: &JobSpec, workdir: &Path) -> Result<Arc<Instance>, String> {
    let inst = plan
        .instances
        .iter()
        .find(|i| i.stage == spec.stage && i.variant.name() == spec.variant)
        .cloned()
        .ok_or_else(|| {
            format!(
                "`{}` has no stage instance `{}`{}: the pipeline file changed since the job was submitted; run the coordinator again",
                spec.file,
                spec.stage,
                if spec.variant.is_empty() { String::new() } else { format!("[{}]", spec.variant) }
            )
        })?;
    let p = &spec.parts;
    let mut differs = Vec::new();
    if p.engine != ENGINE_VERSION {
        differs.push(format!(
            "engine version {} here, {} on the coordinator (use the same prefflow binary)",
            ENGINE_VERSION, p.engine
        ));
    }
    if p.kind != inst.kind.name() || p.kind_version != inst.kind.version() {
        differs.push(format!(
            "kind {} v{} here, {} v{} on the coordinator",
            inst.kind.name(),
            inst.kind.version(),
            p.kind,
            p.kind_version
        ));
    }
    if spec.whole_stage != inst.per_item.is_none() {
        differs.push(format!(
            "the stage is {} here, {} in the job (the pipeline file changed)",
            if inst.per_item.is_none() {
                "whole-table"
            } else {
                "per-item"
            },
            if spec.whole_stage {
                "whole-table"
            } else {
                "per-item"
            }
        ));
    }
    if p.params != inst.kind.key_params(&inst.params) {
        differs.push("the stage's params (the pipeline file or --set changed)".into());
    }
    for (path, hash) in &p.external {
        if &hash_path(&workdir.join(path)) != hash {
            differs.push(format!(
                "file `{path}` differs from the coordinator's (datasets must be the same on every node: a shared filesystem or the same checkout)"
            ));
        }
    }
    if !differs.is_empty() {
        return Err(format!(
            "{}: this node would compute another recipe than job `{}`: {}",
            inst.label(),
            spec.job,
            differs.join("; ")
        ));
    }
    Ok(inst)
}

/// The worker's share of each pool the instance holds, in name order (as the local runner
/// takes them).
fn worker_pools(inst: &Instance, shares: &BTreeMap<String, u32>) -> Vec<Arc<Semaphore>> {
    let mut names: Vec<&String> = inst.pools.iter().collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .map(|n| {
            let size = shares.get(n).copied().unwrap_or(1).max(1);
            Arc::new(Semaphore::new(size as usize))
        })
        .collect()
}

/// `JOB_TASK` from Slurm's environment, when running as an array task.
pub fn slurm_task_id() -> Option<String> {
    let job = std::env::var("SLURM_ARRAY_JOB_ID").ok()?;
    let task = std::env::var("SLURM_ARRAY_TASK_ID").ok()?;
    Some(format!("{job}_{task}"))
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_index_over_count() {
        assert_eq!(
            "3/16".parse::<Shard>(),
            Ok(Shard {
                index: 3,
                count: 16
            })
        );
        for bad in ["16/16", "1", "a/2", "0/0", "-1/4"] {
            let e = bad.parse::<Shard>().expect_err(bad);
            assert!(e.contains("INDEX/COUNT"), "{e}");
        }
    }
}
