//! The report's plots from the aggregate tables: Figure 2 (perturbation subset minus overall),
//! Figure 3 (failure labels) and Figure 4 (personalization against history top-k).

use std::collections::BTreeMap;

use polars::prelude::*;

use super::svg::{bars, lines, Series};
use super::text_column;

fn floats(df: &DataFrame, name: &str) -> PolarsResult<Vec<Option<f64>>> {
    match df.column(name) {
        Ok(c) => Ok(c.cast(&DataType::Float64)?.f64()?.iter().collect()),
        Err(_) => Ok(vec![None; df.height()]),
    }
}

fn texts(df: &DataFrame, name: &str) -> PolarsResult<Vec<String>> {
    Ok(text_column(df, name)?
        .into_iter()
        .map(Option::unwrap_or_default)
        .collect())
}

/// Figure 2: `delta` of `metric` per variant × perturbation (the `none` subset left out).
pub fn perturbation_deltas(perturbations: &DataFrame, metric: &str) -> PolarsResult<String> {
    let (variant, subset, m) = (
        texts(perturbations, "variant")?,
        texts(perturbations, "perturbation")?,
        texts(perturbations, "metric")?,
    );
    let delta = floats(perturbations, "delta")?;
    let items: Vec<(String, Option<f64>)> = (0..perturbations.height())
        .filter(|&i| m[i] == metric && subset[i] != "none")
        .map(|i| (format!("{} · {}", variant[i], subset[i]), delta[i]))
        .collect();
    Ok(bars(
        &format!("fig2-{metric}"),
        &format!("Figure 2: {metric}, perturbation subset minus overall (pp)"),
        &items,
        true,
        true,
    ))
}

/// Figure 3: failed criteria by failure label, per variant and judge mode (shares).
pub fn failure_bars(failure_labels: &DataFrame) -> PolarsResult<String> {
    let (variant, mode, label) = (
        texts(failure_labels, "variant")?,
        texts(failure_labels, "mode")?,
        texts(failure_labels, "failure_label")?,
    );
    let share = floats(failure_labels, "share")?;
    let items: Vec<(String, Option<f64>)> = (0..failure_labels.height())
        .map(|i| {
            (
                format!("{} · {} · {}", variant[i], mode[i], label[i]),
                share[i],
            )
        })
        .collect();
    Ok(bars(
        "fig3-failures",
        "Figure 3: failure labels (share of failed criteria)",
        &items,
        true,
        false,
    ))
}

/// The series a variant belongs to on the history curve: its name without the `history=…`
/// sweep component, so variants that differ only in exposure form one line.
pub fn series_name(variant: &str) -> String {
    let rest: Vec<&str> = variant
        .split(',')
        .filter(|p| !p.trim().starts_with("history="))
        .collect();
    let name = rest.join(",");
    if name.is_empty() {
        "all variants".into()
    } else {
        name
    }
}

/// Figure 4: `metric` against history exposure (top-k ascending, `all` last).
pub fn history_curve(curve: &DataFrame, metric: &str) -> PolarsResult<String> {
    let (variant, m, exposure) = (
        texts(curve, "variant")?,
        texts(curve, "metric")?,
        texts(curve, "exposure")?,
    );
    let k = floats(curve, "top_k")?;
    let value = floats(curve, "value")?;
    let rows: Vec<usize> = (0..curve.height()).filter(|&i| m[i] == metric).collect();
    // x positions: distinct k ascending, then exposures without k (`all`) by name.
    let mut ks: Vec<u64> = rows
        .iter()
        .filter_map(|&i| k[i].map(|v| v as u64))
        .collect();
    ks.sort_unstable();
    ks.dedup();
    let mut others: Vec<String> = rows
        .iter()
        .filter(|&&i| k[i].is_none())
        .map(|&i| {
            exposure[i]
                .split('/')
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    others.sort();
    others.dedup();
    let x_of = |i: usize| -> usize {
        match k[i] {
            Some(v) => ks.iter().position(|x| *x == v as u64).unwrap_or(0),
            None => {
                let head = exposure[i].split('/').next().unwrap_or_default();
                ks.len() + others.iter().position(|o| o == head).unwrap_or(0)
            }
        }
    };
    let mut series: BTreeMap<String, Vec<(usize, f64)>> = BTreeMap::new();
    for &i in &rows {
        if let Some(v) = value[i] {
            series
                .entry(series_name(&variant[i]))
                .or_default()
                .push((x_of(i), v));
        }
    }
    let series: Vec<Series> = series
        .into_iter()
        .map(|(name, mut pts)| {
            pts.sort_by_key(|p| p.0);
            (name, pts)
        })
        .collect();
    let labels: Vec<String> = ks
        .iter()
        .map(|k| {
            if *k == 0 {
                "none".to_string()
            } else {
                format!("top {k}")
            }
        })
        .chain(others)
        .collect();
    Ok(lines(
        &format!("fig4-{metric}"),
        &format!("Figure 4: {metric} against history exposure"),
        &labels,
        &series,
    ))
}
