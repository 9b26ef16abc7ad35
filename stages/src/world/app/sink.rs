//! Collects what app validation finds: problems, and ref values whose targets can only be
//! checked once every table's seed records are loaded.

use serde_json::Value;

use crate::world::error::{Loc, Problem};
use crate::world::types::TableId;

/// A ref value (or list of them) waiting for its target table's records.
#[derive(Debug)]
pub(crate) struct PendingRef {
    /// The table the ids must exist in.
    pub table: TableId,
    /// A string id or an array of ids.
    pub value: Value,
    /// Where it was written.
    pub at: Loc,
    /// What it is, for the message (e.g. "default of `card`").
    pub what: String,
}

/// Problems found so far plus deferred ref checks.
#[derive(Debug, Default)]
pub(crate) struct Sink {
    pub problems: Vec<Problem>,
    pub refs: Vec<PendingRef>,
    /// Tables (app, table index) with a field that failed to lower.
    pub broken: std::collections::HashSet<(usize, usize)>,
}

impl Sink {
    /// Records a problem.
    pub fn push(&mut self, p: Problem) {
        self.problems.push(p);
    }
}
