//! The per-task drill-down of the report: each task → each episode (variant, epoch) → its
//! trajectory (ask_user exchanges highlighted) and its criterion verdicts.

use std::collections::{BTreeMap, HashMap};

use polars::prelude::*;
use serde::Serialize;

use super::text_column;

/// One step of a trajectory.
#[derive(Debug, Clone, Serialize)]
pub struct StepView {
    /// 1-based step.
    pub step: String,
    /// The action type.
    pub action_type: String,
    /// The action's JSON arguments.
    pub arguments: String,
    /// What the environment returned.
    pub observation: String,
    /// The simulated user's reply to an ask_user.
    pub user_reply: String,
    /// True for ask_user steps (shown as an exchange).
    pub ask: bool,
}

/// One criterion verdict.
#[derive(Debug, Clone, Serialize)]
pub struct VerdictView {
    /// Criterion id.
    pub criterion_id: String,
    /// `action` | `personalization`.
    pub kind: String,
    /// `rule` | `llm`.
    pub mode: String,
    /// `pass` | `fail` | `unscored`.
    pub verdict: String,
    /// The judge's reason.
    pub reason: String,
    /// Failure label of a failed criterion.
    pub failure_label: String,
}

/// One episode of a task.
#[derive(Debug, Clone, Serialize)]
pub struct EpisodeView {
    /// Episode id.
    pub episode_id: String,
    /// Variant.
    pub variant: String,
    /// Epoch.
    pub epoch: String,
    /// Runner status.
    pub status: String,
    /// `pass`, `fail` or `n/a` (no scores).
    pub success: String,
    /// The trajectory.
    pub steps: Vec<StepView>,
    /// The verdicts.
    pub verdicts: Vec<VerdictView>,
}

/// One task with all its episodes.
#[derive(Debug, Clone, Serialize)]
pub struct TaskView {
    /// Task id.
    pub task_id: String,
    /// The instruction, when the tasks table is given.
    pub instruction: String,
    /// Perturbation subset, when known.
    pub perturbation: String,
    /// Episodes sorted by variant and epoch.
    pub episodes: Vec<EpisodeView>,
}

/// The drill-down's inputs; all but `episodes` optional.
pub struct DrillInputs<'a> {
    /// `episodes` (which episodes exist).
    pub episodes: &'a DataFrame,
    /// `steps`.
    pub steps: Option<&'a DataFrame>,
    /// `verdicts`.
    pub verdicts: Option<&'a DataFrame>,
    /// `scores` (success per episode).
    pub scores: Option<&'a DataFrame>,
    /// `tasks` (instruction, perturbation).
    pub tasks: Option<&'a DataFrame>,
}

/// Rows of `df` for the episodes in `keep`, as text columns `cols`, grouped by `episode_id`.
fn by_episode(
    df: Option<&DataFrame>,
    keep: &DataFrame,
    cols: &[&str],
) -> PolarsResult<HashMap<String, Vec<Vec<String>>>> {
    let Some(df) = df else {
        return Ok(HashMap::new());
    };
    let df = df
        .clone()
        .lazy()
        .join(
            keep.clone().lazy(),
            [col("episode_id")],
            [col("episode_id")],
            JoinArgs::new(JoinType::Inner),
        )
        .collect()?;
    let ids = text_column(&df, "episode_id")?;
    let columns: Vec<Vec<Option<String>>> = cols
        .iter()
        .map(|c| text_column(&df, c))
        .collect::<PolarsResult<_>>()?;
    let mut out: HashMap<String, Vec<Vec<String>>> = HashMap::new();
    for (i, id) in ids.into_iter().enumerate() {
        let row = columns
            .iter()
            .map(|c| c[i].clone().unwrap_or_default())
            .collect();
        out.entry(id.unwrap_or_default()).or_default().push(row);
    }
    Ok(out)
}

/// The first `max_tasks` tasks (by id) with their episodes.
pub fn drilldown(inputs: &DrillInputs<'_>, max_tasks: usize) -> PolarsResult<Vec<TaskView>> {
    let ep = inputs.episodes;
    let task_col = text_column(ep, "task_id")?;
    let mut task_ids: Vec<String> = task_col.iter().flatten().cloned().collect();
    task_ids.sort();
    task_ids.dedup();
    task_ids.truncate(max_tasks);
    let chosen = df!("task_id" => &task_ids)?;
    let episodes = ep
        .clone()
        .lazy()
        .join(
            chosen.lazy(),
            [col("task_id")],
            [col("task_id")],
            JoinArgs::new(JoinType::Inner),
        )
        .sort(
            ["task_id", "variant", "epoch"],
            SortMultipleOptions::default(),
        )
        .collect()?;
    let keep = episodes.select(["episode_id"])?;
    let mut steps = by_episode(
        inputs.steps,
        &keep,
        &[
            "step",
            "action_type",
            "arguments",
            "observation",
            "user_reply",
        ],
    )?;
    let mut verdicts = by_episode(
        inputs.verdicts,
        &keep,
        &[
            "criterion_id",
            "kind",
            "mode",
            "verdict",
            "reason",
            "failure_label",
        ],
    )?;
    let success = by_episode(inputs.scores, &keep, &["success"])?;
    let task_info = task_info(inputs.tasks)?;
    let cols =
        ["episode_id", "task_id", "variant", "epoch", "status"].map(|c| text_column(&episodes, c));
    let [id, task, variant, epoch, status] = cols;
    let (id, task, variant, epoch, status) = (id?, task?, variant?, epoch?, status?);
    let mut out: BTreeMap<String, TaskView> = BTreeMap::new();
    for i in 0..episodes.height() {
        let (eid, tid) = (
            id[i].clone().unwrap_or_default(),
            task[i].clone().unwrap_or_default(),
        );
        let (instruction, perturbation) = task_info.get(&tid).cloned().unwrap_or_default();
        let view = out.entry(tid.clone()).or_insert_with(|| TaskView {
            task_id: tid.clone(),
            instruction,
            perturbation,
            episodes: Vec::new(),
        });
        let mut step_rows = steps.remove(&eid).unwrap_or_default();
        step_rows.sort_by_key(|r| r[0].parse::<u64>().unwrap_or(0));
        view.episodes.push(EpisodeView {
            episode_id: eid.clone(),
            variant: variant[i].clone().unwrap_or_default(),
            epoch: epoch[i].clone().unwrap_or_default(),
            status: status[i].clone().unwrap_or_default(),
            success: match success
                .get(&eid)
                .and_then(|r| r.first())
                .map(|r| r[0].as_str())
            {
                Some("true") => "pass".into(),
                Some("false") => "fail".into(),
                _ => "n/a".into(),
            },
            steps: step_rows.into_iter().map(step_view).collect(),
            verdicts: verdicts
                .remove(&eid)
                .unwrap_or_default()
                .into_iter()
                .map(verdict_view)
                .collect(),
        });
    }
    Ok(out.into_values().collect())
}

fn step_view(r: Vec<String>) -> StepView {
    let [step, action_type, arguments, observation, user_reply]: [String; 5] =
        r.try_into().unwrap_or_default();
    StepView {
        ask: action_type == "ask_user",
        step,
        action_type,
        arguments,
        observation,
        user_reply,
    }
}

fn verdict_view(r: Vec<String>) -> VerdictView {
    let [criterion_id, kind, mode, verdict, reason, failure_label]: [String; 6] =
        r.try_into().unwrap_or_default();
    VerdictView {
        criterion_id,
        kind,
        mode,
        verdict,
        reason,
        failure_label,
    }
}

/// task_id → (instruction, perturbation).
fn task_info(tasks: Option<&DataFrame>) -> PolarsResult<HashMap<String, (String, String)>> {
    let Some(tasks) = tasks else {
        return Ok(HashMap::new());
    };
    let id = text_column(tasks, "task_id")?;
    let instruction = text_column(tasks, "instruction")?;
    let perturbation = text_column(tasks, "perturbation")?;
    Ok((0..tasks.height())
        .filter_map(|i| {
            Some((
                id[i].clone()?,
                (
                    instruction[i].clone().unwrap_or_default(),
                    perturbation[i].clone().unwrap_or_default(),
                ),
            ))
        })
        .collect())
}
