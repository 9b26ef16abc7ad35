//! Tables as the report shows them: any table as header and formatted cells ([`TableView`],
//! nulls shown as `n/a`), Table 1 as a grid of variant × metric cells with intervals, and the
//! plain-text rendering `prefflow show` prints. The page, the figures, the drill-down and the
//! text views all build on these.

use polars::prelude::*;
use serde::Serialize;

use crate::tables::aggregate::Table1Row as T1;

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

/// One cell of Table 1: the value as shown (`61.5%`, `n/a`) and what qualifies it (the 95%
/// interval and the tasks behind it).
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct Table1Cell {
    /// The value, e.g. `61.5%` (`n/a` when undefined).
    pub value: String,
    /// `[53.1, 70.0] n=130, 100 templates`; empty for the `agent`, `user` and `judge` rows.
    pub detail: String,
}

/// One row of Table 1: a metric (or `agent`, `user`, `judge`) and one cell per variant.
#[derive(Debug, Clone, Serialize)]
pub struct Table1Row {
    /// The metric.
    pub metric: String,
    /// Cells, in variant order.
    pub cells: Vec<Table1Cell>,
}

/// Table 1 pivoted for reading: metrics down, one column per variant (in first-appearance
/// order), then the rows saying who played each column and which judge scored it.
#[derive(Debug, Clone, Serialize)]
pub struct Table1Grid {
    /// The variants, one per column (`(unswept)` for the empty name).
    pub variants: Vec<String>,
    /// The rows.
    pub rows: Vec<Table1Row>,
}

/// [`Table1Grid`] from a `table1` frame.
pub fn table1_grid(table1: &DataFrame) -> PolarsResult<Table1Grid> {
    let cells = Table1Cells::read(table1)?;
    let mut rows: Vec<Table1Row> = cells
        .metrics
        .iter()
        .map(|m| Table1Row {
            metric: m.clone(),
            cells: cells.variants.iter().map(|v| cells.cell(v, m)).collect(),
        })
        .collect();
    // The last rows say who played each column (the provider's model id of a model), who
    // answered its questions and which judge produced its numbers.
    for label in [T1::agent, T1::user, T1::judge] {
        if table1.schema().contains(label) {
            rows.push(cells.played_by(table1, label)?);
        }
    }
    let variants = cells
        .variants
        .into_iter()
        .map(|v| if v.is_empty() { "(unswept)".into() } else { v })
        .collect();
    Ok(Table1Grid { variants, rows })
}

/// A `table1` frame's columns as text, and where each (variant, metric) cell is.
struct Table1Cells {
    variant: Vec<Option<String>>,
    display: Vec<Option<String>>,
    n: Vec<Option<String>>,
    templates: Option<Vec<Option<String>>>,
    /// Variants and metrics in first-appearance order.
    variants: Vec<String>,
    metrics: Vec<String>,
    at: std::collections::HashMap<(String, String), usize>,
}

impl Table1Cells {
    fn read(table1: &DataFrame) -> PolarsResult<Self> {
        let variant = text_column(table1, T1::variant)?;
        let metric = text_column(table1, T1::metric)?;
        let mut cells = Self {
            display: text_column(table1, T1::display)?,
            n: text_column(table1, T1::n)?,
            templates: text_column(table1, T1::templates).ok(),
            variant,
            variants: Vec::new(),
            metrics: Vec::new(),
            at: Default::default(),
        };
        for (i, m) in metric.into_iter().enumerate() {
            let (v, m) = (
                cells.variant[i].clone().unwrap_or_default(),
                m.unwrap_or_default(),
            );
            if !cells.variants.contains(&v) {
                cells.variants.push(v.clone());
            }
            if !cells.metrics.contains(&m) {
                cells.metrics.push(m.clone());
            }
            cells.at.entry((v, m)).or_insert(i);
        }
        Ok(cells)
    }

    /// Variant `v`'s cell of metric `m`: the value, and its interval and sample size as the
    /// detail (`n/a` when the variant has no such row).
    fn cell(&self, v: &str, m: &str) -> Table1Cell {
        let Some(&i) = self.at.get(&(v.to_string(), m.to_string())) else {
            return Table1Cell {
                value: "n/a".into(),
                detail: String::new(),
            };
        };
        let shown = self.display[i].clone().unwrap_or_else(|| "n/a".into());
        let (value, ci) = match shown.split_once(" [") {
            Some((value, rest)) => (value.to_string(), format!("[{rest}")),
            None => (shown, String::new()),
        };
        let n = self.n[i].clone().unwrap_or_default();
        let tasks = match self.templates.as_ref().and_then(|t| t[i].clone()) {
            Some(t) => format!("n={n}, {t} templates"),
            None => format!("n={n}"),
        };
        Table1Cell {
            value,
            detail: [ci, tasks]
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(" "),
        }
    }

    /// The row of column `label` (`agent`, `user`, `judge`): each variant's first value.
    fn played_by(&self, table1: &DataFrame, label: &str) -> PolarsResult<Table1Row> {
        let values = text_column(table1, label)?;
        let of = |v: &str| {
            let value = (0..self.variant.len())
                .find(|&i| self.variant[i].as_deref() == Some(v))
                .and_then(|i| values[i].clone())
                .unwrap_or_else(|| "n/a".into());
            Table1Cell {
                value,
                detail: String::new(),
            }
        };
        Ok(Table1Row {
            metric: label.to_string(),
            cells: self.variants.iter().map(|v| of(v)).collect(),
        })
    }
}

/// Table 1 pivoted for reading as text: one row per metric, one column per variant, cells
/// `value [ci_low, ci_high] (n=…, … templates)`.
pub fn table1_view(table1: &DataFrame) -> PolarsResult<TableView> {
    let grid = table1_grid(table1)?;
    let mut columns = vec!["metric".to_string()];
    columns.extend(grid.variants);
    let rows = grid
        .rows
        .into_iter()
        .map(|row| {
            std::iter::once(row.metric)
                .chain(row.cells.into_iter().map(text_cell))
                .collect()
        })
        .collect();
    Ok(TableView { columns, rows })
}

/// A Table 1 cell as one line: `61.5% [53.1, 70.0] (n=130, 100 templates)`.
fn text_cell(cell: Table1Cell) -> String {
    if cell.detail.is_empty() {
        return cell.value;
    }
    match cell.detail.split_once(" n=") {
        Some((ci, tasks)) => format!("{} {ci} (n={tasks})", cell.value),
        None if cell.detail.starts_with("n=") => format!("{} ({})", cell.value, cell.detail),
        None => format!("{} {}", cell.value, cell.detail),
    }
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
