//! Judgements as the `verdicts`, `scores`, `requests` and `interaction` tables (docs/tables.md,
//! "Judging"): each judgement becomes the tables' row structs (`tables::judging`).

use polars::prelude::*;

use super::episode::{EpisodeJudgement, VerdictRow};
use super::interaction::Request;
use crate::tables::judging::{
    Interaction, RequestRow, Score, Verdict, INTERACTION, REQUESTS, SCORES, VERDICTS,
};

fn verdict(j: &EpisodeJudgement, v: &VerdictRow) -> Verdict {
    let e = &j.episode;
    Verdict {
        episode_id: e.episode_id.clone(),
        task_id: e.task_id.clone(),
        variant: e.variant.clone(),
        epoch: e.epoch,
        criterion_id: v.criterion_id.clone(),
        kind: v.kind.as_str().to_string(),
        slot_id: v.slot_id.clone(),
        source: v.source.map(|s| s.as_str().to_string()),
        mode: v.mode.to_string(),
        verdict: v.verdict.as_str().to_string(),
        reason: Some(v.reason.clone()),
        failure_label: v.failure_label.map(str::to_string),
        judge: j.score.judge.clone(),
    }
}

fn score(j: &EpisodeJudgement) -> Score {
    let (e, s) = (&j.episode, &j.score);
    Score {
        episode_id: e.episode_id.clone(),
        task_id: e.task_id.clone(),
        variant: e.variant.clone(),
        epoch: e.epoch,
        agent: e.agent.clone(),
        perturbation: j.perturbation.to_string(),
        template: j.template.clone(),
        status: e.status.clone(),
        success: s.success,
        action: s.action,
        personalization: s.personalization,
        inferable: s.inferable,
        ask_only: s.ask_only,
        score: s.score,
        lambda: s.lambda,
        steps: e.steps,
        ask_user_calls: e.ask_user_calls,
        unscored: s.unscored,
        divergent_steps: s.divergent_steps,
        divergence: s.divergence.clone(),
        prompt_tokens_judge: s.usage.prompt_tokens,
        completion_tokens_judge: s.usage.completion_tokens,
        cost_judge: s.cost,
        judge: s.judge.clone(),
    }
}

fn request(j: &EpisodeJudgement, r: &Request) -> RequestRow {
    RequestRow {
        episode_id: j.episode.episode_id.clone(),
        step: r.step,
        request: r.request.clone(),
        slot_id: r.slot_id.clone(),
        slot_source: r.slot_source.map(|s| s.as_str().to_string()),
        repeat: r.repeat,
        closed_set: r.closed_set,
        offered_options: r.offered_options,
        matcher: r.matcher.to_string(),
        judge: j.score.judge.clone(),
    }
}

fn interaction(j: &EpisodeJudgement) -> Interaction {
    let (e, i) = (&j.episode, &j.interaction);
    Interaction {
        episode_id: e.episode_id.clone(),
        task_id: e.task_id.clone(),
        variant: e.variant.clone(),
        epoch: e.epoch,
        requests: i.requests,
        matched_requests: i.matched_requests,
        ask_only_slots: i.ask_only_slots,
        matched_ask_only: i.matched_ask_only,
        recall: i.recall,
        precision: i.precision,
        closed_set_requests: i.closed_set_requests,
        offered_options: i.offered_options,
        judge: j.score.judge.clone(),
    }
}

/// All four tables.
pub fn judge_tables(judged: &[EpisodeJudgement]) -> PolarsResult<Vec<(&'static str, DataFrame)>> {
    let verdicts: Vec<Verdict> = judged
        .iter()
        .flat_map(|j| j.verdicts.iter().map(move |v| verdict(j, v)))
        .collect();
    let requests: Vec<RequestRow> = judged
        .iter()
        .flat_map(|j| j.requests.iter().map(move |r| request(j, r)))
        .collect();
    let scores: Vec<Score> = judged.iter().map(score).collect();
    let interactions: Vec<Interaction> = judged.iter().map(interaction).collect();
    Ok(vec![
        (VERDICTS.name, Verdict::to_frame(&verdicts)?),
        (SCORES.name, Score::to_frame(&scores)?),
        (REQUESTS.name, RequestRow::to_frame(&requests)?),
        (INTERACTION.name, Interaction::to_frame(&interactions)?),
    ])
}
