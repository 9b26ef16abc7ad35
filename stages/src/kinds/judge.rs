//! `judge` (per item over `episode_id`): judges each episode of its item against its task —
//! every criterion by rule, LLM or both, every question split into information requests and
//! matched to slots, failed criteria labelled — and writes `verdicts`, `scores`, `requests` and
//! `interaction` (docs/judging.md). Inputs: `episodes` (first, per item), `steps`, `bundles`,
//! `sources`, `history_events`.
//!
//! Items are async ([`Execution::Async`]): an episode whose criteria go to a judge model awaits
//! its requests on the engine's runtime instead of holding a thread; the replay and the rule
//! judge are short CPU work, and the index of steps and bundles is built in `prepare`.

use std::sync::Arc;

use prefflow_engine::estimate::{Estimate, EstimateContext};
use prefflow_engine::schema::{InputDef, TableDef};
use prefflow_engine::{Execution, Kind, StageContext, StageError, Tables};
use serde::Deserialize;

use crate::judging::frames::judge_tables;
use crate::judging::index::episodes_from_table;
use crate::judging::llm::LlmJudge;
use crate::judging::{judge_episode, judge_label, JudgeIndex, JudgeOptions, MatcherName, Mode};
use crate::llm::LlmConfig;
use crate::world::World;

/// Parameters of `judge`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeParams {
    /// `rule` (default), `llm`, `hybrid` or `hybrid_text` (LLM on free-text criteria only).
    #[serde(default)]
    pub mode: Mode,
    /// Request matcher: `scripted` (default) or `llm`.
    #[serde(default)]
    pub matcher: MatcherName,
    /// λ of hybrid scores for tasks that carry none (default 0.5).
    #[serde(default = "half")]
    pub lambda: f64,
    /// The judge model (mode `llm`/`hybrid`, matcher `llm`).
    #[serde(default)]
    pub llm: Option<LlmConfig>,
    /// Directory of the judge prompt templates (default `datasets/prompts`).
    #[serde(default = "prompts_dir")]
    pub prompts: String,
    /// A judge model for model episodes, its own endpoint block (`{ base_url | base_url_env,
    /// model, api_key_env, prices, concurrency }`, its own pool of `concurrency` requests):
    /// when its endpoint is configured (`base_url`, or `base_url_env` set), free-text criteria
    /// are judged `hybrid_text` and questions matched by the LLM matcher with it, whatever
    /// `mode`, `matcher` and `llm` say; when it is not, those apply (rule + scripted by
    /// default). The `judge` column says which judge produced each score.
    #[serde(default)]
    pub judge_model: Option<LlmConfig>,
}

/// The judge a `judge` instance uses: from `judge_model` when its endpoint is configured,
/// else from `mode`, `matcher` and `llm`.
struct Effective {
    mode: Mode,
    matcher: MatcherName,
    llm: Option<LlmConfig>,
}

fn half() -> f64 {
    0.5
}
fn prompts_dir() -> String {
    "datasets/prompts".into()
}

impl JudgeParams {
    fn uses_llm(&self) -> bool {
        let e = self.effective();
        e.mode.uses_llm() || e.matcher == MatcherName::Llm
    }

    /// `judge_model` when its endpoint resolves here (the environment decides), else the
    /// explicit settings.
    fn effective(&self) -> Effective {
        match self
            .judge_model
            .as_ref()
            .filter(|m| m.resolved_base_url().is_ok())
        {
            Some(model) => Effective {
                mode: Mode::HybridText,
                matcher: MatcherName::Llm,
                llm: Some(model.clone()),
            },
            None => Effective {
                mode: self.mode,
                matcher: self.matcher,
                llm: self.llm.clone(),
            },
        }
    }

    /// The `judge` label results of these params carry ([`judge_label`]).
    fn label(&self) -> String {
        let e = self.effective();
        let model = e.llm.as_ref().map(|l| l.model.as_str());
        judge_label(e.mode, e.matcher, model)
    }
}

/// Judges episodes.
pub struct Judge;

/// What every episode of a `judge` instance is judged against, built once in `prepare`: the
/// steps and bundles indexed by episode and task, and the world.
pub struct JudgeState {
    index: JudgeIndex,
    world: Arc<World>,
}

impl Kind for Judge {
    type Params = JudgeParams;
    type State = JudgeState;
    const NAME: &'static str = "judge";
    const VERSION: &'static str = "3";
    const OUTPUT_DEFS: &'static [&'static TableDef] = &[
        &crate::tables::judging::VERDICTS,
        &crate::tables::judging::SCORES,
        &crate::tables::judging::REQUESTS,
        &crate::tables::judging::INTERACTION,
    ];
    const INPUTS: &'static [InputDef] = &[
        InputDef::required(
            &crate::tables::episodes::STEPS,
            &[
                crate::tables::episodes::EPISODE_ID,
                crate::tables::episodes::STEP,
                crate::tables::episodes::ACTION_TYPE,
                crate::tables::episodes::ARGUMENTS,
                "user_reply",
            ],
        ),
        InputDef::required(
            &crate::tables::tasks::BUNDLES,
            &[crate::tables::tasks::TASK_ID, crate::tables::tasks::BUNDLE],
        ),
        crate::tables::world::READ_SOURCES,
        crate::tables::world::READ_HISTORY,
    ];
    const DETERMINISTIC: bool = true;
    const SUMMARY: &'static str = "episodes + steps + bundles + world (sources, history_events) → verdicts, scores, requests, interaction (params: mode rule|llm|hybrid|hybrid_text, matcher scripted|llm, lambda, llm, prompts, judge_model; use per_item: episode_id)";

    /// Whether a configured `judge_model` is in use depends on the environment, so the judge
    /// actually used is part of the key: setting (or unsetting) the judge endpoint re-judges.
    fn key_params(&self, params: &Self::Params, raw: &serde_json::Value) -> serde_json::Value {
        let mut keyed = raw.clone();
        if let Some(map) = keyed.as_object_mut() {
            map.insert("judge".into(), serde_json::Value::String(params.label()));
        }
        keyed
    }

    fn external_inputs(&self, params: &Self::Params) -> Vec<String> {
        if params.uses_llm() {
            vec![params.prompts.clone()]
        } else {
            Vec::new()
        }
    }

    fn prepare(&self, _: &Self::Params, ctx: &StageContext<'_>) -> Result<JudgeState, StageError> {
        Ok(JudgeState {
            index: JudgeIndex::build(ctx.input("steps")?, ctx.input("bundles")?)?,
            world: super::support::world_input(ctx)?,
        })
    }

    const EXECUTION: Execution = Execution::Async;
    const ESTIMATES: bool = true;

    fn estimate(
        &self,
        params: &Self::Params,
        ctx: &EstimateContext<'_>,
    ) -> Result<Option<Estimate>, StageError> {
        let effective = params.effective();
        let (true, Some(config)) = (params.uses_llm(), effective.llm.as_ref()) else {
            return Ok(None);
        };
        let bundles = match ctx.input("bundles") {
            Some(df) => crate::tasks::frames::bundles_from_table(df)?,
            None => {
                return Err(StageError::Input(
                    "needs the task bundles in the store first".into(),
                ))
            }
        };
        let prompts = ctx.workdir.join(&params.prompts);
        let template = |name: &str| {
            std::fs::read_to_string(prompts.join(name))
                .map(|t| crate::llm::tokens::text_tokens(&t))
                .unwrap_or(0)
        };
        let judged = crate::judging::estimate::JudgedStage {
            mode: effective.mode,
            llm_matcher: effective.matcher == MatcherName::Llm,
            config,
            bundles: &bundles,
            items: ctx.items,
            steps: ctx.input("steps"),
            episodes: ctx.upstream_quantity("episodes"),
            questions: ctx.upstream_quantity("questions"),
            criterion_template: template(crate::judging::llm::CRITERION_TEMPLATE),
            requests_template: template(crate::judging::llm::REQUESTS_TEMPLATE),
        };
        judged.estimate().map(Some).map_err(StageError::Input)
    }

    fn run_async<'a>(
        &'a self,
        params: &'a Self::Params,
        ctx: &'a StageContext<'a, JudgeState>,
    ) -> impl std::future::Future<Output = Result<Tables, StageError>> + Send + 'a {
        judge_item(params, ctx)
    }
}

/// Judges the item's episodes, one after the other.
async fn judge_item(
    params: &JudgeParams,
    ctx: &StageContext<'_, JudgeState>,
) -> Result<Tables, StageError> {
    let bad = |m: String| StageError::Input(format!("stage `{}`: {m}", ctx.stage));
    if !(0.0..=1.0).contains(&params.lambda) {
        return Err(bad(format!(
            "`lambda` must lie in [0, 1], got {}",
            params.lambda
        )));
    }
    let effective = params.effective();
    let llm = match (&effective.llm, params.uses_llm()) {
        (Some(config), true) => Some(
            LlmJudge::new(
                config.clone(),
                ctx.cache,
                ctx.offline,
                &ctx.resolve(&params.prompts),
            )?
            .metered(Some(ctx.usage)),
        ),
        (None, true) => {
            return Err(bad(
                "mode `llm`/`hybrid` and matcher `llm` need `llm: {base_url, model}`".into(),
            ))
        }
        _ => None,
    };
    // The first input holds this item's episodes (the engine filters it per item).
    let first = ctx.inputs.first().ok_or_else(|| {
        bad("needs inputs [episodes, steps, bundles, sources, history_events]".into())
    })?;
    let episodes = episodes_from_table(&first.df)?;
    let (index, world) = (&ctx.state.index, &ctx.state.world);
    let opts = JudgeOptions {
        mode: effective.mode,
        matcher: effective.matcher,
        lambda: params.lambda,
    };
    let mut judged = Vec::new();
    for ep in &episodes {
        let bundle = index.bundle(ep)?;
        let steps = index.steps_of(&ep.episode_id);
        judged.push(judge_episode(world, bundle, ep, steps, &opts, llm.as_ref()).await?);
    }
    Ok(Tables::new(judge_tables(&judged)?))
}
