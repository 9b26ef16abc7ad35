//! `eval_report_<YYYYmmdd_HHMMSS>.json`: the summary KnowU-Bench writes at the root of a full
//! run. Imported as one row per report so a run's own totals can be checked against ours.
//!
//! KnowU's `calc_split_difficulty_metrics.py` and `calc_persona_pref_routine_avg.py` read the
//! per-task scores of the *latest* report instead of the task directories when there is one;
//! `calc_paper_metrics.py` and prefflow read the directories. The import compares the two
//! ([`mismatches`]) and warns when they disagree, so the scripts' numbers never differ silently.

use std::path::Path;

use serde_json::{Map, Value};

use crate::knowu::error::KnowuError;
use crate::tables::knowu::ReportsRow;

/// One evaluation report: its `reports` row and the per-task lists behind it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EvalReport {
    /// The summary as its `reports` row (counts absent from the file are `None`); the import
    /// fills the run's `label`, `score_mismatches` and `latest`, which the file does not say.
    pub summary: ReportsRow,
    /// `tasks_with_results` as (task_name, score): what KnowU's split and persona scripts read
    /// instead of the task directories when the report is the run's latest.
    pub scores: Vec<(String, Option<f64>)>,
    /// `tasks_with_no_results`.
    pub no_results: Vec<String>,
}

/// True for file names KnowU-Bench gives its reports.
pub fn is_report_name(name: &str) -> bool {
    name.starts_with("eval_report_") && name.ends_with(".json")
}

/// Reads and checks the report at `path`.
pub fn read(path: &Path) -> Result<EvalReport, KnowuError> {
    let bytes = std::fs::read(path).map_err(|e| KnowuError::read(path, e))?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| KnowuError::json(path, &e))?;
    parse(path, &value)
}

/// Extracts the summary from a parsed report; the summary may be nested under `summary` (as
/// KnowU writes it) or be the top-level object.
pub fn parse(path: &Path, value: &Value) -> Result<EvalReport, KnowuError> {
    let root = value
        .as_object()
        .ok_or_else(|| KnowuError::shape(path, "(top level)", "an object", value))?;
    let summary = object_field(path, root, "summary")?.unwrap_or(root);
    let metadata = object_field(path, root, "metadata")?;
    let count = |name: &str| uint(path, summary, name);
    let real = |name: &str| float(path, summary, name);
    let scores: Vec<(String, Option<f64>)> = match root.get("tasks_with_results") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|item| {
                let name = item.get("task_name")?.as_str()?.to_string();
                Some((name, item.get("score").and_then(Value::as_f64)))
            })
            .collect(),
        Some(other) => {
            return Err(KnowuError::shape(
                path,
                "tasks_with_results",
                "an array",
                other,
            ))
        }
    };
    let tasks_scored = match root.get("tasks_with_results") {
        Some(Value::Array(items)) => items.len() as u64,
        _ => 0,
    };
    let no_results = match root.get("tasks_with_no_results") {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    };
    let summary = ReportsRow {
        label: String::new(),
        file: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        total_tasks_assigned: count("total_tasks_assigned")?,
        total_tasks_with_results: count("total_tasks_with_results")?,
        successful_tasks: count("successful_tasks")?,
        total_tasks_with_no_results: count("total_tasks_with_no_results")?,
        overall_success_rate: real("overall_success_rate")?,
        total_duration_seconds: real("total_duration_seconds")?,
        model_name: metadata.and_then(|m| m.get("model_name")?.as_str().map(str::to_string)),
        timestamp: metadata.and_then(|m| m.get("timestamp")?.as_str().map(str::to_string)),
        tasks_scored,
        score_mismatches: 0,
        latest: false,
    };
    Ok(EvalReport {
        summary,
        scores,
        no_results,
    })
}

/// Tasks whose score in `report` differs from the task directories' (`scores` from
/// `result.txt`: `None` = no result): a report score with no or another directory score, or a
/// directory score the report does not list. Names in report order, then directory order.
pub fn mismatches(report: &EvalReport, scores: &[(String, Option<f64>)]) -> Vec<String> {
    let dirs: std::collections::HashMap<&str, Option<f64>> =
        scores.iter().map(|(n, s)| (n.as_str(), *s)).collect();
    let listed: std::collections::HashSet<&str> =
        report.scores.iter().map(|(n, _)| n.as_str()).collect();
    let differ = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() > 1e-12,
        (a, b) => a.is_some() != b.is_some(),
    };
    let mut out: Vec<String> = report
        .scores
        .iter()
        .filter(|(n, s)| differ(*s, dirs.get(n.as_str()).copied().flatten()))
        .map(|(n, _)| n.clone())
        .collect();
    out.extend(
        scores
            .iter()
            .filter(|(n, s)| s.is_some() && !listed.contains(n.as_str()))
            .map(|(n, _)| n.clone()),
    );
    out
}

fn object_field<'a>(
    path: &Path,
    map: &'a Map<String, Value>,
    name: &str,
) -> Result<Option<&'a Map<String, Value>>, KnowuError> {
    match map.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(inner)) => Ok(Some(inner)),
        Some(other) => Err(KnowuError::shape(path, name, "an object", other)),
    }
}

fn uint(path: &Path, map: &Map<String, Value>, name: &str) -> Result<Option<u64>, KnowuError> {
    match map.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            KnowuError::shape(path, format!("summary.{name}"), "a non-negative integer", v)
        }),
    }
}

fn float(path: &Path, map: &Map<String, Value>, name: &str) -> Result<Option<f64>, KnowuError> {
    match map.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_f64()
            .map(Some)
            .ok_or_else(|| KnowuError::shape(path, format!("summary.{name}"), "a number", v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_summary_and_metadata() {
        let v = json!({
            "summary": {"total_tasks_assigned": 3, "total_tasks_with_results": 2,
                        "successful_tasks": 1, "total_tasks_with_no_results": 1,
                        "overall_success_rate": 0.5},
            "metadata": {"model_name": "m1"},
            "tasks_with_results": [{"task_name": "A", "score": 1.0}, {"task_name": "B", "score": 0.0}],
        });
        let r = parse(Path::new("eval_report_1.json"), &v).expect("valid");
        assert_eq!(r.summary.file, "eval_report_1.json");
        assert_eq!(r.summary.total_tasks_assigned, Some(3));
        assert_eq!(r.summary.successful_tasks, Some(1));
        assert_eq!(r.summary.overall_success_rate, Some(0.5));
        assert_eq!(r.summary.total_duration_seconds, None);
        assert_eq!(r.summary.model_name.as_deref(), Some("m1"));
        assert_eq!(r.summary.tasks_scored, 2);
    }

    #[test]
    fn report_scores_are_compared_with_the_task_directories() {
        let v = json!({"tasks_with_results": [{"task_name": "A", "score": 1.0},
                                              {"task_name": "B", "score": 0.5},
                                              {"task_name": "C", "score": null}],
                       "tasks_with_no_results": ["D"]});
        let r = parse(Path::new("eval_report_1.json"), &v).expect("valid");
        assert_eq!(r.no_results, ["D"]);
        let dirs = [
            ("A".to_string(), Some(1.0)),
            ("B".to_string(), Some(0.25)),
            ("C".to_string(), None),
            ("E".to_string(), Some(1.0)),
        ];
        // B differs, E is not in the report; A agrees, C has no score on either side.
        assert_eq!(mismatches(&r, &dirs), ["B", "E"]);
    }

    #[test]
    fn a_string_count_is_located() {
        let v = json!({"summary": {"successful_tasks": "7"}});
        let err = parse(Path::new("r/eval_report_x.json"), &v)
            .expect_err("invalid")
            .to_string();
        assert!(err.contains("r/eval_report_x.json"), "{err}");
        assert!(err.contains("`summary.successful_tasks`"), "{err}");
        assert!(err.contains("\"7\""), "{err}");
    }
}
