//! `probe_async`: `probe` as an I/O-bound kind. Its items wait `delay_ms` on the engine's async
//! runtime instead of a thread, as a model or device call would.
//!
//! It exists to exercise the engine's async item path in tests and benchmarks: hundreds of items
//! in flight on a handful of threads, `prepare` once per instance, retries without holding slots.

use super::probe::{prepare_probe, probe_output, unix_micros, ProbeParams, ProbeState};
use crate::error::StageError;
use crate::kind::{Execution, Kind, StageContext, Tables};

/// Pass-through that waits on the runtime, with the probe's injectable failures.
pub struct ProbeAsync;

impl Kind for ProbeAsync {
    type Params = ProbeParams;
    type State = ProbeState;
    const NAME: &'static str = "probe_async";
    const VERSION: &'static str = "1";
    const OUTPUT_DEFS: &'static [&'static crate::schema::TableDef] = &[&super::tables::TABLE];
    const EXECUTION: Execution = Execution::Async;
    const SUMMARY: &'static str =
        "`probe` whose delay_ms waits on the async runtime instead of a thread (engine testing)";

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

    async fn run_async(
        &self,
        params: &Self::Params,
        ctx: &StageContext<'_, ProbeState>,
    ) -> Result<Tables, StageError> {
        let started = unix_micros();
        if params.delay_ms > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(params.delay_ms)).await;
        }
        probe_output(params, ctx, started)
    }
}
