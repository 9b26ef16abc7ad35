//! Execution: runs a [`Plan`] against a [`Store`], reusing every result it already has.
//!
//! Independent instances run concurrently on tokio; each stage's work runs on the blocking pool
//! (kinds are plain synchronous code and may use rayon inside). Per-item stages commit every item
//! as soon as it finishes, so a killed run loses at most the items in flight.
//!
//! The files: this one schedules instances and decides each one ([`crate::decision`]);
//! `inputs` loads an instance's input tables; `prepare` builds its shared state once; `whole`
//! runs a stage in one piece, `items` a per-item stage item by item; `unit` runs one piece of
//! work (blocking or async) with retries; `commit` writes results to the store. What a unit of
//! work needs besides the work is an [`ExecEnv`], so a cluster worker can run the same code.

mod commit;
mod env;
mod inputs;
pub mod interrupt;
mod items;
mod prepare;
mod ran;
mod remote;
mod runner;
mod unit;
mod whole;

pub use commit::{commit_instance, commit_item, Commit, Provenance};
pub use env::ExecEnv;
pub use inputs::{input_blobs, load_inputs, InputBlob};
pub use items::{assemble, run_items_locally, ItemDone};
pub use prepare::prepare;
pub use ran::{ItemFailure, ItemsRan};
pub use remote::{ItemExecutor, RemoteItems, RemoteWhole};
pub use unit::{run_unit, seed_of, Unit, UnitResult, Work};

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use polars::prelude::*;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::artifact::{store_tables, unix_now, Manifest};
use crate::decision::{decide, Decision, Verdict};
use crate::error::{Error, Result, StageError};
use crate::kind::{InputTable, Tables};
use crate::plan::{Instance, Plan};
use crate::progress::{Progress, ProgressMode, StatusSource};
use crate::record::{save_run, ErrorRow, InstanceRecord, RunRecord, Status};
use crate::store::lease::{self, Holder, Lease};
use crate::store::Store;
use runner::{Outcome, Runner};

/// How long a run (or a cluster worker) waits for a `gc` that holds the store before giving up.
pub(crate) const GC_WAIT: Duration = Duration::from_secs(600);

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Relative paths in params resolve against this directory.
    pub workdir: PathBuf,
    /// Run only these stages (and what they need); all when empty.
    pub only: Vec<String>,
    /// Progress display.
    pub progress: ProgressMode,
    /// Period of status lines in log mode.
    pub log_every: Duration,
    /// Forbid external calls that are not already cached (see [`crate::StageContext::offline`]).
    pub offline: bool,
    /// Where the missing items of per-item stages, and the whole-table stages it takes, run
    /// when not in this process (a cluster executor); `None` runs everything locally.
    pub executor: Option<Arc<dyn ItemExecutor>>,
    /// Lines shown with the progress while the run goes (see [`StatusSource`]).
    pub status: Option<StatusSource>,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            workdir: PathBuf::from("."),
            only: Vec::new(),
            progress: ProgressMode::Auto,
            log_every: Duration::from_secs(10),
            offline: false,
            executor: None,
            status: None,
        }
    }
}

/// The result of a run: its record (also saved in the store).
#[derive(Debug, Clone)]
pub struct RunReport {
    /// What happened.
    pub record: RunRecord,
}

impl RunReport {
    /// 0 when everything succeeded; 2 when only user input was at fault; 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        if self.record.errors.is_empty() {
            0
        } else if self.record.errors.iter().all(|e| e.kind == "input") {
            2
        } else {
            1
        }
    }
}

/// Runs `plan` to completion (or failure) and saves the run record.
pub fn run(plan: Arc<Plan>, store: Arc<dyn Store>, opts: &RunOptions) -> Result<RunReport> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_time()
        .build()
        .map_err(|e| Error::Store {
            path: opts.workdir.clone(),
            source: e,
        })?;
    let report = runtime.block_on(run_async(plan, store, opts));
    // Work given up when the run halted (an interrupt, a failed store) may still occupy a
    // blocking thread: the run is over and recorded, so it is not waited for.
    runtime.shutdown_background();
    report
}

/// What a missed instance runs on.
enum Inputs {
    /// A cluster job computes it from these input blobs (its worker loads them itself).
    Remote(Arc<dyn ItemExecutor>, Vec<InputBlob>),
    /// This process, with the inputs loaded (and their blobs, for a cluster's item jobs).
    Loaded(Arc<Vec<InputTable>>, Vec<InputBlob>),
}

/// Takes the run's lease, runs the selected instances, and writes the run record (with its
/// errors table) before letting the lease go.
async fn run_async(plan: Arc<Plan>, store: Arc<dyn Store>, opts: &RunOptions) -> Result<RunReport> {
    let started = Instant::now();
    let started_at = unix_now();
    let selected = plan.select(&opts.only)?;
    let lease = acquire_lease(&plan, &store)?;
    let mut reserve = Reserve::take(store.clone(), &lease.id());
    let runner = Runner::new(&plan, store, opts)?;
    runner.env.attach_lease(lease.clone());
    let ticker = runner.progress.spawn_ticker(opts.log_every);
    let (outcomes, errors) = runner.clone().run_instances(&selected).await?;
    if let Some(t) = ticker {
        t.abort();
    }
    let record = RunRecord {
        pipeline: plan.name.clone(),
        file: plan.file.to_string_lossy().into_owned(),
        run_id: lease.id(),
        started_at,
        seconds: started.elapsed().as_secs_f64(),
        instances: outcomes,
        ..RunRecord::default()
    };
    // The reserve goes first: on a full disk its space is what the record is written into.
    reserve.give_back();
    let record = runner.save_record(record, errors, &lease)?;
    Ok(RunReport { record })
}

/// The run's lease on the store, once no `gc` is collecting it (a full disk is said as such).
fn acquire_lease(plan: &Plan, store: &Arc<dyn Store>) -> Result<Arc<Lease>> {
    let lease = Lease::acquire(store.clone(), Holder::Run, &plan.name).map_err(|e| {
        match e.is_storage_full() {
            true => Error::RunFailed(env::store_failure_message(store.as_ref(), &e)),
            false => e,
        }
    })?;
    let busy = lease::wait_for_gc(store.as_ref(), &lease.id(), GC_WAIT)?;
    if let Some(gc) = busy.first() {
        return Err(Error::RunFailed(format!(
            "the store {} is being garbage-collected by {}; try again when it is done",
            store.describe(),
            gc.describe(unix_now())
        )));
    }
    Ok(lease)
}

impl Runner {
    /// What the run's instances share: resource pools, the execution environment, progress,
    /// the pipeline's previous run record and the item executor.
    fn new(plan: &Arc<Plan>, store: Arc<dyn Store>, opts: &RunOptions) -> Result<Arc<Self>> {
        let previous = crate::record::load_latest(store.as_ref(), &plan.name)?;
        Ok(Arc::new(Runner {
            pools: plan
                .resources
                .iter()
                .map(|(k, &n)| (k.clone(), Arc::new(Semaphore::new(n.max(1) as usize))))
                .collect(),
            env: ExecEnv::new(store, opts.workdir.clone(), opts.offline, plan.name.clone()),
            plan: plan.clone(),
            progress: Progress::new(opts.progress).with_status(opts.status.clone()),
            previous,
            executor: opts.executor.clone(),
        }))
    }

    /// Writes the errors table and the run record (with `errors` and the summary), then
    /// releases the lease; a record that cannot be saved fails the run.
    fn save_record(
        &self,
        mut record: RunRecord,
        errors: Vec<ErrorRow>,
        lease: &Lease,
    ) -> Result<RunRecord> {
        let items_failed = errors.iter().filter(|e| e.item.is_some()).count();
        let store = self.env.store.as_ref();
        // After a failed write the errors table may not fit: the record (which lists the
        // errors too) is what matters, so a failure here is logged and the record still
        // written. After the store failed, what follows fails the same way: said once, by the
        // error.
        let failed_store = self.env.store_failed();
        record.errors_blob = errors_blob(store, &errors).unwrap_or_else(|e| {
            match failed_store {
                true => tracing::debug!("could not write the errors table: {e}"),
                false => tracing::warn!("could not write the errors table: {e}"),
            }
            None
        });
        record.errors = errors;
        record.summarize(items_failed);
        let saved = save_run(store, &record).map_err(|e| match self.env.store_failure() {
            // The store failed during the run already: that failure is the news.
            Some(first) => Error::RunFailed(format!(
                "{first}; the run's record could not be written either"
            )),
            None => Error::RunFailed(format!(
                "the run finished but its record could not be saved: {}",
                env::store_failure_message(store, &e)
            )),
        });
        if let Err(e) = lease.release() {
            match failed_store {
                true => tracing::debug!("could not release the run's lease {}: {e}", lease.id()),
                false => tracing::warn!("could not release the run's lease {}: {e}", lease.id()),
            }
        }
        saved?;
        Ok(record)
    }
}

/// Space set aside on a local store at the start of a run, so that when the disk fills up
/// the run can still write its record and errors table: the reserve is removed first (and
/// on drop, whatever way the run ends).
struct Reserve {
    store: Arc<dyn Store>,
    key: Option<String>,
}

impl Reserve {
    /// Bytes set aside: room for the record of a run with thousands of items.
    const BYTES: usize = 256 * 1024;

    /// Writes the reserve file (named like a temporary file of this process, so `gc` removes
    /// it if the run is killed); a remote store needs none, and a full disk gets none. The
    /// reserves of killed runs are removed first: their space is given back at the next start.
    fn take(store: Arc<dyn Store>, lease: &str) -> Self {
        let key = format!(
            "tmp/.reserve-{lease}.{}-{}-0{}",
            crate::store::host_name(),
            std::process::id(),
            crate::store::TMP_SUFFIX
        );
        let local = store.local_path(&key).is_some();
        if local {
            Self::remove_stale(store.as_ref());
        }
        let written = local && store.put(&key, &vec![0u8; Self::BYTES]).is_ok();
        Self {
            store,
            key: written.then_some(key),
        }
    }

    /// Removes the reserve files of runs that are gone (killed before giving theirs back).
    fn remove_stale(store: &dyn Store) {
        let now = unix_now();
        let Ok(listed) = store.list_meta("tmp") else {
            return;
        };
        for meta in listed {
            let reserve = meta.key.starts_with("tmp/.reserve-");
            if reserve && crate::store::tmp_is_stale(&meta, now) {
                match store.delete(&meta.key) {
                    Ok(()) => tracing::debug!("removed {}, left by a killed run", meta.key),
                    Err(e) => tracing::debug!("cannot remove {}: {e}", meta.key),
                }
            }
        }
    }

    /// Frees the reserved space.
    fn give_back(&mut self) {
        if let Some(key) = self.key.take() {
            let _ = self.store.delete(&key);
        }
    }
}

impl Drop for Reserve {
    fn drop(&mut self) {
        self.give_back();
    }
}

fn errors_blob(store: &dyn Store, errors: &[ErrorRow]) -> Result<Option<String>> {
    if errors.is_empty() {
        return Ok(None);
    }
    let df = df!(
        "stage" => errors.iter().map(|e| e.stage.clone()).collect::<Vec<_>>(),
        "variant" => errors.iter().map(|e| e.variant.clone()).collect::<Vec<_>>(),
        "item" => errors.iter().map(|e| e.item.clone()).collect::<Vec<_>>(),
        "attempts" => errors.iter().map(|e| e.attempts).collect::<Vec<_>>(),
        "kind" => errors.iter().map(|e| e.kind.clone()).collect::<Vec<_>>(),
        "message" => errors.iter().map(|e| e.message.clone()).collect::<Vec<_>>(),
        "ran_in" => errors.iter().map(|e| e.ran_in.clone()).collect::<Vec<_>>(),
    )?;
    let (entries, _) = store_tables(store, &Tables::single("errors", df))?;
    Ok(entries.get("errors").map(|e| e.blob.clone()))
}

impl Runner {
    /// Starts every instance as soon as its upstream instances are done; returns their records
    /// in plan order and every error row.
    async fn run_instances(
        self: Arc<Self>,
        selected: &[bool],
    ) -> Result<(Vec<InstanceRecord>, Vec<ErrorRow>)> {
        let instances = &self.plan.instances;
        let n = instances.len();
        let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut waiting: Vec<usize> = vec![0; n];
        for inst in instances {
            let mut ups: Vec<usize> = inst.bindings.iter().map(|b| b.instance).collect();
            ups.sort_unstable();
            ups.dedup();
            waiting[inst.id] = ups.len();
            for u in ups {
                dependents[u].push(inst.id);
            }
        }
        let mut outcomes: Vec<Option<Arc<InstanceRecord>>> = vec![None; n];
        let mut errors: Vec<ErrorRow> = Vec::new();
        let mut tasks: JoinSet<(usize, Outcome)> = JoinSet::new();
        let start = |id: usize,
                     outcomes: &Vec<Option<Arc<InstanceRecord>>>,
                     tasks: &mut JoinSet<(usize, Outcome)>| {
            let upstream: Vec<Arc<InstanceRecord>> = instances[id]
                .bindings
                .iter()
                .filter_map(|b| outcomes[b.instance].clone())
                .collect();
            let runner = self.clone();
            let selected = selected[id];
            tasks.spawn(async move { (id, runner.instance(id, selected, upstream).await) });
        };
        for id in (0..n).filter(|&i| waiting[i] == 0) {
            start(id, &outcomes, &mut tasks);
        }
        while let Some(joined) = tasks.join_next().await {
            let (id, (record, rows)) =
                joined.map_err(|e| Error::RunFailed(format!("internal task failure: {e}")))?;
            errors.extend(rows);
            outcomes[id] = Some(Arc::new(record));
            for &d in &dependents[id] {
                waiting[d] -= 1;
                if waiting[d] == 0 {
                    start(d, &outcomes, &mut tasks);
                }
            }
        }
        let records = outcomes
            .into_iter()
            .flatten()
            .map(|r| Arc::try_unwrap(r).unwrap_or_else(|a| (*a).clone()))
            .collect();
        Ok((records, errors))
    }

    /// Runs one instance: decides, then serves it from the store or runs it.
    async fn instance(
        self: Arc<Self>,
        id: usize,
        selected: bool,
        upstream: Vec<Arc<InstanceRecord>>,
    ) -> Outcome {
        let inst = &self.plan.instances[id].clone();
        if let Some(outcome) = self.not_started(inst, selected, &upstream) {
            return outcome;
        }
        let started = Instant::now();
        let decision = match self.decide(id, &upstream).await {
            Ok(d) => d,
            Err(e) => {
                let why = self.env.note_if_store_failure(&e);
                return self.fail(inst, None, 1, &StageError::Failed(why));
            }
        };
        if let Some(outcome) = self.served(inst, &decision, started) {
            return outcome;
        }
        let source = match self.inputs(inst, &decision, &upstream).await {
            Ok(source) => source,
            Err(outcome) => return outcome,
        };
        let result = match source {
            // A cluster job computes and commits it; its worker loads the inputs itself.
            Inputs::Remote(executor, blobs) => {
                let run = self
                    .clone()
                    .run_whole_remote(executor, inst.clone(), decision, blobs);
                run.await
            }
            Inputs::Loaded(inputs, blobs) if inst.per_item.is_some() => {
                let run = self
                    .clone()
                    .run_items(inst.clone(), decision, (inputs, blobs), started);
                run.await
            }
            Inputs::Loaded(inputs, _) => {
                self.clone().run_whole(inst.clone(), decision, inputs).await
            }
        };
        self.env.say_retries(inst);
        match result {
            Ok((manifest, spent)) => {
                let mut rec = self.finished(inst, Status::Executed, &manifest, started);
                rec.usage = spent;
                (rec, vec![])
            }
            Err(outcome) => outcome,
        }
    }

    /// The record of an instance that does not start: not selected, an upstream that did not
    /// succeed, or a run already halted. `None` when it may start.
    fn not_started(
        &self,
        inst: &Instance,
        selected: bool,
        upstream: &[Arc<InstanceRecord>],
    ) -> Option<Outcome> {
        if !selected {
            return Some((self.record(inst, Status::NotSelected), vec![]));
        }
        let failed =
            |u: &&Arc<InstanceRecord>| !u.status.succeeded() && u.status != Status::Disabled;
        if let Some(bad) = upstream.iter().find(failed) {
            let mut rec = self.record(inst, Status::Skipped);
            rec.message = Some(format!("upstream `{}` did not succeed", bad.label()));
            return Some((rec, vec![]));
        }
        let why = self.env.halted()?;
        let mut rec = self.record(inst, Status::Skipped);
        rec.message = Some(format!("not started: {why}"));
        Some((rec, vec![]))
    }

    /// The record of an instance the decision settles without running it: cached or
    /// disabled. `None` on a miss.
    fn served(&self, inst: &Instance, decision: &Decision, started: Instant) -> Option<Outcome> {
        match &decision.verdict {
            Verdict::Hit(manifest) => {
                self.progress.line(&format!("{}: cached", inst.label()));
                Some((
                    self.finished(inst, Status::Cached, manifest, started),
                    vec![],
                ))
            }
            Verdict::Disabled(why) => {
                self.progress
                    .line(&format!("{}: disabled ({why})", inst.label()));
                let mut rec = self.record(inst, Status::Disabled);
                rec.message = Some(why.clone());
                Some((rec, vec![]))
            }
            Verdict::Miss => None,
        }
    }

    /// What a missed instance runs on: a whole-table instance's key protected from `gc`, its
    /// input blobs, and either the cluster executor that takes it or its inputs loaded here.
    async fn inputs(
        &self,
        inst: &Arc<Instance>,
        decision: &Decision,
        upstream: &[Arc<InstanceRecord>],
    ) -> std::result::Result<Inputs, Outcome> {
        if inst.per_item.is_none() {
            if let Err(e) = self.protect(inst, &decision.key, Vec::new()).await {
                return Err(self.fail(inst, None, 1, &e));
            }
        }
        let blobs = match input_blobs(inst, upstream) {
            Ok(blobs) => blobs,
            Err(e) => return Err(self.fail(inst, None, 1, &StageError::Failed(e.to_string()))),
        };
        let remote_whole =
            (self.executor.clone()).filter(|x| inst.per_item.is_none() && x.takes_whole(inst));
        if let Some(executor) = remote_whole {
            return Ok(Inputs::Remote(executor, blobs));
        }
        match self.load_inputs(blobs.clone()).await {
            Ok(inputs) => Ok(Inputs::Loaded(Arc::new(inputs), blobs)),
            Err(e) => {
                let why = self.env.note_if_store_failure(&e);
                Err(self.fail(inst, None, 1, &StageError::Failed(why)))
            }
        }
    }

    /// The cache decision for instance `id`, taken on a blocking thread (it reads the store).
    async fn decide(
        self: &Arc<Self>,
        id: usize,
        upstream: &[Arc<InstanceRecord>],
    ) -> Result<Decision> {
        let this = self.clone();
        let upstream = upstream.to_vec();
        tokio::task::spawn_blocking(move || {
            let inst = &this.plan.instances[id];
            let env = &this.env;
            let previous = this.previous.as_ref();
            decide(env.store.as_ref(), &env.workdir, inst, &upstream, previous)
        })
        .await
        .map_err(|e| Error::RunFailed(format!("internal error: {e}")))?
    }

    fn finished(
        &self,
        inst: &Instance,
        status: Status,
        m: &Manifest,
        started: Instant,
    ) -> InstanceRecord {
        let mut rec = InstanceRecord::from_manifest(
            &inst.stage,
            inst.variant.name(),
            inst.kind.name(),
            status,
            m,
        );
        rec.seconds = started.elapsed().as_secs_f64();
        rec.unchanged_output = status == Status::Executed
            && self
                .previous
                .as_ref()
                .and_then(|p| p.instance(&rec.stage, &rec.variant))
                .is_some_and(|p| p.data_version.as_deref() == Some(m.data_version.as_str()));
        rec
    }

    /// The input tables of an instance (its `blobs`), loaded on a blocking thread.
    async fn load_inputs(&self, blobs: Vec<InputBlob>) -> Result<Vec<InputTable>> {
        let env = self.env.clone();
        tokio::task::spawn_blocking(move || load_inputs(env.store.as_ref(), blobs))
            .await
            .map_err(|e| Error::RunFailed(format!("internal error: {e}")))?
    }
}
