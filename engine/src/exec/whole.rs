//! Running a stage in one piece (no `per_item`).

use std::sync::Arc;
use std::time::Instant;

use super::attempt::seed_of;
use super::commit::Provenance;
use super::{Outcome, Runner};
use crate::artifact::Manifest;
use crate::decision::Decision;
use crate::error::StageError;
use crate::kind::InputTable;

impl Runner {
    /// Runs instance `id` once over all its inputs while holding its resource pools, and commits.
    pub(super) async fn run_whole(
        self: Arc<Self>,
        id: usize,
        decision: Decision,
        inputs: Vec<InputTable>,
        started: Instant,
    ) -> Result<Manifest, Outcome> {
        let inst = &self.plan.instances[id];
        let task = self.progress.start(&inst.label(), 1, 0);
        let permits = self.acquire_pools(inst).await;
        let this = self.clone();
        let joined = tokio::task::spawn_blocking(move || {
            let inst = &this.plan.instances[id];
            let (result, attempts) = this.attempt(inst, None, seed_of(&decision.key), &inputs);
            let committed = result.and_then(|tables| {
                let how = Provenance { started, attempts };
                let recipe = (&decision.parts, decision.key.as_str());
                this.commit_instance(inst, recipe, &tables, how, None)
            });
            (committed, attempts)
        })
        .await;
        drop(permits);
        let (result, attempts) =
            joined.unwrap_or_else(|e| (Err(StageError::Failed(format!("internal error: {e}"))), 1));
        match result {
            Ok(m) => {
                task.inc();
                task.finish(&format!("executed ({})", super::items::rows_summary(&m)));
                Ok(m)
            }
            Err(e) => {
                task.finish("failed");
                Err(self.fail(inst, None, attempts, &e))
            }
        }
    }
}
