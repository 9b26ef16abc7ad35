//! `knowu_metrics`: KnowU-Bench's main-table metrics from `episodes` and `steps`, as defined in
//! the benchmark's METRICS.md (scripts calc_paper_metrics.py, calc_split_difficulty_metrics.py
//! and calc_persona_pref_routine_avg.py).
//!
//! Output tables (every one keyed by the run: `variant`, `agent`):
//! - `episode_metrics`: the per-episode facts every mean is built from (success, bucket, …);
//! - `splits`: per split × difficulty (`all`, `easy`, `hard`): SR, AvgScore, AveSteps,
//!   AveQueries, IE with episode counts;
//! - `policy`: proactive Act / Silent / Stop with bucket sizes;
//! - `personas`: per persona mean score for personalized and proactive (no result = 0);
//! - `overall`: Overall SR, and counts of no-result, unmatched and quirk episodes.

use std::path::Path;

use polars::prelude::*;
use prefflow_engine::{Kind, StageContext, StageError, Tables};
use serde::Deserialize;

use super::aggregate;
use super::classify;
use super::columns;
use super::error::KnowuError;
use super::features;
use super::rules::SUCCESS_THRESHOLD;
use super::run::NO_RESULT;
use super::tasks;

/// Parameters of `knowu_metrics`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsParams {
    /// tasks.csv: split, difficulty and habit keys per task.
    pub tasks: String,
    /// Directory of persona profiles (`<persona>.yaml`, KnowU's user_profile schema).
    pub personas: String,
}

/// Computes KnowU-Bench's metrics; tasks.csv and the persona directory are in the cache key.
pub struct KnowuMetrics;

impl Kind for KnowuMetrics {
    type Params = MetricsParams;
    const NAME: &'static str = "knowu_metrics";
    const VERSION: &'static str = "1";
    const OUTPUTS: &'static [&'static str] =
        &["episode_metrics", "splits", "policy", "personas", "overall"];
    const SUMMARY: &'static str = "KnowU-Bench metrics (SR, AvgScore, AveSteps, AveQueries, IE, Act/Silent/Stop, per persona, Overall) from inputs episodes + steps (params: tasks, personas)";

    fn external_inputs(&self, params: &Self::Params) -> Vec<String> {
        vec![params.tasks.clone(), params.personas.clone()]
    }

    fn run(&self, params: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let episodes = ctx.input("episodes")?;
        let steps = ctx.input("steps")?;
        let tasks = tasks::read(&ctx.resolve(&params.tasks))?;
        let per_episode = episode_metrics(episodes, steps, &tasks, &ctx.resolve(&params.personas))?;
        Ok(metric_tables(per_episode)?)
    }
}

/// All output tables from the per-episode frame.
pub fn metric_tables(per_episode: DataFrame) -> PolarsResult<Tables> {
    let runs = aggregate::runs(&per_episode)?;
    Ok(Tables::new([
        ("splits", aggregate::splits(&per_episode, &runs)?),
        ("policy", aggregate::policy(&per_episode, &runs)?),
        ("personas", aggregate::personas(&per_episode)?),
        ("overall", aggregate::overall(&per_episode)?),
        ("episode_metrics", per_episode),
    ]))
}

/// One row per episode with everything the means need.
pub fn episode_metrics(
    episodes: &DataFrame,
    steps: &DataFrame,
    tasks: &tasks::TaskIndex,
    personas_dir: &Path,
) -> Result<DataFrame, KnowuError> {
    const BASE: [&str; 9] = [
        "episode_id",
        "task_id",
        "variant",
        "agent",
        "status",
        "steps",
        "ask_user_calls",
        "score",
        "epoch",
    ];
    columns::require(episodes, "episodes", &BASE)?;
    let mut base = episodes.select(BASE.iter().copied())?;
    for c in classify::task_columns(episodes, tasks, personas_dir)? {
        base.with_column(c)?;
    }
    let feats = features::episode_features(steps)?;
    base.lazy()
        .with_columns([
            col("score").cast(DataType::Float64),
            col("steps").cast(DataType::UInt32),
            col("ask_user_calls")
                .cast(DataType::UInt32)
                .alias("queries"),
        ])
        .left_join(feats, col("episode_id"), col("episode_id"))
        .with_columns(outcome_exprs())
        .with_column(bucket_expr())
        .with_columns(policy_exprs())
        .select(output_columns())
        .collect()
        .map_err(KnowuError::from)
}

/// `has_result` and strict `success`.
fn outcome_exprs() -> Vec<Expr> {
    let has_result = col("score")
        .is_not_null()
        .and(col("status").neq(lit(NO_RESULT)));
    vec![
        has_result.clone().alias("has_result"),
        has_result
            .and(col("score").gt(lit(SUCCESS_THRESHOLD)))
            .alias("success"),
        col("any_engagement").fill_null(lit(false)),
    ]
}

/// KnowU's proactive bucket: reject if the user's last decision is reject, else need / noneed
/// from the habits; null outside proactive tasks (or when the task has no habit keys).
fn bucket_expr() -> Expr {
    let proactive = col("split").eq(lit("proactive"));
    when(
        proactive
            .clone()
            .and(col("user_decision").eq(lit("reject"))),
    )
    .then(lit("reject"))
    .when(proactive.clone().and(col("habit_should_act").eq(lit(true))))
    .then(lit("need"))
    .when(proactive.and(col("habit_should_act").eq(lit(false))))
    .then(lit("noneed"))
    .otherwise(lit(NULL).cast(DataType::String))
    .alias("bucket")
}

/// Policy success per bucket (Act: success; Silent: no engagement; Stop: no operational action
/// from the first reject step, or from the step after the last query when no reject step is
/// found), and whether the bucket came from the WeekendSleeper quirk.
fn policy_exprs() -> Vec<Expr> {
    let start = coalesce(&[col("first_reject_step"), col("last_query_step") + lit(1u32)]);
    let stopped = col("last_violation_step")
        .is_null()
        .or(start.clone().is_null())
        .or(col("last_violation_step").lt(start));
    let bucket_is = |b: &str| col("bucket").eq(lit(b));
    let policy = when(bucket_is("need"))
        .then(col("success"))
        .when(bucket_is("noneed"))
        .then(col("any_engagement").not())
        .when(bucket_is("reject"))
        .then(stopped)
        .otherwise(lit(NULL).cast(DataType::Boolean));
    vec![
        policy.alias("policy_success"),
        bucket_is("need")
            .and(col("need_from_quirk"))
            .fill_null(lit(false))
            .alias("bucket_from_quirk"),
    ]
}

/// Columns of `episode_metrics`, in order.
fn output_columns() -> Vec<Expr> {
    [
        "episode_id",
        "task_id",
        "variant",
        "agent",
        "epoch",
        "class_name",
        "split",
        "difficulty",
        "persona",
        "status",
        "has_result",
        "score",
        "success",
        "steps",
        "queries",
        "user_decision",
        "first_reject_step",
        "last_query_step",
        "any_engagement",
        "last_violation_step",
        "habit_should_act",
        "profile_found",
        "bucket",
        "policy_success",
        "bucket_from_quirk",
    ]
    .into_iter()
    .map(col)
    .collect()
}
