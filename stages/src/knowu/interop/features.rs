//! Per-episode features the KnowU metrics need from the `steps` table, computed column-wise:
//! one pass over the rows applies the per-step rules ([`super::rules`]), then one polars
//! group-by reduces them per episode with min/max/any only.
//!
//! Replies are read in KnowU's alignment: from `ask_user_response` (the reply arrives with the
//! step after the ask) when the table has it, else from `user_reply` of the asking step, counted
//! as belonging to the next step. A reply's step index is what `first_reject_step` reports.

use polars::prelude::*;

use super::rules::{self, Decision};
use crate::knowu::columns;
use crate::knowu::error::KnowuError;

/// Table name used in errors.
const STEPS: &str = "steps";

/// Per-episode features: `episode_id`, `last_query_step`, `first_reject_step`,
/// `user_decision` (accept | reject | null), `any_engagement`, `last_violation_step`.
pub fn episode_features(steps: &DataFrame) -> Result<LazyFrame, KnowuError> {
    let rows = row_features(steps)?;
    let reject = col("decision").eq(lit("reject"));
    let accept = col("decision").eq(lit("accept"));
    let per_episode = rows
        .lazy()
        .group_by([col("episode_id")])
        .agg([
            col("step")
                .filter(col("is_query"))
                .max()
                .alias("last_query_step"),
            col("reply_step")
                .filter(reject.clone())
                .min()
                .alias("first_reject_step"),
            col("reply_step")
                .filter(reject)
                .max()
                .alias("last_reject_step"),
            col("reply_step")
                .filter(accept)
                .max()
                .alias("last_accept_step"),
            col("engaging").any(true).alias("any_engagement"),
            col("step")
                .filter(col("violating"))
                .max()
                .alias("last_violation_step"),
        ])
        .with_column(user_decision().alias("user_decision"))
        .drop(cols(["last_reject_step", "last_accept_step"]));
    Ok(per_episode)
}

/// The decision of the last reply that has one.
fn user_decision() -> Expr {
    let (rej, acc) = (col("last_reject_step"), col("last_accept_step"));
    when(
        rej.clone()
            .is_not_null()
            .and(acc.clone().is_null().or(rej.gt(acc.clone()))),
    )
    .then(lit("reject"))
    .when(acc.is_not_null())
    .then(lit("accept"))
    .otherwise(lit(NULL).cast(DataType::String))
}

/// One row per step: `episode_id`, `step`, `is_query`, `engaging`, `violating`, `decision`,
/// `reply_step`.
fn row_features(steps: &DataFrame) -> Result<DataFrame, KnowuError> {
    columns::require(
        steps,
        STEPS,
        &["episode_id", "step", "action_type", "arguments"],
    )?;
    let step_col = columns::cast(steps, STEPS, "step", &DataType::UInt32)?;
    let step = step_col
        .u32()
        .map_err(|e| KnowuError::table(STEPS, e.to_string()))?;
    let types_col = columns::cast(steps, STEPS, "action_type", &DataType::String)?;
    let args_col = columns::cast(steps, STEPS, "arguments", &DataType::String)?;
    let types = types_col
        .str()
        .map_err(|e| KnowuError::table(STEPS, e.to_string()))?;
    let args = args_col
        .str()
        .map_err(|e| KnowuError::table(STEPS, e.to_string()))?;
    let actions = action_flags(types, args);
    let replies = reply_decisions(steps, step)?;
    let df = DataFrame::new(
        steps.height(),
        vec![
            columns::column(steps, STEPS, "episode_id")?.clone(),
            step_col.clone().with_name("step".into()),
            actions.0.into_series().into_column(),
            actions.1.into_series().into_column(),
            actions.2.into_series().into_column(),
            replies.0.into_series().into_column(),
            replies.1.into_series().into_column(),
        ],
    )?;
    Ok(df)
}

type Flags = (BooleanChunked, BooleanChunked, BooleanChunked);

/// `is_query` (exactly `ask_user`, as KnowU counts queries), `engaging`, `violating`.
fn action_flags(types: &StringChunked, args: &StringChunked) -> Flags {
    let n = types.len();
    let (mut query, mut engage, mut violate) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for (t, a) in types.iter().zip(args.iter()) {
        let raw = t.unwrap_or("");
        let norm = rules::normalize_action(raw);
        query.push(raw == "ask_user");
        engage.push(rules::is_engagement(&norm, || {
            rules::answer_text(a.unwrap_or(""))
        }));
        violate.push(rules::is_stop_violation(&norm));
    }
    (
        BooleanChunked::from_slice("is_query".into(), &query),
        BooleanChunked::from_slice("engaging".into(), &engage),
        BooleanChunked::from_slice("violating".into(), &violate),
    )
}

/// `decision` and `reply_step` of every row that carries a reply with a decision.
fn reply_decisions(
    steps: &DataFrame,
    step: &UInt32Chunked,
) -> Result<(StringChunked, UInt32Chunked), KnowuError> {
    // KnowU's alignment when present; else prefflow's, shifted onto the next step.
    let (name, shift) = if steps.column("ask_user_response").is_ok() {
        ("ask_user_response", 0)
    } else {
        ("user_reply", 1)
    };
    let reply_col = columns::cast(steps, STEPS, name, &DataType::String)?;
    let replies = reply_col
        .str()
        .map_err(|e| KnowuError::table(STEPS, e.to_string()))?;
    let mut decision: Vec<Option<&'static str>> = Vec::with_capacity(replies.len());
    let mut at: Vec<Option<u32>> = Vec::with_capacity(replies.len());
    for (reply, s) in replies.iter().zip(step.iter()) {
        let d = reply.and_then(rules::parse_decision).map(Decision::as_str);
        decision.push(d);
        at.push(d.and(s).map(|s| s + shift));
    }
    Ok((
        StringChunked::from_iter_options("decision".into(), decision.into_iter()),
        UInt32Chunked::from_iter_options("reply_step".into(), at.into_iter()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(steps: &DataFrame) -> DataFrame {
        episode_features(steps)
            .expect("features")
            .sort(["episode_id"], SortMultipleOptions::default())
            .collect()
            .expect("collect")
    }

    fn u32s(df: &DataFrame, name: &str) -> Vec<Option<u32>> {
        df.column(name)
            .expect(name)
            .u32()
            .expect("u32")
            .iter()
            .collect()
    }

    #[test]
    fn prefflow_alignment_counts_a_reply_on_the_next_step() {
        // Without `ask_user_response`, the reply on the asking step (user_reply) belongs to the
        // step after it, as in KnowU's logs.
        let steps = df!(
            "episode_id" => ["a", "a", "a", "b", "b"],
            "step" => [1u32, 2, 3, 1, 2],
            "action_type" => ["ask_user", "click", "ask_user", "ask_user", "wait"],
            "arguments" => ["{}", "{}", "{}", "{}", "{}"],
            "user_reply" => [Some("I reject that"), None, Some("fine, accept"), None, None],
        )
        .expect("frame");
        let f = collect(&steps);
        assert_eq!(u32s(&f, "first_reject_step"), [Some(2), None]);
        assert_eq!(u32s(&f, "last_query_step"), [Some(3), Some(1)]);
        assert_eq!(u32s(&f, "last_violation_step"), [Some(2), None]);
        let decisions: Vec<Option<&str>> = f
            .column("user_decision")
            .expect("c")
            .str()
            .expect("s")
            .iter()
            .collect();
        // The later accept (reply index 4) overrides the earlier reject (index 2).
        assert_eq!(decisions, [Some("accept"), None]);
    }

    #[test]
    fn an_empty_steps_table_gives_no_features() {
        let steps = df!(
            "episode_id" => Vec::<String>::new(),
            "step" => Vec::<u32>::new(),
            "action_type" => Vec::<String>::new(),
            "arguments" => Vec::<String>::new(),
            "user_reply" => Vec::<Option<String>>::new(),
        )
        .expect("frame");
        assert_eq!(collect(&steps).height(), 0);
    }
}
