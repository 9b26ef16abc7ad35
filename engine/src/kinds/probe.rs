//! `probe`: passes its input through, optionally slowly or failing on chosen items.
//!
//! It exists to exercise the engine itself — scheduling, resource pools, retries, error tables and
//! resume after a kill — in tests and benchmarks, with no domain code involved.

use polars::prelude::Column;
use serde::Deserialize;

use crate::error::StageError;
use crate::kind::{Kind, StageContext, Tables};

/// Parameters of `probe`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeParams {
    /// Sleep this long per call (per item for per-item stages).
    #[serde(default)]
    pub delay_ms: u64,
    /// Items that always fail.
    #[serde(default)]
    pub fail_items: Vec<String>,
    /// Items that fail transiently on their first `flaky_attempts` attempts.
    #[serde(default)]
    pub flaky_items: Vec<String>,
    /// How many attempts of a flaky item fail (default 1).
    #[serde(default = "one")]
    pub flaky_attempts: u32,
    /// Free-form label; changing it changes the cache key but not the output (for early-cutoff
    /// experiments).
    #[serde(default)]
    pub label: Option<String>,
    /// Add `probe_start_us` / `probe_end_us` columns (Unix microseconds) so tests can check how
    /// many calls overlapped.
    #[serde(default)]
    pub timing: bool,
}

fn one() -> u32 {
    1
}

/// Pass-through with injectable delay and failures.
pub struct Probe;

impl Kind for Probe {
    type Params = ProbeParams;
    const NAME: &'static str = "probe";
    const VERSION: &'static str = "1";
    const OUTPUTS: &'static [&'static str] = &["table"];
    const SUMMARY: &'static str =
        "pass the first input through as `table`, with optional delay_ms, fail_items, flaky_items/flaky_attempts (engine testing)";

    fn run(&self, params: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let started = unix_micros();
        if params.delay_ms > 0 {
            std::thread::sleep(std::time::Duration::from_millis(params.delay_ms));
        }
        let item = ctx.item.unwrap_or_default();
        if params.fail_items.iter().any(|f| f == item) {
            return Err(StageError::Failed(format!(
                "item `{item}` is listed in fail_items"
            )));
        }
        if params.flaky_items.iter().any(|f| f == item) && ctx.attempt < params.flaky_attempts {
            return Err(StageError::Transient(format!(
                "item `{item}` is flaky (attempt {})",
                ctx.attempt + 1
            )));
        }
        let input = ctx.inputs.first().ok_or_else(|| {
            StageError::Input(format!("stage `{}`: probe needs an input", ctx.stage))
        })?;
        let mut df = input.df.clone();
        if params.timing {
            let n = df.height();
            df.with_column(Column::new("probe_start_us".into(), vec![started; n]))?;
            df.with_column(Column::new("probe_end_us".into(), vec![unix_micros(); n]))?;
        }
        Ok(Tables::single("table", df))
    }
}

fn unix_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}
