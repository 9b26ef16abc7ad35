//! Typed errors of the task pipeline. Every error a user can cause (a template, a review sheet)
//! names the file and the place in it, and says how to fix it; the kinds report them as bad input
//! (exit code 2).

use crate::world::WorldError;

/// Why a predicate (a criterion's machine check) is malformed, and where inside it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("predicate at `{path}`: {message}")]
pub struct PredicateError {
    /// Dotted path inside the predicate (`$` is the root), e.g. `$.all[1].where`.
    pub path: String,
    /// What is wrong and how to write it instead.
    pub message: String,
}

impl PredicateError {
    /// An error at `path`.
    pub fn new(path: &str, message: impl Into<String>) -> Self {
        Self {
            path: path.to_string(),
            message: message.into(),
        }
    }
}

/// Everything that can go wrong while generating, reviewing or validating tasks.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// A task template is malformed or does not fit the world. `at` is `file[:line:col]` plus the
    /// template (and variant) it concerns.
    #[error("{at}: {message}")]
    Template {
        /// Where: file, line, template id, variant.
        at: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A review sheet cell (or header) is invalid; nothing of the sheet is applied.
    #[error("{file}: row {row}{}: {message}", column_part(.column))]
    Sheet {
        /// The sheet file as named in the pipeline.
        file: String,
        /// Spreadsheet row: 1 is the header, 2 the first task.
        row: usize,
        /// The column at fault (empty when the whole row is, e.g. a ragged row).
        column: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A sheet cannot be read or written at all.
    #[error("{file}: {message}")]
    File {
        /// The file.
        file: String,
        /// The underlying problem.
        message: String,
    },
    /// An upstream table lacks a column or holds an undecodable cell (a contract violation, not
    /// user data).
    #[error("table `{table}`: {message}")]
    Table {
        /// The table.
        table: String,
        /// What is wrong.
        message: String,
    },
    /// The world could not be rebuilt from its tables.
    #[error(transparent)]
    World(#[from] WorldError),
    /// Building or reading a table failed.
    #[error("table error: {0}")]
    Polars(#[from] polars::prelude::PolarsError),
}

impl TaskError {
    /// A table contract violation.
    pub fn table(table: &str, message: impl Into<String>) -> Self {
        TaskError::Table {
            table: table.to_string(),
            message: message.into(),
        }
    }

    /// Whether the user's files are at fault (exit code 2) rather than the program.
    pub fn is_user_error(&self) -> bool {
        matches!(
            self,
            TaskError::Template { .. } | TaskError::Sheet { .. } | TaskError::File { .. }
        )
    }
}

impl From<TaskError> for prefflow_engine::StageError {
    fn from(e: TaskError) -> Self {
        if e.is_user_error() {
            prefflow_engine::StageError::Input(e.to_string())
        } else {
            prefflow_engine::StageError::Failed(e.to_string())
        }
    }
}

/// `, column `name`` for a sheet error about one cell; nothing when the whole row is at fault.
fn column_part(column: &str) -> String {
    if column.is_empty() {
        String::new()
    } else {
        format!(", column `{column}`")
    }
}
