//! `write_table`: export a table to a file outside the store.

use std::fs::File;
use std::path::Path;

use polars::prelude::*;
use serde::Deserialize;

use super::read_table::TableFormat;
use crate::error::StageError;
use crate::keys::hash_bytes;
use crate::kind::{Kind, StageContext, Tables};

/// Parameters of `write_table`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteTableParams {
    /// Destination, relative to the working directory.
    pub path: String,
    /// Format; inferred from the extension when absent.
    #[serde(default)]
    pub format: Option<TableFormat>,
    /// Which input to write (`stage`, `stage.table` or a table name); the only input by default.
    #[serde(default)]
    pub input: Option<String>,
}

/// Writes a table to a file; re-runs when the file was removed or edited since.
pub struct WriteTable;

impl Kind for WriteTable {
    type Params = WriteTableParams;
    type State = ();
    const NAME: &'static str = "write_table";
    const VERSION: &'static str = "1";
    const OUTPUT_DEFS: &'static [&'static crate::schema::TableDef] = &[&super::tables::WRITTEN];
    const SUMMARY: &'static str = "export an input table to path (csv/json/jsonl/parquet); table `written` records path, rows and hash";

    fn cached_output_is_valid(&self, params: &Self::Params, workdir: &Path) -> bool {
        let path = workdir.join(&params.path);
        // The marker written next to the export records the hash we wrote.
        match (std::fs::read(&path), std::fs::read_to_string(marker(&path))) {
            (Ok(bytes), Ok(expected)) => hash_bytes(&bytes) == expected.trim(),
            _ => false,
        }
    }

    fn run(&self, params: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let mut df = match &params.input {
            Some(name) => ctx.input(name)?.clone(),
            None if ctx.inputs.len() == 1 => ctx.inputs[0].df.clone(),
            None => {
                return Err(StageError::Input(format!(
                    "stage `{}` has {} inputs; set `input:` to the one to write",
                    ctx.stage,
                    ctx.inputs.len()
                )))
            }
        };
        let path = ctx.resolve(&params.path);
        if path.is_dir() {
            return Err(StageError::Input(format!(
                "stage `{}`: `path: {}` is a directory; name a file inside it, e.g. `path: {}/{}.csv`",
                ctx.stage,
                params.path,
                params.path.trim_end_matches('/'),
                ctx.stage
            )));
        }
        let format = TableFormat::resolve(params.format, &params.path)?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| StageError::Failed(format!("{}: {e}", dir.display())))?;
        }
        let tmp = path.with_extension("prefflow-tmp");
        write(&tmp, format, &mut df)
            .map_err(|e| StageError::Failed(format!("{}: {e}", params.path)))?;
        std::fs::rename(&tmp, &path)
            .map_err(|e| StageError::Failed(format!("{}: {e}", params.path)))?;
        let bytes = std::fs::read(&path).map_err(|e| StageError::Failed(e.to_string()))?;
        let hash = hash_bytes(&bytes);
        std::fs::write(marker(&path), &hash).map_err(|e| StageError::Failed(e.to_string()))?;
        let written = df!(
            "path" => [params.path.clone()],
            "rows" => [df.height() as u64],
            "blake3" => [hash],
        )?;
        Ok(Tables::single("written", written))
    }
}

fn marker(path: &Path) -> std::path::PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".prefflow-hash");
    path.with_file_name(name)
}

fn write(path: &Path, format: TableFormat, df: &mut DataFrame) -> Result<(), String> {
    let file = File::create(path).map_err(|e| e.to_string())?;
    let result = match format {
        TableFormat::Csv => CsvWriter::new(file).finish(df),
        TableFormat::Json => JsonWriter::new(file)
            .with_json_format(JsonFormat::Json)
            .finish(df),
        TableFormat::Jsonl => JsonWriter::new(file)
            .with_json_format(JsonFormat::JsonLines)
            .finish(df),
        TableFormat::Parquet => ParquetWriter::new(file).finish(df).map(|_| ()),
    };
    result.map_err(|e| e.to_string())
}
