//! Preparing an instance: the kind's once-per-instance setup ([`crate::Kind::prepare`]), run on a
//! blocking thread with every input whole, retried like an item when it fails transiently.

use std::sync::Arc;

use super::unit::{classify, panicked, retry_policy, seed_of};
use super::Runner;
use crate::error::StageError;
use crate::kind::{InputTable, PreparedKind, StageContext};
use crate::usage::UsageMeter;

impl Runner {
    /// Prepares instance `id` (recipe key `key`); what it spends is counted on `meter`.
    pub(super) async fn prepare(
        self: &Arc<Self>,
        id: usize,
        key: &str,
        inputs: &Arc<Vec<InputTable>>,
        meter: &Arc<UsageMeter>,
    ) -> Result<Arc<dyn PreparedKind>, (u32, StageError)> {
        let inst = &self.plan.instances[id];
        let seed = seed_of(key);
        let outcome = retry_policy(inst)
            .run(
                |attempt| {
                    let (this, inputs, meter) = (self.clone(), inputs.clone(), meter.clone());
                    async move {
                        tokio::task::spawn_blocking(move || {
                            this.prepare_once(id, seed, attempt, &inputs, &meter)
                        })
                        .await
                        .unwrap_or_else(|e| Err(StageError::Failed(format!("internal error: {e}"))))
                    }
                },
                |e| classify(inst, e),
            )
            .await;
        outcome
            .map(|(prepared, _)| prepared)
            .map_err(|gave_up| (gave_up.attempts, gave_up.error))
    }

    fn prepare_once(
        &self,
        id: usize,
        seed: u64,
        attempt: u32,
        inputs: &[InputTable],
        meter: &UsageMeter,
    ) -> Result<Arc<dyn PreparedKind>, StageError> {
        let inst = &self.plan.instances[id];
        let variant = inst.variant.name();
        let ctx = StageContext {
            stage: &inst.stage,
            variant: &variant,
            item: None,
            seed,
            attempt,
            workdir: &self.workdir,
            inputs,
            cache: self.store.as_ref(),
            offline: self.offline,
            state: &(),
            usage: meter,
        };
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            inst.kind.clone().prepare(&inst.params, &ctx)
        }))
        .unwrap_or_else(|panic| Err(panicked(&*panic)))
    }
}
