//! The seam where a cluster executor takes over: the missing items of a per-item instance are
//! handed to an [`ItemExecutor`] instead of [`super::run_items_locally`]. Everything before
//! (planning, decisions, inputs) and after (assembling, committing the instance, the run
//! record) stays in the local runner, so both executors produce byte-identical tables.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{ExecEnv, InputBlob, ItemsRan};
use crate::decision::{Decision, ItemDecisions};
use crate::plan::Instance;

/// What an executor needs to compute the missing items of one instance elsewhere.
pub struct RemoteItems {
    /// The run's environment (its store is the one workers share).
    pub env: Arc<ExecEnv>,
    /// The instance.
    pub inst: Arc<Instance>,
    /// Its decision: recipe key and key parts.
    pub decision: Decision,
    /// Its items; those without `hit` are to compute.
    pub items: ItemDecisions,
    /// The blobs of its inputs, in binding order (what workers load).
    pub inputs: Vec<InputBlob>,
    /// The size of every resource pool the instance holds, by name.
    pub pools: BTreeMap<String, u32>,
    /// Called once for each item seen committed, for progress.
    pub on_committed: Arc<dyn Fn() + Send + Sync>,
}

/// Runs the missing items of per-item instances somewhere other than this process.
pub trait ItemExecutor: Send + Sync + std::fmt::Debug {
    /// Whether this executor takes the items of `inst` (otherwise they run locally).
    fn takes(&self, inst: &Instance) -> bool;

    /// Computes and commits the missing items of `req` (blocking: called on a blocking
    /// thread); returns what was committed and what failed, by item position.
    fn run_items(&self, req: RemoteItems) -> ItemsRan;
}
