//! Execution: runs a [`Plan`] against a [`Store`], reusing every result it already has.
//!
//! Independent instances run concurrently on tokio; each stage's work runs on the blocking pool
//! (kinds are plain synchronous code and may use rayon inside). Per-item stages commit every item
//! as soon as it finishes, so a killed run loses at most the items in flight.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use polars::prelude::*;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use crate::artifact::{
    blobs_present, item_path, load_manifest, load_table, load_tables, recipe_path, save_manifest,
    store_tables, unix_now, ItemCounts, ItemIdentity, KeyParts, Manifest, TableEntry,
    ENGINE_VERSION,
};
use crate::error::{Error, Result, StageError};
use crate::keys::{hash_path, item_groups, ItemGroup};
use crate::kind::{InputTable, StageContext, Tables};
use crate::plan::{Instance, Plan};
use crate::progress::{Progress, ProgressMode};
use crate::record::{save_run, ErrorRow, InstanceRecord, RunRecord, Status};
use crate::store::Store;

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
    /// Forbid external calls that are not already cached (see [`StageContext::offline`]).
    pub offline: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            workdir: PathBuf::from("."),
            only: Vec::new(),
            progress: ProgressMode::Auto,
            log_every: Duration::from_secs(10),
            offline: false,
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
    runtime.block_on(run_async(plan, store, opts))
}

struct Runner {
    plan: Arc<Plan>,
    store: Arc<dyn Store>,
    workdir: PathBuf,
    pools: HashMap<String, Arc<Semaphore>>,
    progress: Progress,
    previous: Option<RunRecord>,
    offline: bool,
}

/// One item's outcome: its manifest and tables, or the attempts made and the error.
type ItemResult = std::result::Result<(Manifest, Tables), (u32, StageError)>;

/// What an instance run yields: its record and its error rows.
type Outcome = (InstanceRecord, Vec<ErrorRow>);

async fn run_async(plan: Arc<Plan>, store: Arc<dyn Store>, opts: &RunOptions) -> Result<RunReport> {
    let started = Instant::now();
    let started_at = unix_now();
    let selected = plan.select(&opts.only)?;
    let previous = crate::record::load_latest(store.as_ref(), &plan.name)?;
    let runner = Arc::new(Runner {
        pools: plan
            .resources
            .iter()
            .map(|(k, &n)| (k.clone(), Arc::new(Semaphore::new(n.max(1) as usize))))
            .collect(),
        plan: plan.clone(),
        store,
        workdir: opts.workdir.clone(),
        progress: Progress::new(opts.progress),
        previous,
        offline: opts.offline,
    });
    let ticker = runner.progress.spawn_ticker(opts.log_every);

    let n = plan.instances.len();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut waiting: Vec<usize> = vec![0; n];
    for inst in &plan.instances {
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
        let inst = &plan.instances[id];
        let upstream: Vec<Arc<InstanceRecord>> = inst
            .bindings
            .iter()
            .filter_map(|b| outcomes[b.instance].clone())
            .collect();
        let runner = runner.clone();
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
    if let Some(t) = ticker {
        t.abort();
    }
    let mut record = RunRecord {
        pipeline: plan.name.clone(),
        file: plan.file.to_string_lossy().into_owned(),
        run_id: format!("{}-{}", started_at as u64, std::process::id()),
        started_at,
        seconds: started.elapsed().as_secs_f64(),
        instances: outcomes
            .into_iter()
            .flatten()
            .map(|r| Arc::try_unwrap(r).unwrap_or_else(|a| (*a).clone()))
            .collect(),
        ..RunRecord::default()
    };
    let items_failed = errors.iter().filter(|e| e.item.is_some()).count();
    record.errors_blob = errors_blob(runner.store.as_ref(), &errors)?;
    record.errors = errors;
    record.summarize(items_failed);
    save_run(runner.store.as_ref(), &record)?;
    Ok(RunReport { record })
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
    )?;
    let (entries, _) = store_tables(store, &Tables::single("errors", df))?;
    Ok(entries.get("errors").map(|e| e.blob.clone()))
}

/// The key of an instance, given its upstream results. Shared by `run`, `plan` and `why`.
pub fn key_parts(inst: &Instance, upstream: &[Arc<InstanceRecord>], workdir: &Path) -> KeyParts {
    let mut inputs = std::collections::BTreeMap::new();
    // Upstream records arrive in binding order.
    for (b, up) in inst.bindings.iter().zip(upstream) {
        for t in &b.tables {
            if let Some(entry) = up.tables.get(t) {
                let label = match &b.gathered_variant {
                    Some(v) => format!("{}[{v}].{t}", b.stage),
                    None => format!("{}.{t}", b.stage),
                };
                inputs.insert(label, entry.blob.clone());
            }
        }
    }
    let external = inst
        .kind
        .external_inputs(&inst.params)
        .into_iter()
        .map(|p| {
            let h = hash_path(&workdir.join(&p));
            (p, h)
        })
        .collect();
    KeyParts {
        engine: ENGINE_VERSION.to_string(),
        kind: inst.kind.name().to_string(),
        kind_version: inst.kind.version().to_string(),
        params: inst.params.clone(),
        inputs,
        external,
        item: None,
    }
}

fn error_kind(e: &StageError) -> &'static str {
    match e {
        StageError::Input(_) => "input",
        StageError::Transient(_) => "transient",
        StageError::Failed(_) => "failed",
    }
}

impl Runner {
    fn record(&self, inst: &Instance, status: Status) -> InstanceRecord {
        InstanceRecord::empty(&inst.stage, inst.variant.name(), inst.kind.name(), status)
    }

    fn error_row(
        &self,
        inst: &Instance,
        item: Option<String>,
        attempts: u32,
        e: &StageError,
    ) -> ErrorRow {
        ErrorRow {
            stage: inst.stage.clone(),
            variant: inst.variant.name(),
            item,
            attempts,
            kind: error_kind(e).to_string(),
            message: e.to_string(),
        }
    }

    async fn instance(
        self: Arc<Self>,
        id: usize,
        selected: bool,
        upstream: Vec<Arc<InstanceRecord>>,
    ) -> Outcome {
        let inst = &self.plan.instances[id];
        if !selected {
            return (self.record(inst, Status::NotSelected), vec![]);
        }
        if let Some(bad) = upstream.iter().find(|u| !u.status.succeeded()) {
            let mut rec = self.record(inst, Status::Skipped);
            rec.message = Some(format!("upstream `{}` did not succeed", bad.label()));
            return (rec, vec![]);
        }
        let started = Instant::now();
        let this = self.clone();
        let ups = upstream.clone();
        let prepared = tokio::task::spawn_blocking(move || this.lookup(id, &ups)).await;
        let (parts, cached) = match prepared {
            Ok(Ok(found)) => found,
            Ok(Err(e)) => return self.fail(inst, None, 1, &StageError::Failed(e.to_string())),
            Err(e) => {
                return self.fail(
                    inst,
                    None,
                    1,
                    &StageError::Failed(format!("internal error: {e}")),
                )
            }
        };
        if let Some(manifest) = cached {
            self.progress.line(&format!("{}: cached", inst.label()));
            return (
                self.finished(inst, Status::Cached, &manifest, started),
                vec![],
            );
        }
        let inputs = match self.load_inputs(inst, &upstream).await {
            Ok(inputs) => inputs,
            Err(e) => return self.fail(inst, None, 1, &StageError::Failed(e.to_string())),
        };
        let result = if inst.per_item.is_some() {
            self.clone().run_items(id, parts, inputs, started).await
        } else {
            self.clone().run_whole(id, parts, inputs, started).await
        };
        match result {
            Ok(manifest) => (
                self.finished(inst, Status::Executed, &manifest, started),
                vec![],
            ),
            Err(outcome) => outcome,
        }
    }

    fn fail(
        &self,
        inst: &Instance,
        item: Option<String>,
        attempts: u32,
        e: &StageError,
    ) -> Outcome {
        let mut rec = self.record(inst, Status::Failed);
        rec.message = Some(e.to_string());
        self.progress
            .line(&format!("{}: FAILED: {e}", inst.label()));
        (rec, vec![self.error_row(inst, item, attempts, e)])
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

    /// Computes the key and looks for a valid cached result.
    fn lookup(
        &self,
        id: usize,
        upstream: &[Arc<InstanceRecord>],
    ) -> Result<(KeyParts, Option<Manifest>)> {
        let inst = &self.plan.instances[id];
        let parts = key_parts(inst, upstream, &self.workdir);
        let key = parts.key();
        let store = self.store.as_ref();
        let cached = match load_manifest(store, &recipe_path(&key))? {
            Some(m)
                if blobs_present(store, &m)?
                    && inst
                        .kind
                        .cached_output_is_valid(&inst.params, &self.workdir) =>
            {
                Some(m)
            }
            _ => None,
        };
        Ok((parts, cached))
    }

    async fn load_inputs(
        &self,
        inst: &Instance,
        upstream: &[Arc<InstanceRecord>],
    ) -> Result<Vec<InputTable>> {
        let mut wanted = Vec::new();
        for (b, up) in inst.bindings.iter().zip(upstream) {
            for t in &b.tables {
                let blob =
                    up.tables
                        .get(t)
                        .map(|e| e.blob.clone())
                        .ok_or_else(|| Error::Corrupt {
                            key: format!("{}.{t}", b.stage),
                            reason: "upstream record has no such table".into(),
                        })?;
                wanted.push((b.stage.clone(), t.clone(), blob));
            }
        }
        let store = self.store.clone();
        let loaded = tokio::task::spawn_blocking(move || {
            wanted
                .into_iter()
                .map(|(stage, table, blob)| {
                    load_table(store.as_ref(), &blob).map(|df| InputTable { stage, table, df })
                })
                .collect::<Result<Vec<_>>>()
        })
        .await
        .map_err(|e| Error::RunFailed(format!("internal error: {e}")))??;
        gather_variants(loaded)
    }

    async fn acquire_pools(&self, inst: &Instance) -> Vec<OwnedSemaphorePermit> {
        let mut names: Vec<&String> = inst.pools.iter().collect();
        names.sort();
        names.dedup();
        let mut permits = Vec::new();
        for name in names {
            if let Some(pool) = self.pools.get(name) {
                if let Ok(p) = pool.clone().acquire_owned().await {
                    permits.push(p);
                }
            }
        }
        permits
    }

    async fn run_whole(
        self: Arc<Self>,
        id: usize,
        parts: KeyParts,
        inputs: Vec<InputTable>,
        started: Instant,
    ) -> Result<Manifest, Outcome> {
        let inst = &self.plan.instances[id];
        let task = self.progress.start(&inst.label(), 1, 0);
        let permits = self.acquire_pools(inst).await;
        let this = self.clone();
        let key = parts.key();
        let seed = seed_of(&key);
        let joined = tokio::task::spawn_blocking(move || {
            let inst = &this.plan.instances[id];
            let (result, attempts) = this.attempt(inst, None, seed, &inputs);
            let committed = result.and_then(|tables| {
                this.commit(inst, &parts, &tables, started, attempts, None, false)
            });
            (committed, attempts)
        })
        .await;
        drop(permits);
        let (result, attempts) =
            joined.unwrap_or_else(|e| (Err(StageError::Failed(format!("internal error: {e}"))), 1));
        match result {
            Ok(m) => {
                task.inc();
                task.finish(&format!("executed ({})", rows_summary(&m)));
                Ok(m)
            }
            Err(e) => {
                task.finish("failed");
                Err(self.fail(inst, None, attempts, &e))
            }
        }
    }

    /// Runs the kind with retries on transient errors; panics become failures.
    fn attempt(
        &self,
        inst: &Instance,
        item: Option<&str>,
        seed: u64,
        inputs: &[InputTable],
    ) -> (Result<Tables, StageError>, u32) {
        let mut attempt = 0;
        loop {
            let variant = inst.variant.name();
            let ctx = StageContext {
                stage: &inst.stage,
                variant: &variant,
                item,
                seed,
                attempt,
                workdir: &self.workdir,
                inputs,
                cache: self.store.as_ref(),
                offline: self.offline,
            };
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                inst.kind.run(&inst.params, &ctx)
            }))
            .unwrap_or_else(|panic| {
                Err(StageError::Failed(format!(
                    "stage panicked: {}",
                    panic_text(&panic)
                )))
            })
            .and_then(|t| check_outputs(inst, t));
            match outcome {
                Err(StageError::Transient(msg)) if attempt < inst.retries => {
                    let delay = inst.backoff_ms.saturating_mul(1 << attempt.min(16));
                    tracing::debug!(
                        "{}: transient failure ({msg}); retry in {delay} ms",
                        inst.label()
                    );
                    std::thread::sleep(Duration::from_millis(delay));
                    attempt += 1;
                }
                other => return (other, attempt + 1),
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn commit(
        &self,
        inst: &Instance,
        parts: &KeyParts,
        tables: &Tables,
        started: Instant,
        attempts: u32,
        items: Option<(ItemCounts, Vec<String>)>,
        is_item: bool,
    ) -> Result<Manifest, StageError> {
        let store = self.store.as_ref();
        let to_failed = |e: Error| StageError::Failed(format!("could not store result: {e}"));
        let (entries, data_version) = store_tables(store, tables).map_err(to_failed)?;
        let key = parts.key();
        let manifest = Manifest {
            recipe_key: key.clone(),
            key: parts.clone(),
            pipeline: self.plan.name.clone(),
            stage: inst.stage.clone(),
            variant: inst.variant.name(),
            deterministic: inst.kind.deterministic(),
            data_version,
            tables: entries,
            started_at: unix_now() - started.elapsed().as_secs_f64(),
            seconds: started.elapsed().as_secs_f64(),
            attempts,
            items: items.as_ref().map(|(c, _)| c.clone()),
            item_keys: items.map(|(_, k)| k).unwrap_or_default(),
            usage: serde_json::Value::Object(Default::default()),
        };
        let path = if is_item {
            item_path(&key)
        } else {
            recipe_path(&key)
        };
        save_manifest(store, &path, &manifest).map_err(to_failed)?;
        Ok(manifest)
    }

    async fn run_items(
        self: Arc<Self>,
        id: usize,
        parts: KeyParts,
        inputs: Vec<InputTable>,
        started: Instant,
    ) -> Result<Manifest, Outcome> {
        let inst = &self.plan.instances[id];
        let column = inst.per_item.clone().unwrap_or_default();
        let main = inputs[0].clone();
        let groups = match item_groups(&main.df, &column) {
            Ok(g) => g,
            Err(_) => {
                let cols: Vec<String> = main
                    .df
                    .get_column_names()
                    .iter()
                    .map(|c| c.to_string())
                    .collect();
                return Err(self.fail(
                    inst,
                    None,
                    1,
                    &StageError::Input(format!(
                        "per_item column `{column}` is not in `{}` (columns: {}); fix `per_item` in the pipeline",
                        main.label(),
                        cols.join(", ")
                    )),
                ));
            }
        };
        let item_parts: Vec<KeyParts> = groups
            .iter()
            .map(|g| item_key_parts(&parts, &main.label(), &column, g))
            .collect();
        let this = self.clone();
        let keys: Vec<String> = item_parts.iter().map(KeyParts::key).collect();
        let probe_keys = keys.clone();
        let cached: Vec<Option<Manifest>> = tokio::task::spawn_blocking(move || {
            probe_keys
                .iter()
                .map(|k| {
                    load_manifest(this.store.as_ref(), &item_path(k))
                        .ok()
                        .flatten()
                        .filter(|m| blobs_present(this.store.as_ref(), m).unwrap_or(false))
                })
                .collect()
        })
        .await
        .unwrap_or_default();
        let n_cached = cached.iter().filter(|c| c.is_some()).count();
        let task = Arc::new(self.progress.start(
            &inst.label(),
            groups.len() as u64,
            n_cached as u64,
        ));
        let stage_slots = Arc::new(Semaphore::new(inst.concurrency));
        let shared_inputs = Arc::new(inputs);
        let mut running: JoinSet<(usize, ItemResult)> = JoinSet::new();
        for (i, group) in groups
            .iter()
            .enumerate()
            .filter(|(i, _)| cached[*i].is_none())
        {
            let this = self.clone();
            let slots = stage_slots.clone();
            let inputs = shared_inputs.clone();
            let item_parts = item_parts[i].clone();
            let group = group.clone();
            let task = task.clone();
            running.spawn(async move {
                let Ok(slot) = slots.acquire_owned().await else {
                    return (i, Err((0, StageError::Failed("scheduler closed".into()))));
                };
                let mut permits = this.acquire_pools(&this.plan.instances[id]).await;
                permits.push(slot);
                let worker = this.clone();
                let result = tokio::task::spawn_blocking(move || {
                    worker.run_item(id, &item_parts, &group, &inputs, permits)
                })
                .await
                .unwrap_or_else(|e| Err((1, StageError::Failed(format!("internal error: {e}")))));
                task.inc();
                (i, result)
            });
        }
        let mut fresh: HashMap<usize, (Manifest, Tables)> = HashMap::new();
        let mut failures: Vec<ErrorRow> = Vec::new();
        while let Some(joined) = running.join_next().await {
            match joined {
                Ok((i, Ok(done))) => {
                    fresh.insert(i, done);
                }
                Ok((i, Err((attempts, e)))) => {
                    failures.push(self.error_row(
                        inst,
                        Some(groups[i].value.clone()),
                        attempts,
                        &e,
                    ));
                }
                Err(e) => failures.push(self.error_row(
                    inst,
                    None,
                    1,
                    &StageError::Failed(format!("internal error: {e}")),
                )),
            }
        }
        let task = Arc::try_unwrap(task).ok();
        if !failures.is_empty() {
            if let Some(t) = task {
                t.finish(&format!(
                    "{} of {} items failed",
                    failures.len(),
                    groups.len()
                ));
            }
            let mut rec = self.record(inst, Status::Failed);
            let names: Vec<String> = failures.iter().filter_map(|f| f.item.clone()).collect();
            rec.message = Some(format!(
                "{} item(s) failed: {}",
                failures.len(),
                names.join(", ")
            ));
            rec.items = Some(ItemCounts {
                total: groups.len(),
                executed: fresh.len(),
                cached: n_cached,
            });
            rec.item_keys = keys;
            return Err((rec, failures));
        }
        let counts = ItemCounts {
            total: groups.len(),
            executed: fresh.len(),
            cached: n_cached,
        };
        let this = self.clone();
        let assembled = tokio::task::spawn_blocking(move || {
            let inst = &this.plan.instances[id];
            let tables = this.assemble(inst, &groups, cached, fresh)?;
            this.commit(
                inst,
                &parts,
                &tables,
                started,
                1,
                Some((counts, keys)),
                false,
            )
        })
        .await
        .unwrap_or_else(|e| Err(StageError::Failed(format!("internal error: {e}"))));
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

    /// Runs one item while holding `permits` (its stage slot and resource pools), then commits
    /// it without them: storing the result uses neither, so the next item starts meanwhile.
    fn run_item(
        &self,
        id: usize,
        parts: &KeyParts,
        group: &ItemGroup,
        inputs: &[InputTable],
        permits: Vec<OwnedSemaphorePermit>,
    ) -> ItemResult {
        let inst = &self.plan.instances[id];
        let started = Instant::now();
        let mut local: Vec<InputTable> = inputs.to_vec();
        let idx = IdxCa::from_vec("idx".into(), group.rows.clone());
        local[0].df = inputs[0]
            .df
            .take(&idx)
            .map_err(|e| (0, StageError::from(e)))?;
        let key = parts.key();
        let (result, attempts) = self.attempt(inst, Some(&group.value), seed_of(&key), &local);
        drop(permits);
        let tables = result.map_err(|e| (attempts, e))?;
        let manifest = self
            .commit(inst, parts, &tables, started, attempts, None, true)
            .map_err(|e| (attempts, e))?;
        Ok((manifest, tables))
    }

    /// Concatenates item outputs in item order.
    fn assemble(
        &self,
        inst: &Instance,
        groups: &[ItemGroup],
        cached: Vec<Option<Manifest>>,
        mut fresh: HashMap<usize, (Manifest, Tables)>,
    ) -> Result<Tables, StageError> {
        let mut out: IndexMap<String, DataFrame> = IndexMap::new();
        for (i, cached) in cached.into_iter().enumerate().take(groups.len()) {
            let tables = match (cached, fresh.remove(&i)) {
                (_, Some((_, t))) => t,
                (Some(m), None) => load_tables(self.store.as_ref(), &m)
                    .map_err(|e| StageError::Failed(e.to_string()))?,
                (None, None) => {
                    return Err(StageError::Failed(format!(
                        "item `{}` has no result",
                        groups[i].value
                    )))
                }
            };
            for (name, df) in tables.0 {
                match out.get_mut(&name) {
                    // An item with nothing to say may return a column-less table.
                    _ if df.width() == 0 => {
                        out.entry(name).or_insert(df);
                    }
                    Some(acc) if acc.width() == 0 => *acc = df,
                    Some(acc) => acc.vstack_mut(&df).map(|_| ()).map_err(|e| {
                        StageError::Failed(format!(
                            "{}: item `{}` returned table `{name}` with a different schema: {e}",
                            inst.label(),
                            groups[i].value
                        ))
                    })?,
                    None => {
                        out.insert(name, df);
                    }
                }
            }
        }
        for name in inst.kind.outputs() {
            out.entry(name.to_string()).or_insert_with(DataFrame::empty);
        }
        Ok(Tables(out))
    }
}

/// The key parts of one item: the stage's recipe without the main input's data version, plus
/// the item's identity (its column, value and rows). Shared by `run` and `plan`.
pub fn item_key_parts(parts: &KeyParts, main_label: &str, column: &str, g: &ItemGroup) -> KeyParts {
    let mut p = parts.clone();
    p.inputs.remove(main_label);
    p.item = Some(ItemIdentity {
        column: column.to_string(),
        value: g.value.clone(),
        rows: g.content_hash.clone(),
    });
    p
}

fn seed_of(key: &str) -> u64 {
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

fn rows_summary(m: &Manifest) -> String {
    m.tables
        .iter()
        .map(|(k, t): (&String, &TableEntry)| format!("{k}: {} rows", t.rows))
        .collect::<Vec<_>>()
        .join(", ")
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Concatenates the tables a `gather` stage receives once per upstream variant, keeping the
/// first appearance's order; ordinary stages never receive the same table twice.
fn gather_variants(tables: Vec<InputTable>) -> Result<Vec<InputTable>> {
    let mut out: Vec<InputTable> = Vec::new();
    for t in tables {
        match out
            .iter_mut()
            .find(|o| o.stage == t.stage && o.table == t.table)
        {
            None => out.push(t),
            Some(acc) => {
                acc.df.vstack_mut(&t.df).map_err(|e| {
                    Error::RunFailed(format!(
                        "gather: the variants of `{}` have different columns ({e}); a kind must write the same columns in every variant",
                        t.label()
                    ))
                })?;
            }
        }
    }
    for t in &mut out {
        t.df.rechunk_mut();
    }
    Ok(out)
}
