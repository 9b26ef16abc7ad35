//! What executing work needs besides the work itself, as one value. The local runner builds one
//! per run; a cluster worker builds its own and calls the same functions ([`super::prepare`],
//! [`super::run_unit`], [`super::load_inputs`]), so both compute results the same way.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::Semaphore;

use crate::error::Error;
use crate::plan::Instance;
use crate::store::lease::Lease;
use crate::store::Store;
use crate::usage::{RetryTally, UsageMeter};

/// The environment of execution.
pub struct ExecEnv {
    /// Where results are committed (and the record/replay cache of external calls lives).
    pub store: Arc<dyn Store>,
    /// Relative paths in params resolve against this directory.
    pub workdir: PathBuf,
    /// External calls must be served from the store's cache (see `StageContext::offline`).
    pub offline: bool,
    /// The pipeline's name, recorded in manifests (keys do not depend on it).
    pub pipeline: String,
    /// Bounds the commits in flight: a few threads write, however many items finish at once.
    pub(super) commit_slots: Arc<Semaphore>,
    /// Bounds the finished items waiting for a commit slot ([`COMMIT_BACKLOG`]): an item in the
    /// backlog has given its stage slot to the next item, so a wave of items finishing together
    /// does not hold back the next wave for the commits of the whole wave; once the backlog is
    /// full, a finished item keeps its stage slot until it gets in, so a store that stops
    /// answering stops new items from starting instead of piling up finished ones.
    pub(super) commit_backlog: Arc<Semaphore>,
    /// Set by the first failed write to the store (disk full, permissions, a remote that keeps
    /// failing): from then on no new work starts, since it could not be kept.
    store_failure: OnceLock<String>,
    /// Set by a configuration mistake found while running (a scheduler refusing the
    /// executor's settings): it would fail every later submission the same way.
    halt: OnceLock<String>,
    /// The lease of the run (or worker) this environment computes for: what it works on is
    /// announced (and protected from `gc`) through it, and other runs wait for those items.
    lease: OnceLock<Arc<Lease>>,
    /// The calls each running instance's kind retried, by cause, until the instance ends
    /// ([`ExecEnv::say_retries`]).
    retries: Mutex<HashMap<String, Arc<RetryTally>>>,
}

/// Finished items that may wait for a commit slot after giving up their stage slot: enough for
/// a wave of 256 items in flight finishing together (a pool of 256 model requests), few enough
/// that a silent store stops the computing soon.
pub(crate) const COMMIT_BACKLOG: usize = 256;

impl ExecEnv {
    /// An environment committing to `store`.
    pub fn new(
        store: Arc<dyn Store>,
        workdir: PathBuf,
        offline: bool,
        pipeline: impl Into<String>,
    ) -> Arc<Self> {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        Arc::new(Self {
            store,
            workdir,
            offline,
            pipeline: pipeline.into(),
            commit_slots: Arc::new(Semaphore::new(cores * 2)),
            commit_backlog: Arc::new(Semaphore::new(COMMIT_BACKLOG)),
            store_failure: OnceLock::new(),
            halt: OnceLock::new(),
            lease: OnceLock::new(),
            retries: Mutex::default(),
        })
    }

    /// A fresh meter for work of `inst` (the instance, or one of its items): usage of its
    /// own, retries tallied for the instance as a whole.
    pub fn meter(&self, inst: &Instance) -> Arc<UsageMeter> {
        let tally = self
            .retries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(inst.label())
            .or_default()
            .clone();
        Arc::new(UsageMeter::tallying(tally))
    }

    /// Says once, at info, what calls `inst`'s kind retried (counts by cause), when any: a
    /// flaky provider shows per stage without a line per retry (those are at debug).
    pub fn say_retries(&self, inst: &Instance) {
        let label = inst.label();
        let tally = self
            .retries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&label);
        if let Some(line) = tally.and_then(|t| t.summary()) {
            tracing::info!("{label}: {line}");
        }
    }

    /// Sets the lease work is done under (once; later calls are ignored).
    pub fn attach_lease(&self, lease: Arc<Lease>) {
        let _ = self.lease.set(lease);
    }

    /// The lease work is done under, when one is attached.
    pub fn lease(&self) -> Option<&Arc<Lease>> {
        self.lease.get()
    }

    /// Records that writing to the store failed with `e`; returns the message to report, which
    /// says what to do (for a full disk: what to free). Only the first failure is kept.
    pub fn note_store_failure(&self, e: &Error) -> String {
        let message = store_failure_message(self.store.as_ref(), e);
        let first = self.store_failure.set(message.clone()).is_ok();
        if first {
            // The message itself is reported once, with the work that failed.
            tracing::warn!("the store failed; no new work is started");
        }
        message
    }

    /// Notes `e` as a store failure when it is one (the store could not be reached, read or
    /// written) and returns its message: a run that cannot use its store stops starting work.
    pub fn note_if_store_failure(&self, e: &Error) -> String {
        match e {
            Error::Silent { .. } | Error::Remote { .. } | Error::Store { .. } => {
                self.note_store_failure(e)
            }
            _ => e.to_string(),
        }
    }

    /// The first store failure of this run, if one happened.
    pub fn store_failure(&self) -> Option<&str> {
        self.store_failure.get().map(String::as_str)
    }

    /// Whether a store operation of this run has failed.
    pub fn store_failed(&self) -> bool {
        self.store_failure.get().is_some()
    }

    /// Stops new work in this run for a mistake every later piece of work would repeat (a
    /// scheduler refusing the settings): said once, here; later work is "not started".
    pub fn halt(&self, why: &str) {
        if self.halt.set(why.to_string()).is_ok() {
            tracing::warn!("a configuration mistake showed; no new work is started");
        }
    }

    /// Why no new work may start: a store write failed, a configuration mistake showed, or
    /// the run was interrupted ([`super::interrupt`]).
    pub fn halted(&self) -> Option<String> {
        if self.store_failure.get().or(self.halt.get()).is_some() {
            // Said in full once, with the work that met it.
            return Some(EARLIER.to_string());
        }
        super::interrupt::interrupted()
            .map(|sig| format!("interrupted by {}", super::interrupt::name(sig)))
    }

    /// Resolves once work in flight should be given up, with why: at once after a failed
    /// store write (its result could not be kept), [`super::interrupt::grace`] after an
    /// interrupt. Never resolves while the run goes on.
    pub async fn give_up(&self) -> String {
        let tick = std::time::Duration::from_millis(250);
        loop {
            if self.store_failure.get().or(self.halt.get()).is_some() {
                return EARLIER.to_string();
            }
            if let Some(sig) = super::interrupt::interrupted() {
                tokio::time::sleep(super::interrupt::grace()).await;
                return format!("interrupted by {}", super::interrupt::name(sig));
            }
            tokio::time::sleep(tick).await;
        }
    }
}

/// Why work did not start (or was given up) after a failure that is reported in full where
/// it happened.
const EARLIER: &str = "the run stopped at an earlier error";

/// What a failed store write means for the user, with what to do about it.
pub fn store_failure_message(store: &dyn Store, e: &Error) -> String {
    if matches!(e, Error::Silent { .. } | Error::StoreSetup(_)) {
        // These name the store and say what to do already.
        return e.to_string();
    }
    if e.is_storage_full() {
        format!(
            "the store is out of space ({e}): free space on the filesystem holding {} \
             (`df -h` shows it; `prefflow gc` deletes results no run uses; removing other files \
             there helps too), then run again: committed items are kept",
            store.describe()
        )
    } else {
        format!("could not write to the store {}: {e}", store.describe())
    }
}
