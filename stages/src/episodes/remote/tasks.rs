//! The tasks a `run_remote_episodes` item plays: one row of its tasks input each (`task_id`, an
//! optional `goal` and optional replay `actions` as JSON), and the replay actions they give.

use std::collections::{BTreeMap, HashMap};

use prefflow_engine::StageError;

use crate::world::phone::Action;

/// One row of the tasks input.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteTask {
    /// The task's id (`name@persona` for KnowU tasks).
    pub task_id: String,
    /// The goal shown to the agent (`None`: the device's own).
    pub goal: Option<String>,
    /// Actions a `replay` agent plays.
    pub actions: Option<Vec<Action>>,
}

impl RemoteTask {
    /// The tasks of table `table` from its `task_id`, `goal` and `actions` columns (row by
    /// row; absent optional columns as all `None`): an input error names the row whose id is
    /// empty or whose actions are not a JSON list of actions.
    pub fn from_columns(
        table: &str,
        ids: Vec<Option<String>>,
        goals: Vec<Option<String>>,
        actions: Vec<Option<String>>,
    ) -> Result<Vec<RemoteTask>, StageError> {
        let rows = ids.into_iter().zip(goals).zip(actions).enumerate();
        rows.map(|(row, ((id, goal), acts))| {
            let task_id = id.ok_or_else(|| {
                StageError::Input(format!("{table} row {row}: `task_id` is empty"))
            })?;
            let actions = acts
                .map(|text| parse_actions(&text, table, row, &task_id))
                .transpose()?;
            Ok(RemoteTask {
                task_id,
                goal: goal.filter(|g| !g.trim().is_empty()),
                actions,
            })
        })
        .collect()
    }
}

fn parse_actions(
    text: &str,
    table: &str,
    row: usize,
    task_id: &str,
) -> Result<Vec<Action>, StageError> {
    serde_json::from_str::<Vec<Action>>(text).map_err(|e| {
        StageError::Input(format!(
            "{table} row {row} (task `{task_id}`): `actions` is not a JSON list of \
             actions ({e}); write e.g. [{{\"action\": \"open_app\", \"app\": \"Clock\"}}]"
        ))
    })
}

/// Replay actions: the stage's `actions` param (`by_param`) wins over the row's `actions`
/// column.
pub fn replay_actions(
    by_param: &BTreeMap<String, Vec<Action>>,
    tasks: &[RemoteTask],
) -> HashMap<String, Vec<Action>> {
    let mut out: HashMap<String, Vec<Action>> = tasks
        .iter()
        .filter_map(|t| Some((t.task_id.clone(), t.actions.clone()?)))
        .collect();
    out.extend(by_param.iter().map(|(k, v)| (k.clone(), v.clone())));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_actions_come_from_the_column_unless_the_param_names_the_task() {
        let by_param = BTreeMap::from([("a".to_string(), vec![Action::Home])]);
        let task = |id: &str| RemoteTask {
            task_id: id.into(),
            goal: None,
            actions: Some(vec![Action::Back]),
        };
        let got = replay_actions(&by_param, &[task("a"), task("b")]);
        assert_eq!(got["a"], vec![Action::Home]);
        assert_eq!(got["b"], vec![Action::Back]);
    }

    #[test]
    fn rows_need_an_id_and_actions_that_parse() {
        let some = |s: &str| Some(s.to_string());
        let tasks = RemoteTask::from_columns(
            "t",
            vec![some("a"), some("b")],
            vec![some("  "), some("Set an alarm")],
            vec![some(r#"[{"action": "home"}]"#), None],
        )
        .unwrap();
        assert_eq!(tasks[0].goal, None, "a blank goal is the device's own");
        assert_eq!(tasks[0].actions, Some(vec![Action::Home]));
        assert_eq!(tasks[1].goal.as_deref(), Some("Set an alarm"));
        let empty = RemoteTask::from_columns("t", vec![None], vec![None], vec![None]);
        assert!(format!("{:?}", empty.unwrap_err()).contains("t row 0: `task_id` is empty"));
        let bad = RemoteTask::from_columns("t", vec![some("a")], vec![None], vec![some("[1]")]);
        assert!(format!("{:?}", bad.unwrap_err()).contains("t row 0 (task `a`)"));
    }
}
