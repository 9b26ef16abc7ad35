//! `run_episodes` (per item over `task_id`): plays each task with one agent configuration in the
//! simulated phone, `epochs` times, and writes `episodes`, `steps` and `diffs`. Sweep `agent`,
//! `history`, `clarify`, `simulator`… in the pipeline to compare configurations; each variant's
//! episodes are cached per task, so changing one variant re-runs only its episodes.
//!
//! Items are async ([`Execution::Async`]): an episode waiting on its model is a task on the
//! engine's runtime, not a thread, so a pool of hundreds of `llm` episodes in flight costs a few
//! OS threads. The phone's steps are short CPU work done in place; what every episode shares
//! (the world, the retrieval indexes) is built in `prepare`.

use prefflow_engine::estimate::{Estimate, EstimateContext};
use prefflow_engine::schema::{InputDef, TableDef};
use prefflow_engine::{Execution, Kind, ParamError, StageContext, StageError, Tables};

use crate::episodes::agents::AgentName;
use crate::episodes::hooks::NoHooks;
pub use crate::episodes::play::EpisodeState;
use crate::episodes::setup::EpisodeSetup;
use crate::episodes::simulators::SimulatorName;
use crate::tasks::frames::bundles_from_table;

use super::support::{prepare_episodes, run_with};
pub use crate::episodes::params::RunEpisodesParams;

/// Plays tasks with one agent configuration.
pub struct RunEpisodes;

impl Kind for RunEpisodes {
    type Params = RunEpisodesParams;
    type State = EpisodeState;
    const NAME: &'static str = "run_episodes";
    const VERSION: &'static str = "4";
    const OUTPUT_DEFS: &'static [&'static TableDef] = &[
        &crate::tables::episodes::EPISODES,
        &crate::tables::episodes::STEPS,
        &crate::tables::episodes::DIFFS,
    ];
    const INPUTS: &'static [InputDef] = &[
        InputDef::optional(
            &crate::tables::tasks::BUNDLES,
            &[crate::tables::tasks::TASK_ID, crate::tables::tasks::BUNDLE],
        ),
        crate::tables::world::READ_SOURCES,
        crate::tables::world::READ_HISTORY,
    ];
    const DETERMINISTIC: bool = true;
    const SUMMARY: &'static str = "bundles + world (sources, history_events) → episodes, steps, diffs (params: agent, history, log, clarify, simulator, epochs, max_epochs, max_steps, space, seed, llm, models, model, user_model, embeddings; use per_item: task_id)";

    fn external_inputs(&self, params: &Self::Params) -> Vec<String> {
        let uses_prompts = params.agent == AgentName::Llm
            || matches!(
                params.simulator,
                SimulatorName::Llm | SimulatorName::AgentModel
            )
            || params.user_config().is_some();
        let mut inputs = Vec::new();
        if uses_prompts {
            inputs.push(params.prompts.clone());
        }
        if params.agent == AgentName::Authored {
            inputs.push(params.trajectories.clone());
        }
        inputs
    }

    /// Only the `models` entry this variant plays is part of its key, so adding a model to
    /// the list re-runs no other model's episodes; who answers the questions (the environment
    /// decides whether a `user_model` is configured) is part of it too.
    fn key_params(&self, params: &Self::Params, raw: &serde_json::Value) -> serde_json::Value {
        let mut keyed = params.key_params(raw);
        let chosen = params
            .with_chosen_model()
            .unwrap_or_else(|_| params.clone());
        if let (Some(map), Ok(user)) = (keyed.as_object_mut(), chosen.user()) {
            map.insert("user".into(), serde_json::Value::String(user.label()));
        }
        keyed
    }

    fn check(&self, params: &Self::Params) -> Result<(), ParamError> {
        crate::limits::EPOCHS.check(u64::from(params.epochs), params.max_epochs)?;
        params.user().map_err(|message| ParamError {
            field: Some("simulator".into()),
            message,
        })?;
        params
            .model_entry()
            .map(|_| ())
            .map_err(|message| ParamError {
                field: Some("model".into()),
                message,
            })
    }

    fn prepare(
        &self,
        params: &Self::Params,
        ctx: &StageContext<'_>,
    ) -> Result<EpisodeState, StageError> {
        prepare_episodes(params, ctx)
    }

    const EXECUTION: Execution = Execution::Async;
    const ESTIMATES: bool = true;

    fn estimate(
        &self,
        params: &Self::Params,
        ctx: &EstimateContext<'_>,
    ) -> Result<Option<Estimate>, StageError> {
        estimate_episodes(params, ctx)
    }

    fn run_async<'a>(
        &'a self,
        _params: &'a Self::Params,
        ctx: &'a StageContext<'a, EpisodeState>,
    ) -> impl std::future::Future<Output = Result<Tables, StageError>> + Send + 'a {
        run_with(ctx, &NoHooks)
    }
}

/// What an episode stage's items still to run would cost (see [`crate::episodes::estimate`]),
/// from the task set and world as the store holds them; an error says which upstream stage
/// must be computed first when they are not there yet.
pub fn estimate_episodes(
    params: &RunEpisodesParams,
    ctx: &EstimateContext<'_>,
) -> Result<Option<Estimate>, StageError> {
    let uses_models = params.agent == AgentName::Llm || params.user_config().is_some();
    if !uses_models {
        return Ok(None);
    }
    let needs = |what: &str| {
        StageError::Input(format!(
            "needs the {what} in the store first: run the pipeline with `--only` on the stage that makes it (no model calls), then `plan` again"
        ))
    };
    let bundles = ctx
        .input("bundles")
        .or_else(|| ctx.inputs.first().map(|t| &t.df))
        .ok_or_else(|| needs("task bundles"))?;
    let (sources, history) = (ctx.input("sources"), ctx.input("history_events"));
    let (Some(sources), Some(history)) = (sources, history) else {
        return Err(needs("world (sources, history_events)"));
    };
    let world = crate::world::from_tables::world_from_tables(sources, history)
        .map_err(crate::tasks::TaskError::from)?;
    let mut bundles = bundles_from_table(bundles)?;
    if let Some(items) = ctx.items {
        let run: std::collections::HashSet<&str> = items.iter().map(String::as_str).collect();
        bundles.retain(|b| run.contains(b.task.task_id.as_str()));
    }
    let setup = EpisodeSetup::new(params, ctx.stage, ctx.variant, ctx.workdir)?;
    crate::episodes::estimate::estimate(&crate::episodes::estimate::EpisodeStage {
        setup: &setup,
        world: &world,
        bundles: &bundles,
        cached: ctx.cached_items,
        variant: ctx.variant,
        cache: ctx.cache,
        stage: ctx.stage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::episodes::seed::episode_variant;
    use crate::tasks::TaskBundle;
    use polars::prelude::DataFrame;

    #[test]
    fn model_variants_name_agent_model_and_history_once() {
        let params: RunEpisodesParams = serde_json::from_value(serde_json::json!({
            "agent": "llm", "history": "top_k:10", "model": "a", "models": [{ "name": "a" }],
        }))
        .expect("params");
        let named = "agent=llm,model=a,history=top_k:10";
        assert_eq!(episode_variant(&params, "model=a"), named);
        assert_eq!(
            episode_variant(&params, "model=a,params.llm_history=top_k:10"),
            named
        );
        assert_eq!(
            episode_variant(&params, "model=a,clarify=true,params.seed=3"),
            format!("{named},clarify=true,params.seed=3")
        );
    }

    /// The default world's tables (as `build_world` writes them) and `bundles`, as inputs.
    fn inputs(bundles: &[TaskBundle]) -> [prefflow_engine::InputTable; 3] {
        use prefflow_engine::kind::DynKind;
        static WORLD: std::sync::OnceLock<Tables> = std::sync::OnceLock::new();
        let world = WORLD.get_or_init(|| {
            let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
            let dir = tempfile::tempdir().unwrap();
            let store = prefflow_engine::store::FsStore::new(dir.path());
            let ctx = StageContext {
                stage: "world",
                variant: "",
                item: None,
                seed: 0,
                attempt: 0,
                workdir: &root,
                inputs: &[],
                cache: &store,
                offline: true,
                state: &(),
                usage: &prefflow_engine::usage::UsageMeter::new(),
            };
            let params = serde_json::json!({ "persona": "datasets/personas/maya.yaml" });
            DynKind::run(&crate::kinds::build_world::BuildWorld, &params, &ctx).unwrap()
        });
        let input = |table: &str, df: DataFrame| prefflow_engine::InputTable {
            stage: "up".into(),
            table: table.into(),
            df,
        };
        [
            input(
                "bundles",
                crate::tasks::frames::bundles_table(bundles).unwrap(),
            ),
            input("sources", world.get("sources").unwrap().clone()),
            input(
                "history_events",
                world.get("history_events").unwrap().clone(),
            ),
        ]
    }

    /// The index `top_k:N` episodes rank is built in `prepare`, and it is the one they use: an
    /// item played on the prepared state adds no index (a different key would add one).
    #[test]
    fn the_ranked_history_index_is_built_in_prepare_and_used_by_the_episodes() {
        let plain: Vec<TaskBundle> = crate::tasks::testkit::candidates()
            .iter()
            .filter(|b| b.task.overrides == Default::default())
            .take(2)
            .cloned()
            .collect();
        assert_eq!(plain.len(), 2, "tasks without overrides");
        let inputs = inputs(&plain);
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let dir = tempfile::tempdir().unwrap();
        let store = prefflow_engine::store::FsStore::new(dir.path());
        let usage = prefflow_engine::usage::UsageMeter::new();
        let ctx = StageContext {
            stage: "episodes",
            variant: "",
            item: None,
            seed: 0,
            attempt: 0,
            workdir: &root,
            inputs: &inputs,
            cache: &store,
            offline: true,
            state: &(),
            usage: &usage,
        };
        let kept = |s: &EpisodeState| format!("{:?}", s.indexes);
        let params = |history: &str| -> RunEpisodesParams {
            serde_json::from_value(serde_json::json!({ "agent": "oracle", "history": history }))
                .unwrap()
        };
        let none = RunEpisodes.prepare(&params("none"), &ctx).unwrap();
        assert_eq!(kept(&none), "IndexCache(0 indexes)");
        let ranked = params("top_k:5");
        let state = RunEpisodes.prepare(&ranked, &ctx).unwrap();
        assert_eq!(kept(&state), "IndexCache(1 indexes)");
        let prepared = ctx.with_state(&state);
        let tables = crate::tasks::testkit::block_on(run_with(&prepared, &NoHooks)).unwrap();
        assert_eq!(tables.get("episodes").unwrap().height(), 2);
        assert_eq!(
            kept(&state),
            "IndexCache(1 indexes)",
            "the episodes used it"
        );
    }

    /// 64 `llm` episodes of one item in flight at once on a single thread: the kind is run the
    /// way a test or one-off call runs it ([`prefflow_engine::kind::DynKind::run`], a
    /// current-thread runtime for async kinds), against a server that holds every request
    /// until 64 wait together. An episode that held its thread while waiting for its model
    /// (the synchronous agent of before) would let one request out at a time, and the gate
    /// would never open by count.
    #[test]
    fn episodes_in_flight_wait_on_their_model_without_a_thread_each() {
        use crate::llm::mock::{completion, Gate, ScriptedServer};
        use prefflow_engine::kind::DynKind;
        use prefflow_engine::store::FsStore;

        const IN_FLIGHT: usize = 64;
        let gate = Gate::new(IN_FLIGHT, std::time::Duration::from_secs(60));
        let server = ScriptedServer::start(
            vec![],
            gate.behavior(completion(r#"{"action": "finish"}"#, 7, 2)),
        );
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let dir = tempfile::tempdir().unwrap();
        let store = FsStore::new(dir.path());
        let usage = prefflow_engine::usage::UsageMeter::new();
        let ctx = |inputs| StageContext {
            stage: "episodes",
            variant: "",
            item: None,
            seed: 0,
            attempt: 0,
            workdir: &root,
            inputs,
            cache: &store,
            offline: false,
            state: &(),
            usage: &usage,
        };
        let inputs = inputs(&crate::tasks::testkit::candidates()[..1]);
        let params = serde_json::json!({
            "agent": "llm", "space": "gui", "history": "none", "epochs": IN_FLIGHT,
            "max_steps": 3,
            "llm": { "base_url": server.url, "model": "gate", "max_retries": 0,
                     "timeout_s": 120, "concurrency": IN_FLIGHT },
        });
        let tables = DynKind::run(&RunEpisodes, &params, &ctx(&inputs)).unwrap();

        assert!(
            gate.reached(),
            "at most {} of {IN_FLIGHT} requests were in flight at once",
            gate.most_waiting()
        );
        let episodes = tables.get("episodes").unwrap();
        assert_eq!(episodes.height(), IN_FLIGHT);
        let status = episodes
            .column(crate::tables::episodes::STATUS)
            .unwrap()
            .str()
            .unwrap();
        assert!(status.iter().all(|s| s == Some("ok")), "{status:?}");
        assert_eq!(
            server.requests().len(),
            IN_FLIGHT,
            "one request per episode"
        );
    }
}
