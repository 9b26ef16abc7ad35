//! Judgements as the `verdicts`, `scores`, `requests` and `interaction` tables (docs/tables.md,
//! "Judging"): each judgement's scores and interaction
//! counts are those tables' row structs (`tables::judging`); verdicts and requests become theirs.

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
    let scores: Vec<Score> = judged.iter().map(|j| j.score.clone()).collect();
    let interactions: Vec<Interaction> = judged.iter().map(|j| j.interaction.clone()).collect();
    Ok(vec![
        (VERDICTS.name, Verdict::to_frame(&verdicts)?),
        (SCORES.name, Score::to_frame(&scores)?),
        (REQUESTS.name, RequestRow::to_frame(&requests)?),
        (INTERACTION.name, Interaction::to_frame(&interactions)?),
    ])
}
