//! What executing work needs besides the work itself, as one value. The local runner builds one
//! per run; a cluster worker builds its own and calls the same functions ([`super::prepare`],
//! [`super::run_unit`], [`super::load_inputs`]), so both compute results the same way.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use tokio::sync::Semaphore;

use crate::error::Error;
use crate::store::lease::Lease;
use crate::store::Store;

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
    /// Bounds the blocking commits of async items: a few threads write, however many items
    /// finish at once.
    pub(super) commit_slots: Arc<Semaphore>,
    /// Set by the first failed write to the store (disk full, permissions, a remote that keeps
    /// failing): from then on no new work starts, since it could not be kept.
    store_failure: OnceLock<String>,
    /// The lease of the run (or worker) this environment computes for: what it works on is
    /// announced (and protected from `gc`) through it, and other runs wait for those items.
    lease: OnceLock<Arc<Lease>>,
}

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
            store_failure: OnceLock::new(),
            lease: OnceLock::new(),
        })
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
            tracing::error!("{message}; no new work is started");
        }
        message
    }

    /// Why no new work may start, once a store write has failed.
    pub fn store_failure(&self) -> Option<&str> {
        self.store_failure.get().map(String::as_str)
    }
}

/// What a failed store write means for the user, with what to do about it.
pub fn store_failure_message(store: &dyn Store, e: &Error) -> String {
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
