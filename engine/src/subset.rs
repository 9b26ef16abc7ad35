//! Item subsets: a run that plays only some items of its per-item stages (a smoke run of five
//! tasks, a stratified sample) and shares every item with the full run.
//!
//! A subset is attached to instances after the plan is built ([`crate::plan::Plan::with_subset`]);
//! what it keeps is decided from the instance's main input when its items are decided
//! ([`crate::decision::decide_items`]), so `plan` and `run` agree. Its description is part of the
//! instance's recipe key — a subset's assembled tables never pass for the full run's — and never
//! part of an item's key: each item is the same item in both, so a full run after a subset plays
//! only the rest. The engine knows nothing of what the items are; the caller's [`ItemSubset`]
//! chooses them.

use polars::prelude::DataFrame;

/// Which items of a per-item instance to play.
pub trait ItemSubset: Send + Sync {
    /// What the subset is, as the user asked for it (`--sample 5 --sample-seed 0`): shown by
    /// `plan` and the run summary, and part of the instance's recipe key.
    fn describe(&self) -> String;

    /// The per-item values to keep, chosen from the instance's main input (`column` is its
    /// per-item column). An error is the user's (e.g. an id that is no item), phrased with
    /// the fix.
    fn select(&self, main: &DataFrame, column: &str) -> Result<Vec<String>, String>;
}
