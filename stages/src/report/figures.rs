//! The report's plots from the aggregate tables: Figure 2 (perturbation subset minus overall),
//! Figure 3 (failure labels) and Figure 4 (personalization against history top-k). Each is an
//! SVG drawing plus an HTML legend: every variant keeps its colour ([`super::palette`]) across
//! figures, and names wrap in the legend instead of being cut at the drawing's edge.

use std::collections::BTreeMap;

use polars::prelude::*;
use serde::Serialize;

use super::palette::color_of;
use super::svg::{bars, lines, Bar, Series};
use super::view::text_column;
use crate::tables::aggregate::{
    FailureLabelsRow as F, HistoryCurveRow as H, PerturbationsRow as P,
};

/// One figure: the drawing and who each colour is.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    /// The SVG drawing.
    pub svg: String,
    /// The colours in it, in order.
    pub legend: Vec<LegendEntry>,
}

/// One legend line.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LegendEntry {
    /// The variant (or series).
    pub name: String,
    /// Its colour.
    pub color: String,
}

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

/// The legend of the variants that occur in `present`, in palette order.
fn legend(variants: &[String], present: &[&String]) -> Vec<LegendEntry> {
    let mut out: Vec<LegendEntry> = variants
        .iter()
        .filter(|v| present.contains(v))
        .map(|v| LegendEntry {
            name: v.clone(),
            color: color_of(variants, v),
        })
        .collect();
    for v in present {
        if !variants.contains(v) && !out.iter().any(|e| &e.name == *v) {
            out.push(LegendEntry {
                name: (*v).clone(),
                color: color_of(variants, v),
            });
        }
    }
    out
}

/// Figure 2: `delta` of `metric` per perturbation subset (the `none` subset left out), one
/// bar per variant in each. `variants` orders and colours them.
pub fn perturbation_deltas(
    perturbations: &DataFrame,
    metric: &str,
    variants: &[String],
) -> PolarsResult<Figure> {
    let (variant, subset, m) = (
        texts(perturbations, P::variant)?,
        texts(perturbations, P::perturbation)?,
        texts(perturbations, P::metric)?,
    );
    let delta = floats(perturbations, P::delta)?;
    let rows: Vec<usize> = (0..perturbations.height())
        .filter(|&i| m[i] == metric && subset[i] != "none")
        .collect();
    let mut groups: Vec<(String, Vec<Bar>)> = Vec::new();
    for &i in &rows {
        let bar = Bar {
            color: color_of(variants, &variant[i]),
            name: format!("{} · {}", variant[i], subset[i]),
            value: delta[i],
            note: String::new(),
        };
        match groups.iter_mut().find(|(g, _)| *g == subset[i]) {
            Some((_, bars)) => bars.push(bar),
            None => groups.push((subset[i].clone(), vec![bar])),
        }
    }
    let present: Vec<&String> = rows.iter().map(|&i| &variant[i]).collect();
    Ok(Figure {
        svg: bars(
            &format!("fig2-{metric}"),
            &format!("Figure 2: {metric}, perturbation subset minus overall (pp)"),
            &groups,
            true,
            true,
        ),
        legend: legend(variants, &present),
    })
}

/// Figure 3: failed criteria by failure label (shares), one bar per variant in each label;
/// when the judge modes differ, each bar says which (`rule`, `llm`).
pub fn failure_bars(failure_labels: &DataFrame, variants: &[String]) -> PolarsResult<Figure> {
    let (variant, mode, label) = (
        texts(failure_labels, F::variant)?,
        texts(failure_labels, F::mode)?,
        texts(failure_labels, F::failure_label)?,
    );
    let share = floats(failure_labels, F::share)?;
    let modes: std::collections::BTreeSet<&String> = mode.iter().collect();
    let mut groups: Vec<(String, Vec<Bar>)> = Vec::new();
    for i in 0..failure_labels.height() {
        let bar = Bar {
            color: color_of(variants, &variant[i]),
            name: format!("{} · {} · {}", variant[i], mode[i], label[i]),
            value: share[i],
            note: if modes.len() > 1 {
                mode[i].clone()
            } else {
                String::new()
            },
        };
        match groups.iter_mut().find(|(g, _)| *g == label[i]) {
            Some((_, bars)) => bars.push(bar),
            None => groups.push((label[i].clone(), vec![bar])),
        }
    }
    let present: Vec<&String> = variant.iter().collect();
    Ok(Figure {
        svg: bars(
            "fig3-failures",
            "Figure 3: failure labels (share of the variant's failed criteria)",
            &groups,
            true,
            false,
        ),
        legend: legend(variants, &present),
    })
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

/// Figure 4: `metric` against history exposure (top-k ascending, `all` last), one line per
/// series, coloured like the first of its variants.
pub fn history_curve(curve: &DataFrame, metric: &str, variants: &[String]) -> PolarsResult<Figure> {
    let (variant, m, exposure) = (
        texts(curve, H::variant)?,
        texts(curve, H::metric)?,
        texts(curve, H::exposure)?,
    );
    let k = floats(curve, H::top_k)?;
    let value = floats(curve, H::value)?;
    let rows: Vec<usize> = (0..curve.height()).filter(|&i| m[i] == metric).collect();
    let axis = ExposureAxis::new(&rows, &k, &exposure);
    let mut series: BTreeMap<String, (String, Vec<(usize, f64)>)> = BTreeMap::new();
    for &i in &rows {
        if let Some(v) = value[i] {
            let first_color = || color_of(variants, &variant[i]);
            series
                .entry(series_name(&variant[i]))
                .or_insert_with(|| (first_color(), Vec::new()))
                .1
                .push((axis.x(k[i], &exposure[i]), v));
        }
    }
    let series: Vec<Series> = series
        .into_iter()
        .map(|(name, (color, mut pts))| {
            pts.sort_by_key(|p| p.0);
            (name, color, pts)
        })
        .collect();
    Ok(Figure {
        legend: series
            .iter()
            .map(|(name, color, _)| LegendEntry {
                name: name.clone(),
                color: color.clone(),
            })
            .collect(),
        svg: lines(
            &format!("fig4-{metric}"),
            &format!("Figure 4: {metric} against history exposure"),
            &axis.labels(),
            &series,
        ),
    })
}

/// Figure 4's x positions: the distinct `top_k` values ascending, then the exposures without
/// one (`all`) by name.
struct ExposureAxis {
    ks: Vec<u64>,
    others: Vec<String>,
}

impl ExposureAxis {
    /// The positions of `rows`, from their `k` and `exposure` values.
    fn new(rows: &[usize], k: &[Option<f64>], exposure: &[String]) -> Self {
        let mut ks: Vec<u64> = rows
            .iter()
            .filter_map(|&i| k[i].map(|v| v as u64))
            .collect();
        ks.sort_unstable();
        ks.dedup();
        let mut others: Vec<String> = rows
            .iter()
            .filter(|&&i| k[i].is_none())
            .map(|&i| head(&exposure[i]).to_string())
            .collect();
        others.sort();
        others.dedup();
        Self { ks, others }
    }

    /// The position of a row with `k` and `exposure`.
    fn x(&self, k: Option<f64>, exposure: &str) -> usize {
        match k {
            Some(v) => self.ks.iter().position(|x| *x == v as u64).unwrap_or(0),
            None => {
                let head = head(exposure);
                self.ks.len() + self.others.iter().position(|o| o == head).unwrap_or(0)
            }
        }
    }

    /// The axis labels: `none` for k = 0, `top k`, then the other exposures.
    fn labels(&self) -> Vec<String> {
        let ks = self.ks.iter().map(|k| {
            if *k == 0 {
                "none".to_string()
            } else {
                format!("top {k}")
            }
        });
        ks.chain(self.others.iter().cloned()).collect()
    }
}

/// An exposure's name without its log part (`top_k:10/noisy` → `top_k:10`).
fn head(exposure: &str) -> &str {
    exposure.split('/').next().unwrap_or_default()
}
