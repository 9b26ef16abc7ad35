//! The HTML report: one self-contained file (inline CSS and SVG, no scripts, no network) with
//! Table 1, paired differences, pass^k, judge agreement, the Figure 2–4 plots and a per-task
//! drill-down into trajectories, ask_user exchanges and criterion verdicts. The page layout is
//! a minijinja template (`datasets/report/report.html.j2`); this module prepares its data.

pub mod drilldown;
pub mod figures;
pub mod svg;

use polars::prelude::*;
use serde::Serialize;

/// A table as the template shows it: header and formatted cells.
#[derive(Debug, Clone, Serialize, Default)]
pub struct TableView {
    /// Column names.
    pub columns: Vec<String>,
    /// Cells, formatted (`n/a` for nulls, floats with 3 decimals).
    pub rows: Vec<Vec<String>>,
}

/// A column's values as text; nulls become `n/a` (undefined is shown, never hidden as 0).
pub fn text_column(df: &DataFrame, name: &str) -> PolarsResult<Vec<Option<String>>> {
    let Ok(column) = df.column(name) else {
        return Ok(vec![None; df.height()]);
    };
    let column = match column.dtype() {
        DataType::Float32 | DataType::Float64 => column
            .cast(&DataType::Float64)?
            .f64()?
            .iter()
            .map(|v| v.map(|v| format!("{v:.3}")))
            .collect::<Vec<_>>(),
        DataType::String => column
            .str()?
            .iter()
            .map(|v| v.map(str::to_string))
            .collect(),
        DataType::List(_) => {
            let series = column.as_materialized_series();
            (0..series.len())
                .map(|i| match series.get(i) {
                    Ok(AnyValue::List(items)) => items.str().ok().map(|items| {
                        let items: Vec<&str> = items.iter().flatten().collect();
                        items.join(", ")
                    }),
                    _ => None,
                })
                .collect()
        }
        _ => column
            .cast(&DataType::String)?
            .str()?
            .iter()
            .map(|v| v.map(str::to_string))
            .collect(),
    };
    Ok(column)
}

/// The whole of a (small, aggregate) table as text.
pub fn table_view(df: &DataFrame) -> PolarsResult<TableView> {
    let columns: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|c| c.to_string())
        .collect();
    let cells: Vec<Vec<Option<String>>> = columns
        .iter()
        .map(|c| text_column(df, c))
        .collect::<PolarsResult<_>>()?;
    let rows = (0..df.height())
        .map(|i| {
            cells
                .iter()
                .map(|c| c[i].clone().unwrap_or_else(|| "n/a".into()))
                .collect()
        })
        .collect();
    Ok(TableView { columns, rows })
}

/// Table 1 pivoted for reading: one row per metric, one column per variant, cells
/// `value [ci_low, ci_high]` from the `display` column.
pub fn table1_view(table1: &DataFrame) -> PolarsResult<TableView> {
    let variant = text_column(table1, "variant")?;
    let metric = text_column(table1, "metric")?;
    let display = text_column(table1, "display")?;
    let n = text_column(table1, "n")?;
    let templates = text_column(table1, "templates").ok();
    let mut variants: Vec<String> = Vec::new();
    let mut metrics: Vec<String> = Vec::new();
    for i in 0..table1.height() {
        let (v, m) = (
            variant[i].clone().unwrap_or_default(),
            metric[i].clone().unwrap_or_default(),
        );
        if !variants.contains(&v) {
            variants.push(v);
        }
        if !metrics.contains(&m) {
            metrics.push(m);
        }
    }
    let cell = |v: &str, m: &str| -> String {
        (0..table1.height())
            .find(|&i| variant[i].as_deref() == Some(v) && metric[i].as_deref() == Some(m))
            .map(|i| {
                let shown = display[i].clone().unwrap_or_else(|| "n/a".into());
                let n = n[i].clone().unwrap_or_default();
                match templates.as_ref().and_then(|t| t[i].clone()) {
                    Some(t) => format!("{shown} (n={n}, {t} templates)"),
                    None => format!("{shown} (n={n})"),
                }
            })
            .unwrap_or_else(|| "n/a".into())
    };
    let mut columns = vec!["metric".to_string()];
    columns.extend(variants.iter().map(|v| {
        if v.is_empty() {
            "(unswept)".into()
        } else {
            v.clone()
        }
    }));
    let mut rows: Vec<Vec<String>> = metrics
        .iter()
        .map(|m| {
            std::iter::once(m.clone())
                .chain(variants.iter().map(|v| cell(v, m)))
                .collect()
        })
        .collect();
    // The last row says which judge produced each column's numbers.
    if table1.schema().contains("judge") {
        let judge = text_column(table1, "judge")?;
        let of = |v: &str| {
            (0..table1.height())
                .find(|&i| variant[i].as_deref() == Some(v))
                .and_then(|i| judge[i].clone())
                .unwrap_or_else(|| "n/a".into())
        };
        rows.push(
            std::iter::once("judge".to_string())
                .chain(variants.iter().map(|v| of(v)))
                .collect(),
        );
    }
    Ok(TableView { columns, rows })
}

/// A table view as aligned plain text, for terminals.
pub fn render_text(view: &TableView) -> String {
    let width = |i: usize| {
        std::iter::once(&view.columns[i])
            .chain(view.rows.iter().map(|r| &r[i]))
            .map(|s| s.chars().count())
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..view.columns.len()).map(width).collect();
    let line = |cells: &[String]| -> String {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c}{}", " ".repeat(w - c.chars().count())))
            .collect();
        format!("{}\n", padded.join("  ").trim_end())
    };
    let mut out = line(&view.columns);
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    out.push_str(&line(&rule));
    for row in &view.rows {
        out.push_str(&line(row));
    }
    out
}
