//! The aggregate tables of `knowu_metrics`, built with polars from the per-episode frame
//! (`episode_metrics`). Every table is keyed by the run (`variant`, `agent`), so several runs
//! can be compared in one pass. Episodes without a result are left out of every mean except the
//! per-persona ones, where they count as 0; episodes whose task is not in tasks.csv are left out
//! of everything and counted in `overall.unmatched_episodes`. Only episodes `in_scope` (the
//! stage's `classes`) are aggregated; `overall.out_of_scope_episodes` counts the others.

use polars::prelude::*;

use super::run::ERROR;
use super::tasks::{DIFFICULTIES, SPLITS};
use crate::tables::knowu::{
    EpisodeMetricsRow as M, OverallRow as O, PersonasRow as Pe, PolicyRow as P, SplitsRow as S,
};

/// The paper's proactive policy metrics and the bucket each is measured on.
const POLICY: [(&str, &str); 3] = [("Act", "need"), ("Silent", "noneed"), ("Stop", "reject")];

/// The runs in order of first appearance: `variant`, `agent`, `run_order`.
pub fn runs(per_episode: &DataFrame) -> PolarsResult<DataFrame> {
    per_episode
        .clone()
        .lazy()
        .select([col(M::variant), col(M::agent)])
        .unique_stable(None, UniqueKeepStrategy::First)
        .with_row_index("run_order", None)
        .collect()
}

fn has_result() -> Expr {
    col(M::has_result)
}

/// Episodes bucketed without their persona's profile (`allow_missing_profiles`).
fn missing_profile() -> Expr {
    col(M::profile_found).eq(lit(false)).fill_null(lit(false))
}

/// SR, AvgScore, AveSteps, AveQueries and IE over episodes with a result, with counts.
fn split_aggs() -> Vec<Expr> {
    let hr = has_result;
    let queries_or_one = when(col(M::queries).gt(lit(1u32)))
        .then(col(M::queries))
        .otherwise(lit(1u32))
        .cast(DataType::Float64);
    vec![
        hr().sum().alias(S::episodes),
        hr().not().sum().alias(S::no_result_episodes),
        missing_profile()
            .filter(hr())
            .sum()
            .alias(S::missing_profile_episodes),
        col(M::success).filter(hr()).sum().alias(S::successes),
        col(M::success)
            .filter(hr())
            .cast(DataType::Float64)
            .mean()
            .alias(S::SR),
        col(M::score).filter(hr()).mean().alias(S::AvgScore),
        col(M::steps)
            .filter(hr())
            .cast(DataType::Float64)
            .mean()
            .alias(S::AveSteps),
        col(M::queries)
            .filter(hr())
            .cast(DataType::Float64)
            .mean()
            .alias(S::AveQueries),
        (col(M::score) / queries_or_one)
            .filter(hr())
            .mean()
            .alias(S::IE),
    ]
}

/// Grouping keys of the `splits` table.
const SPLIT_KEYS: [&str; 4] = [S::variant, S::agent, S::split, S::difficulty];

/// Per split × difficulty (`all`, `easy`, `hard`), for every run, in a fixed row order. AvgScore
/// is reported for personalized only, IE for personalized and proactive.
pub fn splits(per_episode: &DataFrame, runs: &DataFrame) -> PolarsResult<DataFrame> {
    let cells: Vec<(&str, &str)> = SPLITS
        .into_iter()
        .flat_map(|s| {
            std::iter::once("all")
                .chain(DIFFICULTIES)
                .map(move |d| (s, d))
        })
        .collect();
    let keys = SPLIT_KEYS.map(col);
    let null = || lit(NULL).cast(DataType::Float64);
    grid(runs, S::split, S::difficulty, &cells)?
        .join(
            split_stats(per_episode)?,
            keys.clone(),
            keys,
            JoinArgs::new(JoinType::Left),
        )
        .sort(["run_order", "cell_order"], SortMultipleOptions::default())
        .with_columns([
            col(S::episodes).fill_null(lit(0u32)),
            col(S::no_result_episodes).fill_null(lit(0u32)),
            col(S::missing_profile_episodes).fill_null(lit(0u32)),
            col(S::successes).fill_null(lit(0u32)),
            when(col(S::split).eq(lit("personalized")))
                .then(col(S::AvgScore))
                .otherwise(null())
                .alias(S::AvgScore),
            when(col(S::split).eq(lit("general")))
                .then(null())
                .otherwise(col(S::IE))
                .alias(S::IE),
        ])
        .drop(cols(["run_order", "cell_order"]))
        .collect()
}

/// [`split_aggs`] per split (as difficulty `all`) and per split × difficulty, stacked.
fn split_stats(per_episode: &DataFrame) -> PolarsResult<LazyFrame> {
    let matched = per_episode
        .clone()
        .lazy()
        .filter(col(M::split).is_not_null());
    let all = matched
        .clone()
        .group_by([col(M::variant), col(M::agent), col(M::split)])
        .agg(split_aggs())
        .with_column(lit("all").alias(S::difficulty));
    let by_level = matched.group_by(SPLIT_KEYS.map(col)).agg(split_aggs());
    let metrics = [
        S::episodes,
        S::no_result_episodes,
        S::missing_profile_episodes,
        S::successes,
        S::SR,
        S::AvgScore,
    ];
    let order: Vec<Expr> = SPLIT_KEYS
        .into_iter()
        .chain(metrics)
        .chain([S::AveSteps, S::AveQueries, S::IE])
        .map(col)
        .collect();
    concat(
        [all.select(order.clone()), by_level.select(order)],
        UnionArgs::default(),
    )
}

/// Proactive Act / Silent / Stop with bucket sizes and the number of quirk-bucketed episodes.
pub fn policy(per_episode: &DataFrame, runs: &DataFrame) -> PolarsResult<DataFrame> {
    let stats = per_episode
        .clone()
        .lazy()
        .filter(has_result().and(col(M::bucket).is_not_null()))
        .group_by([col(M::variant), col(M::agent), col(M::bucket)])
        .agg([
            len().alias(P::episodes),
            col(M::policy_success).sum().alias(P::successes),
            col(M::policy_success)
                .cast(DataType::Float64)
                .mean()
                .alias(P::value),
            col(M::bucket_from_quirk).sum().alias(P::quirk_episodes),
            missing_profile().sum().alias(P::missing_profile_episodes),
        ]);
    let grid = grid(runs, P::metric, P::bucket, &POLICY)?;
    let keys = [P::variant, P::agent, P::bucket].map(col);
    grid.join(stats, keys.clone(), keys, JoinArgs::new(JoinType::Left))
        .sort(["run_order", "cell_order"], SortMultipleOptions::default())
        .with_columns([
            col(P::episodes).fill_null(lit(0u32)),
            col(P::successes).fill_null(lit(0u32)),
            col(P::quirk_episodes).fill_null(lit(0u32)),
            col(P::missing_profile_episodes).fill_null(lit(0u32)),
        ])
        .drop(cols(["run_order", "cell_order"]))
        .collect()
}

/// Per persona, mean score of personalized and of proactive episodes, a no-result episode
/// counting as 0.
pub fn personas(per_episode: &DataFrame) -> PolarsResult<DataFrame> {
    let in_scope = col(M::split)
        .eq(lit("personalized"))
        .or(col(M::split).eq(lit("proactive")))
        .and(col(M::persona).is_not_null());
    let score_or_zero = when(has_result()).then(col(M::score)).otherwise(lit(0.0));
    per_episode
        .clone()
        .lazy()
        .filter(in_scope)
        .group_by([
            col(M::variant),
            col(M::agent),
            col(M::persona),
            col(M::split),
        ])
        .agg([
            len().alias(Pe::episodes),
            has_result().sum().alias(Pe::with_results),
            has_result().not().sum().alias(Pe::no_results),
            score_or_zero.mean().alias(Pe::avg_score),
            missing_profile().sum().alias(Pe::missing_profile_episodes),
        ])
        .sort(
            [Pe::variant, Pe::agent, Pe::persona, Pe::split],
            SortMultipleOptions::default(),
        )
        .collect()
}

/// Overall SR (successes / episodes with a result, all splits) and the run's bookkeeping counts.
pub fn overall(per_episode: &DataFrame, scope: &str) -> PolarsResult<DataFrame> {
    let scoped = col(M::in_scope);
    let matched = col(M::split).is_not_null().and(scoped.clone());
    let count = |e: Expr| e.cast(DataType::UInt32).sum();
    per_episode
        .clone()
        .lazy()
        .group_by_stable([col(M::variant), col(M::agent)])
        .agg([
            count(scoped.clone()).alias(O::episodes),
            count(matched.clone().and(has_result())).alias(O::episodes_with_results),
            count(matched.clone().and(col(M::success))).alias(O::successes),
            count(matched.clone().and(has_result().not())).alias(O::no_result_episodes),
            count(matched.not().and(scoped.clone())).alias(O::unmatched_episodes),
            count(scoped.clone().and(col(M::status).eq(lit(ERROR)))).alias(O::error_episodes),
            count(
                scoped
                    .clone()
                    .and(has_result())
                    .and(col(M::bucket_from_quirk)),
            )
            .alias(O::quirk_episodes),
            count(scoped.clone().and(missing_profile())).alias(O::missing_profile_episodes),
            count(scoped.not()).alias(O::out_of_scope_episodes),
        ])
        .with_column(
            when(col(O::episodes_with_results).gt(lit(0u32)))
                .then(
                    col(O::successes).cast(DataType::Float64)
                        / col(O::episodes_with_results).cast(DataType::Float64),
                )
                .otherwise(lit(NULL).cast(DataType::Float64))
                .alias(O::overall_SR),
        )
        .with_column(lit(scope).alias(O::scope))
        .collect()
}

/// Every run × every cell (`a`, `b` values), with `run_order` and `cell_order` for sorting.
fn grid(runs: &DataFrame, a: &str, b: &str, cells: &[(&str, &str)]) -> PolarsResult<LazyFrame> {
    let cells = df!(
        a => cells.iter().map(|c| c.0).collect::<Vec<_>>(),
        b => cells.iter().map(|c| c.1).collect::<Vec<_>>(),
        "cell_order" => (0..cells.len() as u32).collect::<Vec<_>>(),
    )?;
    Ok(runs.clone().lazy().cross_join(cells.lazy(), None))
}
