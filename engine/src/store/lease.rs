//! Leases: every writer (a run, a cluster worker, `gc`) announces itself in the store for its
//! whole life, so others sharing the store can tell live work from dead.
//!
//! A lease is `leases/<id>.json` (id, pipeline, host, pid, start, heartbeat), created only if
//! absent and rewritten by a heartbeat thread. Beside it, `leases/<id>/<recipe key>.json` lists
//! what the writer works on (the instance's recipe key and its item keys), written before the
//! work starts: `gc` keeps everything those lists reach, so a killed run's committed items stay
//! until a later run's record holds them. A lease is **dead** when it provably is: its process
//! on this machine is gone (or its pid now belongs to another process), or its heartbeat is
//! older than the timeout. Anything else is live, whatever machine it is on.
//!
//! `gc` takes a lease of its own before it looks and refuses (or waits) while any other lease
//! is live; a run that finds a live `gc` lease waits for it. Each writes its lease before
//! reading the others', so of a run and a `gc` starting together at least one sees the other.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::contract::Store;
use super::host::{host_name, pid_alive, proc_start_ticks, unix_now};
use crate::error::{Error, Result};
use crate::keys::hash_bytes;

/// Prefix of leases in the store.
pub const LEASES: &str = "leases";

/// What holds a lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Holder {
    /// A `prefflow run` (or a worker computing items for one).
    Run,
    /// A `prefflow gc`.
    Gc,
}

/// The content of a lease.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeaseRecord {
    /// Unique id (also the key: `leases/<id>.json`).
    pub id: String,
    /// What holds it.
    pub holder: Holder,
    /// The pipeline a run works on (`""` for `gc`).
    pub pipeline: String,
    /// Machine name (see [`host_name`]).
    pub host: String,
    /// Process id on that machine.
    pub pid: u32,
    /// The process's start time in clock ticks since boot, so a reused pid is not mistaken
    /// for the holder.
    #[serde(default)]
    pub pid_start: Option<u64>,
    /// Unix seconds when the lease was taken.
    pub started_at: f64,
    /// Unix seconds of the last heartbeat.
    pub heartbeat_at: f64,
    /// Seconds between heartbeats.
    pub heartbeat_secs: f64,
}

/// What the lease's holder works on: one stage instance's recipe key and its item keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Protected {
    /// `stage` or `stage[variant]`, for messages.
    pub label: String,
    /// The instance's recipe key.
    pub recipe_key: String,
    /// Its item keys (empty for a whole stage).
    #[serde(default)]
    pub item_keys: Vec<String>,
}

/// Whether a lease's holder is still at work, as far as anyone can prove.
#[derive(Debug, Clone, PartialEq)]
pub enum Liveness {
    /// The holder may still be working (its heartbeat is fresh, and if it is on this machine,
    /// its process runs).
    Live,
    /// The holder is provably gone (why).
    Dead(String),
}

/// Seconds between heartbeats (`PREFFLOW_LEASE_HEARTBEAT_SECS`, default 10).
pub fn heartbeat_secs() -> f64 {
    env_secs("PREFFLOW_LEASE_HEARTBEAT_SECS", 10.0)
}

/// A lease whose heartbeat is older than this many seconds is dead
/// (`PREFFLOW_LEASE_TIMEOUT_SECS`, default 120, at least three heartbeats).
pub fn timeout_secs() -> f64 {
    env_secs("PREFFLOW_LEASE_TIMEOUT_SECS", 120.0).max(3.0 * heartbeat_secs())
}

/// A dead lease whose last heartbeat is older than this many seconds is removed by `gc`
/// (`PREFFLOW_DEAD_LEASE_EXPIRY_SECS`, default 7 days): a killed run's committed items are
/// protected until a later run adopts them, but not forever.
pub fn dead_lease_expiry_secs() -> f64 {
    env_secs("PREFFLOW_DEAD_LEASE_EXPIRY_SECS", 7.0 * 86400.0)
}

/// `7 days`, `3 h`, `90 s`: an age for messages.
pub fn describe_age(secs: f64) -> String {
    if secs >= 86400.0 {
        format!("{:.0} days", secs / 86400.0)
    } else if secs >= 3600.0 {
        format!("{:.0} h", secs / 3600.0)
    } else {
        format!("{secs:.0} s")
    }
}

fn env_secs(var: &str, default: f64) -> f64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v > 0.0)
        .unwrap_or(default)
}

impl LeaseRecord {
    /// Whether this lease's holder is alive, judged at `now`.
    pub fn liveness(&self, now: f64) -> Liveness {
        if self.host == host_name() && !pid_alive(self.pid, self.pid_start) {
            return Liveness::Dead(format!("process {} on {} is gone", self.pid, self.host));
        }
        let age = now - self.heartbeat_at;
        let timeout = timeout_secs().max(3.0 * self.heartbeat_secs);
        if age > timeout {
            return Liveness::Dead(format!(
                "no heartbeat for {age:.0}s (timeout {timeout:.0}s)"
            ));
        }
        Liveness::Live
    }

    /// One line for messages: who holds it, since when, last heartbeat.
    pub fn describe(&self, now: f64) -> String {
        let what = match self.holder {
            Holder::Run => format!("run of `{}`", self.pipeline),
            Holder::Gc => "gc".to_string(),
        };
        format!(
            "{what} (lease {}, pid {} on {}, started {:.0}s ago, last heartbeat {:.0}s ago)",
            self.id,
            self.pid,
            self.host,
            now - self.started_at,
            now - self.heartbeat_at
        )
    }
}

fn lease_key(id: &str) -> String {
    format!("{LEASES}/{id}.json")
}

fn protected_dir(id: &str) -> String {
    format!("{LEASES}/{id}")
}

/// Every lease in the store, with the lists of what each protects.
pub fn list_leases(store: &dyn Store) -> Result<Vec<(LeaseRecord, Vec<Protected>)>> {
    let metas = store.list_meta(LEASES)?;
    let keys: Vec<String> = metas.iter().map(|m| m.key.clone()).collect();
    let mut out = Vec::new();
    for meta in &metas {
        let key = &meta.key;
        let Some(rest) = key.strip_prefix(&format!("{LEASES}/")) else {
            continue;
        };
        let Some(id) = rest.strip_suffix(".json").filter(|r| !r.contains('/')) else {
            continue;
        };
        let Some(lease) = read_lease(store, key, meta.modified)? else {
            continue;
        };
        let prefix = format!("{}/", protected_dir(id));
        let mut lists = Vec::new();
        for k in keys
            .iter()
            .filter(|k| k.starts_with(&prefix) && k.ends_with(".json"))
        {
            if let Some(p) = store
                .get(k)?
                .and_then(|b| serde_json::from_slice::<Protected>(&b).ok())
            {
                lists.push(p);
            }
        }
        out.push((lease, lists));
    }
    Ok(out)
}

/// Whether lease `id` exists and is live now.
pub fn is_live(store: &dyn Store, id: &str) -> Result<bool> {
    let key = lease_key(id);
    let modified = match store.clock_offset() {
        Some(_) => store.stat(&key)?.map_or(0.0, |m| m.modified),
        None => 0.0,
    };
    Ok(
        read_lease(store, &key, modified)?
            .is_some_and(|l| l.liveness(unix_now()) == Liveness::Live),
    )
}

/// Reads the lease at `key` (`None` when gone or unreadable). On a store that stamps objects
/// with its own clock (see [`Store::clock_offset`]), the lease's times are re-expressed on
/// this machine's clock from `modified`, the store's stamp of its last heartbeat: liveness is
/// then judged by when the store last saw a heartbeat, whatever the writer's clock says.
fn read_lease(store: &dyn Store, key: &str, modified: f64) -> Result<Option<LeaseRecord>> {
    let Some(bytes) = store.get(key)? else {
        return Ok(None);
    };
    let Ok(mut lease) = serde_json::from_slice::<LeaseRecord>(&bytes) else {
        tracing::warn!("ignoring unreadable lease {key}");
        return Ok(None);
    };
    if let Some(offset) = store.clock_offset().filter(|_| modified > 0.0) {
        rebase(&mut lease, modified, offset);
    }
    Ok(Some(lease))
}

/// Moves a lease's start and heartbeat onto this machine's clock: the heartbeat is the
/// store's stamp of the lease object (`modified`, store clock) minus `offset` (store clock
/// minus ours); the start keeps its distance from the heartbeat as the writer measured it.
fn rebase(lease: &mut LeaseRecord, modified: f64, offset: f64) {
    let heartbeat = modified - offset;
    lease.started_at = heartbeat - (lease.heartbeat_at - lease.started_at);
    lease.heartbeat_at = heartbeat;
}

/// Removes a lease and its lists (a finished holder, or a dead one whose work is adopted).
pub fn remove_lease(store: &dyn Store, id: &str) -> Result<()> {
    for key in store.list(&protected_dir(id))? {
        store.delete(&key)?;
    }
    store.delete(&lease_key(id))
}

/// A lease held by this process: taken on [`Lease::acquire`], kept fresh by a heartbeat thread,
/// given back on [`Lease::release`] or drop (a killed process leaves it, and others see it die).
pub struct Lease {
    store: Arc<dyn Store>,
    record: Mutex<LeaseRecord>,
    stop: Arc<AtomicBool>,
    beat: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Disconnects when the heartbeat thread ends (it holds the sender).
    beat_done: Mutex<Option<std::sync::mpsc::Receiver<()>>>,
    released: AtomicBool,
}

/// How long [`Lease::release`] waits for a heartbeat under way (on a store that stopped
/// answering, one can take the store's whole deadline): past it the lease is removed anyway.
const HEARTBEAT_JOIN: Duration = Duration::from_secs(3);

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease").field("id", &self.id()).finish()
    }
}

impl Lease {
    /// Takes a new lease for `holder` (and `pipeline`, for a run) in `store`.
    pub fn acquire(store: Arc<dyn Store>, holder: Holder, pipeline: &str) -> Result<Arc<Lease>> {
        let now = unix_now();
        let pid = std::process::id();
        let host = host_name();
        let salt =
            hash_bytes(format!("{now}-{pid}-{host}-{:?}", std::thread::current().id()).as_bytes());
        let id = format!("{}-{host}-{pid}-{}", now as u64, &salt[..8]);
        let record = LeaseRecord {
            id: id.clone(),
            holder,
            pipeline: pipeline.to_string(),
            host,
            pid,
            pid_start: proc_start_ticks(pid),
            started_at: now,
            heartbeat_at: now,
            heartbeat_secs: heartbeat_secs(),
        };
        if !store.put_new(&lease_key(&id), &encode(&record)?)? {
            return Err(Error::RunFailed(format!("lease {id} exists already")));
        }
        let lease = Arc::new(Lease {
            store,
            record: Mutex::new(record),
            stop: Arc::new(AtomicBool::new(false)),
            beat: Mutex::new(None),
            beat_done: Mutex::new(None),
            released: AtomicBool::new(false),
        });
        lease.start_heartbeat();
        Ok(lease)
    }

    /// The lease's id.
    pub fn id(&self) -> String {
        self.record.lock().map(|r| r.id.clone()).unwrap_or_default()
    }

    /// When the lease was taken (Unix seconds).
    pub fn started_at(&self) -> f64 {
        self.record.lock().map(|r| r.started_at).unwrap_or(0.0)
    }

    /// Announces that this holder is about to work on (or use) an instance: `gc` keeps its
    /// recipe manifest and item manifests, and their blobs, while the lease exists.
    pub fn protect(&self, entry: &Protected) -> Result<()> {
        let key = format!("{}/{}.json", protected_dir(&self.id()), entry.recipe_key);
        let bytes = serde_json::to_vec(entry).map_err(|e| Error::Corrupt {
            key: key.clone(),
            reason: e.to_string(),
        })?;
        self.store.put(&key, &bytes)
    }

    /// Gives the lease back: stops the heartbeat, removes the lease and its lists.
    pub fn release(&self) -> Result<()> {
        if self.released.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        self.stop.store(true, Ordering::SeqCst);
        if let Some(handle) = self.beat.lock().ok().and_then(|mut b| b.take()) {
            handle.thread().unpark();
            let done = self.beat_done.lock().ok().and_then(|mut d| d.take());
            match done.map(|d| d.recv_timeout(HEARTBEAT_JOIN)) {
                Some(Err(std::sync::mpsc::RecvTimeoutError::Timeout)) => {
                    tracing::debug!(
                        "lease {}: a heartbeat is still under way; removing the lease anyway",
                        self.id()
                    );
                }
                _ => {
                    let _ = handle.join();
                }
            }
        }
        remove_lease(self.store.as_ref(), &self.id())
    }

    fn start_heartbeat(self: &Arc<Self>) {
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        if let Ok(mut d) = self.beat_done.lock() {
            *d = Some(done_rx);
        }
        let weak = Arc::downgrade(self);
        let stop = self.stop.clone();
        let every = Duration::from_secs_f64(heartbeat_secs());
        let handle = std::thread::Builder::new()
            .name("prefflow-lease".into())
            .spawn(move || {
                let _done = done_tx;
                // One warning when heartbeats start failing, one line when they work again.
                let mut failing = false;
                loop {
                    std::thread::park_timeout(every);
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Some(lease) = weak.upgrade() else { return };
                    match (lease.beat(), failing) {
                        (Err(e), false) => {
                            tracing::warn!("lease {}: heartbeat failed: {e}", lease.id());
                            failing = true;
                        }
                        (Err(e), true) => {
                            tracing::debug!("lease {}: heartbeat failed: {e}", lease.id())
                        }
                        (Ok(()), true) => {
                            tracing::info!("lease {}: heartbeats work again", lease.id());
                            failing = false;
                        }
                        (Ok(()), false) => {}
                    }
                }
            });
        if let (Ok(handle), Ok(mut beat)) = (handle, self.beat.lock()) {
            *beat = Some(handle);
        }
    }

    fn beat(&self) -> Result<()> {
        let record = {
            let mut r = self
                .record
                .lock()
                .map_err(|_| Error::RunFailed("lease lock poisoned".into()))?;
            r.heartbeat_at = unix_now();
            r.clone()
        };
        self.store.put(&lease_key(&record.id), &encode(&record)?)
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Err(e) = self.release() {
            tracing::warn!("could not release lease {}: {e}", self.id());
        }
    }
}

fn encode(record: &LeaseRecord) -> Result<Vec<u8>> {
    serde_json::to_vec_pretty(record).map_err(|e| Error::Corrupt {
        key: lease_key(&record.id),
        reason: e.to_string(),
    })
}

/// Live leases other than `own`, judged now.
pub fn live_others(store: &dyn Store, own: &str) -> Result<Vec<LeaseRecord>> {
    let now = unix_now();
    Ok(list_leases(store)?
        .into_iter()
        .map(|(l, _)| l)
        .filter(|l| l.id != own && l.liveness(now) == Liveness::Live)
        .collect())
}

/// Waits (up to `limit`) until no live `gc` lease is left, so a run never starts while `gc`
/// decides what to delete. Returns the gc leases still live when the wait gave up.
pub fn wait_for_gc(store: &dyn Store, own: &str, limit: Duration) -> Result<Vec<LeaseRecord>> {
    let deadline = std::time::Instant::now() + limit;
    let mut announced = false;
    loop {
        let gcs: Vec<LeaseRecord> = live_others(store, own)?
            .into_iter()
            .filter(|l| l.holder == Holder::Gc)
            .collect();
        if gcs.is_empty() || std::time::Instant::now() >= deadline {
            return Ok(gcs);
        }
        if !announced {
            tracing::info!(
                "waiting for {} to finish before running",
                gcs[0].describe(unix_now())
            );
            announced = true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
