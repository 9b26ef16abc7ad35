//! Task-set statistics comparable to iPrefBench Table D.1, computed from the `tasks`, `slots`
//! and `criteria` tables alone (so anyone can recompute them from the Parquet files).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use polars::prelude::*;

use super::error::TaskError;
use super::model::Perturbation;
use crate::tables::row::RowError;
use crate::tables::tasks::{CRITERIA, SLOTS, STATS, TASKS};

/// One statistic: section, key, value, and the paper's figure where Table D.1 / §3.5 gives one.
#[derive(Debug, Clone, PartialEq)]
pub struct Stat {
    /// Group: `total`, `per_task`, `share`, `perturbation`, `perturbation_templates`,
    /// `task_type`, `tasks_per_app`.
    pub section: &'static str,
    /// What is counted.
    pub key: String,
    /// The value.
    pub value: f64,
    /// iPrefBench's value, when reported.
    pub paper: Option<f64>,
}

crate::tables::row! {
    /// The columns of `tasks` the statistics count.
    struct StatTask of TASKS {
        template: String,
        apps: Vec<String>,
        task_type: String,
        perturbation: String,
        cross_app: bool,
        reference_solution: String,
    }
}

crate::tables::row! {
    /// The columns of `slots` the statistics count.
    struct StatSlot of SLOTS {
        task_id: String,
        slot_id: String,
        source: String,
    }
}

crate::tables::row! {
    /// The columns of `criteria` the statistics count.
    struct StatCriterion of CRITERIA {
        task_id: String,
        kind: String,
        slot_id: Option<String>,
    }
}

crate::tables::row! {
    /// A `stats` row as `task_stats` writes it.
    struct StatRow of STATS {
        section: String,
        key: String,
        value: f64,
        paper: Option<f64>,
    }
}

/// A row view's error as a task error naming the table and column.
fn rows<T>(read: Result<Vec<T>, RowError>) -> Result<Vec<T>, TaskError> {
    read.map_err(|e| TaskError::table(e.table, e.to_string()))
}

/// Computes the statistics of a task set.
pub fn compute(
    tasks: &DataFrame,
    slots: &DataFrame,
    criteria: &DataFrame,
) -> Result<Vec<Stat>, TaskError> {
    let tasks = rows(StatTask::from_frame(tasks))?;
    let n = tasks.len();
    let per = |x: usize| if n == 0 { 0.0 } else { x as f64 / n as f64 };
    let (action, inferable, ask_only) = criterion_counts(slots, criteria)?;
    let apps: Vec<&Vec<String>> = tasks.iter().map(|t| &t.apps).collect();
    let covered: BTreeSet<&String> = apps.iter().copied().flatten().collect();
    let cross = tasks.iter().filter(|t| t.cross_app).count();
    let templates: BTreeSet<&str> = tasks.iter().map(|t| t.template.as_str()).collect();
    let ops = operations(&tasks);
    // Multi-step: tasks that touch two or more apps or need two or more operations (reads do
    // not count as operations, but a read in another app counts as touching it): look
    // something up then act, act then tell someone.
    let multi = (0..n)
        .filter(|&i| apps[i].len() >= 2 || ops[i].len() >= 2)
        .count();
    let (two_ops, second_message) = second_steps(&ops);
    let mut out = vec![
        stat("total", "tasks", n as f64, Some(130.0)),
        stat("total", "templates", templates.len() as f64, None),
        stat("total", "apps_covered", covered.len() as f64, Some(26.0)),
        stat("per_task", "action_criteria", per(action), Some(2.09)),
        stat(
            "per_task",
            "personalization_criteria",
            per(inferable + ask_only),
            Some(2.87),
        ),
        stat("per_task", "inferable_criteria", per(inferable), Some(1.98)),
        stat("per_task", "ask_only_criteria", per(ask_only), Some(0.89)),
        stat("share", "cross_app_pct", 100.0 * per(cross), Some(26.9)),
        stat("share", "multi_step_pct", 100.0 * per(multi), None),
        stat("total", "two_operation_tasks", two_ops as f64, None),
        stat(
            "share",
            "second_step_message_pct",
            if two_ops == 0 {
                0.0
            } else {
                100.0 * second_message as f64 / two_ops as f64
            },
            None,
        ),
    ];
    out.extend(perturbation_stats(&tasks));
    for (k, c) in counts(tasks.iter().map(|t| t.task_type.as_str())) {
        out.push(stat("task_type", &k, c as f64, None));
    }
    let mut per_app: BTreeMap<&String, usize> = BTreeMap::new();
    for a in apps.iter().copied().flatten() {
        *per_app.entry(a).or_default() += 1;
    }
    for (app, c) in per_app {
        out.push(stat("tasks_per_app", app, c as f64, None));
    }
    Ok(out)
}

/// Tasks per perturbation, and the templates behind each.
fn perturbation_stats(tasks: &[StatTask]) -> Vec<Stat> {
    let mut out = Vec::new();
    let perturbation = counts(tasks.iter().map(|t| t.perturbation.as_str()));
    for p in Perturbation::ALL {
        let c = perturbation.get(p.as_str()).copied().unwrap_or(0);
        out.push(stat("perturbation", p.as_str(), c as f64, None));
    }
    for p in Perturbation::ALL {
        let behind: BTreeSet<&str> = tasks
            .iter()
            .filter(|t| t.perturbation == p.as_str())
            .map(|t| t.template.as_str())
            .collect();
        out.push(stat(
            "perturbation_templates",
            p.as_str(),
            behind.len() as f64,
            None,
        ));
    }
    out
}

/// One stat row.
fn stat(section: &'static str, key: &str, value: f64, paper: Option<f64>) -> Stat {
    Stat {
        section,
        key: key.to_string(),
        value,
        paper,
    }
}

/// Action criteria, and personalization criteria by their slot's source.
fn criterion_counts(
    slots: &DataFrame,
    criteria: &DataFrame,
) -> Result<(usize, usize, usize), TaskError> {
    let source: HashMap<(String, String), String> = rows(StatSlot::from_frame(slots))?
        .into_iter()
        .map(|s| ((s.task_id, s.slot_id), s.source))
        .collect();
    let mut counts = (0, 0, 0);
    for c in rows(StatCriterion::from_frame(criteria))? {
        if c.kind == "action" {
            counts.0 += 1;
            continue;
        }
        let key = (c.task_id, c.slot_id.unwrap_or_default());
        match source.get(&key).map(String::as_str) {
            Some("inferable") => counts.1 += 1,
            Some("ask_only") => counts.2 += 1,
            _ => {}
        }
    }
    Ok(counts)
}

/// The operations (not reads) of each task's reference solution, in order.
fn operations(tasks: &[StatTask]) -> Vec<Vec<String>> {
    tasks
        .iter()
        .map(|t| {
            let steps: Vec<serde_json::Value> =
                serde_json::from_str(&t.reference_solution).unwrap_or_default();
            steps
                .iter()
                .filter_map(|s| s.get("tool").and_then(serde_json::Value::as_str))
                .filter(|t| !t.contains(".list_") && !t.contains(".get_"))
                .map(str::to_string)
                .collect()
        })
        .collect()
}

/// Tasks with two or more operations, and how many of them follow the first with a message or
/// an email (issue 25: second steps should not be mostly messages).
fn second_steps(ops: &[Vec<String>]) -> (usize, usize) {
    let two: Vec<&Vec<String>> = ops.iter().filter(|o| o.len() >= 2).collect();
    let message = two
        .iter()
        .filter(|o| o[1].starts_with("messages.") || o[1].starts_with("mail."))
        .count();
    (two.len(), message)
}

fn counts<'a>(values: impl Iterator<Item = &'a str>) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for v in values {
        *out.entry(v.to_string()).or_default() += 1;
    }
    out
}

/// The statistics as the `stats` table: section, key, value, paper.
pub fn stats_frame(stats: &[Stat]) -> Result<DataFrame, TaskError> {
    let rows: Vec<StatRow> = stats
        .iter()
        .map(|s| StatRow {
            section: s.section.to_string(),
            key: s.key.clone(),
            value: s.value,
            paper: s.paper,
        })
        .collect();
    StatRow::to_frame(&rows).map_err(TaskError::from)
}
