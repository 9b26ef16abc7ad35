//! Calling a kind: retries of transient failures with backoff, panics turned into failures, and
//! a check that the kind returned the tables it declares.

use std::time::Duration;

use super::Runner;
use crate::error::StageError;
use crate::kind::{InputTable, StageContext, Tables};
use crate::plan::Instance;

impl Runner {
    /// Runs the kind with retries on transient errors; returns the result and the attempts made.
    pub(super) fn attempt(
        &self,
        inst: &Instance,
        item: Option<&str>,
        seed: u64,
        inputs: &[InputTable],
    ) -> (Result<Tables, StageError>, u32) {
        let mut attempt = 0;
        loop {
            let variant = inst.variant.name();
            let ctx = StageContext {
                stage: &inst.stage,
                variant: &variant,
                item,
                seed,
                attempt,
                workdir: &self.workdir,
                inputs,
                cache: self.store.as_ref(),
                offline: self.offline,
            };
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                inst.kind.run(&inst.params, &ctx)
            }))
            .unwrap_or_else(|panic| {
                Err(StageError::Failed(format!(
                    "stage panicked: {}",
                    panic_text(&panic)
                )))
            })
            .and_then(|t| check_outputs(inst, t));
            match outcome {
                Err(StageError::Transient(msg)) if attempt < inst.retries => {
                    let delay = inst.backoff_ms.saturating_mul(1 << attempt.min(16));
                    tracing::debug!(
                        "{}: transient failure ({msg}); retry in {delay} ms",
                        inst.label()
                    );
                    std::thread::sleep(Duration::from_millis(delay));
                    attempt += 1;
                }
                other => return (other, attempt + 1),
            }
        }
    }
}

/// The seed a kind sees: the first 64 bits of its (item) key, stable across runs.
pub(super) fn seed_of(key: &str) -> u64 {
    u64::from_str_radix(&key[..16.min(key.len())], 16).unwrap_or(0)
}

fn check_outputs(inst: &Instance, tables: Tables) -> Result<Tables, StageError> {
    let expected = inst.kind.outputs();
    let got: Vec<&str> = tables.0.keys().map(String::as_str).collect();
    if got.len() != expected.len() || expected.iter().any(|e| !got.contains(e)) {
        return Err(StageError::Failed(format!(
            "kind `{}` returned tables [{}] but declares [{}] (a bug in the kind)",
            inst.kind.name(),
            got.join(", "),
            expected.join(", ")
        )));
    }
    Ok(tables)
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
