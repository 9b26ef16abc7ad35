//! The rows a judge needs, indexed once: `steps` grouped by episode and `bundles` parsed by task.
//! A per-item stage sees the whole `steps` table for every episode it judges; grouping it per
//! item would cost O(rows) each time, so the `judge` kind builds the index once per instance (in
//! its `prepare`) and every item reads it.

use std::collections::HashMap;
use std::sync::Arc;

use polars::prelude::*;

use super::JudgeError;
use crate::tasks::frames::bundles_from_table;
use crate::tasks::TaskBundle;

/// One `steps` row, as judges read it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepRec {
    /// 1-based step number.
    pub step: u32,
    /// Action tag or tool name.
    pub action_type: String,
    /// JSON object of the action's fields.
    pub arguments: String,
    /// `ok`, `error` or `done` as recorded (null for imported runs).
    pub observation_status: Option<String>,
    /// The simulator's reply to an ask_user step.
    pub user_reply: Option<String>,
}

/// One `episodes` row, as judges read it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EpisodeInfo {
    /// `<task_id>#<variant>#<epoch>`.
    pub episode_id: String,
    /// The task played.
    pub task_id: String,
    /// The engine variant that ran the episode.
    pub variant: String,
    /// Repeat index.
    pub epoch: u32,
    /// Agent name.
    pub agent: String,
    /// `ok`, `max_steps`, `error`, …
    pub status: String,
    /// Steps taken.
    pub steps: u32,
    /// `ask_user` exchanges.
    pub ask_user_calls: u32,
    /// The last `answer` text.
    pub final_answer: Option<String>,
}

/// Steps by episode and bundles by task.
#[derive(Debug, Default)]
pub struct JudgeIndex {
    /// Each episode's steps, in step order.
    pub steps: HashMap<String, Vec<StepRec>>,
    /// Each task's bundle.
    pub bundles: HashMap<String, Arc<TaskBundle>>,
}

impl JudgeIndex {
    /// Indexes a `steps` and a `bundles` table.
    pub fn build(steps: &DataFrame, bundles: &DataFrame) -> Result<Self, JudgeError> {
        let bundles = bundles_from_table(bundles)
            .map_err(|e| JudgeError::Input(format!("input `bundles`: {e}")))?
            .into_iter()
            .map(|b| (b.task.task_id.clone(), Arc::new(b)))
            .collect();
        Ok(Self {
            steps: group_steps(steps)?,
            bundles,
        })
    }

    /// The steps of one episode (none when it has no rows).
    pub fn steps_of(&self, episode_id: &str) -> &[StepRec] {
        self.steps.get(episode_id).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The bundle of a task, or an error naming the episode and the fix.
    pub fn bundle(&self, ep: &EpisodeInfo) -> Result<&Arc<TaskBundle>, JudgeError> {
        self.bundles.get(&ep.task_id).ok_or_else(|| {
            JudgeError::Input(format!(
                "episode `{}`: task `{}` is not in the `bundles` input; judge episodes against the task set they were played on",
                ep.episode_id, ep.task_id
            ))
        })
    }
}

fn group_steps(df: &DataFrame) -> Result<HashMap<String, Vec<StepRec>>, JudgeError> {
    let ids = strings(df, "steps", "episode_id")?;
    let step = u32s(df, "steps", "step")?;
    let action = strings(df, "steps", "action_type")?;
    let args = strings(df, "steps", "arguments")?;
    let status = optional_strings(df, "observation_status")?;
    let reply = optional_strings(df, "user_reply")?;
    let mut out: HashMap<String, Vec<StepRec>> = HashMap::new();
    for i in 0..df.height() {
        let rec = StepRec {
            step: step[i].unwrap_or(i as u32 + 1),
            action_type: action[i].clone().unwrap_or_default(),
            arguments: args[i].clone().unwrap_or_else(|| "{}".into()),
            observation_status: status[i].clone(),
            user_reply: reply[i].clone(),
        };
        out.entry(ids[i].clone().unwrap_or_default())
            .or_default()
            .push(rec);
    }
    for steps in out.values_mut() {
        steps.sort_by_key(|s| s.step);
    }
    Ok(out)
}

/// Reads the `episodes` rows of one item (or a whole table).
pub fn episodes_from_table(df: &DataFrame) -> Result<Vec<EpisodeInfo>, JudgeError> {
    let t = "episodes";
    let (id, task, variant) = (
        strings(df, t, "episode_id")?,
        strings(df, t, "task_id")?,
        optional_strings(df, "variant")?,
    );
    let (epoch, agent, status) = (
        u32s(df, t, "epoch")?,
        optional_strings(df, "agent")?,
        optional_strings(df, "status")?,
    );
    let (steps, asks, answer) = (
        u32s(df, t, "steps")?,
        u32s(df, t, "ask_user_calls")?,
        optional_strings(df, "final_answer")?,
    );
    Ok((0..df.height())
        .map(|i| EpisodeInfo {
            episode_id: id[i].clone().unwrap_or_default(),
            task_id: task[i].clone().unwrap_or_default(),
            variant: variant[i].clone().unwrap_or_default(),
            epoch: epoch[i].unwrap_or(0),
            agent: agent[i].clone().unwrap_or_default(),
            status: status[i].clone().unwrap_or_default(),
            steps: steps[i].unwrap_or(0),
            ask_user_calls: asks[i].unwrap_or(0),
            final_answer: answer[i].clone(),
        })
        .collect())
}

fn column<'a>(df: &'a DataFrame, table: &str, name: &str) -> Result<&'a Column, JudgeError> {
    df.column(name).map_err(|_| {
        JudgeError::Input(format!(
            "input `{table}` has no column `{name}`; the judge reads the `{table}` table of run_episodes (docs/tables.md)"
        ))
    })
}

fn strings(df: &DataFrame, table: &str, name: &str) -> Result<Vec<Option<String>>, JudgeError> {
    let c = column(df, table, name)?.cast(&DataType::String)?;
    Ok(c.str()?.iter().map(|s| s.map(str::to_string)).collect())
}

fn optional_strings(df: &DataFrame, name: &str) -> Result<Vec<Option<String>>, JudgeError> {
    match df.column(name) {
        Ok(c) => {
            let c = c.cast(&DataType::String)?;
            Ok(c.str()?.iter().map(|s| s.map(str::to_string)).collect())
        }
        Err(_) => Ok(vec![None; df.height()]),
    }
}

fn u32s(df: &DataFrame, table: &str, name: &str) -> Result<Vec<Option<u32>>, JudgeError> {
    let c = column(df, table, name)?.cast(&DataType::UInt32)?;
    Ok(c.u32()?.iter().collect())
}
