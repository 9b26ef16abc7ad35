//! `knowu_metrics`: KnowU-Bench's main-table metrics from `episodes` and `steps`, as defined in
//! the benchmark's METRICS.md (scripts calc_paper_metrics.py, calc_split_difficulty_metrics.py
//! and calc_persona_pref_routine_avg.py).
//!
//! The stage kind only: what it computes lives in [`crate::knowu::interop::metrics`].

use crate::knowu::interop::metrics::*;
use crate::knowu::interop::tasks;
use crate::tables::episodes as ep;
use prefflow_engine::schema::{InputDef, TableDef};
use prefflow_engine::{Kind, StageContext, StageError, Tables};
use std::path::Path;

/// Computes KnowU-Bench's metrics; tasks.csv and the persona directory are in the cache key.
pub struct KnowuMetrics;

impl Kind for KnowuMetrics {
    type Params = MetricsParams;
    type State = ();
    const NAME: &'static str = "knowu_metrics";
    const VERSION: &'static str = "1";
    const OUTPUT_DEFS: &'static [&'static TableDef] = &[
        &crate::tables::knowu::EPISODE_METRICS,
        &crate::tables::knowu::SPLITS,
        &crate::tables::knowu::POLICY,
        &crate::tables::knowu::PERSONAS,
        &crate::tables::knowu::OVERALL,
    ];
    /// Optional: the params may name the tables otherwise (`episodes_input`, …), and
    /// `knowu_tasks` may come from a file (`tasks:`); when bound by these names, the plan
    /// checks the columns.
    const INPUTS: &'static [InputDef] = &[
        InputDef::optional(
            &ep::EPISODES,
            &[
                ep::EPISODE_ID,
                ep::TASK_ID,
                ep::VARIANT,
                ep::EPOCH,
                ep::AGENT,
                ep::STATUS,
                "steps",
                "ask_user_calls",
                "score",
            ],
        ),
        InputDef::optional(&ep::STEPS, &[ep::EPISODE_ID, ep::STEP, ep::ACTION_TYPE]),
        InputDef::optional(
            &crate::tables::knowu::KNOWU_TASKS,
            &["task_name", "class_name", crate::tables::knowu::SPLIT],
        ),
    ];
    const SUMMARY: &'static str = "KnowU-Bench metrics (SR, AvgScore, AveSteps, AveQueries, IE, Act/Silent/Stop, per persona, Overall) from inputs episodes + steps [+ knowu_tasks] (params: tasks?, personas, allow_missing_profiles?, classes?, episodes_input?, steps_input?, tasks_input?)";

    fn external_inputs(&self, params: &Self::Params) -> Vec<String> {
        use crate::knowu::data::locate_str;
        params
            .tasks
            .iter()
            .chain([&params.personas])
            .map(|p| locate_str(p))
            .collect()
    }

    fn run(&self, params: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let episodes = ctx.input(params.episodes_input.as_deref().unwrap_or("episodes"))?;
        let steps = ctx.input(params.steps_input.as_deref().unwrap_or("steps"))?;
        let tasks_input = params.tasks_input.as_deref().unwrap_or("knowu_tasks");
        let tasks = match (ctx.input(tasks_input), &params.tasks) {
            (Ok(df), _) => tasks::from_frame(df, Path::new("knowu_tasks"))?,
            (Err(_), Some(path)) => tasks::read(&ctx.resolve(path))?,
            (Err(_), None) => {
                return Err(StageError::Input(format!(
                    "stage `{}`: give `tasks:` (a tasks.csv) or a `knowu_tasks` input",
                    ctx.stage
                )))
            }
        };
        let personas = crate::knowu::data::locate(&ctx.resolve(&params.personas));
        if !personas.is_dir() {
            let path = std::path::PathBuf::from(&params.personas);
            return Err(crate::knowu::KnowuError::DataMissing { path }.into());
        }
        let per_episode = episode_metrics(episodes, steps, &tasks, &personas)?;
        let per_episode = with_scope(per_episode, params.classes)?;
        check_profiles(&per_episode, params, ctx.stage)?;
        report_gaps(&per_episode, ctx.stage)?;
        Ok(metric_tables(per_episode, params.classes)?)
    }
}
