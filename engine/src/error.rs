//! Typed errors for the engine.
//!
//! Configuration problems are collected (not thrown one at a time) so a user fixes every mistake in
//! a pipeline file in one pass; each one carries the file, line and column it came from.

use std::fmt;
use std::path::PathBuf;

use polars::prelude::PolarsError;

/// A place in a pipeline file, so every configuration error can point at the line to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The pipeline file, as the user named it.
    pub file: PathBuf,
    /// 1-based line; 0 when unknown.
    pub line: u64,
    /// 1-based column; 0 when unknown.
    pub column: u64,
}

impl Location {
    /// A location for a whole file when no finer position is known.
    pub fn file(file: impl Into<PathBuf>) -> Self {
        Self {
            file: file.into(),
            line: 0,
            column: 0,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.file.display())
        } else {
            write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)
        }
    }
}

/// One problem in a pipeline definition, found before anything runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Where the problem is.
    pub location: Location,
    /// What is wrong.
    pub message: String,
    /// How to fix it, when the engine can tell.
    pub hint: Option<String>,
}

impl ConfigError {
    /// Builds an error at `location` with an optional fix.
    pub fn new(location: Location, message: impl Into<String>, hint: Option<String>) -> Self {
        Self {
            location,
            message: message.into(),
            hint,
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: error: {}", self.location, self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\n  help: {hint}")?;
        }
        Ok(())
    }
}

/// Everything that can go wrong in the engine, split by who must act: the user (`Config`,
/// `Usage`, `Input`) or the operator (`Store`, `Corrupt`, `Polars`, `RunFailed`).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The pipeline file is invalid; every problem found is listed.
    #[error("{}", join_lines(.0))]
    Config(Vec<ConfigError>),
    /// The command line asked for something that does not exist or makes no sense.
    #[error("{0}")]
    Usage(String),
    /// A stage rejected user-provided data (a CSV, a sheet, a dataset file).
    #[error("{0}")]
    Input(String),
    /// Reading or writing the artifact store failed.
    #[error("store I/O error at {path}: {source}")]
    Store {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// A request to a remote object store (`s3://…`) failed after its retries. The message
    /// names the store and the key; credentials never appear in it.
    #[error("object store error at {store} (key `{key}`): {source}")]
    Remote {
        /// The store, as `s3://bucket/prefix`.
        store: String,
        /// The store key involved (empty for listings of the whole store).
        key: String,
        /// What the object store client said.
        source: Box<object_store::Error>,
    },
    /// An object in the store cannot be decoded; it is ignored and rebuilt where possible.
    #[error("corrupt store object `{key}`: {reason}")]
    Corrupt {
        /// Store key of the object.
        key: String,
        /// Why it could not be decoded.
        reason: String,
    },
    /// A table operation failed.
    #[error("table error: {0}")]
    Polars(#[from] PolarsError),
    /// The run finished, but some stages or items failed.
    #[error("{0}")]
    RunFailed(String),
    /// Another live writer holds the store, so the command refused to go on (`gc` while a
    /// run is live). The CLI exits with code 3 for these: try again later.
    #[error("{0}")]
    Busy(String),
    /// The object store did not answer an operation within its deadline (a hung endpoint:
    /// it accepts connections and says nothing). The message names the store, its endpoint
    /// and the key, and says what is kept and what to do.
    #[error("{store} did not answer for {secs:.0} s (key `{key}`); committed items are kept; re-run to resume once it answers again (deadlines: `?timeout=` in the store URL, docs/store.md#timeouts)")]
    Silent {
        /// The store and its endpoint, e.g. `s3://bucket/prefix (endpoint http://…)`.
        store: String,
        /// The key the operation was about.
        key: String,
        /// How long it waited.
        secs: f64,
    },
    /// The store refused the request for a reason only the user can fix — a bucket that does
    /// not exist, rejected credentials, the wrong region, no access, a store directory this
    /// user may not write — with the store named and the fix. The CLI exits with code 2.
    #[error("{0}")]
    StoreSetup(String),
    /// This user (or this machine) may not write the store: a permission, a read-only
    /// filesystem, read-only credentials. The message names the path, its owner and the fix.
    /// Commands that only read (`plan`, `show`, `verify`, a `run` with nothing to compute)
    /// still work; the CLI exits with code 2 otherwise.
    #[error("{0}")]
    NotWritable(String),
}

impl Error {
    /// True when the user's input is at fault: the CLI exits with code 2 for these.
    pub fn is_user_error(&self) -> bool {
        matches!(
            self,
            Error::Config(_)
                | Error::Usage(_)
                | Error::Input(_)
                | Error::StoreSetup(_)
                | Error::NotWritable(_)
        )
    }

    /// True when a write failed because the store's filesystem (or quota) is full: the run
    /// stops launching work and says what to free.
    pub fn is_storage_full(&self) -> bool {
        match self {
            Error::Store { source, .. } => io_is_full(source),
            _ => false,
        }
    }

    /// A single located configuration error.
    pub fn config(location: Location, message: impl Into<String>, hint: Option<String>) -> Self {
        Error::Config(vec![ConfigError::new(location, message, hint)])
    }
}

/// Whether an I/O error means "no space": ENOSPC or EDQUOT (or their portable kinds).
pub fn io_is_full(e: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(e.kind(), ErrorKind::StorageFull | ErrorKind::QuotaExceeded)
        || matches!(e.raw_os_error(), Some(28 | 122))
}

fn join_lines(errors: &[ConfigError]) -> String {
    let mut out = errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    if errors.len() > 1 {
        out.push_str(&format!("\n{} errors in pipeline definition", errors.len()));
    }
    out
}

/// Why a stage (or one item of it) failed. The variant decides what the engine does next.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StageError {
    /// User data is wrong (file, sheet, column); retrying cannot help. Reported as exit code 2.
    #[error("bad input: {0}")]
    Input(String),
    /// A temporary condition (rate limit, timeout, reset); the engine retries it with backoff
    /// when the stage sets `retries:`.
    #[error("transient: {0}")]
    Transient(String),
    /// A temporary condition that the layer which met it (a model or device client) already
    /// retried until its own policy gave up. The engine does not retry it again: a failure is
    /// retried in one layer only (see [`crate::retry`]).
    #[error("transient, retries exhausted: {0}")]
    Exhausted(String),
    /// Any other failure; not retried.
    #[error("{0}")]
    Failed(String),
}

impl From<PolarsError> for StageError {
    fn from(e: PolarsError) -> Self {
        StageError::Failed(e.to_string())
    }
}

/// Result alias for engine operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;
