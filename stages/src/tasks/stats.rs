//! Task-set statistics comparable to iPrefBench Table D.1, computed from the `tasks`, `slots`
//! and `criteria` tables alone (so anyone can recompute them from the Parquet files).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use polars::prelude::*;

use super::error::TaskError;
use super::model::Perturbation;

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

fn strs<'a>(df: &'a DataFrame, table: &str, col: &str) -> Result<&'a StringChunked, TaskError> {
    df.column(col)
        .and_then(|c| c.str())
        .map_err(|e| TaskError::table(table, e.to_string()))
}

fn text(ca: &StringChunked, i: usize) -> String {
    ca.get(i).unwrap_or_default().to_string()
}

/// Computes the statistics of a task set.
pub fn compute(
    tasks: &DataFrame,
    slots: &DataFrame,
    criteria: &DataFrame,
) -> Result<Vec<Stat>, TaskError> {
    let n = tasks.height();
    let per = |x: usize| if n == 0 { 0.0 } else { x as f64 / n as f64 };
    let (action, inferable, ask_only) = criterion_counts(slots, criteria)?;
    let apps = apps_per_task(tasks)?;
    let covered: BTreeSet<&String> = apps.iter().flatten().collect();
    let cross = tasks
        .column("cross_app")
        .and_then(|c| c.bool())
        .map_err(|e| TaskError::table("tasks", e.to_string()))?
        .iter()
        .filter(|b| *b == Some(true))
        .count();
    let templates: BTreeSet<&str> = strs(tasks, "tasks", "template")?.iter().flatten().collect();
    let multi = multi_step(tasks, &apps)?;
    let (two_ops, second_message) = second_steps(tasks)?;
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
    out.extend(perturbation_stats(tasks, n)?);
    for (k, c) in counts(strs(tasks, "tasks", "task_type")?) {
        out.push(stat("task_type", &k, c as f64, None));
    }
    let mut per_app: BTreeMap<&String, usize> = BTreeMap::new();
    for a in apps.iter().flatten() {
        *per_app.entry(a).or_default() += 1;
    }
    for (app, c) in per_app {
        out.push(stat("tasks_per_app", app, c as f64, None));
    }
    Ok(out)
}

/// Tasks per perturbation, and the templates behind each.
fn perturbation_stats(tasks: &DataFrame, n: usize) -> Result<Vec<Stat>, TaskError> {
    let mut out = Vec::new();
    let perturbation = counts(strs(tasks, "tasks", "perturbation")?);
    for p in Perturbation::ALL {
        let c = perturbation.get(p.as_str()).copied().unwrap_or(0);
        out.push(stat("perturbation", p.as_str(), c as f64, None));
    }
    let (pert, tmpl) = (
        strs(tasks, "tasks", "perturbation")?,
        strs(tasks, "tasks", "template")?,
    );
    for p in Perturbation::ALL {
        let behind: BTreeSet<&str> = (0..n)
            .filter(|&i| pert.get(i) == Some(p.as_str()))
            .filter_map(|i| tmpl.get(i))
            .collect();
        out.push(stat(
            "perturbation_templates",
            p.as_str(),
            behind.len() as f64,
            None,
        ));
    }
    Ok(out)
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
    let (st, ss, sr) = (
        strs(slots, "slots", "task_id")?,
        strs(slots, "slots", "slot_id")?,
        strs(slots, "slots", "source")?,
    );
    let source: HashMap<(String, String), String> = (0..slots.height())
        .map(|i| ((text(st, i), text(ss, i)), text(sr, i)))
        .collect();
    let (ct, ck, cs) = (
        strs(criteria, "criteria", "task_id")?,
        strs(criteria, "criteria", "kind")?,
        strs(criteria, "criteria", "slot_id")?,
    );
    let mut counts = (0, 0, 0);
    for i in 0..criteria.height() {
        if ck.get(i) == Some("action") {
            counts.0 += 1;
            continue;
        }
        match source.get(&(text(ct, i), text(cs, i))).map(String::as_str) {
            Some("inferable") => counts.1 += 1,
            Some("ask_only") => counts.2 += 1,
            _ => {}
        }
    }
    Ok(counts)
}

/// Tasks that touch two or more apps or need two or more operations (reads do not count as
/// operations, but a read in another app counts as touching it): look something up then act,
/// act then tell someone.
fn multi_step(tasks: &DataFrame, apps: &[Vec<String>]) -> Result<usize, TaskError> {
    let ops = operations(tasks)?;
    Ok((0..tasks.height())
        .filter(|&i| apps[i].len() >= 2 || ops[i].len() >= 2)
        .count())
}

/// The operations (not reads) of each task's reference solution, in order.
fn operations(tasks: &DataFrame) -> Result<Vec<Vec<String>>, TaskError> {
    let refs = strs(tasks, "tasks", "reference_solution")?;
    Ok((0..tasks.height())
        .map(|i| {
            let steps: Vec<serde_json::Value> =
                serde_json::from_str(refs.get(i).unwrap_or("[]")).unwrap_or_default();
            steps
                .iter()
                .filter_map(|s| s.get("tool").and_then(serde_json::Value::as_str))
                .filter(|t| !t.contains(".list_") && !t.contains(".get_"))
                .map(str::to_string)
                .collect()
        })
        .collect())
}

/// Tasks with two or more operations, and how many of them follow the first with a message or
/// an email (issue 25: second steps should not be mostly messages).
fn second_steps(tasks: &DataFrame) -> Result<(usize, usize), TaskError> {
    let ops = operations(tasks)?;
    let two: Vec<&Vec<String>> = ops.iter().filter(|o| o.len() >= 2).collect();
    let message = two
        .iter()
        .filter(|o| o[1].starts_with("messages.") || o[1].starts_with("mail."))
        .count();
    Ok((two.len(), message))
}

fn apps_per_task(tasks: &DataFrame) -> Result<Vec<Vec<String>>, TaskError> {
    let lists = tasks
        .column("apps")
        .and_then(|c| c.list())
        .map_err(|e| TaskError::table("tasks", e.to_string()))?;
    Ok((0..tasks.height())
        .map(|i| {
            lists
                .get_as_series(i)
                .and_then(|s| {
                    s.str()
                        .ok()
                        .map(|ca| ca.iter().flatten().map(str::to_string).collect())
                })
                .unwrap_or_default()
        })
        .collect())
}

fn counts(ca: &StringChunked) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for v in ca.iter().flatten() {
        *out.entry(v.to_string()).or_default() += 1;
    }
    out
}

/// The statistics as the `stats` table: section, key, value, paper.
pub fn stats_frame(stats: &[Stat]) -> Result<DataFrame, TaskError> {
    let columns = vec![
        Column::new(
            "section".into(),
            stats.iter().map(|s| s.section).collect::<Vec<_>>(),
        ),
        Column::new(
            "key".into(),
            stats.iter().map(|s| s.key.clone()).collect::<Vec<_>>(),
        ),
        Column::new(
            "value".into(),
            stats.iter().map(|s| s.value).collect::<Vec<_>>(),
        ),
        Column::new(
            "paper".into(),
            stats.iter().map(|s| s.paper).collect::<Vec<_>>(),
        ),
    ];
    DataFrame::new(stats.len(), columns).map_err(TaskError::from)
}
