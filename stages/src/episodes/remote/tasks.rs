//! The tasks a `run_remote_episodes` item plays: one row of its tasks input each (`task_id`, an
//! optional `goal` and optional replay `actions` as JSON), and the replay actions they give.

use std::collections::{BTreeMap, HashMap};

use prefflow_engine::StageError;

use crate::tables::episodes::RemoteTaskRow;
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
    /// The tasks of table `table` from its rows (`task_id`, `goal` and `actions`; absent
    /// optional columns as `None`): an input error names the row whose id is empty or whose
    /// actions are not a JSON list of actions.
    pub fn from_rows(table: &str, rows: Vec<RemoteTaskRow>) -> Result<Vec<RemoteTask>, StageError> {
        let rows = rows.into_iter().enumerate();
        rows.map(|(row, r)| {
            let task_id = r.task_id.ok_or_else(|| {
                StageError::Input(format!("{table} row {row}: `task_id` is empty"))
            })?;
            let actions = (r.actions)
                .map(|text| parse_actions(&text, table, row, &task_id))
                .transpose()?;
            Ok(RemoteTask {
                task_id,
                goal: r.goal.filter(|g| !g.trim().is_empty()),
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
        let row = |id: Option<&str>, goal: Option<&str>, actions: Option<&str>| RemoteTaskRow {
            task_id: id.map(str::to_string),
            goal: goal.map(str::to_string),
            actions: actions.map(str::to_string),
        };
        let tasks = RemoteTask::from_rows(
            "t",
            vec![
                row(Some("a"), Some("  "), Some(r#"[{"action": "home"}]"#)),
                row(Some("b"), Some("Set an alarm"), None),
            ],
        )
        .unwrap();
        assert_eq!(tasks[0].goal, None, "a blank goal is the device's own");
        assert_eq!(tasks[0].actions, Some(vec![Action::Home]));
        assert_eq!(tasks[1].goal.as_deref(), Some("Set an alarm"));
        let empty = RemoteTask::from_rows("t", vec![row(None, None, None)]);
        assert!(format!("{:?}", empty.unwrap_err()).contains("t row 0: `task_id` is empty"));
        let bad = RemoteTask::from_rows("t", vec![row(Some("a"), None, Some("[1]"))]);
        assert!(format!("{:?}", bad.unwrap_err()).contains("t row 0 (task `a`)"));
    }
}
