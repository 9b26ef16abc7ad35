//! Paired differences between a variant and the baseline on the tasks both ran: the mean
//! difference with a bootstrap interval that resamples templates (clusters of tasks) jointly, and the per-task
//! wins / ties / losses (ties explicit, as a 0 difference is common on pass/fail metrics).

use std::collections::HashMap;

use polars::prelude::*;

use super::bootstrap::{cluster_index, Bootstrap, Ratio};
use super::pertask::{PerTask, TaskRow, METRICS};
use crate::tables::aggregate::PairedRow as P;

/// `paired`: variant, baseline, metric, diff (variant − baseline), ci_low, ci_high, n (common
/// tasks where both define the metric), wins, ties, losses (per task).
pub fn paired(tasks: &PerTask, baseline: &str, boot: &Bootstrap) -> PolarsResult<DataFrame> {
    let base: HashMap<&str, &TaskRow> = tasks
        .variants
        .iter()
        .find(|(v, _)| v == baseline)
        .map(|(_, rows)| rows.iter().map(|r| (r.task_id.as_str(), r)).collect())
        .unwrap_or_default();
    let mut t = Columns::default();
    for (variant, rows) in tasks.variants.iter().filter(|(v, _)| v != baseline) {
        for metric in METRICS {
            let (pairs, templates): (Vec<(Ratio, Ratio)>, Vec<&str>) = rows
                .iter()
                .filter_map(|r| {
                    let b = base.get(r.task_id.as_str())?.get(metric)?;
                    Some(((b, r.get(metric)?), r.template.as_str()))
                })
                .unzip();
            let key = format!("{variant}-{baseline}/{}", metric.name());
            let est = boot.paired_clustered(&key, &pairs, &cluster_index(&templates));
            let (mut wins, mut ties, mut losses) = (0u32, 0u32, 0u32);
            for (a, b) in &pairs {
                match (b.value(), a.value()) {
                    (Some(vb), Some(va)) if (vb - va).abs() < 1e-12 => ties += 1,
                    (Some(vb), Some(va)) if vb > va => wins += 1,
                    (Some(_), Some(_)) => losses += 1,
                    _ => {}
                }
            }
            t.variant.push(variant.clone());
            t.metric.push(metric.name());
            t.diff.push(est.value);
            t.low.push(est.ci_low);
            t.high.push(est.ci_high);
            t.n.push(est.n);
            t.wins.push(wins);
            t.ties.push(ties);
            t.losses.push(losses);
        }
    }
    let baselines = vec![baseline.to_string(); t.variant.len()];
    df!(
        P::variant => t.variant,
        P::baseline => baselines,
        P::metric => t.metric,
        P::diff => t.diff,
        P::ci_low => t.low,
        P::ci_high => t.high,
        P::n => t.n,
        P::wins => t.wins,
        P::ties => t.ties,
        P::losses => t.losses,
    )
}

/// `paired` (with its `judge` column) with each comparison across judges refused: where the
/// variant's judge is not the baseline's (`baseline_judge`), `diff` and its interval are null
/// and `note` says which judges they were — a difference between two judges measures the
/// judges as much as the agents. `note` is null where the comparison stands.
pub fn refuse_across_judges(
    paired: DataFrame,
    baseline_judge: Option<&str>,
) -> PolarsResult<DataFrame> {
    let judges: Vec<Option<String>> = paired
        .column(P::judge)?
        .cast(&DataType::String)?
        .str()?
        .iter()
        .map(|j| j.map(str::to_string))
        .collect();
    let baselines: Vec<Option<String>> = paired
        .column(P::baseline)?
        .str()?
        .iter()
        .map(|b| b.map(str::to_string))
        .collect();
    let notes: Vec<Option<String>> = judges
        .iter()
        .zip(&baselines)
        .map(
            |(judge, baseline)| match (judge.as_deref(), baseline_judge) {
                (Some(j), Some(b)) if j != b => Some(format!(
                    "not compared: judged by `{j}`, baseline `{}` by `{b}`",
                    baseline.as_deref().unwrap_or_default()
                )),
                _ => None,
            },
        )
        .collect();
    let refused: Vec<bool> = notes.iter().map(Option::is_some).collect();
    let mut out = paired;
    for name in [P::diff, P::ci_low, P::ci_high] {
        let kept: Vec<Option<f64>> = out
            .column(name)?
            .f64()?
            .iter()
            .zip(&refused)
            .map(|(v, r)| if *r { None } else { v })
            .collect();
        out.with_column(Column::new(name.into(), kept))?;
    }
    out.with_column(Column::new(P::note.into(), notes))?;
    Ok(out)
}

#[derive(Default)]
struct Columns {
    variant: Vec<String>,
    metric: Vec<&'static str>,
    diff: Vec<Option<f64>>,
    low: Vec<Option<f64>>,
    high: Vec<Option<f64>>,
    n: Vec<u32>,
    wins: Vec<u32>,
    ties: Vec<u32>,
    losses: Vec<u32>,
}
