//! `read_table`: a file (CSV, JSON, JSONL, Parquet) → one table.

use std::fs::File;
use std::path::Path;

use polars::prelude::*;
use serde::Deserialize;

use crate::error::StageError;
use crate::kind::{Kind, StageContext, Tables};

/// File formats `read_table` and `write_table` understand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TableFormat {
    /// Comma-separated with a header row.
    Csv,
    /// A JSON array of objects.
    Json,
    /// One JSON object per line.
    Jsonl,
    /// Apache Parquet.
    Parquet,
}

impl TableFormat {
    /// The format implied by a file extension.
    pub fn from_path(path: &str) -> Option<Self> {
        let ext = Path::new(path).extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "csv" => Some(Self::Csv),
            "json" => Some(Self::Json),
            "jsonl" | "ndjson" => Some(Self::Jsonl),
            "parquet" | "pq" => Some(Self::Parquet),
            _ => None,
        }
    }

    /// The explicit format, else the one implied by `path`.
    pub fn resolve(explicit: Option<Self>, path: &str) -> Result<Self, StageError> {
        explicit.or_else(|| Self::from_path(path)).ok_or_else(|| {
            StageError::Input(format!(
                "cannot tell the format of `{path}` from its extension; set `format: csv|json|jsonl|parquet`"
            ))
        })
    }
}

/// Parameters of `read_table`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadTableParams {
    /// File to read, relative to the working directory.
    pub path: String,
    /// Format; inferred from the extension when absent.
    #[serde(default)]
    pub format: Option<TableFormat>,
}

/// Reads a data file into a table; the file's content is part of the cache key.
pub struct ReadTable;

impl Kind for ReadTable {
    type Params = ReadTableParams;
    type State = ();
    const NAME: &'static str = "read_table";
    const VERSION: &'static str = "1";
    const OUTPUT_DEFS: &'static [&'static crate::schema::TableDef] = &[&super::tables::TABLE];
    const SUMMARY: &'static str =
        "read a CSV/JSON/JSONL/Parquet file into table `table` (params: path, format?)";

    fn external_inputs(&self, params: &Self::Params) -> Vec<String> {
        vec![params.path.clone()]
    }

    fn run(&self, params: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let format = TableFormat::resolve(params.format, &params.path)?;
        let path = ctx.resolve(&params.path);
        let df =
            read(&path, format).map_err(|e| StageError::Input(format!("{}: {e}", params.path)))?;
        Ok(Tables::single("table", df))
    }
}

fn read(path: &Path, format: TableFormat) -> Result<DataFrame, String> {
    let open = || {
        File::open(path).map_err(|e| {
            format!(
                "cannot open: {e}; check the path (relative paths start at the working directory)"
            )
        })
    };
    let result = match format {
        TableFormat::Csv => CsvReadOptions::default()
            .with_has_header(true)
            .try_into_reader_with_file_path(Some(path.to_path_buf()))
            .and_then(|r| r.finish()),
        TableFormat::Json => JsonReader::new(open()?)
            .with_json_format(JsonFormat::Json)
            .finish(),
        TableFormat::Jsonl => JsonReader::new(open()?)
            .with_json_format(JsonFormat::JsonLines)
            .finish(),
        TableFormat::Parquet => ParquetReader::new(open()?).finish(),
    };
    result.map_err(|e| match format {
        TableFormat::Parquet => format!("not a readable Parquet file: {e}"),
        _ => text_problem(path, format == TableFormat::Csv).unwrap_or_else(|| e.to_string()),
    })
}

/// After the reader failed on a text format: the encoding problem or malformed CSV row, in the
/// user's words and located, when there is one to name.
fn text_problem(path: &Path, is_csv: bool) -> Option<String> {
    let text = match crate::input::read_text(path, "") {
        Ok(t) => t,
        Err(crate::input::TextError::Encoding { at, what }) => {
            return Some(format!(
                "line {}, column {}: {what}; re-save the file as UTF-8",
                at.line, at.column
            ))
        }
        Err(crate::input::TextError::Io { source, .. }) => {
            return Some(format!(
            "cannot open: {source}; check the path (relative paths start at the working directory)"
        ))
        }
    };
    crate::input::csv_problem(&text)
        .filter(|_| is_csv)
        .map(|p| p.to_string())
}
