//! `probe`: passes its input through, optionally slowly or failing on chosen items.
//!
//! It exists to exercise the engine itself — scheduling, resource pools, retries, error tables and
//! resume after a kill — in tests and benchmarks, with no domain code involved.

use std::sync::atomic::{AtomicU64, Ordering};

use polars::prelude::Column;
use serde::Deserialize;

use crate::error::StageError;
use crate::kind::{Kind, StageContext, Tables};
use crate::usage::UsageCounts;

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
    /// many calls overlapped, and `probe_threads` (the process's OS threads at the end of the
    /// call, 0 where unknown).
    #[serde(default)]
    pub timing: bool,
    /// Items that fail with a transient error that a layer below already retried
    /// ([`StageError::Exhausted`]): the engine must not retry them.
    #[serde(default)]
    pub exhausted_items: Vec<String>,
    /// Add `prepared_id` (a number unique to each `prepare` call) and `prepared_rows` (the rows
    /// of the main input `prepare` saw), so tests can see that an instance is prepared once,
    /// with its whole input.
    #[serde(default)]
    pub show_prepare: bool,
    /// Report this many model calls of 10 prompt and 2 completion tokens (cost 0.001 each) to
    /// the usage meter per call, as role `probe` and model `fake`.
    #[serde(default)]
    pub usage_calls: u64,
    /// Named entries (`{ name, … }`) of which the probe uses the one `pick` names, adding it as
    /// a `picked` column (JSON text). Only that entry is part of the cache key
    /// ([`Kind::key_params`]), so tests can see that growing a catalog re-runs no other pick.
    #[serde(default)]
    pub catalog: Vec<serde_json::Value>,
    /// The entry of `catalog` to use, by name (sweep it).
    #[serde(default)]
    pub pick: Option<String>,
}

impl ProbeParams {
    /// The `catalog` entry `pick` names, as JSON text; `None` without `pick`.
    fn picked(&self) -> Result<Option<String>, String> {
        let Some(name) = &self.pick else {
            return Ok(None);
        };
        self.catalog
            .iter()
            .find(|e| e.get("name").and_then(serde_json::Value::as_str) == Some(name))
            .map(|e| Some(e.to_string()))
            .ok_or_else(|| format!("`pick: {name}` names no entry of `catalog`"))
    }

    /// The params the key hashes: `raw` with `catalog` narrowed to the picked entry.
    pub fn key_params(&self, raw: &serde_json::Value) -> serde_json::Value {
        crate::keys::only_picked_entry(raw, "catalog", self.pick.as_deref())
    }
}

/// What `prepare` builds for a probe instance.
#[derive(Debug)]
pub struct ProbeState {
    /// Unique to this `prepare` call.
    pub id: u64,
    /// Rows of the main input at prepare time (the whole table).
    pub rows: usize,
}

/// Builds a probe instance's state: an id unique across processes and the main input's size.
pub fn prepare_probe(ctx: &StageContext<'_>) -> ProbeState {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    ProbeState {
        id: (u64::from(std::process::id()) << 24) + NEXT.fetch_add(1, Ordering::Relaxed),
        rows: ctx.inputs.first().map_or(0, |t| t.df.height()),
    }
}

fn one() -> u32 {
    1
}

/// Pass-through with injectable delay and failures.
pub struct Probe;

impl Kind for Probe {
    type Params = ProbeParams;
    type State = ProbeState;
    const NAME: &'static str = "probe";
    const VERSION: &'static str = "1";
    const OUTPUT_DEFS: &'static [&'static crate::schema::TableDef] = &[&super::tables::TABLE];
    const SUMMARY: &'static str =
        "pass the first input through as `table`, with optional delay_ms, fail_items, flaky_items/flaky_attempts, exhausted_items, timing, show_prepare, usage_calls, catalog/pick (engine testing)";

    fn key_params(&self, params: &Self::Params, raw: &serde_json::Value) -> serde_json::Value {
        params.key_params(raw)
    }

    fn prepare(
        &self,
        _params: &Self::Params,
        ctx: &StageContext<'_>,
    ) -> Result<ProbeState, StageError> {
        Ok(prepare_probe(ctx))
    }

    fn run(
        &self,
        params: &Self::Params,
        ctx: &StageContext<'_, ProbeState>,
    ) -> Result<Tables, StageError> {
        let started = unix_micros();
        if params.delay_ms > 0 {
            std::thread::sleep(std::time::Duration::from_millis(params.delay_ms));
        }
        probe_output(params, ctx, started)
    }
}

/// The probe's failures and output, shared by `probe` and `probe_async`: `started` is when the
/// call began (Unix microseconds).
pub fn probe_output(
    params: &ProbeParams,
    ctx: &StageContext<'_, ProbeState>,
    started: i64,
) -> Result<Tables, StageError> {
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
    if params.exhausted_items.iter().any(|f| f == item) {
        return Err(StageError::Exhausted(format!(
            "item `{item}` gave up after 4 attempts (a client's retries)"
        )));
    }
    let call = UsageCounts {
        requests: 1,
        prompt_tokens: 10,
        completion_tokens: 2,
        cost: 0.001,
        ..UsageCounts::default()
    };
    for _ in 0..params.usage_calls {
        ctx.usage.record("probe", "fake", &call);
    }
    let input = ctx
        .inputs
        .first()
        .ok_or_else(|| StageError::Input(format!("stage `{}`: probe needs an input", ctx.stage)))?;
    let mut df = input.df.clone();
    let n = df.height();
    if params.timing {
        df.with_column(Column::new("probe_start_us".into(), vec![started; n]))?;
        df.with_column(Column::new("probe_end_us".into(), vec![unix_micros(); n]))?;
        df.with_column(Column::new("probe_threads".into(), vec![os_threads(); n]))?;
    }
    if let Some(entry) = params
        .picked()
        .map_err(|m| StageError::Input(format!("stage `{}`: {m}", ctx.stage)))?
    {
        df.with_column(Column::new("picked".into(), vec![entry; n]))?;
    }
    if params.show_prepare {
        df.with_column(Column::new("prepared_id".into(), vec![ctx.state.id; n]))?;
        df.with_column(Column::new(
            "prepared_rows".into(),
            vec![ctx.state.rows as u64; n],
        ))?;
    }
    Ok(Tables::single("table", df))
}

/// The process's OS threads (Linux `/proc/self/status`), 0 where unknown.
fn os_threads() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|n| n.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Now, in Unix microseconds.
pub fn unix_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}
