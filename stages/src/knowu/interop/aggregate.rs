//! The aggregate tables of `knowu_metrics`, built with polars from the per-episode frame
//! (`episode_metrics`). Every table is keyed by the run (`variant`, `agent`), so several runs
//! can be compared in one pass. Episodes without a result are left out of every mean except the
//! per-persona ones, where they count as 0; episodes whose task is not in tasks.csv are left out
//! of everything and counted in `overall.unmatched_episodes`. Only episodes `in_scope` (the
//! stage's `classes`) are aggregated; `overall.out_of_scope_episodes` counts the others.

use polars::prelude::*;

use super::run::ERROR;
use super::tasks::{DIFFICULTIES, SPLITS};

/// The paper's proactive policy metrics and the bucket each is measured on.
const POLICY: [(&str, &str); 3] = [("Act", "need"), ("Silent", "noneed"), ("Stop", "reject")];

/// The runs in order of first appearance: `variant`, `agent`, `run_order`.
pub fn runs(per_episode: &DataFrame) -> PolarsResult<DataFrame> {
    per_episode
        .clone()
        .lazy()
        .select([col("variant"), col("agent")])
        .unique_stable(None, UniqueKeepStrategy::First)
        .with_row_index("run_order", None)
        .collect()
}

fn has_result() -> Expr {
    col("has_result")
}

/// Episodes bucketed without their persona's profile (`allow_missing_profiles`).
fn missing_profile() -> Expr {
    col("profile_found").eq(lit(false)).fill_null(lit(false))
}

/// SR, AvgScore, AveSteps, AveQueries and IE over episodes with a result, with counts.
fn split_aggs() -> Vec<Expr> {
    let hr = has_result;
    let queries_or_one = when(col("queries").gt(lit(1u32)))
        .then(col("queries"))
        .otherwise(lit(1u32))
        .cast(DataType::Float64);
    vec![
        hr().sum().alias("episodes"),
        hr().not().sum().alias("no_result_episodes"),
        missing_profile()
            .filter(hr())
            .sum()
            .alias("missing_profile_episodes"),
        col("success").filter(hr()).sum().alias("successes"),
        col("success")
            .filter(hr())
            .cast(DataType::Float64)
            .mean()
            .alias("SR"),
        col("score").filter(hr()).mean().alias("AvgScore"),
        col("steps")
            .filter(hr())
            .cast(DataType::Float64)
            .mean()
            .alias("AveSteps"),
        col("queries")
            .filter(hr())
            .cast(DataType::Float64)
            .mean()
            .alias("AveQueries"),
        (col("score") / queries_or_one)
            .filter(hr())
            .mean()
            .alias("IE"),
    ]
}

/// Grouping keys of the `splits` table.
const SPLIT_KEYS: [&str; 4] = ["variant", "agent", "split", "difficulty"];

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
    grid(runs, "split", "difficulty", &cells)?
        .join(
            split_stats(per_episode)?,
            keys.clone(),
            keys,
            JoinArgs::new(JoinType::Left),
        )
        .sort(["run_order", "cell_order"], SortMultipleOptions::default())
        .with_columns([
            col("episodes").fill_null(lit(0u32)),
            col("no_result_episodes").fill_null(lit(0u32)),
            col("missing_profile_episodes").fill_null(lit(0u32)),
            col("successes").fill_null(lit(0u32)),
            when(col("split").eq(lit("personalized")))
                .then(col("AvgScore"))
                .otherwise(null())
                .alias("AvgScore"),
            when(col("split").eq(lit("general")))
                .then(null())
                .otherwise(col("IE"))
                .alias("IE"),
        ])
        .drop(cols(["run_order", "cell_order"]))
        .collect()
}

/// [`split_aggs`] per split (as difficulty `all`) and per split × difficulty, stacked.
fn split_stats(per_episode: &DataFrame) -> PolarsResult<LazyFrame> {
    let matched = per_episode
        .clone()
        .lazy()
        .filter(col("split").is_not_null());
    let all = matched
        .clone()
        .group_by([col("variant"), col("agent"), col("split")])
        .agg(split_aggs())
        .with_column(lit("all").alias("difficulty"));
    let by_level = matched.group_by(SPLIT_KEYS.map(col)).agg(split_aggs());
    let metrics = [
        "episodes",
        "no_result_episodes",
        "missing_profile_episodes",
        "successes",
        "SR",
        "AvgScore",
    ];
    let order: Vec<Expr> = SPLIT_KEYS
        .into_iter()
        .chain(metrics)
        .chain(["AveSteps", "AveQueries", "IE"])
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
        .filter(has_result().and(col("bucket").is_not_null()))
        .group_by([col("variant"), col("agent"), col("bucket")])
        .agg([
            len().alias("episodes"),
            col("policy_success").sum().alias("successes"),
            col("policy_success")
                .cast(DataType::Float64)
                .mean()
                .alias("value"),
            col("bucket_from_quirk").sum().alias("quirk_episodes"),
            missing_profile().sum().alias("missing_profile_episodes"),
        ]);
    let grid = grid(runs, "metric", "bucket", &POLICY)?;
    let keys = ["variant", "agent", "bucket"].map(col);
    grid.join(stats, keys.clone(), keys, JoinArgs::new(JoinType::Left))
        .sort(["run_order", "cell_order"], SortMultipleOptions::default())
        .with_columns([
            col("episodes").fill_null(lit(0u32)),
            col("successes").fill_null(lit(0u32)),
            col("quirk_episodes").fill_null(lit(0u32)),
            col("missing_profile_episodes").fill_null(lit(0u32)),
        ])
        .drop(cols(["run_order", "cell_order"]))
        .collect()
}

/// Per persona, mean score of personalized and of proactive episodes, a no-result episode
/// counting as 0.
pub fn personas(per_episode: &DataFrame) -> PolarsResult<DataFrame> {
    let in_scope = col("split")
        .eq(lit("personalized"))
        .or(col("split").eq(lit("proactive")))
        .and(col("persona").is_not_null());
    let score_or_zero = when(has_result()).then(col("score")).otherwise(lit(0.0));
    per_episode
        .clone()
        .lazy()
        .filter(in_scope)
        .group_by([col("variant"), col("agent"), col("persona"), col("split")])
        .agg([
            len().alias("episodes"),
            has_result().sum().alias("with_results"),
            has_result().not().sum().alias("no_results"),
            score_or_zero.mean().alias("avg_score"),
            missing_profile().sum().alias("missing_profile_episodes"),
        ])
        .sort(
            ["variant", "agent", "persona", "split"],
            SortMultipleOptions::default(),
        )
        .collect()
}

/// Overall SR (successes / episodes with a result, all splits) and the run's bookkeeping counts.
pub fn overall(per_episode: &DataFrame, scope: &str) -> PolarsResult<DataFrame> {
    let scoped = col("in_scope");
    let matched = col("split").is_not_null().and(scoped.clone());
    let count = |e: Expr| e.cast(DataType::UInt32).sum();
    per_episode
        .clone()
        .lazy()
        .group_by_stable([col("variant"), col("agent")])
        .agg([
            count(scoped.clone()).alias("episodes"),
            count(matched.clone().and(has_result())).alias("episodes_with_results"),
            count(matched.clone().and(col("success"))).alias("successes"),
            count(matched.clone().and(has_result().not())).alias("no_result_episodes"),
            count(matched.not().and(scoped.clone())).alias("unmatched_episodes"),
            count(scoped.clone().and(col("status").eq(lit(ERROR)))).alias("error_episodes"),
            count(
                scoped
                    .clone()
                    .and(has_result())
                    .and(col("bucket_from_quirk")),
            )
            .alias("quirk_episodes"),
            count(scoped.clone().and(missing_profile())).alias("missing_profile_episodes"),
            count(scoped.not()).alias("out_of_scope_episodes"),
        ])
        .with_column(
            when(col("episodes_with_results").gt(lit(0u32)))
                .then(
                    col("successes").cast(DataType::Float64)
                        / col("episodes_with_results").cast(DataType::Float64),
                )
                .otherwise(lit(NULL).cast(DataType::Float64))
                .alias("overall_SR"),
        )
        .with_column(lit(scope).alias("scope"))
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
