//! Authored, labelled episodes (iPrefBench §4.5; `datasets/judge-labels/README.md`): a
//! trajectory written for one released task — `ask`, `call` with `args`, `answer`, `finish` —
//! that the `authored` agent plays step by step, keyed by task id with a fingerprint of the task
//! so a label file whose task changed is reported stale instead of silently misjudged.
//!
//! The files live under `episodes/<task_id>/<name>.yaml`; the episode's id is
//! `<task_id>/<name>`. Within a task, episodes are numbered in name order: the `n`-th is played
//! as epoch `n`, so `judge_validation` finds its judged rows by `(task_id, epoch)`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::tasks::TaskBundle;
use crate::world::phone::Action;

/// One authored episode.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthoredEpisode {
    /// `<task_id>/<name>`.
    pub id: String,
    /// The released task it was written for.
    pub task_id: String,
    /// The task's fingerprint when the episode was labelled ([`fingerprint`]); `None` if unset.
    pub fingerprint: Option<String>,
    /// Free tags: what the episode exercises.
    pub behaviour: Vec<String>,
    /// The actions, in order (`finish` appended when the file does not end with it).
    pub actions: Vec<Action>,
    /// The file, as shown in messages.
    pub file: String,
}

/// Every authored episode of a task, in name order (the epoch is the index).
pub type ByTask = BTreeMap<String, Vec<AuthoredEpisode>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EpisodeFile {
    task: String,
    #[serde(default)]
    fingerprint: Option<String>,
    #[serde(default)]
    behaviour: Vec<String>,
    steps: Vec<Step>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    #[serde(default)]
    ask: Option<String>,
    #[serde(default)]
    call: Option<String>,
    #[serde(default)]
    args: Option<Map<String, Value>>,
    #[serde(default)]
    answer: Option<String>,
    #[serde(default)]
    finish: Option<Value>,
}

/// The fingerprint of a task as labels see it: the first 16 hex digits of the content hash of
/// its instruction, slots (id, source, value) and criteria (id, kind, slot, predicate,
/// rubric). Wording that labels do not depend on (a slot's `about`, keywords) is left out.
pub fn fingerprint(bundle: &TaskBundle) -> String {
    let slots: Vec<Value> = bundle
        .slots
        .iter()
        .map(|s| json!([s.slot_id, s.source.as_str(), s.value]))
        .collect();
    let criteria: Vec<Value> = bundle
        .criteria
        .iter()
        .map(|c| {
            json!([
                c.criterion_id,
                c.kind.as_str(),
                c.slot_id,
                serde_json::to_value(&c.predicate).unwrap_or(Value::Null),
                c.rubric
            ])
        })
        .collect();
    let content = json!({
        "instruction": bundle.task.instruction,
        "slots": slots,
        "criteria": criteria,
    });
    prefflow_engine::keys::hash_json(&content)[..16].to_string()
}

/// Loads every `episodes/<task_id>/<name>.yaml` under `dir` (`shown`: the path as the user
/// wrote it). A missing directory holds no episodes; a malformed file is an error naming it.
pub fn load(dir: &Path, shown: &str) -> Result<ByTask, String> {
    let mut out = ByTask::new();
    if !dir.is_dir() {
        return Ok(out);
    }
    let mut task_dirs: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{shown}: {e}"))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    task_dirs.sort();
    for task_dir in task_dirs {
        let task_id = file_name(&task_dir);
        let files = crate::files::sorted_files(&task_dir, &["yaml", "yml"])
            .map_err(|e| format!("{shown}/{task_id}: {e}"))?;
        for file in files {
            let name = file
                .file_stem()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_default();
            let shown_file = format!("{shown}/{task_id}/{}", file_name(&file));
            let text = std::fs::read_to_string(&file).map_err(|e| format!("{shown_file}: {e}"))?;
            let ep = parse(&text, &task_id, &name, &shown_file)?;
            out.entry(task_id.clone()).or_default().push(ep);
        }
    }
    Ok(out)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default()
}

/// Parses one episode file (`task_dir`/`name` locate it; the file's `task` must agree).
pub fn parse(
    text: &str,
    task_dir: &str,
    name: &str,
    shown: &str,
) -> Result<AuthoredEpisode, String> {
    let raw: EpisodeFile = serde_saphyr::from_str(text).map_err(|e| {
        format!("{shown}: {e}; an authored episode has `task`, `fingerprint`, `behaviour` and `steps` (datasets/judge-labels/README.md)")
    })?;
    if raw.task != task_dir {
        return Err(format!(
            "{shown}: `task: {}` but the file is under `{task_dir}/`; move it to `{}/` or fix `task`",
            raw.task, raw.task
        ));
    }
    let mut actions = Vec::new();
    for (i, step) in raw.steps.into_iter().enumerate() {
        actions.push(action(step).map_err(|m| format!("{shown}: step {}: {m}", i + 1))?);
    }
    if actions.last() != Some(&Action::Finish) {
        actions.push(Action::Finish);
    }
    Ok(AuthoredEpisode {
        id: format!("{task_dir}/{name}"),
        task_id: raw.task,
        fingerprint: raw.fingerprint.filter(|f| !f.trim().is_empty()),
        behaviour: raw.behaviour,
        actions,
        file: shown.to_string(),
    })
}

fn action(step: Step) -> Result<Action, String> {
    let given = [
        step.ask.is_some(),
        step.call.is_some(),
        step.answer.is_some(),
        step.finish.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if given != 1 {
        return Err("write exactly one of `ask`, `call` (with `args`), `answer`, `finish`".into());
    }
    if step.args.is_some() && step.call.is_none() {
        return Err("`args` belongs to a `call`".into());
    }
    Ok(match (step.ask, step.call, step.answer) {
        (Some(text), _, _) => Action::AskUser { text },
        (_, Some(tool), _) => Action::Call {
            tool,
            args: step.args.unwrap_or_default(),
        },
        (_, _, Some(text)) => Action::Answer { text },
        _ => Action::Finish,
    })
}

/// Whether an episode's stored fingerprint matches its task now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// It matches: the labels are about this task.
    Fresh,
    /// The task changed since the episode was labelled.
    Stale,
    /// The file has no fingerprint.
    Unfingerprinted,
    /// The task is not in the released set.
    UnknownTask,
}

impl Freshness {
    /// The table spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Freshness::Fresh => "ok",
            Freshness::Stale => "stale",
            Freshness::Unfingerprinted => "unfingerprinted",
            Freshness::UnknownTask => "unknown_task",
        }
    }

    /// Of an episode against the task it names (`None`: not in the task set).
    pub fn of(ep: &AuthoredEpisode, bundle: Option<&TaskBundle>) -> Self {
        match (bundle, &ep.fingerprint) {
            (None, _) => Freshness::UnknownTask,
            (Some(_), None) => Freshness::Unfingerprinted,
            (Some(b), Some(f)) if *f == fingerprint(b) => Freshness::Fresh,
            _ => Freshness::Stale,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_become_actions_and_finish_is_appended() {
        let text = r#"
task: t-01
fingerprint: abc
behaviour: [paraphrase]
steps:
  - ask: "How many of you?"
  - call: dinespot.book_table
    args: { restaurant: baan-thai, party_size: 5 }
  - answer: "Booked."
"#;
        let ep = parse(text, "t-01", "one", "x.yaml").unwrap();
        assert_eq!(ep.id, "t-01/one");
        assert_eq!(ep.actions.len(), 4);
        assert_eq!(
            ep.actions[0],
            Action::AskUser {
                text: "How many of you?".into()
            }
        );
        assert!(
            matches!(&ep.actions[1], Action::Call { tool, args } if tool == "dinespot.book_table" && args["party_size"] == 5)
        );
        assert_eq!(ep.actions[3], Action::Finish);
    }

    #[test]
    fn a_step_with_two_actions_or_the_wrong_task_is_refused_with_its_place() {
        let two = "task: t-01\nsteps:\n  - { ask: a, answer: b }\n";
        let e = parse(two, "t-01", "x", "f.yaml").unwrap_err();
        assert!(
            e.contains("f.yaml: step 1") && e.contains("exactly one"),
            "{e}"
        );
        let wrong = "task: t-02\nsteps: []\n";
        let e = parse(wrong, "t-01", "x", "f.yaml").unwrap_err();
        assert!(e.contains("under `t-01/`"), "{e}");
        let unknown = "task: t-01\nstep: []\n";
        assert!(parse(unknown, "t-01", "x", "f.yaml").is_err());
    }
}
