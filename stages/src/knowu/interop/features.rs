//! Per-episode features the KnowU metrics need from the `steps` table, computed column-wise:
//! one pass over the rows applies the per-step rules ([`super::rules`]), then one polars
//! group-by reduces them per episode with min/max/any only.
//!
//! Replies are read in KnowU's alignment: from `ask_user_response` (the reply arrives with the
//! step after the ask) when the table has it, else from `user_reply` of the asking step, counted
//! as belonging to the next step. A reply's step index is what `first_reject_step` reports.

use polars::prelude::*;

use super::rules::{self, Decision};
use crate::knowu::error::KnowuError;
use crate::tables::episodes::STEPS;
use crate::tables::knowu::{EpisodeMetricsRow as M, ExportedStep, MetricStep as S};

/// The per-step columns of [`row_features`] (not a table's: reduced per episode at once).
const IS_QUERY: &str = "is_query";
const ENGAGING: &str = "engaging";
const VIOLATING: &str = "violating";
const DECISION: &str = "decision";
const REPLY_STEP: &str = "reply_step";
/// Intermediate per-episode columns of [`episode_features`].
const LAST_REJECT_STEP: &str = "last_reject_step";
const LAST_ACCEPT_STEP: &str = "last_accept_step";

/// Per-episode features: `episode_id`, `last_query_step`, `first_reject_step`,
/// `user_decision` (accept | reject | null), `any_engagement`, `last_violation_step`.
pub fn episode_features(steps: &DataFrame) -> Result<LazyFrame, KnowuError> {
    let rows = row_features(steps)?;
    let reject = col(DECISION).eq(lit("reject"));
    let accept = col(DECISION).eq(lit("accept"));
    let per_episode = rows
        .lazy()
        .group_by([col(S::episode_id)])
        .agg([
            col(S::step)
                .filter(col(IS_QUERY))
                .max()
                .alias(M::last_query_step),
            col(REPLY_STEP)
                .filter(reject.clone())
                .min()
                .alias(M::first_reject_step),
            col(REPLY_STEP).filter(reject).max().alias(LAST_REJECT_STEP),
            col(REPLY_STEP).filter(accept).max().alias(LAST_ACCEPT_STEP),
            col(ENGAGING).any(true).alias(M::any_engagement),
            col(S::step)
                .filter(col(VIOLATING))
                .max()
                .alias(M::last_violation_step),
        ])
        .with_column(user_decision().alias(M::user_decision))
        .drop(cols([LAST_REJECT_STEP, LAST_ACCEPT_STEP]));
    Ok(per_episode)
}

/// The decision of the last reply that has one.
fn user_decision() -> Expr {
    let (rej, acc) = (col(LAST_REJECT_STEP), col(LAST_ACCEPT_STEP));
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
    S::check(steps).map_err(KnowuError::rows)?;
    let step_col = typed(steps, S::step, &DataType::UInt32)?;
    let step = step_col.u32().map_err(bug)?;
    let types_col = typed(steps, S::action_type, &DataType::String)?;
    let args_col = typed(steps, S::arguments, &DataType::String)?;
    let types = types_col.str().map_err(bug)?;
    let args = args_col.str().map_err(bug)?;
    let actions = action_flags(types, args);
    let replies = reply_decisions(steps, step)?;
    let df = DataFrame::new(
        steps.height(),
        vec![
            steps.column(S::episode_id).map_err(bug)?.clone(),
            step_col.clone().with_name(S::step.into()),
            actions.0.into_series().into_column(),
            actions.1.into_series().into_column(),
            actions.2.into_series().into_column(),
            replies.0.into_series().into_column(),
            replies.1.into_series().into_column(),
        ],
    )?;
    Ok(df)
}

/// Column `name` of `steps` as `dtype` (a checked column, widened as `check` allows).
fn typed(steps: &DataFrame, name: &str, dtype: &DataType) -> Result<Column, KnowuError> {
    steps
        .column(name)
        .and_then(|c| c.strict_cast(dtype))
        .map_err(bug)
}

/// A polars error on a table `check` accepted.
fn bug(e: PolarsError) -> KnowuError {
    KnowuError::table(STEPS.name, e.to_string())
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
        BooleanChunked::from_slice(IS_QUERY.into(), &query),
        BooleanChunked::from_slice(ENGAGING.into(), &engage),
        BooleanChunked::from_slice(VIOLATING.into(), &violate),
    )
}

/// `decision` and `reply_step` of every row that carries a reply with a decision.
fn reply_decisions(
    steps: &DataFrame,
    step: &UInt32Chunked,
) -> Result<(StringChunked, UInt32Chunked), KnowuError> {
    // KnowU's alignment when present; else prefflow's, shifted onto the next step.
    let (name, shift) = if steps.column(ExportedStep::ask_user_response).is_ok() {
        (ExportedStep::ask_user_response, 0)
    } else {
        (S::user_reply, 1)
    };
    let reply_col = typed(steps, name, &DataType::String)?;
    let replies = reply_col.str().map_err(bug)?;
    let mut decision: Vec<Option<&'static str>> = Vec::with_capacity(replies.len());
    let mut at: Vec<Option<u32>> = Vec::with_capacity(replies.len());
    for (reply, s) in replies.iter().zip(step.iter()) {
        let d = reply.and_then(rules::parse_decision).map(Decision::as_str);
        decision.push(d);
        at.push(d.and(s).map(|s| s + shift));
    }
    Ok((
        StringChunked::from_iter_options(DECISION.into(), decision.into_iter()),
        UInt32Chunked::from_iter_options(REPLY_STEP.into(), at.into_iter()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(steps: &DataFrame) -> DataFrame {
        episode_features(steps)
            .expect("features")
            .sort([S::episode_id], SortMultipleOptions::default())
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
        let step = |id: &str, step: u32, action: &str, reply: Option<&str>| S {
            episode_id: id.into(),
            step,
            action_type: action.into(),
            arguments: "{}".into(),
            user_reply: reply.map(str::to_string),
        };
        let steps = S::to_frame(&[
            step("a", 1, "ask_user", Some("I reject that")),
            step("a", 2, "click", None),
            step("a", 3, "ask_user", Some("fine, accept")),
            step("b", 1, "ask_user", None),
            step("b", 2, "wait", None),
        ])
        .expect("frame");
        let f = collect(&steps);
        assert_eq!(u32s(&f, M::first_reject_step), [Some(2), None]);
        assert_eq!(u32s(&f, M::last_query_step), [Some(3), Some(1)]);
        assert_eq!(u32s(&f, M::last_violation_step), [Some(2), None]);
        let decisions: Vec<Option<&str>> = f
            .column(M::user_decision)
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
        let steps = S::to_frame(&[]).expect("frame");
        assert_eq!(collect(&steps).height(), 0);
    }
}
