//! The coordinator side of the Slurm executor: for each per-item instance with missing items
//! it writes the job to the store, submits one job array, follows it with `squeue`/`scontrol`,
//! counts committed items in the store for progress, re-submits failed or pre-empted tasks up
//! to the stage's `retries`, and hands the committed items back to the local runner, which
//! assembles and commits the instance exactly as it does for local items. A whole-table
//! instance marked `executor: slurm` is the same with one target: a one-task array whose
//! worker commits the instance under its recipe key, which the runner then takes as its result.
//!
//! A coordinator can be killed at any point: the job and its submissions are in the store, so
//! a restarted one adopts the arrays still queued or running and submits only the shards whose
//! items are still missing; workers skip items already committed.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use super::config::SlurmSettings;
use super::job::{self, JobInput, JobSpec, ShardReport, Submission, Submissions};
use super::slurm::{ArrayRequest, SlurmClient, SlurmError, TaskState};
use crate::artifact::{item_path, load_manifest, load_tables, recipe_path, unix_now, Manifest};
use crate::decision::Decision;
use crate::error::StageError;
use crate::exec::{
    ExecEnv, InputBlob, ItemExecutor, ItemFailure, ItemsRan, RemoteItems, RemoteWhole,
};
use crate::kind::Tables;
use crate::plan::Instance;
use crate::store::Store;

/// Slurm array jobs this process submitted and has not seen finish: cancelled on Ctrl-C.
static LIVE: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
static SIGNALS: Once = Once::new();

/// How long a freshly submitted array may be missing from squeue and scontrol before its
/// tasks count as gone (a scancel'ed pending task leaves no record at all).
const VISIBLE_WITHIN: Duration = Duration::from_secs(30);

/// Consecutive failed looks at Slurm after which the coordinator gives up on a job.
const MAX_POLL_ERRORS: u32 = 60;

/// The Slurm executor, as the local runner sees it.
#[derive(Debug)]
pub struct SlurmExecutor {
    settings: SlurmSettings,
    client: SlurmClient,
    /// What workers get as `--store`.
    store_arg: String,
    /// The pipeline file as given, and the `--set` overrides.
    file: String,
    overrides: Vec<String>,
    /// Per-item stages whose items stay on the coordinator (`executor: local`).
    local_stages: BTreeSet<String>,
    /// Whole-table stages that run as one job each (`executor: slurm`).
    job_stages: BTreeSet<String>,
    /// The working directory, absolute (`--chdir` of the tasks).
    workdir: PathBuf,
    /// The worker binary.
    worker: PathBuf,
    offline: bool,
    /// Held while submitting; holds the first configuration mistake Slurm showed, after which
    /// nothing more is submitted (stages running side by side say it once, not once each).
    refused: Mutex<Option<String>>,
}

/// What the executor is built from.
pub struct SlurmSetup {
    /// Checked settings.
    pub settings: SlurmSettings,
    /// The store as workers must name it (an absolute path or a URL).
    pub store_arg: String,
    /// The pipeline file as the user gave it.
    pub file: String,
    /// `--set` overrides.
    pub overrides: Vec<String>,
    /// Per-item stages marked `executor: local`.
    pub local_stages: BTreeSet<String>,
    /// Whole-table stages marked `executor: slurm`.
    pub job_stages: BTreeSet<String>,
    /// Absolute working directory.
    pub workdir: PathBuf,
    /// Offline run.
    pub offline: bool,
}

impl SlurmExecutor {
    /// An executor with `setup`; installs the Ctrl-C handler that cancels its jobs.
    pub fn new(setup: SlurmSetup) -> std::io::Result<Self> {
        let worker = match &setup.settings.worker {
            Some(w) => w.clone(),
            None => std::env::current_exe()?,
        };
        install_signal_handler();
        Ok(Self {
            client: SlurmClient::default(),
            store_arg: setup.store_arg,
            file: setup.file,
            overrides: setup.overrides,
            local_stages: setup.local_stages,
            job_stages: setup.job_stages,
            workdir: setup.workdir,
            worker,
            offline: setup.offline,
            settings: setup.settings,
            refused: Mutex::new(None),
        })
    }

    /// The batch script of a job with `shards` tasks.
    fn script(&self, job: &str, shards: u32) -> String {
        format!(
            "#!/bin/sh\n# prefflow worker (job {job})\nexec {} --store {} work --job {} --shard \"${{SLURM_ARRAY_TASK_ID}}/{shards}\"\n",
            quote(&self.worker.to_string_lossy()),
            quote(&self.store_arg),
            quote(job),
        )
    }

    /// sbatch options from the settings.
    fn options(&self) -> Vec<String> {
        let s = &self.settings;
        let mut o = Vec::new();
        let mut opt = |name: &str, v: &Option<String>| {
            if let Some(v) = v {
                o.push(format!("--{name}={v}"));
            }
        };
        opt("partition", &s.partition);
        opt("account", &s.account);
        opt("qos", &s.qos);
        opt("time", &s.time);
        opt("mem", &s.mem);
        opt("cpus-per-task", &s.cpus_per_task.map(|c| c.to_string()));
        o.extend(s.sbatch_args.iter().cloned());
        o
    }

    fn log_dir(&self) -> PathBuf {
        self.workdir.join(&self.settings.log_dir)
    }

    /// Submits `shards` of `spec` as one array; records it in the store before returning.
    fn submit(
        &self,
        store: &dyn Store,
        spec: &JobSpec,
        label: &str,
        shards: &[u32],
        subs: &mut Submissions,
    ) -> Result<String, SubmitError> {
        let parallel = self.parallel(spec);
        let dir = self.log_dir();
        std::fs::create_dir_all(&dir).map_err(|e| {
            SubmitError::Failed(format!(
                "cannot create the task log directory {}: {e}",
                dir.display()
            ))
        })?;
        let req = ArrayRequest {
            name: format!("prefflow:{label}"),
            indices: shards.to_vec(),
            parallel,
            options: self.options(),
            export: if self.settings.export.is_empty() {
                "ALL".into()
            } else {
                self.settings.export.join(",")
            },
            workdir: self.workdir.clone(),
            output: dir.join("%A_%a.log"),
            script: self.script(&spec.job, spec.shards),
        };
        let id = {
            let mut refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
            if refused.is_some() {
                return Err(SubmitError::Halted);
            }
            let submitted = self
                .client
                .submit(&req)
                .map_err(|e| SubmitError::of(e, label));
            if let Err(SubmitError::Refused(why)) = &submitted {
                *refused = Some(why.clone());
            }
            submitted?
        };
        if let Ok(mut live) = LIVE.lock() {
            live.insert(id.clone());
        }
        subs.list.push(Submission {
            slurm_job: id.clone(),
            shards: shards.to_vec(),
            at: unix_now(),
        });
        job::save(store, &job::submissions_key(&spec.job), subs).map_err(|e| {
            SubmitError::Failed(format!("cannot record slurm job {id} in the store: {e}"))
        })?;
        if spec.whole_stage {
            tracing::info!("{label}: submitted slurm job {id} (the whole stage, one task)");
        } else {
            tracing::info!(
                "{label}: submitted slurm job {id} ({} task(s) of {}, {} item(s))",
                shards.len(),
                spec.shards,
                shards
                    .iter()
                    .map(|&s| spec.shard_items(s).len())
                    .sum::<usize>()
            );
        }
        Ok(id)
    }

    /// `%N` for an array of `spec`: the settings' `parallel`, bounded by the smallest pool.
    fn parallel(&self, spec: &JobSpec) -> Option<u32> {
        parallel_limit(self.settings.parallel, &spec.pools_declared)
    }
}

/// Why a submission did not happen.
#[derive(Debug)]
enum SubmitError {
    /// Slurm refused the job's settings (a partition, account or QOS it does not know, a
    /// time limit over the partition's, an option it rejects), or there is no Slurm here:
    /// every later submission would be refused alike, so the run stops (exit 2).
    Refused(String),
    /// Anything else (a controller that did not answer, the store): this stage fails.
    Failed(String),
    /// Nothing is submitted any more: an earlier submission was refused.
    Halted,
}

impl SubmitError {
    /// Classifies a failed `sbatch` of stage `label`.
    fn of(e: SlurmError, label: &str) -> Self {
        const SETTINGS: &str = "fix the executor settings (partition, account, qos, time, mem, cpus_per_task, sbatch_args) in the pipeline's `executor:` block or the profile (docs/cluster.md)";
        match e {
            SlurmError::Failed { stderr, code, .. } if !transient_refusal(&stderr) => {
                SubmitError::Refused(format!(
                    "sbatch refused the job of stage `{label}` (exit {code}): {}; {SETTINGS}",
                    stderr.trim()
                ))
            }
            SlurmError::Spawn { .. } => {
                SubmitError::Refused(format!("cannot submit the job of stage `{label}`: {e}"))
            }
            e => SubmitError::Failed(format!("{e} ({SETTINGS})")),
        }
    }
}

/// Whether an sbatch error says "try again later" rather than "not like this".
fn transient_refusal(stderr: &str) -> bool {
    let s = stderr.to_ascii_lowercase();
    [
        "socket timed out",
        "unable to contact",
        "temporarily unavailable",
        "try again",
        "zero bytes were transmitted",
        "connection refused",
        "slurmctld not responding",
    ]
    .iter()
    .any(|m| s.contains(m))
}

/// `%N`: `parallel`, bounded by the smallest declared pool the stage holds (so that, with
/// every task holding at least one slot, the pool's bound holds across workers).
fn parallel_limit(parallel: Option<u32>, pools: &BTreeMap<String, u32>) -> Option<u32> {
    let smallest = pools.values().copied().min();
    match (parallel, smallest) {
        (Some(p), Some(s)) => Some(p.min(s)),
        (p, s) => p.or(s),
    }
}

/// Each worker's share of each pool: the pool divided among the tasks that run at once.
fn pool_shares(pools: &BTreeMap<String, u32>, at_once: u32) -> BTreeMap<String, u32> {
    pools
        .iter()
        .map(|(n, &size)| (n.clone(), (size / at_once.max(1)).max(1)))
        .collect()
}

/// Single-quotes `s` for sh.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

impl ItemExecutor for SlurmExecutor {
    fn takes(&self, inst: &Instance) -> bool {
        !self.local_stages.contains(&inst.stage)
    }

    fn run_items(&self, req: RemoteItems) -> ItemsRan {
        self.follow(&Request::items(req))
    }

    fn takes_whole(&self, inst: &Instance) -> bool {
        inst.per_item.is_none() && self.job_stages.contains(&inst.stage)
    }

    fn run_whole(&self, req: RemoteWhole) -> ItemsRan {
        self.follow(&Request::whole(req))
    }
}

/// What a job computes, as the coordinator follows it: its targets by position — the items
/// of a per-item instance, or a whole-table instance as one target keyed by its recipe key —
/// and what its spec is made of.
struct Request {
    env: Arc<ExecEnv>,
    inst: Arc<Instance>,
    decision: Decision,
    inputs: Vec<InputBlob>,
    pools: BTreeMap<String, u32>,
    /// Called once for each target seen committed, for progress.
    on_committed: Arc<dyn Fn() + Send + Sync>,
    /// Each target's key, by position.
    keys: Vec<String>,
    /// Positions of the targets to compute.
    missing: Vec<usize>,
    /// One target, the whole stage, committed under its recipe key.
    whole_stage: bool,
}

impl Request {
    fn items(req: RemoteItems) -> Self {
        let items = &req.items.items;
        Self {
            keys: items.iter().map(|i| i.key.clone()).collect(),
            missing: (0..items.len())
                .filter(|&i| items[i].hit.is_none())
                .collect(),
            whole_stage: false,
            env: req.env,
            inst: req.inst,
            decision: req.decision,
            inputs: req.inputs,
            pools: req.pools,
            on_committed: req.on_committed,
        }
    }

    fn whole(req: RemoteWhole) -> Self {
        Self {
            keys: vec![req.decision.key.clone()],
            missing: vec![0],
            whole_stage: true,
            env: req.env,
            inst: req.inst,
            decision: req.decision,
            inputs: req.inputs,
            pools: req.pools,
            on_committed: Arc::new(|| {}),
        }
    }

    /// Where target `key` is committed: an item manifest, or the instance's recipe manifest.
    fn manifest_path(&self, key: &str) -> String {
        match self.whole_stage {
            true => recipe_path(key),
            false => item_path(key),
        }
    }
}

/// One shard as the coordinator follows it.
#[derive(Debug)]
struct ShardTrack {
    /// Positions (in the instance's items) of its items not yet seen committed.
    pending: Vec<usize>,
    /// Submissions of it made by this coordinator.
    attempts: u32,
    /// Its latest task: (Slurm job id, submitted at).
    last: Option<(String, Instant)>,
    /// Given up: why (per item, or for the shard).
    failed: Option<Vec<ItemFailure>>,
}

impl SlurmExecutor {
    /// Runs `req` as a job and follows it to the end; a failure to run it at all fails every
    /// target.
    fn follow(&self, req: &Request) -> ItemsRan {
        match self.supervise(req) {
            Ok(ran) => ran,
            Err(message) => ItemsRan {
                fresh: HashMap::new(),
                failures: vec![ItemFailure::local(None, 1, StageError::Failed(message))],
            },
        }
    }

    /// Follows the job of `req` until every shard has committed its items or given up: each
    /// round looks where the tasks are, collects what is committed, decides what each
    /// unfinished shard needs, and submits those that need a task as one array.
    fn supervise(&self, req: &Request) -> Result<ItemsRan, String> {
        let store = req.env.store.as_ref();
        let label = req.inst.label();
        let (spec, mut subs, adopted) = self.job_for(req, &req.missing)?;
        let mut shards = track_shards(req, &spec, &subs, adopted);
        if adopted {
            say_adopted(&label, &shards);
        }
        let mut fresh: HashMap<usize, (Manifest, Tables)> = HashMap::new();
        let mut poll_errors = 0u32;
        loop {
            // 1. Where the tasks are.
            let (jobs, states) = self.task_states(&label, &shards);
            let looked = states.len() == jobs.len();
            poll_errors = if looked { 0 } else { poll_errors + 1 };
            if poll_errors >= MAX_POLL_ERRORS {
                return Err(format!(
                    "lost track of slurm job(s) {}: Slurm did not answer {MAX_POLL_ERRORS} times in a row; the tasks may still run: re-run to adopt them",
                    jobs.into_iter().collect::<Vec<_>>().join(", ")
                ));
            }
            // 2. What is committed (after the states: a finished task committed before it
            // ended): one listing of the workers' marks, then only the marked items are read.
            let marked = marked_items(store, &spec.job);
            for t in shards.values_mut() {
                collect(req, store, t, &mut fresh, |key| marked.contains(key));
            }
            // 3. What each unfinished shard needs.
            let mut to_submit = Vec::new();
            for (&s, t) in shards.iter_mut() {
                if t.pending.is_empty() || t.failed.is_some() || !looked {
                    continue;
                }
                match self.shard_step(req, &spec, (s, t), &states, &mut fresh) {
                    Step::Leave => {}
                    Step::Submit => to_submit.push(s),
                    Step::Stop(why) => return Ok(self.stop_stage(req, &shards, fresh, why)),
                }
            }
            // 4. Submit what needs it, as one array.
            if !to_submit.is_empty() {
                let submitted =
                    self.submit_shards(req, (&spec, &mut subs), &to_submit, &mut shards);
                if let Err(why) = submitted {
                    return Ok(self.stop_stage(req, &shards, fresh, why));
                }
            }
            forget_finished(&shards, &states);
            if shards
                .values()
                .all(|t| t.pending.is_empty() || t.failed.is_some())
            {
                break;
            }
            std::thread::sleep(self.settings.poll);
        }
        let failures = shards
            .into_values()
            .filter(|t| !t.pending.is_empty())
            .flat_map(|t| t.failed.unwrap_or_default())
            .collect();
        Ok(ItemsRan { fresh, failures })
    }

    /// The Slurm jobs of the shards still running, and the task states of those Slurm
    /// answered for (a job missing from the states could not be looked at).
    fn task_states(
        &self,
        label: &str,
        shards: &BTreeMap<u32, ShardTrack>,
    ) -> (BTreeSet<String>, TaskStates) {
        let jobs: BTreeSet<String> = shards
            .values()
            .filter(|t| t.failed.is_none() && !t.pending.is_empty())
            .filter_map(|t| t.last.as_ref().map(|(j, _)| j.clone()))
            .collect();
        let mut states: TaskStates = HashMap::new();
        for j in &jobs {
            match self.client.states(j) {
                Ok(s) => {
                    states.insert(j.clone(), s);
                }
                Err(e) => tracing::warn!("{label}: cannot look at slurm job {j}: {e}"),
            }
        }
        (jobs, states)
    }

    /// What unfinished shard `s` needs: a first task, nothing while its task is waiting or
    /// running, and once its task is over without committing every item, another attempt,
    /// giving up (its failures kept in `t.failed`), or stopping the stage when its worker
    /// could not start.
    fn shard_step(
        &self,
        req: &Request,
        spec: &JobSpec,
        (s, t): (u32, &mut ShardTrack),
        states: &TaskStates,
        fresh: &mut HashMap<usize, (Manifest, Tables)>,
    ) -> Step {
        let Some((j, submitted)) = t.last.clone() else {
            return Step::Submit;
        };
        let state = states.get(&j).and_then(|m| m.get(&s)).cloned();
        let ended = match state {
            Some(TaskState::Waiting(_)) | Some(TaskState::Running(_)) => return Step::Leave,
            None if submitted.elapsed() < VISIBLE_WITHIN => return Step::Leave,
            None => "gone (no record in squeue or scontrol)".to_string(),
            Some(TaskState::Completed) => "COMPLETED".to_string(),
            Some(TaskState::Ended(name)) => name,
        };
        // The task is over: ask for its unmarked items one by one, once (a worker killed
        // between commit and mark, or items another run committed).
        let store = req.env.store.as_ref();
        collect(req, store, t, fresh, |_| true);
        if t.pending.is_empty() {
            return Step::Leave;
        }
        let task = format!("{j}_{s}");
        let report = job::load::<ShardReport>(store, &job::report_key(&spec.job, s))
            .ok()
            .flatten()
            .filter(|r| r.slurm.as_deref() == Some(task.as_str()));
        let log = self.log_dir().join(format!("{j}_{s}.log"));
        if report.is_none() {
            if let Some(why) = self.worker_did_not_start(&j, s, &task, &log) {
                return Step::Stop(why);
            }
        }
        let failures = verdict(req, spec, s, t, &task, &ended, report.as_ref(), &log);
        let inst = &req.inst;
        if t.attempts > inst.retries || !retryable(report.as_ref()) {
            t.failed = Some(failures);
            return Step::Leave;
        }
        tracing::warn!(
            "{}: slurm task {task} ended {ended} with {} item(s) missing; re-submitting (attempt {} of {})",
            inst.label(),
            t.pending.len(),
            t.attempts + 1,
            inst.retries + 1
        );
        Step::Submit
    }

    /// Submits the shards `to_submit` as one array and notes the attempt on each. A
    /// submission that failed fails those shards (one row for it, not one per item it would
    /// have run); `Err(why)` when the stage must stop (Slurm refused the settings, or the run
    /// halted: `why` empty).
    fn submit_shards(
        &self,
        req: &Request,
        (spec, subs): (&JobSpec, &mut Submissions),
        to_submit: &[u32],
        shards: &mut BTreeMap<u32, ShardTrack>,
    ) -> Result<(), String> {
        let store = req.env.store.as_ref();
        match self.submit(store, spec, &req.inst.label(), to_submit, subs) {
            Ok(id) => {
                for s in to_submit {
                    if let Some(t) = shards.get_mut(s) {
                        t.attempts += 1;
                        t.last = Some((id.clone(), Instant::now()));
                    }
                }
                Ok(())
            }
            Err(SubmitError::Refused(message)) => Err(message),
            Err(SubmitError::Halted) => Err(String::new()),
            Err(SubmitError::Failed(message)) => {
                fail_unsubmitted(shards, to_submit, &message);
                Ok(())
            }
        }
    }

    /// Ends the stage on a configuration mistake (`why`, said once): the run starts nothing
    /// new, this job's arrays still queued or running are cancelled, and the stage fails with
    /// one row of bad input (exit 2) instead of one per item.
    fn stop_stage(
        &self,
        req: &Request,
        shards: &BTreeMap<u32, ShardTrack>,
        fresh: HashMap<usize, (Manifest, Tables)>,
        why: String,
    ) -> ItemsRan {
        // Said once: the first stage to meet the mistake reports it; the others stop quietly.
        let first = {
            let mut refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
            let first = refused.is_none() || refused.as_deref() == Some(why.as_str());
            if refused.is_none() {
                *refused = Some(why.clone());
            }
            first && !why.is_empty()
        };
        if first {
            req.env.halt(&why);
        }
        let live: BTreeSet<String> = shards
            .values()
            .filter_map(|t| t.last.as_ref().map(|(j, _)| j.clone()))
            .collect();
        let live: Vec<String> = live.into_iter().collect();
        if let Err(e) = self.client.cancel(&live) {
            tracing::warn!("could not cancel slurm job(s) {}: {e}", live.join(", "));
        }
        if let Ok(mut known) = LIVE.lock() {
            for j in &live {
                known.remove(j);
            }
        }
        match first {
            true => ItemsRan {
                fresh,
                failures: vec![ItemFailure::local(None, 1, StageError::Input(why))],
            },
            false => ItemsRan {
                fresh,
                ..ItemsRan::not_started("the run stopped at an earlier error")
            },
        }
    }

    /// Why task `task` (shard `shard` of Slurm job `job`), which ended without a report,
    /// never ran a worker: its batch script could not start the worker binary (exit 126 or
    /// 127, the shell's "cannot execute" and "not found"). `None` for any other ending.
    fn worker_did_not_start(
        &self,
        job: &str,
        shard: u32,
        task: &str,
        log: &std::path::Path,
    ) -> Option<String> {
        let tasks = self.client.scontrol(job).ok()?;
        let (_, exit) = tasks.get(&shard)?;
        let code = exit.split(':').next()?.trim();
        if code != "126" && code != "127" {
            return None;
        }
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(3).collect();
        let said = match tail.is_empty() {
            true => String::new(),
            false => format!(
                ": {}",
                tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
            ),
        };
        Some(format!(
            "slurm task {task} could not start the worker `{}` on its node (exit {code}{said}; log {}); set `worker:` in the executor settings to a prefflow binary built from this commit at a path every node can run (docs/cluster.md, \"What has to be where\")",
            self.worker.display(),
            log.display()
        ))
    }

    /// The job for the missing items: the stored one when it covers them (adopting its
    /// submissions), else a new one written to the store.
    fn job_for(
        &self,
        req: &Request,
        missing: &[usize],
    ) -> Result<(JobSpec, Submissions, bool), String> {
        let store = req.env.store.as_ref();
        let job_id = req.decision.key.clone();
        let keys: Vec<String> = missing.iter().map(|&i| req.keys[i].clone()).collect();
        let stored: Option<JobSpec> = job::load(store, &job::spec_key(&job_id)).ok().flatten();
        if let Some(spec) = stored {
            let known: BTreeSet<&str> = spec.items.iter().map(String::as_str).collect();
            let covers = keys.iter().all(|k| known.contains(k.as_str()));
            let same = spec.parts == req.decision.parts
                && spec.file == self.file
                && spec.whole_stage == req.whole_stage;
            if covers && same {
                let subs = job::load(store, &job::submissions_key(&job_id))
                    .ok()
                    .flatten()
                    .unwrap_or_default();
                return Ok((spec, subs, true));
            }
        }
        let per_task = self.settings.items_per_task.max(1) as usize;
        let shards = keys
            .len()
            .div_ceil(per_task)
            .min(self.settings.max_array_size as usize)
            .max(1) as u32;
        let at_once = parallel_limit(self.settings.parallel, &req.pools)
            .unwrap_or(shards)
            .min(shards);
        let spec = JobSpec {
            job: job_id.clone(),
            file: self.file.clone(),
            overrides: self.overrides.clone(),
            offline: self.offline,
            stage: req.inst.stage.clone(),
            variant: req.inst.variant.name(),
            parts: req.decision.parts.clone(),
            inputs: req.inputs.iter().map(JobInput::from).collect(),
            items: keys,
            whole_stage: req.whole_stage,
            shards,
            pools: pool_shares(&req.pools, at_once),
            pools_declared: req.pools.clone(),
        };
        job::save(store, &job::spec_key(&job_id), &spec)
            .map_err(|e| format!("cannot write the job to the store: {e}"))?;
        let subs = Submissions::default();
        job::save(store, &job::submissions_key(&job_id), &subs)
            .map_err(|e| format!("cannot write the job to the store: {e}"))?;
        Ok((spec, subs, false))
    }
}

/// Task states by Slurm job id, then array index.
type TaskStates = HashMap<String, BTreeMap<u32, TaskState>>;

/// What an unfinished shard needs this round.
enum Step {
    /// Nothing: its task is waiting or running, it has just committed everything, or it was
    /// given up.
    Leave,
    /// A task: its first, or another attempt.
    Submit,
    /// The stage stops (a configuration mistake, said once).
    Stop(String),
}

/// The shards of `spec` with items still missing in `req`, each with those items; for an
/// adopted job, each shard's latest task is the earlier coordinator's (not counted as one of
/// this run's attempts).
fn track_shards(
    req: &Request,
    spec: &JobSpec,
    subs: &Submissions,
    adopted: bool,
) -> BTreeMap<u32, ShardTrack> {
    let by_key: HashMap<&str, usize> = req
        .keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_str(), i))
        .collect();
    let still: BTreeSet<usize> = req.missing.iter().copied().collect();
    let mut shards = BTreeMap::new();
    for s in 0..spec.shards {
        let pending: Vec<usize> = spec
            .shard_items(s)
            .into_iter()
            .filter_map(|k| by_key.get(k).copied())
            .filter(|p| still.contains(p))
            .collect();
        if pending.is_empty() {
            continue;
        }
        let last = adopted
            .then(|| subs.list.iter().rev().find(|x| x.shards.contains(&s)))
            .flatten()
            .map(|x| (x.slurm_job.clone(), Instant::now()));
        // An adopted task is an earlier coordinator's attempt, not one of this run's.
        shards.insert(
            s,
            ShardTrack {
                attempts: 0,
                pending,
                last,
                failed: None,
            },
        );
    }
    shards
}

/// Says which Slurm jobs of an earlier coordinator this one adopts.
fn say_adopted(label: &str, shards: &BTreeMap<u32, ShardTrack>) {
    let jobs: BTreeSet<&str> = shards
        .values()
        .filter_map(|t| t.last.as_ref().map(|(j, _)| j.as_str()))
        .collect();
    if !jobs.is_empty() {
        tracing::info!(
            "{label}: adopting slurm job(s) {} from an earlier coordinator",
            jobs.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
}

/// Gives up the shards `to_submit` after their submission failed with `message`: one failure
/// row for the submission (on the first shard), not one per item it would have run.
fn fail_unsubmitted(shards: &mut BTreeMap<u32, ShardTrack>, to_submit: &[u32], message: &str) {
    let items: usize = to_submit
        .iter()
        .filter_map(|s| shards.get(s))
        .map(|t| t.pending.len())
        .sum();
    let said = format!(
        "{items} item(s) not submitted ({} task(s)): {message}",
        to_submit.len()
    );
    for (n, s) in to_submit.iter().enumerate() {
        if let Some(t) = shards.get_mut(s) {
            let error = StageError::Failed(said.clone());
            t.failed = Some(match n {
                0 => vec![ItemFailure::local(None, t.attempts.max(1), error)],
                _ => Vec::new(),
            });
        }
    }
}

/// The item keys the job's workers marked committed (empty when the listing fails: the
/// items are then found when their tasks end).
fn marked_items(store: &dyn Store, job: &str) -> HashSet<String> {
    let prefix = format!("{}/", job::done_prefix(job));
    match store.list(&job::done_prefix(job)) {
        Ok(keys) => keys
            .into_iter()
            .filter_map(|k| k.strip_prefix(&prefix).map(str::to_string))
            .collect(),
        Err(e) => {
            tracing::warn!("cannot list the committed items of job {job}: {e}");
            HashSet::new()
        }
    }
}

/// Moves the pending items of `t` that `look` selects and that are complete in the store
/// into `fresh`, counting each for progress.
fn collect(
    req: &Request,
    store: &dyn Store,
    t: &mut ShardTrack,
    fresh: &mut HashMap<usize, (Manifest, Tables)>,
    look: impl Fn(&str) -> bool,
) {
    let mut left = Vec::new();
    for &p in &t.pending {
        let key = &req.keys[p];
        match look(key)
            .then(|| committed(store, &req.manifest_path(key)))
            .flatten()
        {
            Some(done) => {
                fresh.insert(p, done);
                (req.on_committed)();
            }
            None => left.push(p),
        }
    }
    t.pending = left;
}

/// A committed manifest (at `path`) and its tables, when it is complete in the store.
fn committed(store: &dyn Store, path: &str) -> Option<(Manifest, Tables)> {
    let m = load_manifest(store, path).ok().flatten()?;
    let tables = load_tables(store, &m).ok()?;
    Some((m, tables))
}

/// Whether re-submitting a task can help: yes unless its worker said the input is at fault
/// or failed deterministically on every item it reported.
fn retryable(report: Option<&ShardReport>) -> bool {
    match report {
        None => true,
        Some(r) => r.failures.iter().any(|f| f.kind == "transient") || r.failures.is_empty(),
    }
}

/// The failures of a task that ended with items missing: the worker's own (located) errors
/// when it reported them, else the Slurm state and where its log is (the caller decides
/// whether to re-submit instead).
#[allow(clippy::too_many_arguments)]
fn verdict(
    req: &Request,
    spec: &JobSpec,
    shard: u32,
    t: &ShardTrack,
    task: &str,
    ended: &str,
    report: Option<&ShardReport>,
    log: &std::path::Path,
) -> Vec<ItemFailure> {
    let attempts = t.attempts.max(1);
    let where_ = match spec.whole_stage {
        true => format!("slurm task {task} (the whole stage)"),
        false => format!("slurm task {task} (shard {shard}/{})", spec.shards),
    };
    let failure = |position: usize, attempts: u32, error: StageError| ItemFailure {
        position: Some(position),
        attempts,
        error,
        ran_in: Some(format!("slurm {task}")),
    };
    let mut out = Vec::new();
    let mut reported: BTreeSet<usize> = BTreeSet::new();
    if let Some(r) = report {
        for f in &r.failures {
            let pos = f
                .key
                .as_ref()
                .and_then(|k| req.keys.iter().position(|key| key == k));
            let message = format!("{where_}: {}", f.message);
            let err = match f.kind.as_str() {
                "input" => StageError::Input(message),
                "transient" => StageError::Exhausted(message),
                _ => StageError::Failed(message),
            };
            match pos {
                Some(p) => {
                    reported.insert(p);
                    out.push(failure(p, f.attempts.max(attempts), err));
                }
                // The worker failed before its items: every pending item fails with it.
                None => {
                    for &p in &t.pending {
                        reported.insert(p);
                        out.push(failure(p, attempts, err.clone()));
                    }
                }
            }
        }
    }
    for &p in t.pending.iter().filter(|p| !reported.contains(p)) {
        out.push(failure(
            p,
            attempts,
            StageError::Failed(format!(
                "{where_} ended {ended} without committing the item after {attempts} attempt(s); its output: {}",
                log.display()
            )),
        ));
    }
    out
}

/// Drops from [`LIVE`] the arrays whose every known task is final.
fn forget_finished(shards: &BTreeMap<u32, ShardTrack>, states: &TaskStates) {
    let still: BTreeSet<&str> = shards
        .values()
        .filter(|t| !t.pending.is_empty() && t.failed.is_none())
        .filter_map(|t| t.last.as_ref().map(|(j, _)| j.as_str()))
        .collect();
    if let Ok(mut live) = LIVE.lock() {
        for (job, tasks) in states {
            if !still.contains(job.as_str()) && tasks.values().all(TaskState::is_final) {
                live.remove(job);
            }
        }
    }
}

/// On SIGINT or SIGTERM: cancel every live array of this process, then exit 130.
fn install_signal_handler() {
    SIGNALS.call_once(|| {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
            tracing::warn!("cannot install the Ctrl-C handler: jobs would outlive an interrupt");
            return;
        };
        std::thread::spawn(move || {
            if signals.forever().next().is_some() {
                cancel_live_jobs();
                std::process::exit(130);
            }
        });
    });
}

/// Cancels every array this process submitted and has not seen finish.
pub fn cancel_live_jobs() {
    let jobs: Vec<String> = LIVE
        .lock()
        .map(|l| l.iter().cloned().collect())
        .unwrap_or_default();
    if jobs.is_empty() {
        return;
    }
    match SlurmClient::default().cancel(&jobs) {
        Ok(()) => eprintln!("interrupted: cancelled slurm job(s) {}", jobs.join(", ")),
        Err(e) => eprintln!(
            "interrupted: could not cancel slurm job(s) {}: {e}; cancel them with: scancel {}",
            jobs.join(", "),
            jobs.join(" ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_are_divided_among_the_tasks_that_run_at_once() {
        let pools: BTreeMap<String, u32> = [("llm".to_string(), 16)].into();
        assert_eq!(parallel_limit(Some(32), &pools), Some(16));
        assert_eq!(parallel_limit(None, &pools), Some(16));
        assert_eq!(parallel_limit(Some(4), &BTreeMap::new()), Some(4));
        assert_eq!(pool_shares(&pools, 4)["llm"], 4);
        assert_eq!(pool_shares(&pools, 16)["llm"], 1);
    }

    #[test]
    fn quoting_survives_quotes() {
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
    }
}
