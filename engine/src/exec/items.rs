//! Running a per-item stage: every item without a complete committed result runs on its own
//! (holding a stage slot and the stage's resource pools) and commits as soon as it finishes;
//! then the instance's tables are assembled from all items, in item order.
//!
//! [`run_items_locally`] is the step a cluster executor replaces: given the instance's item
//! decisions, compute and commit the missing items.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use polars::prelude::*;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::commit::{commit_instance, Provenance};
use super::env::ExecEnv;
use super::inputs::InputBlob;
use super::prepare::prepare;
use super::ran::{ItemFailure, ItemsRan};
use super::remote::{ItemExecutor, RemoteItems};
use super::runner::{Outcome, Runner};
use super::unit::{run_unit, Unit, UnitResult, Work, NOT_STARTED, STOPPED};
use crate::artifact::{
    blobs_present, item_path, load_manifest, load_tables, unix_now, ItemCounts, Manifest,
    TableEntry,
};
use crate::decision::{decide_items, Decision, ItemDecisions, ItemsError};
use crate::error::{Error, StageError};
use crate::kind::{InputTable, PreparedKind, Tables};
use crate::plan::Instance;
use crate::progress::Task;
use crate::record::{ErrorRow, Status};
use crate::store::lease::{self, list_leases, Holder, Lease, Liveness};
use crate::store::Store;
use crate::usage::{Usage, UsageMeter};

/// Called as each item finishes, with the item's key when it was committed (`None` when it
/// failed): progress bars count, cluster workers announce the commit to their coordinator.
pub type ItemDone = Arc<dyn Fn(Option<&str>) + Send + Sync>;

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
    on_done: ItemDone,
) -> ItemsRan {
    let none = HashSet::new();
    run_items_except(env, inst, items, &none, prepared, inputs, pools, on_done).await
}

/// [`run_items_locally`], leaving out the items at the positions in `skip` (another writer
/// computes them).
#[allow(clippy::too_many_arguments)]
pub async fn run_items_except(
    env: &Arc<ExecEnv>,
    inst: &Arc<Instance>,
    items: &ItemDecisions,
    skip: &HashSet<usize>,
    prepared: Arc<dyn PreparedKind>,
    inputs: Arc<Vec<InputTable>>,
    pools: Vec<Arc<Semaphore>>,
    on_done: ItemDone,
) -> ItemsRan {
    let slots = Arc::new(Semaphore::new(inst.concurrency));
    let mut running: JoinSet<(usize, UnitResult)> = JoinSet::new();
    for (i, item) in items.items.iter().enumerate() {
        if item.hit.is_some() || skip.contains(&i) {
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
            meter: env.meter(inst),
        };
        let (env, on_done) = (env.clone(), on_done.clone());
        running.spawn(async move {
            let key = work.unit.key.clone();
            let result = run_unit(&env, work).await;
            on_done(result.is_ok().then_some(key.as_str()));
            (i, result)
        });
    }
    let mut ran = ItemsRan::default();
    while let Some(joined) = running.join_next().await {
        match joined {
            Ok((i, Ok(done))) => {
                ran.fresh.insert(i, done);
            }
            Ok((i, Err((attempts, e)))) => {
                ran.failures.push(ItemFailure::local(Some(i), attempts, e))
            }
            Err(e) => ran.failures.push(ItemFailure::local(
                None,
                1,
                StageError::Failed(format!("internal error: {e}")),
            )),
        }
    }
    ran
}

/// Missing items of `items` that an older live run (started before `own`) has announced it
/// computes: by position, the lease computing each. Two runs of the same items share the
/// work this way: the younger waits for the older's items instead of computing them again
/// (the older never waits for the younger, so they cannot wait for each other).
pub fn items_of_older_runs(
    store: &dyn Store,
    own: &Lease,
    items: &ItemDecisions,
) -> crate::error::Result<HashMap<usize, String>> {
    let now = unix_now();
    let (own_id, own_start) = (own.id(), own.started_at());
    let mut owner: HashMap<&str, String> = HashMap::new();
    let leases = list_leases(store)?;
    for (lease, lists) in &leases {
        let older = lease.started_at < own_start
            || (lease.started_at == own_start && lease.id.as_str() < own_id.as_str());
        if lease.id == own_id
            || lease.holder != Holder::Run
            || !older
            || lease.liveness(now) != Liveness::Live
        {
            continue;
        }
        for key in lists.iter().flat_map(|p| &p.item_keys) {
            owner
                .entry(key.as_str())
                .or_insert_with(|| lease.id.clone());
        }
    }
    Ok(items
        .items
        .iter()
        .enumerate()
        .filter(|(_, item)| item.hit.is_none())
        .filter_map(|(i, item)| owner.get(item.key.as_str()).map(|o| (i, o.clone())))
        .collect())
}

/// Seconds a run waits for an item another run computes before computing it itself
/// (`PREFFLOW_SHARED_WAIT_SECS`, default 600).
pub fn shared_wait_secs() -> f64 {
    std::env::var("PREFFLOW_SHARED_WAIT_SECS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
        .unwrap_or(600.0)
}

/// Waits (blocking) for the items in `waiting` (position → lease computing it) to be
/// committed by their runs; returns the manifests of those that were. An item whose run's
/// lease ends or dies without committing it, or that takes longer than
/// [`shared_wait_secs`], is left out: the caller computes it.
pub fn wait_for_items(
    store: &dyn Store,
    items: &ItemDecisions,
    mut waiting: HashMap<usize, String>,
    on_done: &(dyn Fn() + Send + Sync),
) -> crate::error::Result<HashMap<usize, Manifest>> {
    let deadline = Instant::now() + Duration::from_secs_f64(shared_wait_secs());
    let mut done = HashMap::new();
    let mut pause = Duration::from_millis(50);
    while !waiting.is_empty() {
        let mut alive: HashMap<String, bool> = HashMap::new();
        let mut settled = Vec::new();
        for (&i, owner) in &waiting {
            if let Some(m) = load_manifest(store, &item_path(&items.items[i].key))? {
                if blobs_present(store, &m)? {
                    done.insert(i, m);
                    settled.push(i);
                    on_done();
                    continue;
                }
            }
            let live = match alive.get(owner) {
                Some(&l) => l,
                None => {
                    let l = lease::is_live(store, owner)?;
                    alive.insert(owner.clone(), l);
                    l
                }
            };
            if !live {
                settled.push(i);
            }
        }
        for i in settled {
            waiting.remove(&i);
        }
        if waiting.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            tracing::warn!(
                "{} item(s) other runs compute are still not committed after {:.0}s; computing them here",
                waiting.len(),
                shared_wait_secs()
            );
            break;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(500));
    }
    Ok(done)
}

/// Why the items' tables could not be assembled.
pub enum AssembleError {
    /// These cached items (positions) turned out damaged when read: their blobs are now
    /// quarantined, and the items must be computed again.
    Damaged(Vec<usize>),
    /// Anything else (a schema clash, an I/O error).
    Failed(StageError),
}

/// Concatenates the items' tables in item order: fresh ones (this run's, by item position)
/// from `fresh`, cached ones loaded (and verified) from the store. Every cached item is read
/// before giving up, so one pass finds all the damaged ones.
pub fn assemble(
    env: &ExecEnv,
    inst: &Instance,
    items: &ItemDecisions,
    fresh: &HashMap<usize, Tables>,
) -> Result<Tables, AssembleError> {
    let mut out: IndexMap<String, DataFrame> = IndexMap::new();
    let mut damaged = Vec::new();
    let failed = |e: StageError| AssembleError::Failed(e);
    for (i, item) in items.items.iter().enumerate() {
        let tables = match (&item.hit, fresh.get(&i)) {
            (_, Some(t)) => t.clone(),
            (Some(m), None) => match load_tables(env.store.as_ref(), m) {
                Ok(t) => t,
                Err(Error::Corrupt { key, reason }) => {
                    tracing::warn!(
                        "{}: item `{}`: {key}: {reason}; computing the item again",
                        inst.label(),
                        item.group.value
                    );
                    damaged.push(i);
                    continue;
                }
                Err(e) => return Err(failed(StageError::Failed(e.to_string()))),
            },
            (None, None) => {
                return Err(failed(StageError::Failed(format!(
                    "item `{}` has no result",
                    item.group.value
                ))))
            }
        };
        if !damaged.is_empty() {
            continue;
        }
        for (name, df) in tables.0 {
            append(&mut out, name, df).map_err(|e| {
                failed(StageError::Failed(format!(
                    "{}: item `{}` returned table `{}` with a different schema: {e}",
                    inst.label(),
                    item.group.value,
                    e.table
                )))
            })?;
        }
    }
    if !damaged.is_empty() {
        return Err(AssembleError::Damaged(damaged));
    }
    for name in inst.kind.outputs() {
        let empty = || {
            inst.kind
                .output_def(name)
                .map_or_else(DataFrame::empty, |d| d.empty_frame())
        };
        out.entry(name.to_string()).or_insert_with(empty);
    }
    Ok(Tables(out))
}

/// Where an instance's item rounds stand: the cluster executor that takes its items (if any),
/// its progress task, the usage meter of its prepare, the prepared kind (once some item needed
/// it), the item decisions (a committed item becomes a hit) and the items this run computed.
struct Rounds {
    remote: Option<Arc<dyn ItemExecutor>>,
    task: Arc<Task>,
    meter: Arc<UsageMeter>,
    prepared: Option<Arc<dyn PreparedKind>>,
    // Shared with the blocking tasks that wait for other runs' items and assemble, not
    // copied: with thousands of items, copying their manifests cost more than assembling.
    items: Arc<ItemDecisions>,
    fresh: Arc<Fresh>,
    first_round: bool,
}

/// Why an instance's item rounds stopped short of a commit.
enum Halt {
    /// The executor started none of the work (the run was halted first).
    NotStarted,
    /// Some items failed (the others stay committed).
    ItemsFailed(ItemsRan),
    /// The instance failed as a whole after this many attempts.
    Failed(u32, StageError),
}

impl Rounds {
    /// Whether some item still has no committed result.
    fn missing(&self) -> bool {
        self.items.items.iter().any(|i| i.hit.is_none())
    }

    /// Ends the progress task with `text` (once every clone of it is gone).
    fn finish(self, text: &str) {
        if let Ok(t) = Arc::try_unwrap(self.task) {
            t.finish(text);
        }
    }
}

impl Runner {
    /// Decides the items of `inst`, prepares it when some are missing, runs those, then
    /// assembles and commits the instance. Returns its manifest and what this run spent on it.
    /// A cached item found damaged while assembling is quarantined and computed again (only
    /// that item), then the instance is assembled once more.
    pub(super) async fn run_items(
        self: Arc<Self>,
        inst: Arc<Instance>,
        decision: Decision,
        (inputs, blobs): (Arc<Vec<InputTable>>, Vec<InputBlob>),
        started: Instant,
    ) -> Result<(Manifest, Usage), Outcome> {
        let remote = self.executor.clone().filter(|x| x.takes(&inst));
        let items = self.protected_items(&inst, &decision, &inputs).await?;
        let (total, cached) = (items.items.len(), items.cached());
        let mut rounds = Rounds {
            remote,
            task: Arc::new(
                self.progress
                    .start(&inst.label(), total as u64, cached as u64),
            ),
            meter: self.env.meter(&inst),
            prepared: None,
            items: Arc::new(items),
            fresh: Arc::new(Fresh::default()),
            first_round: true,
        };
        let ran = self
            .run_rounds(&inst, &decision, (&inputs, &blobs), started, &mut rounds)
            .await;
        match ran {
            Ok((m, spent)) => {
                let c = m.items.clone().unwrap_or_default();
                rounds.finish(&format!(
                    "executed ({}; {} items run, {} cached)",
                    rows_summary(&m),
                    c.executed,
                    c.cached
                ));
                Ok((m, spent))
            }
            Err(halt) => Err(self.halted(&inst, rounds, halt)),
        }
    }

    /// The item decisions of `inst`, protected from `gc` by this run's lease.
    async fn protected_items(
        &self,
        inst: &Arc<Instance>,
        decision: &Decision,
        inputs: &[InputTable],
    ) -> Result<ItemDecisions, Outcome> {
        let items = match self.decide_items(inst, decision, inputs).await {
            Ok(items) => items,
            Err(e) => return Err(self.fail(inst, None, 1, &e)),
        };
        if let Err(e) = self.protect(inst, &decision.key, items.keys()).await {
            return Err(self.fail(inst, None, 1, &e));
        }
        Ok(items)
    }

    /// Round 1 runs the missing items (waiting for those an older live run computes); a
    /// further round the ones found damaged, or that the other run did not commit. When none
    /// is missing, the instance is assembled and committed.
    async fn run_rounds(
        self: &Arc<Self>,
        inst: &Arc<Instance>,
        decision: &Decision,
        (inputs, blobs): (&Arc<Vec<InputTable>>, &[InputBlob]),
        started: Instant,
        rounds: &mut Rounds,
    ) -> Result<(Manifest, Usage), Halt> {
        for _round in 0..4 {
            if rounds.missing() {
                match rounds.remote.clone() {
                    // A cluster executor computes and commits the missing items elsewhere.
                    Some(executor) => {
                        let req = self.remote_request(inst, decision, blobs, rounds);
                        self.remote_round(executor, req, rounds).await?
                    }
                    None => self.local_round(inst, decision, inputs, rounds).await?,
                }
                if rounds.missing() {
                    continue;
                }
            }
            if let Some(done) = self.assemble_round(inst, decision, started, rounds).await? {
                return Ok(done);
            }
        }
        Err(Halt::Failed(
            1,
            StageError::Failed(
                "cached items kept turning out damaged while being read; run `prefflow verify` on the store"
                    .into(),
            ),
        ))
    }

    /// What a cluster executor needs to compute the missing items of `inst`.
    fn remote_request(
        &self,
        inst: &Arc<Instance>,
        decision: &Decision,
        blobs: &[InputBlob],
        rounds: &Rounds,
    ) -> RemoteItems {
        let progress = rounds.task.clone();
        RemoteItems {
            env: self.env.clone(),
            inst: inst.clone(),
            decision: decision.clone(),
            items: ItemDecisions::clone(&rounds.items),
            inputs: blobs.to_vec(),
            pools: self.pool_sizes(inst),
            on_committed: Arc::new(move || progress.inc()),
        }
    }

    /// One round on a cluster executor: it computes and commits the missing items elsewhere.
    async fn remote_round(
        &self,
        executor: Arc<dyn ItemExecutor>,
        req: RemoteItems,
        rounds: &mut Rounds,
    ) -> Result<(), Halt> {
        let ran = tokio::task::spawn_blocking(move || executor.run_items(req))
            .await
            .unwrap_or_else(|e| ItemsRan {
                fresh: HashMap::new(),
                failures: vec![ItemFailure::local(
                    None,
                    1,
                    StageError::Failed(format!("internal error: {e}")),
                )],
            });
        if ran.nothing_started() {
            return Err(Halt::NotStarted);
        }
        if !ran.failures.is_empty() {
            return Err(Halt::ItemsFailed(ran));
        }
        fresh_items(&mut rounds.items, &mut rounds.fresh, ran.fresh);
        Ok(())
    }

    /// One round in this process: prepares the kind (once), runs the missing items except
    /// those an older live run computes (first round only), and takes the ones it committed
    /// meanwhile as cached.
    async fn local_round(
        &self,
        inst: &Arc<Instance>,
        decision: &Decision,
        inputs: &Arc<Vec<InputTable>>,
        rounds: &mut Rounds,
    ) -> Result<(), Halt> {
        let kind = self.prepared(inst, decision, inputs, rounds).await?;
        let progress = rounds.task.clone();
        let on_done: Arc<dyn Fn() + Send + Sync> = Arc::new(move || progress.inc());
        let others = match (rounds.first_round, self.env.lease()) {
            (true, Some(own)) => {
                items_of_older_runs(self.env.store.as_ref(), own, &rounds.items).unwrap_or_default()
            }
            _ => HashMap::new(),
        };
        rounds.first_round = false;
        let skip: HashSet<usize> = others.keys().copied().collect();
        let waiter = {
            let (env, items, done) = (self.env.clone(), rounds.items.clone(), on_done.clone());
            tokio::task::spawn_blocking(move || {
                wait_for_items(env.store.as_ref(), &items, others, &*done)
            })
        };
        let ran = run_items_except(
            &self.env,
            inst,
            &rounds.items,
            &skip,
            kind,
            inputs.clone(),
            self.pools_of(inst),
            Arc::new(move |_: Option<&str>| on_done()),
        )
        .await;
        let shared = match waiter.await {
            Ok(Ok(shared)) => shared,
            Ok(Err(e)) => {
                tracing::warn!("{}: waiting for other runs' items: {e}", inst.label());
                HashMap::new()
            }
            Err(_) => HashMap::new(),
        };
        // Items other runs committed count as cached; those they did not are computed in the
        // next round.
        let decisions = Arc::make_mut(&mut rounds.items);
        for (i, m) in shared {
            decisions.items[i].hit = Some(m);
        }
        if !ran.failures.is_empty() {
            return Err(Halt::ItemsFailed(ran));
        }
        fresh_items(&mut rounds.items, &mut rounds.fresh, ran.fresh);
        Ok(())
    }

    /// The kind prepared for `inst`'s items: prepared on first need, then reused.
    async fn prepared(
        &self,
        inst: &Arc<Instance>,
        decision: &Decision,
        inputs: &Arc<Vec<InputTable>>,
        rounds: &mut Rounds,
    ) -> Result<Arc<dyn PreparedKind>, Halt> {
        if let Some(p) = &rounds.prepared {
            return Ok(p.clone());
        }
        match prepare(&self.env, inst, &decision.key, inputs, &rounds.meter).await {
            Ok(p) => Ok(rounds.prepared.insert(p).clone()),
            Err((attempts, e)) => Err(Halt::Failed(attempts, e)),
        }
    }

    /// Assembles and commits the instance with what it spent; `None` when cached items turned
    /// out damaged (they are marked missing, to be computed in the next round).
    async fn assemble_round(
        self: &Arc<Self>,
        inst: &Arc<Instance>,
        decision: &Decision,
        started: Instant,
        rounds: &mut Rounds,
    ) -> Result<Option<(Manifest, Usage)>, Halt> {
        let mut spent = rounds.meter.snapshot();
        spent.merge(&rounds.fresh.usage);
        let assembled = self
            .clone()
            .assemble_and_commit(
                inst.clone(),
                decision.clone(),
                rounds.items.clone(),
                rounds.fresh.clone(),
                spent.clone(),
                started,
            )
            .await;
        match assembled {
            Ok(m) => Ok(Some((m, spent))),
            Err(AssembleError::Damaged(damaged)) => {
                let decisions = Arc::make_mut(&mut rounds.items);
                for i in damaged {
                    decisions.items[i].hit = None;
                }
                Ok(None)
            }
            Err(AssembleError::Failed(e)) => Err(Halt::Failed(1, e)),
        }
    }

    /// The record of an instance whose rounds stopped: skipped when nothing started, the
    /// failed items' record, or a failure of the whole instance.
    fn halted(&self, inst: &Instance, rounds: Rounds, halt: Halt) -> Outcome {
        match halt {
            Halt::NotStarted => {
                rounds.finish("not started");
                let mut rec = self.record(inst, Status::Skipped);
                rec.message = Some(format!(
                    "not started: {}",
                    self.env.halted().unwrap_or_default()
                ));
                (rec, vec![])
            }
            Halt::ItemsFailed(ran) => {
                let task = Arc::try_unwrap(rounds.task).ok();
                self.items_failed(inst, &rounds.items, ran, task)
            }
            Halt::Failed(attempts, e) => {
                rounds.finish("failed");
                self.fail(inst, None, attempts, &e)
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
            decide_items(env.store.as_ref(), &inst, &parts, &main.label(), &main.df).map_err(|e| {
                match e {
                    ItemsError::Store(e) => StageError::Failed(format!(
                        "cannot decide the items: {}",
                        env.note_if_store_failure(&e)
                    )),
                    e => StageError::Input(e.to_string()),
                }
            })
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
        let mut failed: Vec<&ItemFailure> = ran.failures.iter().collect();
        failed.sort_by_key(|f| f.position);
        // Items never started, given up while running, or whose results could not be stored
        // (a failed store write, an interrupt) are one row per cause, not thousands: the
        // record must stay small enough to fit on a nearly full disk, and a cause is said once.
        let grouped = |m: &str| {
            GROUPED
                .iter()
                .find(|(prefix, _)| m.starts_with(prefix))
                .copied()
        };
        let (collapsed, failed): (Vec<_>, Vec<_>) = failed
            .into_iter()
            .partition(|f| plain(&f.error).is_some_and(|m| grouped(m).is_some()));
        let value = |i: &Option<usize>| i.map(|i| items.items[i].group.value.clone());
        let mut failures: Vec<ErrorRow> = failed
            .iter()
            .map(|f| {
                let mut row = self.error_row(inst, value(&f.position), f.attempts, &f.error);
                row.ran_in = f.ran_in.clone();
                row
            })
            .collect();
        let names: Vec<String> = failures.iter().filter_map(|f| f.item.clone()).collect();
        let mut message = match (names.is_empty(), failures.first()) {
            // The instance failed as a whole (a job that could not be submitted): the errors
            // table says why, once.
            (true, Some(_)) => "failed as a whole: see its error".to_string(),
            _ => format!("{} item(s) failed: {}", names.len(), shortlist(&names)),
        };
        for (prefix, what) in GROUPED {
            let group: Vec<&&ItemFailure> = collapsed
                .iter()
                .filter(|f| plain(&f.error).is_some_and(|m| m.starts_with(prefix)))
                .collect();
            let Some(first) = group.first() else { continue };
            let listed: Vec<String> = group.iter().filter_map(|f| value(&f.position)).collect();
            let why = plain(&first.error).unwrap_or_default();
            let text = format!(
                "{} item(s) {what} ({}): {}",
                group.len(),
                shortlist(&listed),
                why.trim_start_matches(prefix).trim_start_matches(": ")
            );
            let row = match &first.error {
                StageError::Input(_) => StageError::Input(text),
                _ => StageError::Failed(text),
            };
            message.push_str(&format!("; {} {what}", group.len()));
            failures.push(self.error_row(inst, None, 0, &row));
        }
        if let Some(t) = task {
            t.finish(&format!("{} of {total} items failed", ran.failures.len()));
        }
        let mut rec = self.record(inst, Status::Failed);
        rec.message = Some(message);
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
        items: Arc<ItemDecisions>,
        fresh: Arc<Fresh>,
        mut usage: Usage,
        started: Instant,
    ) -> Result<Manifest, AssembleError> {
        let counts = ItemCounts {
            total: items.items.len(),
            executed: fresh.tables.len(),
            cached: items.items.len() - fresh.tables.len(),
        };
        let env = self.env.clone();
        tokio::task::spawn_blocking(move || {
            let keys = items.keys();
            for (i, item) in items.items.iter().enumerate() {
                if let (Some(m), false) = (&item.hit, fresh.tables.contains_key(&i)) {
                    usage.merge(&m.usage);
                }
            }
            let tables = assemble(&env, &inst, &items, &fresh.tables)?;
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
            .map(|commit| commit.manifest)
            .map_err(AssembleError::Failed)
        })
        .await
        .unwrap_or_else(|e| {
            Err(AssembleError::Failed(StageError::Failed(format!(
                "internal error: {e}"
            ))))
        })
    }
}

/// The items this run computed (or took from another writer) for an instance: their tables by
/// item position, and what computing them cost.
#[derive(Default, Clone)]
struct Fresh {
    tables: HashMap<usize, Tables>,
    usage: Usage,
}

/// Marks the items of `ran` committed in `items` (their manifests become the items' hits) and
/// keeps their tables and usage in `fresh`, moving each manifest instead of copying it.
fn fresh_items(
    items: &mut Arc<ItemDecisions>,
    fresh: &mut Arc<Fresh>,
    ran: HashMap<usize, (Manifest, Tables)>,
) {
    let (decisions, fresh) = (Arc::make_mut(items), Arc::make_mut(fresh));
    for (i, (m, t)) in ran {
        fresh.usage.merge(&m.usage);
        fresh.tables.insert(i, t);
        decisions.items[i].hit = Some(m);
    }
}

/// The message of a failure that is not the kind's own transient error.
fn plain(e: &StageError) -> Option<&str> {
    match e {
        StageError::Failed(m) | StageError::Input(m) => Some(m),
        _ => None,
    }
}

/// Failures reported as one row per cause (message prefix, and what happened to the items).
const GROUPED: [(&str, &str); 3] = [
    (NOT_STARTED, "not started"),
    (STOPPED, "stopped while running"),
    (super::commit::NOT_STORED, "computed but not stored"),
];

/// The first few of `names`, and how many more.
fn shortlist(names: &[String]) -> String {
    const SHOWN: usize = 10;
    let mut out = names
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        out.push_str(&format!(", … ({} more)", names.len() - SHOWN));
    }
    out
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
