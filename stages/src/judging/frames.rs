//! Judgements as the `verdicts`, `scores`, `requests` and `interaction` tables (docs/tables.md,
//! "Judging").

use polars::prelude::*;

use super::episode::{EpisodeJudgement, VerdictRow};
use super::interaction::Request;
use crate::columns::{col, frame};

/// Rows of a per-row table with their episode.
fn flatten<'a, T>(
    judged: &'a [EpisodeJudgement],
    f: impl Fn(&'a EpisodeJudgement) -> &'a [T],
) -> Vec<(&'a EpisodeJudgement, &'a T)> {
    judged
        .iter()
        .flat_map(|j| f(j).iter().map(move |r| (j, r)))
        .collect()
}

/// The `verdicts` table.
pub fn verdicts_frame(judged: &[EpisodeJudgement]) -> PolarsResult<DataFrame> {
    let rows: Vec<(&EpisodeJudgement, &VerdictRow)> = flatten(judged, |j| &j.verdicts);
    frame(vec![
        col("episode_id", &rows, |(j, _)| j.episode.episode_id.clone()),
        col("task_id", &rows, |(j, _)| j.episode.task_id.clone()),
        col("variant", &rows, |(j, _)| j.episode.variant.clone()),
        col("epoch", &rows, |(j, _)| j.episode.epoch),
        col("criterion_id", &rows, |(_, v)| v.criterion_id.clone()),
        col("kind", &rows, |(_, v)| v.kind.as_str().to_string()),
        col("slot_id", &rows, |(_, v)| v.slot_id.clone()),
        col("source", &rows, |(_, v)| {
            v.source.map(|s| s.as_str().to_string())
        }),
        col("mode", &rows, |(_, v)| v.mode.to_string()),
        col("verdict", &rows, |(_, v)| v.verdict.as_str().to_string()),
        col("reason", &rows, |(_, v)| Some(v.reason.clone())),
        col("failure_label", &rows, |(_, v)| {
            v.failure_label.map(str::to_string)
        }),
        col("judge", &rows, |(j, _)| j.score.judge.clone()),
    ])
}

/// The `scores` table.
pub fn scores_frame(judged: &[EpisodeJudgement]) -> PolarsResult<DataFrame> {
    let j = judged;
    frame(vec![
        col("episode_id", j, |j| j.episode.episode_id.clone()),
        col("task_id", j, |j| j.episode.task_id.clone()),
        col("variant", j, |j| j.episode.variant.clone()),
        col("epoch", j, |j| j.episode.epoch),
        col("agent", j, |j| j.episode.agent.clone()),
        col("perturbation", j, |j| j.perturbation.to_string()),
        col("template", j, |j| j.template.clone()),
        col("status", j, |j| j.episode.status.clone()),
        col("success", j, |j| j.score.success),
        col("action", j, |j| j.score.action),
        col("personalization", j, |j| j.score.personalization),
        col("inferable", j, |j| j.score.inferable),
        col("ask_only", j, |j| j.score.ask_only),
        col("score", j, |j| j.score.score),
        col("lambda", j, |j| j.score.lambda),
        col("steps", j, |j| j.episode.steps),
        col("ask_user_calls", j, |j| j.episode.ask_user_calls),
        col("unscored", j, |j| j.score.unscored),
        col("divergent_steps", j, |j| j.score.divergent_steps),
        col("divergence", j, |j| j.score.divergence.clone()),
        col("prompt_tokens_judge", j, |j| j.score.usage.prompt_tokens),
        col("completion_tokens_judge", j, |j| {
            j.score.usage.completion_tokens
        }),
        col("cost_judge", j, |j| j.score.cost),
        col("judge", j, |j| j.score.judge.clone()),
    ])
}

/// The `requests` table.
pub fn requests_frame(judged: &[EpisodeJudgement]) -> PolarsResult<DataFrame> {
    let rows: Vec<(&EpisodeJudgement, &Request)> = flatten(judged, |j| &j.requests);
    frame(vec![
        col("episode_id", &rows, |(j, _)| j.episode.episode_id.clone()),
        col("step", &rows, |(_, r)| r.step),
        col("request", &rows, |(_, r)| r.request.clone()),
        col("slot_id", &rows, |(_, r)| r.slot_id.clone()),
        col("slot_source", &rows, |(_, r)| {
            r.slot_source.map(|s| s.as_str().to_string())
        }),
        col("repeat", &rows, |(_, r)| r.repeat),
        col("closed_set", &rows, |(_, r)| r.closed_set),
        col("offered_options", &rows, |(_, r)| r.offered_options),
        col("matcher", &rows, |(_, r)| r.matcher.to_string()),
        col("judge", &rows, |(j, _)| j.score.judge.clone()),
    ])
}

/// The `interaction` table.
pub fn interaction_frame(judged: &[EpisodeJudgement]) -> PolarsResult<DataFrame> {
    let j = judged;
    frame(vec![
        col("episode_id", j, |j| j.episode.episode_id.clone()),
        col("task_id", j, |j| j.episode.task_id.clone()),
        col("variant", j, |j| j.episode.variant.clone()),
        col("epoch", j, |j| j.episode.epoch),
        col("requests", j, |j| j.interaction.requests),
        col("matched_requests", j, |j| j.interaction.matched_requests),
        col("ask_only_slots", j, |j| j.interaction.ask_only_slots),
        col("matched_ask_only", j, |j| j.interaction.matched_ask_only),
        col("recall", j, |j| j.interaction.recall),
        col("precision", j, |j| j.interaction.precision),
        col("closed_set_requests", j, |j| {
            j.interaction.closed_set_requests
        }),
        col("offered_options", j, |j| j.interaction.offered_options),
        col("judge", j, |j| j.score.judge.clone()),
    ])
}

/// All four tables.
pub fn judge_tables(judged: &[EpisodeJudgement]) -> PolarsResult<Vec<(&'static str, DataFrame)>> {
    Ok(vec![
        ("verdicts", verdicts_frame(judged)?),
        ("scores", scores_frame(judged)?),
        ("requests", requests_frame(judged)?),
        ("interaction", interaction_frame(judged)?),
    ])
}
