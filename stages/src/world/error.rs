//! Typed errors for loading and building a world. Every problem in an input file carries its
//! place (`file:line:column`) and says what to fix, so a benchmark author never has to guess.

use std::fmt;

use serde::Serialize;

/// A place in an authored input file, printed as `file:line:column` so editors can jump to it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Loc {
    /// The file name (or a caller-chosen label for in-memory sources).
    pub file: String,
    /// 1-based line; 0 when the place is unknown.
    pub line: u32,
    /// 1-based column; 0 when the place is unknown.
    pub column: u32,
}

impl Loc {
    /// A location for a file as a whole, for problems that have no narrower place.
    pub fn file(file: &str) -> Self {
        Self {
            file: file.to_string(),
            line: 0,
            column: 0,
        }
    }
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.file)
        } else {
            write!(f, "{}:{}:{}", self.file, self.line, self.column)
        }
    }
}

/// What kind of semantic problem was found, so tests and tools can react to a kind rather than
/// to message wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// An app's `app:` id differs from its file name, or an id is malformed.
    BadId,
    /// Two things that must have distinct ids share one.
    DuplicateId,
    /// A field declares an unknown `type`, or options/range/`to` that do not fit the type.
    BadFieldType,
    /// A `ref` field points at a table that does not exist.
    UnknownRefTarget,
    /// A default (or literal) is not one of the enum's options.
    DefaultNotInOptions,
    /// A default (or literal) lies outside the field's range.
    DefaultOutOfRange,
    /// A default (or literal) has the wrong shape for its field type.
    ValueTypeMismatch,
    /// An optional operation field has no default.
    MissingDefault,
    /// A required operation field declares a default.
    RequiredHasDefault,
    /// A seed record lacks a field that has no default.
    MissingValue,
    /// A seed record names a field its table does not declare.
    UnknownRecordField,
    /// A record's `ref` value names no record in the target table.
    DanglingRef,
    /// An effect names a table that does not exist.
    UnknownEffectTable,
    /// An effect sets a field its table does not declare, or an insert omits a field without a
    /// default.
    UnknownEffectField,
    /// An expression names an unknown argument or walks through a non-ref or unknown field.
    BadExpression,
    /// An expression's type cannot be stored in the target field.
    ExpressionTypeMismatch,
    /// A template has unbalanced braces or an unknown placeholder.
    BadTemplate,
    /// A table's `title`/`summary` or an operation's `entity` names something undeclared.
    UnknownDisplayField,
    /// A profile entry uses a dimension outside the 13 allowed ones.
    UnknownDimension,
    /// An evidence or noise template names an app that does not exist.
    UnknownEvidenceApp,
    /// A binding reads from an unknown table, filters on an unknown field, or matches no record.
    BadBinding,
    /// An inferable entry has no usable evidence template (per value, if it shifts).
    NoEvidence,
    /// A rendered evidence template does not mention the value it is meant to evidence, or it
    /// mentions the other side of a shift.
    EvidenceMissesValue,
    /// A shift's date lies outside the history window, or `period` is used without a shift.
    BadShift,
    /// A noise template mentions a profile value, so it would evidence something; or a noise
    /// twin of an evidence template names the entry's own value, names an unknown construction,
    /// or has no other value to carry.
    NoiseEvidences,
    /// A template can render an ask-only value into history.
    LeakInTemplate,
    /// A location key (`at:`) names no declared place.
    UnknownPlace,
    /// A companion phrase (`{vocab.with}`) where none fits: on someone else's event (a decoy,
    /// noise), after a text that already has "with", a quote, a parenthesis or a relative
    /// clause ("…for Lena, who is a size 7 with Aisha and Marco").
    CompanionMisfit,
}

/// One semantic problem: where, what is wrong, and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Which rule was broken.
    pub kind: ProblemKind,
    /// Where in which file.
    pub at: Loc,
    /// What is wrong.
    pub message: String,
    /// What to change to fix it.
    pub fix: String,
}

impl Problem {
    /// Builds a problem; a short constructor keeps validation code readable.
    pub fn new(
        kind: ProblemKind,
        at: Loc,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            at,
            message: message.into(),
            fix: fix.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} (fix: {})", self.at, self.message, self.fix)
    }
}

/// All problems found in one validation pass, reported together so authors fix them in one go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problems(pub Vec<Problem>);

impl fmt::Display for Problems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} problem(s):", self.0.len())?;
        for p in &self.0 {
            write!(f, "\n  {p}")?;
        }
        Ok(())
    }
}

/// Every way loading, validating or synthesizing a world can fail.
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    /// A file or directory could not be read.
    #[error("cannot read {path}: {source} (fix: check the path; relative paths start at the working directory)")]
    Read {
        /// The path that failed.
        path: String,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid YAML/JSON for its schema (syntax, unknown key, wrong shape).
    #[error("{at}: {message}")]
    Syntax {
        /// Where the parser stopped.
        at: Loc,
        /// The parser's explanation.
        message: String,
    },
    /// The file parsed but breaks semantic rules.
    #[error("{0}")]
    Invalid(Problems),
    /// A directory that must hold definitions holds none.
    #[error("no {what} files (*.yaml) in {dir}; add at least one")]
    Empty {
        /// What was expected, e.g. "app".
        what: &'static str,
        /// The directory searched.
        dir: String,
    },
    /// History synthesis parameters cannot be satisfied.
    #[error("history synthesis: {0}")]
    Synthesis(String),
    /// A world table could not be built as a DataFrame.
    #[error("building table {table}: {source}")]
    Table {
        /// The table being built.
        table: &'static str,
        /// The polars error.
        #[source]
        source: polars::error::PolarsError,
    },
}

impl WorldError {
    /// The problems of an `Invalid` error (empty for other kinds), for callers that inspect them.
    pub fn problems(&self) -> &[Problem] {
        match self {
            WorldError::Invalid(p) => &p.0,
            _ => &[],
        }
    }
}

/// Shorthand for results in the world module.
pub type Result<T, E = WorldError> = std::result::Result<T, E>;
