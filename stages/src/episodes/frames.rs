//! Episode rows as the `episodes`, `steps` and `diffs` tables (docs/tables.md), through the
//! runners' row structs (`tables::episodes`).

use polars::prelude::*;

use super::record::{EpisodeRow, EpisodeRun, StepRow};
use crate::tables::episodes::{Diff, PlayedEpisode, PlayedStep, DIFFS, EPISODES, STEPS};

fn episode(r: &EpisodeRow) -> PlayedEpisode {
    PlayedEpisode {
        episode_id: r.episode_id.clone(),
        task_id: r.task_id.clone(),
        variant: r.variant.clone(),
        epoch: r.epoch,
        persona: r.persona.clone(),
        agent: r.agent.clone(),
        user: r.user.clone(),
        status: r.status.clone(),
        steps: r.steps,
        ask_user_calls: r.ask_user_calls,
        final_answer: r.final_answer.clone(),
        score: r.score,
        prompt_tokens_agent: r.agent_usage.prompt_tokens,
        completion_tokens_agent: r.agent_usage.completion_tokens,
        prompt_tokens_user: r.user_usage.prompt_tokens,
        completion_tokens_user: r.user_usage.completion_tokens,
        prompt_tokens_judge: 0,
        completion_tokens_judge: 0,
        cached_tokens_agent: r.agent_usage.cached_prompt_tokens,
        cached_tokens_user: r.user_usage.cached_prompt_tokens,
        cost_agent: r.cost_agent,
        cost_user: r.cost_user,
        cost_judge: 0.0,
        volunteered: r.volunteered,
        ungrounded: r.ungrounded,
        seed: r.seed,
        exposure: r.exposure.clone(),
        shown_events: r.shown_events,
        error: r.error.clone(),
    }
}

fn step(r: &StepRow) -> PlayedStep {
    PlayedStep {
        episode_id: r.episode_id.clone(),
        step: r.step,
        phase: r.phase.to_string(),
        actor: r.actor.to_string(),
        action_type: r.action_type.clone(),
        arguments: r.arguments.clone(),
        observation: r.observation.clone(),
        observation_status: r.observation_status.to_string(),
        user_reply: r.user_reply.clone(),
        disclosed_slots: r.disclosed_slots.clone(),
        shown_events: r.shown_events.clone(),
        raw: r.raw.clone(),
    }
}

/// All three tables for a batch of runs.
pub fn episode_tables(runs: &[EpisodeRun]) -> PolarsResult<Vec<(&'static str, DataFrame)>> {
    let episodes: Vec<PlayedEpisode> = runs.iter().map(|r| episode(&r.episode)).collect();
    let steps: Vec<PlayedStep> = runs.iter().flat_map(|r| r.steps.iter().map(step)).collect();
    let diffs: Vec<Diff> = runs
        .iter()
        .map(|r| Diff {
            episode_id: r.episode.episode_id.clone(),
            diff: r.diff.clone(),
        })
        .collect();
    Ok(vec![
        (EPISODES.name, PlayedEpisode::to_frame(&episodes)?),
        (STEPS.name, PlayedStep::to_frame(&steps)?),
        (DIFFS.name, Diff::to_frame(&diffs)?),
    ])
}
