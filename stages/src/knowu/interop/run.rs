//! A KnowU-Bench run in memory (one episode per task directory) and its conversion to and from
//! prefflow's `episodes` and `steps` tables (docs/tables.md).
//!
//! Besides the contract columns, imported tables carry what a KnowU run has and the contract
//! does not: `episodes.reason` (the judge's reason), `episodes.goal` (`task_goal`),
//! `episodes.cached_tokens_agent`, and `steps.ask_user_response` (KnowU's alignment: the reply to
//! the *previous* step's `ask_user`). The reply is also put into `user_reply` of the asking step.

use std::collections::HashMap;

use polars::prelude::*;

use super::result_file::EpisodeResult;
use super::traj::{TokenUsage, TrajStep, Trajectory};
use super::vocab;
use crate::knowu::error::KnowuError;
use crate::tables::knowu::{ExportedEpisode, ExportedStep, ImportedEpisode, ImportedStep};

/// Status of an episode whose score is unknown.
pub const NO_RESULT: &str = "no_result";
/// Status of an episode with a score.
pub const OK: &str = "ok";
/// Status of an episode whose files could not be read (or that failed in prefflow): it has no
/// result, like a KnowU task that raised before `log_score`.
pub const ERROR: &str = "error";

/// Whether an episode counts as having a result (KnowU: a `result.txt` with a score line): a
/// score, and a status that is neither `no_result` nor `error`. The metrics and the exporter
/// share this rule.
pub fn has_result(status: Option<&str>, score: Option<f64>) -> bool {
    score.is_some() && !matches!(status, Some(NO_RESULT | ERROR))
}

/// One episode of a KnowU run: a task directory's trajectory and result.
#[derive(Debug, Clone, PartialEq)]
pub struct RunEpisode {
    /// The task directory's name, e.g. `WeekendSleeperTask@student`.
    pub task_id: String,
    /// `traj.json` (empty when the file is absent).
    pub traj: Trajectory,
    /// `result.txt` (no score when absent).
    pub result: EpisodeResult,
    /// Why the episode has no usable record (a file that could not be read, or a prefflow
    /// episode that failed); such an episode has status `error`.
    pub error: Option<String>,
}

impl RunEpisode {
    /// The persona: the part of the task name after `@`.
    pub fn persona(&self) -> Option<&str> {
        self.task_id.split_once('@').map(|(_, p)| p)
    }

    /// The text of the last `answer` action.
    fn final_answer(&self) -> Option<String> {
        self.traj
            .steps
            .iter()
            .rev()
            .find(|s| s.action_type == "answer")
            .and_then(|s| serde_json::from_str::<serde_json::Value>(&s.arguments).ok())
            .and_then(|a| a.get("text")?.as_str().map(str::to_string))
    }

    fn goal(&self) -> Option<String> {
        self.traj.steps.iter().find_map(|s| s.task_goal.clone())
    }
}

/// `<task_id>#<label>#0`: imported runs have one epoch.
pub fn episode_id(task_id: &str, label: &str) -> String {
    format!("{task_id}#{label}#0")
}

/// The `episodes` row of `e`, of a run labelled `label` (variant and agent are the label).
fn episode_row(label: &str, e: &RunEpisode) -> ImportedEpisode {
    let status = match (&e.error, e.result.score) {
        (Some(_), _) => ERROR,
        (None, Some(_)) => OK,
        (None, None) => NO_RESULT,
    };
    let asks = e.traj.steps.iter().filter(|s| s.action_type == "ask_user");
    ImportedEpisode {
        episode_id: episode_id(&e.task_id, label),
        task_id: e.task_id.clone(),
        variant: label.to_string(),
        epoch: 0,
        persona: e.persona().map(str::to_string),
        agent: label.to_string(),
        status: status.to_string(),
        steps: e.traj.steps.len() as u32,
        ask_user_calls: asks.count() as u32,
        final_answer: e.final_answer(),
        score: e.result.score,
        prompt_tokens_agent: e.traj.tokens.prompt,
        completion_tokens_agent: e.traj.tokens.completion,
        prompt_tokens_user: 0,
        completion_tokens_user: 0,
        prompt_tokens_judge: 0,
        completion_tokens_judge: 0,
        cost_agent: 0.0,
        cost_user: 0.0,
        cost_judge: 0.0,
        error: e.error.clone(),
        reason: e.result.reason.clone(),
        goal: e.goal(),
        cached_tokens_agent: e.traj.tokens.cached,
        cached_tokens_user: 0,
    }
}

/// The `episodes` table of a run labelled `label` (variant and agent are the label).
pub fn episodes_frame(label: &str, run: &[RunEpisode]) -> PolarsResult<DataFrame> {
    let rows: Vec<ImportedEpisode> = run.iter().map(|e| episode_row(label, e)).collect();
    ImportedEpisode::to_frame(&rows)
}

/// The `steps` table of a run labelled `label`: one row per trajectory entry.
pub fn steps_frame(label: &str, run: &[RunEpisode]) -> PolarsResult<DataFrame> {
    let mut rows = Vec::new();
    for e in run {
        let id = episode_id(&e.task_id, label);
        rows.extend(step_rows(&id, &e.traj.steps));
    }
    ImportedStep::to_frame(&rows)
}

/// The `steps` rows of one episode's trajectory.
fn step_rows<'a>(id: &'a str, steps: &'a [TrajStep]) -> impl Iterator<Item = ImportedStep> + 'a {
    steps.iter().enumerate().map(move |(i, s)| {
        // The reply to an ask_user arrives with the next entry.
        let reply = (s.action_type == "ask_user")
            .then(|| steps.get(i + 1)?.ask_user_response.clone())
            .flatten();
        ImportedStep {
            episode_id: id.to_string(),
            step: i as u32 + 1,
            actor: "agent".to_string(),
            action_type: s.action_type.clone(),
            arguments: s.arguments.clone(),
            observation: s.tool_call.clone(),
            user_reply: reply,
            disclosed_slots: Vec::new(),
            shown_events: Vec::new(),
            raw: s.prediction.clone(),
            ask_user_response: s.ask_user_response.clone(),
        }
    })
}

/// Rebuilds run episodes from `episodes` and `steps` tables (the exporter's input), in KnowU's
/// action vocabulary ([`super::vocab`]). Steps are ordered by `step`; without an
/// `ask_user_response` column, KnowU's alignment is derived from `user_reply` of the previous
/// `ask_user` step.
pub fn from_frames(episodes: &DataFrame, steps: &DataFrame) -> Result<Vec<RunEpisode>, KnowuError> {
    let mut by_episode = group_steps(steps)?;
    let rows = ExportedEpisode::from_frame(episodes).map_err(KnowuError::rows)?;
    let mut run = Vec::with_capacity(rows.len());
    for row in rows {
        let mut steps = by_episode
            .remove(row.episode_id.as_str())
            .unwrap_or_default();
        steps
            .iter_mut()
            .for_each(|s| s.task_goal = row.goal.clone());
        run.push(RunEpisode {
            task_id: row.task_id,
            traj: Trajectory {
                steps,
                tokens: TokenUsage {
                    prompt: row.prompt_tokens_agent,
                    completion: row.completion_tokens_agent,
                    cached: row.cached_tokens_agent,
                },
            },
            result: EpisodeResult {
                score: row.score,
                reason: row.reason.filter(|r| !r.trim().is_empty()),
            },
            error: (row.status == ERROR).then(|| row.error.unwrap_or_else(|| ERROR.to_string())),
        });
    }
    Ok(run)
}

/// Steps per episode id, ordered by `step`, with KnowU's reply alignment.
fn group_steps(steps: &DataFrame) -> Result<HashMap<String, Vec<TrajStep>>, KnowuError> {
    let rows = ExportedStep::from_frame(steps).map_err(KnowuError::rows)?;
    // Without the column, KnowU's alignment is derived from the asking step's `user_reply`.
    let aligned = steps.column(ExportedStep::ask_user_response).is_ok();
    let mut order: HashMap<&str, Vec<(u32, usize)>> = HashMap::new();
    for (i, row) in rows.iter().enumerate() {
        order
            .entry(&row.episode_id)
            .or_default()
            .push((row.step, i));
    }
    Ok(order
        .into_iter()
        .map(|(id, mut order)| {
            order.sort_unstable();
            let traj = (0..order.len())
                .map(|k| {
                    let previous = k.checked_sub(1).map(|p| &rows[order[p].1]);
                    traj_step(&rows[order[k].1], previous, aligned)
                })
                .collect();
            (id.to_string(), traj)
        })
        .collect())
}

/// The trajectory entry of `row`; `previous` is the episode's step before it, whose
/// `user_reply` becomes this entry's `ask_user_response` when it asked (unless the table
/// carries KnowU's alignment, `aligned`).
fn traj_step(row: &ExportedStep, previous: Option<&ExportedStep>, aligned: bool) -> TrajStep {
    let ask_user_response = if aligned {
        row.ask_user_response.clone()
    } else {
        previous
            .filter(|p| p.action_type == "ask_user")
            .and_then(|p| p.user_reply.clone())
    };
    let fields = match serde_json::from_str::<serde_json::Value>(&row.arguments) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    let (action_type, fields) = vocab::to_knowu(&row.action_type, &fields);
    TrajStep {
        action_type,
        arguments: serde_json::Value::Object(fields).to_string(),
        tool_call: row.observation.clone(),
        prediction: row.raw.clone(),
        ask_user_response,
        task_goal: None,
    }
}
