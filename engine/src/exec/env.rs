//! What executing work needs besides the work itself, as one value. The local runner builds one
//! per run; a cluster worker builds its own and calls the same functions ([`super::prepare`],
//! [`super::run_unit`], [`super::load_inputs`]), so both compute results the same way.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::Semaphore;

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
        })
    }
}
