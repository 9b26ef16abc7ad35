//! Preparing an instance: the kind's once-per-instance setup ([`crate::Kind::prepare`]), run on a
//! blocking thread with every input whole, retried like an item when it fails transiently.

use std::sync::Arc;

use super::env::ExecEnv;
use super::unit::{classify, panicked, retry_policy, seed_of};
use crate::error::StageError;
use crate::kind::{InputTable, PreparedKind, StageContext};
use crate::plan::Instance;
use crate::usage::UsageMeter;

/// Prepares `inst` (recipe key `key`) over its whole `inputs`; what it spends is counted on
/// `meter`. The result runs every unit of the instance ([`super::run_unit`]).
pub async fn prepare(
    env: &Arc<ExecEnv>,
    inst: &Arc<Instance>,
    key: &str,
    inputs: &Arc<Vec<InputTable>>,
    meter: &Arc<UsageMeter>,
) -> Result<Arc<dyn PreparedKind>, (u32, StageError)> {
    let seed = seed_of(key);
    retry_policy(inst)
        .run(
            |attempt| {
                let (env, inst) = (env.clone(), inst.clone());
                let (inputs, meter) = (inputs.clone(), meter.clone());
                async move {
                    tokio::task::spawn_blocking(move || {
                        prepare_once(&env, &inst, seed, attempt, &inputs, &meter)
                    })
                    .await
                    .unwrap_or_else(|e| Err(StageError::Failed(format!("internal error: {e}"))))
                }
            },
            |e| classify(inst, e),
        )
        .await
        .map(|(prepared, _)| prepared)
        .map_err(|gave_up| (gave_up.attempts, gave_up.error))
}

fn prepare_once(
    env: &ExecEnv,
    inst: &Instance,
    seed: u64,
    attempt: u32,
    inputs: &[InputTable],
    meter: &UsageMeter,
) -> Result<Arc<dyn PreparedKind>, StageError> {
    let variant = inst.variant.name();
    let ctx = StageContext {
        stage: &inst.stage,
        variant: &variant,
        item: None,
        seed,
        attempt,
        workdir: &env.workdir,
        inputs,
        cache: env.store.as_ref(),
        offline: env.offline,
        state: &(),
        usage: meter,
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        inst.kind.clone().prepare(&inst.params, &ctx)
    }))
    .unwrap_or_else(|panic| Err(panicked(&*panic)))
}
