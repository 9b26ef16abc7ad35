//! What running the missing items of an instance came to, wherever they ran (here, or on a
//! cluster executor): the items committed, and the items that failed with their errors.

use std::collections::HashMap;

use super::unit::NOT_STARTED;
use crate::artifact::Manifest;
use crate::error::StageError;
use crate::kind::Tables;

/// What the missing items of an instance came to, by item position in its [`ItemDecisions`].
#[derive(Default)]
pub struct ItemsRan {
    /// Items committed, with their manifest and tables.
    pub fresh: HashMap<usize, (Manifest, Tables)>,
    /// Items that failed.
    pub failures: Vec<ItemFailure>,
}

/// An item that failed, as the errors table reports it.
#[derive(Debug)]
pub struct ItemFailure {
    /// Its position in the instance's [`ItemDecisions`] (`None` when an internal error lost it).
    pub position: Option<usize>,
    /// Attempts made.
    pub attempts: u32,
    /// The last attempt's error.
    pub error: StageError,
    /// Where a cluster executor ran its last attempt (`slurm 1234_5`), so a failure can be
    /// looked up in the scheduler; `None` on the local executor.
    pub ran_in: Option<String>,
}

impl ItemsRan {
    /// Nothing ran: the run was halted before this work could start (a configuration mistake
    /// another stage met first, an interrupt). The instance is skipped, with no error row: the
    /// cause is reported where it happened.
    pub fn not_started(why: &str) -> Self {
        Self {
            fresh: HashMap::new(),
            failures: vec![ItemFailure::local(
                None,
                0,
                StageError::Failed(format!("{NOT_STARTED}: {why}")),
            )],
        }
    }

    /// Whether this is [`ItemsRan::not_started`]: nothing committed, nothing failed.
    pub(super) fn nothing_started(&self) -> bool {
        self.fresh.is_empty()
            && !self.failures.is_empty()
            && self
                .failures
                .iter()
                .all(|f| matches!(&f.error, StageError::Failed(m) if m.starts_with(NOT_STARTED)))
    }
}

impl ItemFailure {
    /// A failure of the item at `position` on the local executor.
    pub fn local(position: Option<usize>, attempts: u32, error: StageError) -> Self {
        Self {
            position,
            attempts,
            error,
            ran_in: None,
        }
    }
}
