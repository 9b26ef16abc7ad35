//! The rows a judge needs, indexed once: `steps` grouped by episode and `bundles` parsed by task.
//! A per-item stage sees the whole `steps` table for every episode it judges; grouping it per
//! item would cost O(rows) each time, so the `judge` kind builds the index once per instance (in
//! its `prepare`) and every item reads it.

use std::collections::HashMap;
use std::sync::Arc;

use polars::prelude::*;

use super::verdict::JudgeError;
use crate::tasks::frames::bundles_from_table;
use crate::tasks::TaskBundle;

crate::tables::row! {
    /// One `steps` row, as judges read it.
    #[derive(Default)]
    pub struct StepRec of crate::tables::episodes::STEPS {
        /// The owning episode.
        pub episode_id: String,
        /// 1-based step number.
        pub step: u32,
        /// Action tag or tool name.
        pub action_type: String,
        /// JSON object of the action's fields.
        pub arguments: String,
        /// `ok`, `error` or `done` as recorded (absent for imported runs).
        pub observation_status: Option<String>,
        /// The simulator's reply to an ask_user step.
        pub user_reply: Option<String>,
    }
}

crate::tables::row! {
    /// One `episodes` row, as judges read it.
    #[derive(Default)]
    pub struct EpisodeInfo of crate::tables::episodes::EPISODES {
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
    let mut out: HashMap<String, Vec<StepRec>> = HashMap::new();
    for rec in StepRec::from_frame(df).map_err(input)? {
        out.entry(rec.episode_id.clone()).or_default().push(rec);
    }
    for steps in out.values_mut() {
        steps.sort_by_key(|s| s.step);
    }
    Ok(out)
}

/// Reads the `episodes` rows of one item (or a whole table); a missing column, or a null in
/// one declared non-null, is an error naming it.
pub fn episodes_from_table(df: &DataFrame) -> Result<Vec<EpisodeInfo>, JudgeError> {
    EpisodeInfo::from_frame(df).map_err(input)
}

/// An input table that breaks its contract, with where the contract is written.
fn input(e: crate::tables::row::RowError) -> JudgeError {
    JudgeError::Input(format!(
        "input {e}; the judge reads the `{}` table of run_episodes (docs/tables.md)",
        e.table
    ))
}
