//! Subset tables behind the paper's figures: each perturbation subset minus overall
//! (Figure 2), metrics per history exposure (Figure 4) and the failure-label distribution of
//! failed criteria (Figure 3).

use std::collections::BTreeMap;

use polars::prelude::*;
use prefflow_engine::StageError;

use super::bootstrap::{Bootstrap, Ratio};
use super::pertask::{require, Metric, PerTask, TaskRow, METRICS};
use crate::tables::aggregate::{FailureLabelsRow as F, HistoryCurveRow, PerturbationsRow};
use crate::tables::judging::{Verdict as V, VERDICTS};

/// Metrics the subset tables report: the rates of Table 1 (its leading seven metrics), not the
/// per-task counts.
const SUBSET_METRICS: &[Metric] = METRICS.split_at(7).0;
/// The metrics of the history curve.
const CURVE_METRICS: [Metric; 4] = [
    Metric::Personalization,
    Metric::Inferable,
    Metric::AskOnly,
    Metric::Success,
];

fn ratio(rows: &[&TaskRow], metric: Metric) -> (Option<f64>, u32) {
    let items: Vec<Ratio> = rows.iter().filter_map(|r| r.get(metric)).collect();
    let (num, den) = items
        .iter()
        .fold((0.0, 0.0), |(n, d), r| (n + r.num, d + r.den));
    ((den > 0.0).then(|| num / den), items.len() as u32)
}

/// `perturbations`: variant, perturbation, metric, value (on the subset), overall (all tasks
/// of the variant), delta (value − overall; null when either is undefined), n (subset tasks).
pub fn perturbations(tasks: &PerTask) -> PolarsResult<DataFrame> {
    let mut rows = Vec::new();
    for (v, of_variant) in &tasks.variants {
        let all: Vec<&TaskRow> = of_variant.iter().collect();
        let mut by_subset: BTreeMap<&str, Vec<&TaskRow>> = BTreeMap::new();
        for r in of_variant {
            by_subset.entry(&r.perturbation).or_default().push(r);
        }
        for (p, members) in &by_subset {
            for &m in SUBSET_METRICS {
                let (value, n) = ratio(members, m);
                let (overall, _) = ratio(&all, m);
                rows.push(PerturbationsRow {
                    variant: v.clone(),
                    perturbation: p.to_string(),
                    metric: m.name().to_string(),
                    value,
                    overall,
                    delta: value.zip(overall).map(|(a, b)| a - b),
                    n,
                });
            }
        }
    }
    PerturbationsRow::to_frame(&rows)
}

/// The k of an exposure label: `top_k:10/noisy` → 10, `none/…` → 0, `all/…` and unknown → null.
pub fn top_k(exposure: &str) -> Option<u32> {
    let head = exposure.split('/').next().unwrap_or_default();
    match head {
        "none" => Some(0),
        _ => head.strip_prefix("top_k:")?.parse().ok(),
    }
}

/// `history_curve`: variant, exposure, top_k (null for `all`), metric, value, ci_low, ci_high
/// (resampling templates), n — personalization (and its inferable / ask-only split) and success per exposure.
pub fn history_curve(tasks: &PerTask, boot: &Bootstrap) -> PolarsResult<DataFrame> {
    let mut rows = Vec::new();
    for (v, of_variant) in &tasks.variants {
        let mut by_exposure: BTreeMap<&str, Vec<&TaskRow>> = BTreeMap::new();
        for r in of_variant {
            by_exposure.entry(&r.exposure).or_default().push(r);
        }
        for (e, members) in &by_exposure {
            for m in CURVE_METRICS {
                let key = format!("{v}/{e}/{}", m.name());
                let est = super::pertask::clustered(boot, &key, members.iter().copied(), m);
                rows.push(HistoryCurveRow {
                    variant: v.clone(),
                    exposure: e.to_string(),
                    top_k: top_k(e),
                    metric: m.name().to_string(),
                    value: est.value,
                    ci_low: est.ci_low,
                    ci_high: est.ci_high,
                    n: est.n,
                });
            }
        }
    }
    HistoryCurveRow::to_frame(&rows)
}

/// `failure_labels`: variant, mode, failure_label (`unlabelled` when the judge gave
/// none), count, share (of the failed criteria of that variant and judge mode).
pub fn failure_labels(verdicts: Option<&DataFrame>) -> Result<DataFrame, StageError> {
    let Some(verdicts) = verdicts else {
        return Ok(F::to_frame(&[])?);
    };
    require(
        verdicts,
        VERDICTS.name,
        &[V::variant, V::mode, V::verdict, V::failure_label],
    )?;
    let failed_in_group = col(F::count)
        .sum()
        .over([col(F::variant), col(F::mode)])?
        .cast(DataType::Float64);
    let out = verdicts
        .clone()
        .lazy()
        .filter(col(V::verdict).eq(lit("fail")))
        .with_column(
            col(V::failure_label)
                .cast(DataType::String)
                .fill_null(lit("unlabelled")),
        )
        .group_by([col(V::variant), col(V::mode), col(V::failure_label)])
        .agg([len().cast(DataType::UInt32).alias(F::count)])
        .with_column((col(F::count).cast(DataType::Float64) / failed_in_group).alias(F::share))
        .sort_by_exprs(
            [
                col(F::variant),
                col(F::mode),
                col(F::count),
                col(F::failure_label),
            ],
            SortMultipleOptions::default().with_order_descending_multi([false, false, true, false]),
        )
        .collect()?;
    Ok(out)
}
