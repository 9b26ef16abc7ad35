//! The seam where a cluster executor takes over: the missing items of a per-item instance are
//! handed to an [`ItemExecutor`] instead of [`super::items::run_items_locally`], and a whole-table
//! instance it takes is handed to it instead of being run here. Everything before (planning,
//! decisions, inputs) and after (assembling, committing the instance, the run record) stays in
//! the local runner, and the remote side commits through the same functions
//! ([`super::unit::run_unit`]), so both executors produce byte-identical tables.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::env::ExecEnv;
use super::inputs::InputBlob;
use super::ran::ItemsRan;
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

/// What an executor needs to compute a whole-table instance elsewhere: the instance is
/// committed under its recipe key (`decision.key`), as a local run commits it.
pub struct RemoteWhole {
    /// The run's environment (its store is the one workers share).
    pub env: Arc<ExecEnv>,
    /// The instance.
    pub inst: Arc<Instance>,
    /// Its decision (a miss): recipe key and key parts.
    pub decision: Decision,
    /// The blobs of its inputs, in binding order (what the worker loads).
    pub inputs: Vec<InputBlob>,
    /// The size of every resource pool the instance holds, by name.
    pub pools: BTreeMap<String, u32>,
}

/// Runs work of instances somewhere other than this process: the missing items of per-item
/// instances, and the whole-table instances it [takes](ItemExecutor::takes_whole).
pub trait ItemExecutor: Send + Sync + std::fmt::Debug {
    /// Whether this executor takes the items of per-item instance `inst` (otherwise they run
    /// locally).
    fn takes(&self, inst: &Instance) -> bool;

    /// Computes and commits the missing items of `req` (blocking: called on a blocking
    /// thread); returns what was committed and what failed, by item position.
    fn run_items(&self, req: RemoteItems) -> ItemsRan;

    /// Whether this executor runs whole-table instance `inst` (otherwise it runs locally).
    fn takes_whole(&self, inst: &Instance) -> bool;

    /// Computes and commits the whole-table instance of `req` (blocking); returns its
    /// committed result at position 0 of `fresh`, or its failures.
    fn run_whole(&self, req: RemoteWhole) -> ItemsRan;
}
