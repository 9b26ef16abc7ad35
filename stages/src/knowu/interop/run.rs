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
use crate::knowu::columns;
use crate::knowu::error::KnowuError;

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

/// The `episodes` table of a run labelled `label` (variant and agent are the label).
pub fn episodes_frame(label: &str, run: &[RunEpisode]) -> PolarsResult<DataFrame> {
    let n = run.len();
    let strs = |f: &dyn Fn(&RunEpisode) -> Option<String>| -> Vec<Option<String>> {
        run.iter().map(f).collect()
    };
    let counts = |f: &dyn Fn(&RunEpisode) -> u64| -> Vec<u64> { run.iter().map(f).collect() };
    let status: Vec<&str> = run
        .iter()
        .map(|e| match (&e.error, e.result.score) {
            (Some(_), _) => ERROR,
            (None, Some(_)) => OK,
            (None, None) => NO_RESULT,
        })
        .collect();
    let steps: Vec<u32> = run.iter().map(|e| e.traj.steps.len() as u32).collect();
    let asks: Vec<u32> = run
        .iter()
        .map(|e| {
            e.traj
                .steps
                .iter()
                .filter(|s| s.action_type == "ask_user")
                .count() as u32
        })
        .collect();
    df!(
        "episode_id" => run.iter().map(|e| episode_id(&e.task_id, label)).collect::<Vec<_>>(),
        "task_id" => run.iter().map(|e| e.task_id.clone()).collect::<Vec<_>>(),
        "variant" => vec![label; n],
        "epoch" => vec![0u32; n],
        "persona" => strs(&|e| e.persona().map(str::to_string)),
        "agent" => vec![label; n],
        "status" => status,
        "steps" => steps,
        "ask_user_calls" => asks,
        "final_answer" => strs(&|e| e.final_answer()),
        "score" => run.iter().map(|e| e.result.score).collect::<Vec<_>>(),
        "prompt_tokens_agent" => counts(&|e| e.traj.tokens.prompt),
        "completion_tokens_agent" => counts(&|e| e.traj.tokens.completion),
        "prompt_tokens_user" => vec![0u64; n],
        "completion_tokens_user" => vec![0u64; n],
        "prompt_tokens_judge" => vec![0u64; n],
        "completion_tokens_judge" => vec![0u64; n],
        "cost_agent" => vec![0.0f64; n],
        "cost_user" => vec![0.0f64; n],
        "cost_judge" => vec![0.0f64; n],
        "error" => run.iter().map(|e| e.error.clone()).collect::<Vec<_>>(),
        "reason" => strs(&|e| e.result.reason.clone()),
        "goal" => strs(&|e| e.goal()),
        "cached_tokens_agent" => counts(&|e| e.traj.tokens.cached),
        "cached_tokens_user" => vec![0u64; n],
    )
}

/// The `steps` table of a run labelled `label`: one row per trajectory entry.
pub fn steps_frame(label: &str, run: &[RunEpisode]) -> PolarsResult<DataFrame> {
    let mut rows = StepRows::default();
    for e in run {
        rows.push_episode(&episode_id(&e.task_id, label), &e.traj.steps);
    }
    rows.finish()
}

/// Column buffers of the `steps` table.
#[derive(Default)]
struct StepRows {
    episode_id: Vec<String>,
    step: Vec<u32>,
    action_type: Vec<String>,
    arguments: Vec<String>,
    observation: Vec<Option<String>>,
    user_reply: Vec<Option<String>>,
    raw: Vec<Option<String>>,
    ask_user_response: Vec<Option<String>>,
}

impl StepRows {
    fn push_episode(&mut self, id: &str, steps: &[TrajStep]) {
        for (i, s) in steps.iter().enumerate() {
            // The reply to an ask_user arrives with the next entry.
            let reply = (s.action_type == "ask_user")
                .then(|| steps.get(i + 1)?.ask_user_response.clone())
                .flatten();
            self.episode_id.push(id.to_string());
            self.step.push(i as u32 + 1);
            self.action_type.push(s.action_type.clone());
            self.arguments.push(s.arguments.clone());
            self.observation.push(s.tool_call.clone());
            self.user_reply.push(reply);
            self.raw.push(s.prediction.clone());
            self.ask_user_response.push(s.ask_user_response.clone());
        }
    }

    fn finish(self) -> PolarsResult<DataFrame> {
        let n = self.step.len();
        let mut df = df!(
            "episode_id" => self.episode_id,
            "step" => self.step,
            "actor" => vec!["agent"; n],
            "action_type" => self.action_type,
            "arguments" => self.arguments,
            "observation" => self.observation,
            "user_reply" => self.user_reply,
            "raw" => self.raw,
            "ask_user_response" => self.ask_user_response,
        )?;
        df.insert_column(7, columns::empty_string_lists("disclosed_slots", n))?;
        df.insert_column(8, columns::empty_string_lists("shown_events", n))?;
        Ok(df)
    }
}

/// Rebuilds run episodes from `episodes` and `steps` tables (the exporter's input), in KnowU's
/// action vocabulary ([`super::vocab`]). Steps are ordered by `step`; without an
/// `ask_user_response` column, KnowU's alignment is derived from `user_reply` of the previous
/// `ask_user` step.
pub fn from_frames(episodes: &DataFrame, steps: &DataFrame) -> Result<Vec<RunEpisode>, KnowuError> {
    let mut by_episode = group_steps(steps)?;
    let ids = columns::strings(episodes, "episodes", "episode_id")?;
    let tasks = columns::strings(episodes, "episodes", "task_id")?;
    let scores = columns::f64s(episodes, "episodes", "score")?;
    let reasons = columns::optional_strings(episodes, "episodes", "reason")?;
    let statuses = columns::optional_strings(episodes, "episodes", "status")?;
    let errors = columns::optional_strings(episodes, "episodes", "error")?;
    let goals = columns::optional_strings(episodes, "episodes", "goal")?;
    let prompt = columns::u64s(episodes, "episodes", "prompt_tokens_agent")?;
    let completion = columns::u64s(episodes, "episodes", "completion_tokens_agent")?;
    let cached = if episodes.column("cached_tokens_agent").is_ok() {
        columns::u64s(episodes, "episodes", "cached_tokens_agent")?
    } else {
        vec![None; episodes.height()]
    };
    let mut run = Vec::with_capacity(episodes.height());
    for row in 0..episodes.height() {
        let id = required(&ids[row], "episode_id", row)?;
        let task_id = required(&tasks[row], "task_id", row)?;
        let mut steps = by_episode.remove(id.as_str()).unwrap_or_default();
        steps
            .iter_mut()
            .for_each(|s| s.task_goal = goals[row].clone());
        run.push(RunEpisode {
            task_id,
            traj: Trajectory {
                steps,
                tokens: TokenUsage {
                    prompt: prompt[row].unwrap_or(0),
                    completion: completion[row].unwrap_or(0),
                    cached: cached[row].unwrap_or(0),
                },
            },
            result: EpisodeResult {
                score: scores[row],
                reason: reasons[row].clone().filter(|r| !r.trim().is_empty()),
            },
            error: match statuses[row].as_deref() {
                Some(ERROR) => Some(errors[row].clone().unwrap_or_else(|| ERROR.to_string())),
                _ => None,
            },
        });
    }
    Ok(run)
}

fn required(value: &Option<String>, column: &str, row: usize) -> Result<String, KnowuError> {
    value.clone().ok_or_else(|| {
        KnowuError::table(
            "episodes",
            format!("`{column}` is null in row {row}; every episode needs one"),
        )
    })
}

/// Steps per episode id, ordered by `step`, with KnowU's reply alignment.
fn group_steps(steps: &DataFrame) -> Result<HashMap<String, Vec<TrajStep>>, KnowuError> {
    let cols = StepColumns::read(steps)?;
    let mut rows: HashMap<String, Vec<(u64, usize)>> = HashMap::new();
    for (row, id) in cols.ids.iter().enumerate() {
        let id = id.clone().ok_or_else(|| {
            KnowuError::table("steps", format!("`episode_id` is null in row {row}"))
        })?;
        let number = cols.numbers[row].unwrap_or(0);
        rows.entry(id).or_default().push((number, row));
    }
    Ok(rows
        .into_iter()
        .map(|(id, mut order)| {
            order.sort_unstable();
            let traj = (0..order.len())
                .map(|k| cols.traj_step(order[k].1, k.checked_sub(1).map(|p| order[p].1)))
                .collect();
            (id, traj)
        })
        .collect())
}

/// The `steps` columns the exporter reads.
struct StepColumns {
    ids: Vec<Option<String>>,
    numbers: Vec<Option<u64>>,
    types: Vec<Option<String>>,
    arguments: Vec<Option<String>>,
    observations: Vec<Option<String>>,
    raws: Vec<Option<String>>,
    replies: Vec<Option<String>>,
    /// `ask_user_response`, when the table carries KnowU's alignment.
    responses: Option<Vec<Option<String>>>,
}

impl StepColumns {
    fn read(steps: &DataFrame) -> Result<Self, KnowuError> {
        let get = |name: &str| columns::strings(steps, "steps", name);
        let responses = match steps.column("ask_user_response") {
            Ok(_) => Some(get("ask_user_response")?),
            Err(_) => None,
        };
        Ok(Self {
            ids: get("episode_id")?,
            numbers: columns::u64s(steps, "steps", "step")?,
            types: get("action_type")?,
            arguments: get("arguments")?,
            observations: get("observation")?,
            raws: get("raw")?,
            replies: get("user_reply")?,
            responses,
        })
    }

    /// The trajectory entry of `row`; `previous` is the row of the episode's step before it,
    /// whose `user_reply` becomes this entry's `ask_user_response` when it asked.
    fn traj_step(&self, row: usize, previous: Option<usize>) -> TrajStep {
        let ask_user_response = match &self.responses {
            Some(responses) => responses[row].clone(),
            None => previous
                .filter(|&p| self.types[p].as_deref() == Some("ask_user"))
                .and_then(|p| self.replies[p].clone()),
        };
        let fields = self.arguments[row]
            .as_deref()
            .and_then(|a| match serde_json::from_str::<serde_json::Value>(a) {
                Ok(serde_json::Value::Object(m)) => Some(m),
                _ => None,
            })
            .unwrap_or_default();
        let prefflow_type = self.types[row].clone().unwrap_or_default();
        let (action_type, fields) = vocab::to_knowu(&prefflow_type, &fields);
        TrajStep {
            action_type,
            arguments: serde_json::Value::Object(fields).to_string(),
            tool_call: self.observations[row].clone(),
            prediction: self.raws[row].clone(),
            ask_user_response,
            task_goal: None,
        }
    }
}
