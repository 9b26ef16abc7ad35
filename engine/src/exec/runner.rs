//! What the instances of one run share (the plan, the execution environment, the resource
//! pools, progress, the previous run record, the item executor), and what every way of running
//! an instance does with it: records, error rows, failures, gc protection, pool slots.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::Semaphore;

use super::env::ExecEnv;
use super::remote::ItemExecutor;
use crate::error::StageError;
use crate::plan::{Instance, Plan};
use crate::progress::Progress;
use crate::record::{ErrorRow, InstanceRecord, RunRecord, Status};
use crate::store::lease::Protected;

/// Everything the instances of one run share.
pub(super) struct Runner {
    pub(super) plan: Arc<Plan>,
    pub(super) env: Arc<ExecEnv>,
    pub(super) pools: HashMap<String, Arc<Semaphore>>,
    pub(super) progress: Progress,
    pub(super) previous: Option<RunRecord>,
    pub(super) executor: Option<Arc<dyn ItemExecutor>>,
}

/// What an instance run yields: its record and its error rows.
pub(super) type Outcome = (InstanceRecord, Vec<ErrorRow>);

impl Runner {
    pub(super) fn record(&self, inst: &Instance, status: Status) -> InstanceRecord {
        InstanceRecord::empty(&inst.stage, inst.variant.name(), inst.kind.name(), status)
    }

    pub(super) fn error_row(
        &self,
        inst: &Instance,
        item: Option<String>,
        attempts: u32,
        e: &StageError,
    ) -> ErrorRow {
        ErrorRow {
            stage: inst.stage.clone(),
            variant: inst.variant.name(),
            item,
            attempts,
            kind: error_kind(e).to_string(),
            message: e.to_string(),
            ran_in: None,
        }
    }

    pub(super) fn fail(
        &self,
        inst: &Instance,
        item: Option<String>,
        attempts: u32,
        e: &StageError,
    ) -> Outcome {
        let mut rec = self.record(inst, Status::Failed);
        rec.message = Some(e.to_string());
        self.progress
            .line(&format!("{}: FAILED: {e}", inst.label()));
        (rec, vec![self.error_row(inst, item, attempts, e)])
    }

    /// Announces in the run's lease that it computes `inst` (recipe key `key`, items
    /// `item_keys`), so that `gc` keeps what it commits even if the run is killed before its
    /// record is written.
    pub(super) async fn protect(
        &self,
        inst: &Instance,
        key: &str,
        item_keys: Vec<String>,
    ) -> std::result::Result<(), StageError> {
        let Some(lease) = self.env.lease().cloned() else {
            return Ok(());
        };
        let entry = Protected {
            label: inst.label(),
            recipe_key: key.to_string(),
            item_keys,
        };
        let env = self.env.clone();
        tokio::task::spawn_blocking(move || lease.protect(&entry))
            .await
            .map_err(|e| StageError::Failed(format!("internal error: {e}")))?
            .map_err(|e| {
                // Like a failed commit: nothing new starts, and a full disk says what to free.
                let why = env.note_store_failure(&e);
                StageError::Failed(format!("could not update the run's lease: {why}"))
            })
    }

    /// The resource pools an attempt of `inst` holds a slot of, in name order (so that two
    /// instances sharing pools never wait on each other crosswise).
    pub(super) fn pools_of(&self, inst: &Instance) -> Vec<Arc<Semaphore>> {
        let mut names: Vec<&String> = inst.pools.iter().collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .filter_map(|n| self.pools.get(n).cloned())
            .collect()
    }

    /// The declared size of every pool `inst` holds (for executors that divide them).
    pub(super) fn pool_sizes(&self, inst: &Instance) -> std::collections::BTreeMap<String, u32> {
        inst.pools
            .iter()
            .filter_map(|n| self.plan.resources.get(n).map(|&size| (n.clone(), size)))
            .collect()
    }
}

fn error_kind(e: &StageError) -> &'static str {
    match e {
        StageError::Input(_) => "input",
        StageError::Transient(_) | StageError::Exhausted(_) => "transient",
        StageError::Failed(_) => "failed",
    }
}
