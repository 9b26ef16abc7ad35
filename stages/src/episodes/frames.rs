//! Episode rows as the `episodes`, `steps` and `diffs` tables (docs/tables.md).

use polars::prelude::*;

use super::record::{EpisodeRow, EpisodeRun, StepRow};
use crate::columns::{col, frame, list_col};

/// The `episodes` table.
pub fn episodes_frame(rows: &[EpisodeRow]) -> PolarsResult<DataFrame> {
    frame(vec![
        col("episode_id", rows, |r| r.episode_id.clone()),
        col("task_id", rows, |r| r.task_id.clone()),
        col("variant", rows, |r| r.variant.clone()),
        col("epoch", rows, |r| r.epoch),
        col("persona", rows, |r| r.persona.clone()),
        col("agent", rows, |r| r.agent.clone()),
        col("user", rows, |r| r.user.clone()),
        col("status", rows, |r| r.status.clone()),
        col("steps", rows, |r| r.steps),
        col("ask_user_calls", rows, |r| r.ask_user_calls),
        col("final_answer", rows, |r| r.final_answer.clone()),
        col("score", rows, |r| r.score),
        col("prompt_tokens_agent", rows, |r| r.agent_usage.prompt_tokens),
        col("completion_tokens_agent", rows, |r| {
            r.agent_usage.completion_tokens
        }),
        col("prompt_tokens_user", rows, |r| r.user_usage.prompt_tokens),
        col("completion_tokens_user", rows, |r| {
            r.user_usage.completion_tokens
        }),
        col("prompt_tokens_judge", rows, |_| 0u64),
        col("completion_tokens_judge", rows, |_| 0u64),
        col("cached_tokens_agent", rows, |r| {
            r.agent_usage.cached_prompt_tokens
        }),
        col("cached_tokens_user", rows, |r| {
            r.user_usage.cached_prompt_tokens
        }),
        col("cost_agent", rows, |r| r.cost_agent),
        col("cost_user", rows, |r| r.cost_user),
        col("cost_judge", rows, |_| 0f64),
        col("volunteered", rows, |r| r.volunteered),
        col("ungrounded", rows, |r| r.ungrounded),
        col("seed", rows, |r| r.seed),
        col("exposure", rows, |r| r.exposure.clone()),
        col("shown_events", rows, |r| r.shown_events),
        col("error", rows, |r| r.error.clone()),
    ])
}

/// The `steps` table.
pub fn steps_frame(rows: &[StepRow]) -> PolarsResult<DataFrame> {
    frame(vec![
        col("episode_id", rows, |r| r.episode_id.clone()),
        col("step", rows, |r| r.step),
        col("phase", rows, |r| r.phase.to_string()),
        col("actor", rows, |r| r.actor.to_string()),
        col("action_type", rows, |r| r.action_type.clone()),
        col("arguments", rows, |r| r.arguments.clone()),
        col("observation", rows, |r| r.observation.clone()),
        col("observation_status", rows, |r| {
            r.observation_status.to_string()
        }),
        col("user_reply", rows, |r| r.user_reply.clone()),
        list_col("disclosed_slots", rows, |r| &r.disclosed_slots),
        list_col("shown_events", rows, |r| &r.shown_events),
        col("raw", rows, |r| r.raw.clone()),
    ])
}

/// The `diffs` table: episode_id, diff (JSON of the final state's changes).
pub fn diffs_frame(runs: &[EpisodeRun]) -> PolarsResult<DataFrame> {
    frame(vec![
        col("episode_id", runs, |r| r.episode.episode_id.clone()),
        col("diff", runs, |r| r.diff.clone()),
    ])
}

/// All three tables for a batch of runs.
pub fn episode_tables(runs: &[EpisodeRun]) -> PolarsResult<Vec<(&'static str, DataFrame)>> {
    let episodes: Vec<EpisodeRow> = runs.iter().map(|r| r.episode.clone()).collect();
    let steps: Vec<StepRow> = runs.iter().flat_map(|r| r.steps.iter().cloned()).collect();
    Ok(vec![
        ("episodes", episodes_frame(&episodes)?),
        ("steps", steps_frame(&steps)?),
        ("diffs", diffs_frame(runs)?),
    ])
}
