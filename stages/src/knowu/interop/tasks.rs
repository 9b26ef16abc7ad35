//! tasks.csv: KnowU-Bench's registered episodes with their split, difficulty and the profile
//! habit keys that decide whether a proactive task wants the agent to act.

use std::collections::HashMap;
use std::path::Path;

use polars::prelude::*;

use crate::knowu::error::KnowuError;
// tasks.csv's columns are the `knowu_tasks` table's leading ones.
use crate::tables::knowu::KnowuTaskRow as K;

/// The columns the metrics need.
const REQUIRED: [&str; 5] = [
    K::task_name,
    K::class_name,
    K::split,
    K::difficulty,
    K::habit_keys,
];
/// The paper's three splits.
pub const SPLITS: [&str; 3] = ["general", "personalized", "proactive"];
/// Difficulty levels within a split.
pub const DIFFICULTIES: [&str; 2] = ["easy", "hard"];
/// The name prefix of every prefflow-only task class (`PrefflowBuyComputer`): the simulated
/// half names its own classes so, and the exporter leaves them out of KnowU's run directories.
pub const PREFFLOW_PREFIX: &str = "Prefflow";

/// What the metrics need to know about one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskMeta {
    /// `general`, `personalized` or `proactive`.
    pub split: String,
    /// `easy` or `hard`.
    pub difficulty: String,
    /// Proactive only: habit keys whose presence means the user wants the agent to act.
    pub habit_keys: Vec<String>,
}

/// Task metadata by task name, with a fallback by class name for personas tasks.csv does not
/// list (the benchmark's fourth persona, or a new one).
#[derive(Debug, Clone, Default)]
pub struct TaskIndex {
    by_name: HashMap<String, TaskMeta>,
    by_class: HashMap<String, TaskMeta>,
}

impl TaskIndex {
    /// The metadata of `task_id` (`Class` or `Class@persona`).
    pub fn get(&self, task_id: &str) -> Option<&TaskMeta> {
        let class = task_id.split_once('@').map_or(task_id, |(c, _)| c);
        self.by_name
            .get(task_id)
            .or_else(|| self.by_class.get(class))
    }
}

/// Reads tasks.csv into an index.
pub fn read(path: &Path) -> Result<TaskIndex, KnowuError> {
    from_frame(&read_frame(path)?, path)
}

/// Builds the index from a table with tasks.csv's columns (e.g. `generate_knowu_tasks`'s
/// `knowu_tasks`); `path` labels errors.
pub fn from_frame(df: &DataFrame, path: &Path) -> Result<TaskIndex, KnowuError> {
    let col = |name: &str| -> Result<Vec<String>, KnowuError> {
        let c = df
            .column(name)
            .and_then(|c| c.str().cloned())
            .map_err(|e| csv_error(path, e.to_string()))?;
        Ok(c.iter()
            .map(|v| v.unwrap_or("").trim().to_string())
            .collect())
    };
    let (names, classes) = (col(K::task_name)?, col(K::class_name)?);
    let (splits, levels, keys) = (col(K::split)?, col(K::difficulty)?, col(K::habit_keys)?);
    let mut index = TaskIndex::default();
    for row in 0..df.height() {
        let meta = TaskMeta {
            split: checked(path, &names[row], "split", &splits[row], &SPLITS)?,
            difficulty: checked(path, &names[row], "difficulty", &levels[row], &DIFFICULTIES)?,
            habit_keys: keys[row]
                .split(';')
                .map(str::trim)
                .filter(|k| !k.is_empty())
                .map(str::to_string)
                .collect(),
        };
        index
            .by_class
            .entry(classes[row].clone())
            .or_insert_with(|| meta.clone());
        index.by_name.insert(names[row].clone(), meta);
    }
    Ok(index)
}

/// The task names of tasks.csv, in file order.
pub fn read_names(path: &Path) -> Result<Vec<String>, KnowuError> {
    let df = read_frame(path)?;
    let names = df
        .column(K::task_name)
        .and_then(|c| c.str().cloned())
        .map_err(|e| csv_error(path, e.to_string()))?;
    Ok(names.iter().flatten().map(str::to_string).collect())
}

/// tasks.csv as a table of strings, checked for the required columns.
fn read_frame(path: &Path) -> Result<DataFrame, KnowuError> {
    if !path.is_file() {
        let e = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        return Err(KnowuError::data(path, e));
    }
    let df = CsvReadOptions::default()
        .with_has_header(true)
        .with_infer_schema_length(Some(0))
        .try_into_reader_with_file_path(Some(path.to_path_buf()))
        .and_then(|r| r.finish())
        .map_err(|e| csv_error(path, format!("not a readable CSV: {e}")))?;
    for name in REQUIRED {
        if df.column(name).is_err() {
            return Err(csv_error(
                path,
                format!(
                    "missing column `{name}`; tasks.csv needs the header {}",
                    REQUIRED.join(",")
                ),
            ));
        }
    }
    Ok(df)
}

fn checked(
    path: &Path,
    task: &str,
    column: &str,
    value: &str,
    allowed: &[&str],
) -> Result<String, KnowuError> {
    if allowed.contains(&value) {
        return Ok(value.to_string());
    }
    Err(csv_error(
        path,
        format!(
            "task `{task}`: column `{column}` is {value:?}; use one of {}",
            allowed.join(", ")
        ),
    ))
}

fn csv_error(path: &Path, message: String) -> KnowuError {
    KnowuError::Content {
        path: path.to_path_buf(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_task_list_has_the_papers_split_sizes() {
        let Some(knowu) = crate::knowu::data::for_tests("shipped_task_list") else {
            return;
        };
        let shipped = knowu.join("tasks.csv");
        let names = read_names(&shipped).expect("tasks.csv");
        assert_eq!(names.len(), 192);
        let index = read(&shipped).expect("tasks.csv");
        let count = |split: &str| {
            names
                .iter()
                .filter(|n| index.get(n).map(|m| m.split.as_str()) == Some(split))
                .count()
        };
        assert_eq!(
            (count("general"), count("personalized"), count("proactive")),
            (42, 86, 64)
        );
        let weekend = index.get("WeekendSleeperTask@student").expect("listed");
        assert_eq!(weekend.habit_keys, ["weekend_sleeper", "weekend_alarm"]);
        assert_eq!(weekend.difficulty, "easy");
        // A persona tasks.csv does not list falls back to the class.
        assert_eq!(index.get("WeekendSleeperTask@researcher"), Some(weekend));
        assert_eq!(index.get("NoSuchTask@student"), None);
    }

    #[test]
    fn a_bad_split_names_the_task_and_the_allowed_values() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("tasks.csv");
        std::fs::write(
            &p,
            "task_name,class_name,split,difficulty,habit_keys\nA,A,proactiv,easy,k\n",
        )
        .expect("write");
        let err = read(&p).expect_err("bad split").to_string();
        assert!(
            err.contains("tasks.csv: task `A`: column `split` is \"proactiv\""),
            "{err}"
        );
        assert!(err.contains("general, personalized, proactive"), "{err}");
        std::fs::write(&p, "task_name,split\nA,general\n").expect("write");
        let err = read(&p).expect_err("columns").to_string();
        assert!(err.contains("missing column `class_name`"), "{err}");
    }
}
