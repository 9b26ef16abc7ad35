//! How `prefflow show` prints a table: `table` (aligned text), `csv`, `json` (an array of row
//! objects) or `markdown`. No format cuts a cell or drops a column; `--width N` opts into cutting
//! cells of `table` and `markdown` to N characters (marked `…`). A one-column table of text
//! lines (a rendering such as `leaderboard.text`) prints its lines as they are.

use clap::ValueEnum;
use polars::prelude::*;

/// Output formats of `prefflow show`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned columns, numbers right-aligned, every cell whole.
    Table,
    /// RFC 4180 CSV with a header row.
    Csv,
    /// A JSON array of row objects.
    Json,
    /// A Markdown (GitHub) table.
    Markdown,
}

/// How much of a table to print.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Rows to print (`None`: all).
    pub rows: Option<usize>,
    /// Cut text cells of `table` / `markdown` to this many characters (`None`: never cut).
    pub width: Option<usize>,
}

/// Text rendering of `df` in `format`: the data alone (the caller prints any title).
pub fn render(df: &DataFrame, format: Format, limits: Limits) -> PolarsResult<String> {
    let shown = match limits.rows {
        Some(n) if n < df.height() => df.head(Some(n)),
        _ => df.clone(),
    };
    let mut out = match format {
        Format::Csv => csv(&shown)?,
        Format::Json => json(&shown)?,
        Format::Table if is_text_lines(&shown) => text_lines(&shown)?,
        Format::Table => table(&shown, limits.width)?,
        Format::Markdown => markdown(&shown, limits.width)?,
    };
    if matches!(format, Format::Table | Format::Markdown) && shown.height() < df.height() {
        out.push_str(&format!(
            "… {} more row(s); --head 0 prints all {}\n",
            df.height() - shown.height(),
            df.height()
        ));
    }
    Ok(out)
}

/// A single string column named `line`: a text rendering stored as a table.
fn is_text_lines(df: &DataFrame) -> bool {
    df.width() == 1
        && df
            .columns()
            .first()
            .is_some_and(|c| c.name().as_str() == "line" && c.dtype() == &DataType::String)
}

fn text_lines(df: &DataFrame) -> PolarsResult<String> {
    let lines = df.columns()[0].str()?.clone();
    Ok(lines
        .iter()
        .map(|l| format!("{}\n", l.unwrap_or("")))
        .collect())
}

fn csv(df: &DataFrame) -> PolarsResult<String> {
    let mut df = flatten_lists(df)?;
    let mut buf = Vec::new();
    CsvWriter::new(&mut buf)
        .include_header(true)
        .finish(&mut df)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

fn json(df: &DataFrame) -> PolarsResult<String> {
    let mut df = df.clone();
    let mut buf = Vec::new();
    JsonWriter::new(&mut buf)
        .with_json_format(JsonFormat::Json)
        .finish(&mut df)?;
    let mut text = String::from_utf8_lossy(&buf).into_owned();
    text.push('\n');
    Ok(text)
}

/// CSV has no nested values: list cells become their JSON text.
fn flatten_lists(df: &DataFrame) -> PolarsResult<DataFrame> {
    let mut out = df.clone();
    for c in df.columns() {
        if matches!(c.dtype(), DataType::List(_) | DataType::Struct(_)) {
            let cells: Vec<Option<String>> = (0..c.len())
                .map(|i| c.get(i).map(|v| (!v.is_null()).then(|| cell(&v))))
                .collect::<PolarsResult<_>>()?;
            out.with_column(Column::new(c.name().clone(), cells))?;
        }
    }
    Ok(out)
}

/// The text of one cell: strings as they are, floats with at most six decimals, lists as JSON.
fn cell(v: &AnyValue<'_>) -> String {
    match v {
        AnyValue::Null => String::new(),
        AnyValue::String(s) => s.to_string(),
        AnyValue::StringOwned(s) => s.to_string(),
        AnyValue::Float64(f) => float(*f),
        AnyValue::Float32(f) => float(f64::from(*f)),
        AnyValue::List(s) => {
            let items: Vec<String> = s
                .iter()
                .map(|x| match x {
                    AnyValue::String(t) => format!("{t:?}"),
                    AnyValue::StringOwned(t) => format!("{:?}", t.as_str()),
                    other => cell(&other),
                })
                .collect();
            format!("[{}]", items.join(", "))
        }
        other => other.to_string(),
    }
}

fn float(f: f64) -> String {
    if f.is_finite() && f.fract() != 0.0 {
        let s = format!("{f:.6}");
        s.trim_end_matches('0').to_string()
    } else {
        f.to_string()
    }
}

fn cut(text: String, width: Option<usize>) -> String {
    match width {
        Some(w) if text.chars().count() > w => {
            let mut t: String = text.chars().take(w.saturating_sub(1)).collect();
            t.push('…');
            t
        }
        _ => text,
    }
}

/// Column names and cell texts (newlines shown as `⏎`, so a row stays one line).
fn grid(df: &DataFrame, width: Option<usize>) -> PolarsResult<(Vec<String>, Vec<Vec<String>>)> {
    let names: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|n| n.to_string())
        .collect();
    let mut rows = vec![Vec::with_capacity(df.width()); df.height()];
    for c in df.columns() {
        for (i, row) in rows.iter_mut().enumerate() {
            let text = cell(&c.get(i)?).replace('\n', "⏎");
            row.push(cut(text, width));
        }
    }
    Ok((names, rows))
}

fn is_numeric(dtype: &DataType) -> bool {
    dtype.is_primitive_numeric()
}

fn table(df: &DataFrame, width: Option<usize>) -> PolarsResult<String> {
    let (names, rows) = grid(df, width)?;
    let numeric: Vec<bool> = df.columns().iter().map(|c| is_numeric(c.dtype())).collect();
    let widths: Vec<usize> = (0..names.len())
        .map(|j| {
            rows.iter()
                .map(|r| r[j].chars().count())
                .chain([names[j].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| -> String {
        let parts: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(j, c)| {
                let pad = widths[j].saturating_sub(c.chars().count());
                if numeric[j] {
                    format!("{}{c}", " ".repeat(pad))
                } else {
                    format!("{c}{}", " ".repeat(pad))
                }
            })
            .collect();
        format!("{}\n", parts.join("  ").trim_end())
    };
    let mut out = line(&names);
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    out.push_str(&format!("{}\n", rule.join("  ")));
    for r in &rows {
        out.push_str(&line(r));
    }
    Ok(out)
}

fn markdown(df: &DataFrame, width: Option<usize>) -> PolarsResult<String> {
    let (names, rows) = grid(df, width)?;
    let esc = |s: &str| s.replace('|', "\\|").replace('⏎', "<br>");
    let numeric: Vec<bool> = df.columns().iter().map(|c| is_numeric(c.dtype())).collect();
    let mut out = format!(
        "| {} |\n",
        names.iter().map(|n| esc(n)).collect::<Vec<_>>().join(" | ")
    );
    let align: Vec<&str> = numeric
        .iter()
        .map(|n| if *n { "---:" } else { "---" })
        .collect();
    out.push_str(&format!("|{}|\n", align.join("|")));
    for r in &rows {
        out.push_str(&format!(
            "| {} |\n",
            r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> DataFrame {
        df!(
            "model" => ["Claude Sonnet 4.6 (2026-04) with a very long approach description that polars would cut", "m|1"],
            "SR" => [60.4, 1.0 / 3.0],
            "n" => [Some(192u32), None],
        )
        .expect("frame")
    }

    const ALL: Limits = Limits {
        rows: None,
        width: None,
    };

    #[test]
    fn table_prints_every_cell_whole_and_aligns_numbers() {
        let out = render(&sample(), Format::Table, ALL).expect("table");
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[2].starts_with("Claude Sonnet 4.6 (2026-04) with a very long approach description that polars would cut  "), "{out}");
        assert!(lines[2].ends_with("60.4  192"), "{out}");
        assert!(lines[3].contains("0.333333"), "{out}");
        // Opt-in cutting.
        let cut = render(
            &sample(),
            Format::Table,
            Limits {
                rows: None,
                width: Some(12),
            },
        )
        .expect("cut");
        assert!(cut.contains("Claude Sonn…"), "{cut}");
        // Rows beyond --head are counted, not silently dropped.
        let head = render(
            &sample(),
            Format::Table,
            Limits {
                rows: Some(1),
                width: None,
            },
        )
        .expect("head");
        assert!(
            head.ends_with("… 1 more row(s); --head 0 prints all 2\n"),
            "{head}"
        );
    }

    #[test]
    fn csv_json_and_markdown() {
        let csv = render(&sample(), Format::Csv, ALL).expect("csv");
        assert_eq!(csv.lines().next(), Some("model,SR,n"));
        assert!(csv.contains("m|1,0.3333333333333333,\n"), "{csv}");
        let json = render(&sample(), Format::Json, ALL).expect("json");
        let v: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
        assert_eq!(v[1]["model"], "m|1");
        assert_eq!(v[1]["n"], serde_json::Value::Null);
        assert_eq!(v[0]["n"], 192);
        let md = render(&sample(), Format::Markdown, ALL).expect("md");
        assert!(
            md.starts_with("| model | SR | n |\n|---|---:|---:|\n"),
            "{md}"
        );
        assert!(md.contains("| m\\|1 | 0.333333 |  |"), "{md}");
    }

    #[test]
    fn text_lines_print_as_they_are_and_lists_as_json() {
        let long = "| 1 | a very long model name that is never cut at sixty characters, whatever polars says |";
        let lines = df!("line" => ["| Rank | Model |", long]).expect("frame");
        let out = render(&lines, Format::Table, ALL).expect("text");
        assert_eq!(out, format!("| Rank | Model |\n{long}\n"));
        let mut lists = ListStringChunkedBuilder::new("ids".into(), 1, 2);
        lists.append_values_iter(["ev_1", "ev_2"].into_iter());
        let df = DataFrame::new_infer_height(vec![lists.finish().into_series().into_column()])
            .expect("frame");
        let csv = render(&df, Format::Csv, ALL).expect("csv");
        assert!(csv.contains("\"[\"\"ev_1\"\", \"\"ev_2\"\"]\""), "{csv}");
        let table = render(&df, Format::Table, ALL).expect("table");
        assert!(table.contains("[\"ev_1\", \"ev_2\"]"), "{table}");
    }
}
