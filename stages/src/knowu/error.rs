//! Typed errors of everything KnowU (interop, simulation, profile and log files), each naming the file (or table), the place in it and
//! the fix, and mapped onto [`StageError`] so the CLI can tell user mistakes (exit code 2) from
//! environment failures.

use std::path::{Path, PathBuf};

use prefflow_engine::StageError;

/// How to get past a broken file: an episode's files can be skipped, other files must be fixed.
fn fix_for(path: &Path) -> &'static str {
    let in_episode = ["traj.json", "result.txt"]
        .iter()
        .any(|name| path.file_name().is_some_and(|n| n == *name));
    if in_episode {
        "fix the file, or rename its task directory to contain `_backup_` so it is ignored"
    } else {
        "fix the file"
    }
}

/// `field `x`` for a JSON path, or "the top level".
fn field_phrase(field: &str) -> String {
    if field == "(top level)" {
        "the top level".to_string()
    } else {
        format!("field `{field}`")
    }
}

/// Why reading, checking or writing KnowU-Bench data failed.
#[derive(Debug, thiserror::Error)]
pub enum KnowuError {
    /// A file or directory could not be read.
    #[error("{}: cannot read: {source}; check that the path exists and is readable", path.display())]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// KnowU-Bench's published data is not where the setting points ([`super::data`]).
    #[error("{}", super::data::missing(path))]
    DataMissing {
        /// The file or folder looked for.
        path: PathBuf,
    },
    /// A path that must be a directory is something else or missing.
    #[error("{}: not a directory; `{param}` must name a directory", path.display())]
    NotADirectory {
        /// The path as resolved.
        path: PathBuf,
        /// The parameter that named it.
        param: &'static str,
    },
    /// A JSON file does not parse.
    #[error("{}:{line}:{column}: invalid JSON: {message}; {}", path.display(), fix_for(path))]
    Json {
        /// The file.
        path: PathBuf,
        /// 1-based line of the syntax error.
        line: usize,
        /// 1-based column of the syntax error.
        column: usize,
        /// What the parser expected.
        message: String,
    },
    /// A JSON file parses but a field has the wrong shape.
    #[error("{}: {} must be {expected}, found {found}; {}", path.display(), field_phrase(field), fix_for(path))]
    Shape {
        /// The file.
        path: PathBuf,
        /// JSON path of the field, like `0.traj[3].action`.
        field: String,
        /// What the field must be.
        expected: &'static str,
        /// What it is.
        found: String,
    },
    /// A YAML file (persona profile) does not parse.
    #[error("{location}: invalid YAML: {message}; a KnowU profile is YAML starting with `user_profile:` (see user_profile/template.yaml)")]
    Yaml {
        /// `file:line:column` of the problem.
        location: String,
        /// What the parser reported.
        message: String,
    },
    /// A data file (tasks.csv, leaderboard.json) has unusable content.
    #[error("{}: {message}", path.display())]
    Content {
        /// The file.
        path: PathBuf,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// An input table lacks a column or has an unusable value.
    #[error("input table `{table}`: {message}")]
    Table {
        /// The table's name.
        table: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A table computation failed on inputs that passed the column checks: a bug, not user data.
    #[error("table computation failed: {0}")]
    Compute(#[from] polars::prelude::PolarsError),
    /// Writing an export failed (disk full, permissions): not the user's data at fault.
    #[error("{}: cannot write: {source}", path.display())]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl KnowuError {
    /// A read error for `path`.
    pub fn read(path: &Path, source: std::io::Error) -> Self {
        Self::Read {
            path: path.to_path_buf(),
            source,
        }
    }

    /// A read error for a file of KnowU's published data: a missing file says what the data
    /// is, where to get it and the setting ([`super::data::missing`]).
    pub fn data(path: &Path, source: std::io::Error) -> Self {
        if source.kind() == std::io::ErrorKind::NotFound {
            Self::DataMissing {
                path: path.to_path_buf(),
            }
        } else {
            Self::read(path, source)
        }
    }

    /// A syntax error from serde_json in the file at `path`.
    pub fn json(path: &Path, e: &serde_json::Error) -> Self {
        let full = e.to_string();
        // serde_json appends " at line L column C"; the location is rendered separately.
        let message = full
            .rsplit_once(" at line ")
            .map_or(full.as_str(), |(m, _)| m)
            .to_string();
        Self::Json {
            path: path.to_path_buf(),
            line: e.line(),
            column: e.column(),
            message,
        }
    }

    /// A located YAML error from serde-saphyr in the file at `path`.
    pub fn yaml(path: &Path, e: &serde_saphyr::Error) -> Self {
        let problem = prefflow_engine::input::yaml_problem(e);
        Self::Yaml {
            location: problem.place(&path.display().to_string()),
            message: problem.text(),
        }
    }

    /// A wrong-shape error for `field` of the JSON file at `path`.
    pub fn shape(
        path: &Path,
        field: impl Into<String>,
        expected: &'static str,
        found: &serde_json::Value,
    ) -> Self {
        Self::Shape {
            path: path.to_path_buf(),
            field: field.into(),
            expected,
            found: Self::describe(found),
        }
    }

    /// A problem with an input table.
    pub fn table(table: &str, message: impl Into<String>) -> Self {
        Self::Table {
            table: table.to_string(),
            message: message.into(),
        }
    }

    /// An input table that does not hold what its row struct reads (`tables::row`).
    pub fn rows(e: crate::tables::row::RowError) -> Self {
        Self::table(
            e.table,
            format!("{e}; see docs/tables.md for the columns each table must carry"),
        )
    }

    /// A write error for `path`.
    pub fn write(path: &Path, source: std::io::Error) -> Self {
        Self::Write {
            path: path.to_path_buf(),
            source,
        }
    }
}

impl KnowuError {
    /// A short description of a JSON value for error messages: its type and, for scalars, the
    /// value.
    pub fn describe(value: &serde_json::Value) -> String {
        use serde_json::Value;
        match value {
            Value::Null => "null".into(),
            Value::Bool(b) => format!("the boolean {b}"),
            Value::Number(n) => format!("the number {n}"),
            Value::String(s) => {
                let short: String = s.chars().take(40).collect();
                format!("the string {short:?}")
            }
            Value::Array(a) => format!("an array of {} element(s)", a.len()),
            Value::Object(_) => "an object".into(),
        }
    }
}

impl From<KnowuError> for StageError {
    fn from(e: KnowuError) -> Self {
        match e {
            KnowuError::Write { .. } | KnowuError::Compute(_) => StageError::Failed(e.to_string()),
            _ => StageError::Input(e.to_string()),
        }
    }
}
