//! Declared tables: the columns a kind writes and the tables (and columns) it reads.
//!
//! Stages talk only through tables, so their columns are a contract. A domain crate defines
//! each inter-stage table once as a [`TableDef`]; a kind names the definitions of what it
//! writes ([`crate::Kind::OUTPUT_DEFS`]) and declares what it reads ([`crate::Kind::INPUTS`]).
//! [`crate::plan::Plan::build`] checks every input reference against them before anything
//! runs, and the definitions generate the table documentation (`prefflow tables`).

use polars::prelude::{Column, DataFrame, DataType};

/// A column's type, in the words the docs use (`str`, `u32`, `list[str]`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    /// UTF-8 text.
    Str,
    /// Boolean.
    Bool,
    /// Signed 32-bit integer.
    I32,
    /// Signed 64-bit integer.
    I64,
    /// Unsigned 32-bit integer.
    U32,
    /// Unsigned 64-bit integer.
    U64,
    /// 64-bit float.
    F64,
    /// A list of texts.
    ListStr,
}

impl Dtype {
    /// The name tables.md uses.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::Str => "str",
            Dtype::Bool => "bool",
            Dtype::I32 => "i32",
            Dtype::I64 => "i64",
            Dtype::U32 => "u32",
            Dtype::U64 => "u64",
            Dtype::F64 => "f64",
            Dtype::ListStr => "list[str]",
        }
    }

    /// Whether a polars column of type `dtype` holds this type (an all-null column of any
    /// type counts: polars types a column of nulls as `null`).
    pub fn matches(self, dtype: &DataType) -> bool {
        match (self, dtype) {
            (_, DataType::Null) => true,
            (Dtype::Str, DataType::String) => true,
            (Dtype::Bool, DataType::Boolean) => true,
            (Dtype::I32, DataType::Int32) => true,
            (Dtype::I64, DataType::Int64) => true,
            (Dtype::U32, DataType::UInt32) => true,
            (Dtype::U64, DataType::UInt64) => true,
            (Dtype::F64, DataType::Float64) => true,
            (Dtype::ListStr, DataType::List(inner)) => {
                matches!(inner.as_ref(), DataType::String | DataType::Null)
            }
            _ => false,
        }
    }

    /// The polars type a column of this type is written with.
    pub fn polars(self) -> DataType {
        match self {
            Dtype::Str => DataType::String,
            Dtype::Bool => DataType::Boolean,
            Dtype::I32 => DataType::Int32,
            Dtype::I64 => DataType::Int64,
            Dtype::U32 => DataType::UInt32,
            Dtype::U64 => DataType::UInt64,
            Dtype::F64 => DataType::Float64,
            Dtype::ListStr => DataType::List(Box::new(DataType::String)),
        }
    }
}

/// One declared column.
#[derive(Debug, Clone, Copy)]
pub struct ColumnDef {
    /// Its name.
    pub name: &'static str,
    /// Its type.
    pub dtype: Dtype,
    /// Whether it may hold nulls.
    pub nullable: bool,
    /// `None` for a column every producer writes; for a column only some producers add, the
    /// ones that do (Markdown, e.g. "`run_episodes`"). Consumers may rely only on the former.
    pub only: Option<&'static str>,
    /// What it means (one line, Markdown).
    pub doc: &'static str,
}

impl ColumnDef {
    /// A non-nullable column.
    pub const fn new(name: &'static str, dtype: Dtype, doc: &'static str) -> Self {
        Self {
            name,
            dtype,
            nullable: false,
            only: None,
            doc,
        }
    }

    /// A nullable column.
    pub const fn nullable(name: &'static str, dtype: Dtype, doc: &'static str) -> Self {
        Self {
            name,
            dtype,
            nullable: true,
            only: None,
            doc,
        }
    }

    /// The same column, written only by `producers` (Markdown): a table may lack it, and no
    /// consumer may require it.
    pub const fn only(self, producers: &'static str) -> Self {
        Self {
            only: Some(producers),
            ..self
        }
    }
}

/// One inter-stage table: its name and its columns — those every producer writes and every
/// consumer may rely on, and those only some producers add ([`ColumnDef::only`]). A producer
/// writes nothing else: its results are checked before they are committed.
#[derive(Debug, Clone, Copy)]
pub struct TableDef {
    /// The table's name, as kinds write it and `inputs` name it.
    pub name: &'static str,
    /// What one row is (Markdown).
    pub doc: &'static str,
    /// The declared columns, in order.
    pub columns: &'static [ColumnDef],
    /// True for a table whose columns the stage's params decide (a generic kind's `query`
    /// result, a file `read_table` read): its commit checks no column. False for every
    /// inter-stage table of a domain, whose columns are exactly `columns`.
    pub open: bool,
}

impl TableDef {
    /// A table whose columns the stage's params decide (see [`TableDef::open`]).
    pub const fn open(name: &'static str, doc: &'static str) -> Self {
        Self {
            name,
            doc,
            columns: &[],
            open: true,
        }
    }

    /// The column called `name`.
    pub fn column(&self, name: &str) -> Option<&ColumnDef> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// A table with no rows and the columns every producer writes: what a stage writes when
    /// it has nothing to say (a per-item stage with no items), so consumers still find them.
    pub fn empty_frame(&self) -> DataFrame {
        let columns: Vec<Column> = self
            .columns
            .iter()
            .filter(|c| c.only.is_none())
            .map(|c| Column::new_empty(c.name.into(), &c.dtype.polars()))
            .collect();
        DataFrame::new(0, columns).unwrap_or_else(|_| DataFrame::empty())
    }
}

impl TableDef {
    /// How `df` breaks this definition, strictly: a declared column missing, a column not
    /// declared, a column of another type, nulls in a non-null column. Empty when `df` is
    /// exactly what the definition promises (always, for an [`open`](TableDef::open) table).
    pub fn violations(&self, df: &DataFrame) -> Vec<Violation> {
        if self.open {
            return Vec::new();
        }
        let mut out = Vec::new();
        for c in self.columns {
            match df.column(c.name) {
                Err(_) if c.only.is_some() => {}
                Err(_) => out.push(Violation::MissingColumn {
                    column: c.name,
                    dtype: c.dtype,
                }),
                Ok(col) if !c.dtype.matches(col.dtype()) => out.push(Violation::WrongType {
                    column: c.name,
                    declared: c.dtype,
                    found: col.dtype().to_string(),
                }),
                Ok(col) if !c.nullable && col.null_count() > 0 => out.push(Violation::Nulls {
                    column: c.name,
                    count: col.null_count(),
                }),
                Ok(_) => {}
            }
        }
        for col in df.columns() {
            if self.column(col.name()).is_none() {
                out.push(Violation::ExtraColumn {
                    column: col.name().to_string(),
                    found: col.dtype().to_string(),
                });
            }
        }
        out
    }
}

/// One way a written table breaks its [`TableDef`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    /// A declared column is not there.
    #[error("declared column `{column}` ({}) is missing", .dtype.name())]
    MissingColumn {
        /// The column.
        column: &'static str,
        /// Its declared type.
        dtype: Dtype,
    },
    /// A column is there that the definition does not declare.
    #[error("column `{column}` ({found}) is not declared")]
    ExtraColumn {
        /// The column.
        column: String,
        /// Its polars type.
        found: String,
    },
    /// A declared column holds another type.
    #[error("column `{column}` is {found}, declared {}", .declared.name())]
    WrongType {
        /// The column.
        column: &'static str,
        /// Its declared type.
        declared: Dtype,
        /// The polars type written.
        found: String,
    },
    /// A column declared non-null holds nulls.
    #[error("column `{column}` is declared non-null but holds {count} null(s)")]
    Nulls {
        /// The column.
        column: &'static str,
        /// How many nulls.
        count: usize,
    },
}

impl Violation {
    /// The column the violation is about.
    pub fn column(&self) -> &str {
        match self {
            Violation::MissingColumn { column, .. }
            | Violation::WrongType { column, .. }
            | Violation::Nulls { column, .. } => column,
            Violation::ExtraColumn { column, .. } => column,
        }
    }
}

/// A kind's result that breaks what the kind declares ([`crate::Kind::OUTPUT_DEFS`]): the
/// engine refuses to commit it, so no table reaches the store, or a downstream stage,
/// with columns its contract does not promise.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutputError {
    /// The kind returned a table it does not declare.
    #[error("kind `{kind}` wrote table `{table}`, which it does not declare (its tables: {}); declare it in the kind's OUTPUT_DEFS (a bug in the kind)", .declared.join(", "))]
    UndeclaredTable {
        /// The kind.
        kind: &'static str,
        /// The table.
        table: String,
        /// The tables it declares.
        declared: Vec<&'static str>,
    },
    /// The kind did not return a table it declares.
    #[error("kind `{kind}` did not write its declared table `{table}` (a bug in the kind)")]
    MissingTable {
        /// The kind.
        kind: &'static str,
        /// The table.
        table: &'static str,
    },
    /// A table breaks its definition; every violation is named.
    #[error("kind `{kind}` wrote table `{table}` against its definition: {} (fix the kind or the table's definition in the domain's tables module; a bug in the kind)", join(.violations))]
    Columns {
        /// The kind.
        kind: &'static str,
        /// The table.
        table: &'static str,
        /// Every violation, at least one.
        violations: Vec<Violation>,
    },
}

fn join(violations: &[Violation]) -> String {
    let all: Vec<String> = violations.iter().map(ToString::to_string).collect();
    all.join("; ")
}

impl From<OutputError> for crate::error::StageError {
    fn from(e: OutputError) -> Self {
        crate::error::StageError::Failed(e.to_string())
    }
}

/// Checks a kind's result against its declarations: exactly the declared tables, each one
/// exactly as its definition says. `kind` names the kind in the error.
pub fn check_tables<'a>(
    kind: &'static str,
    defs: &[&'static TableDef],
    tables: impl IntoIterator<Item = (&'a str, &'a DataFrame)>,
) -> Result<(), OutputError> {
    let mut seen = Vec::new();
    for (name, df) in tables {
        let Some(def) = defs.iter().find(|d| d.name == name) else {
            return Err(OutputError::UndeclaredTable {
                kind,
                table: name.to_string(),
                declared: defs.iter().map(|d| d.name).collect(),
            });
        };
        let violations = def.violations(df);
        if !violations.is_empty() {
            return Err(OutputError::Columns {
                kind,
                table: def.name,
                violations,
            });
        }
        seen.push(def.name);
    }
    match defs.iter().find(|d| !seen.contains(&d.name)) {
        Some(def) => Err(OutputError::MissingTable {
            kind,
            table: def.name,
        }),
        None => Ok(()),
    }
}

/// A table a kind reads, found among the stage's inputs the way [`crate::StageContext::input`]
/// finds it: by table name, or by the name of an upstream stage with one table.
#[derive(Debug, Clone, Copy)]
pub struct InputDef {
    /// The table's name.
    pub table: &'static str,
    /// False when the kind does without it.
    pub required: bool,
    /// Its definition, when the domain declares one.
    pub def: Option<&'static TableDef>,
    /// The columns the kind reads from it (each must be in `def`).
    pub columns: &'static [&'static str],
}

impl InputDef {
    /// A table the kind cannot run without, reading `columns` of `def`.
    pub const fn required(def: &'static TableDef, columns: &'static [&'static str]) -> Self {
        Self {
            table: def.name,
            required: true,
            def: Some(def),
            columns,
        }
    }

    /// A table the kind uses when it is there.
    pub const fn optional(def: &'static TableDef, columns: &'static [&'static str]) -> Self {
        Self {
            table: def.name,
            required: false,
            def: Some(def),
            columns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::*;

    static T: TableDef = TableDef {
        name: "t",
        doc: "a test table",
        columns: &[
            ColumnDef::new("id", Dtype::Str, "id"),
            ColumnDef::nullable("note", Dtype::Str, "may be null"),
            ColumnDef::new("extra", Dtype::U32, "some producers").only("`one`"),
        ],
        open: false,
    };

    #[test]
    fn a_table_is_checked_column_by_column() {
        let ok = df!("id" => ["a"], "note" => [None::<&str>]).unwrap();
        assert_eq!(T.violations(&ok), [], "an `only` column may be absent");
        let with_only = df!("id" => ["a"], "note" => ["x"], "extra" => [1u32]).unwrap();
        assert_eq!(T.violations(&with_only), []);
        let bad =
            df!("id" => [None::<&str>], "note" => [1i64], "extra" => ["x"], "z" => [true]).unwrap();
        assert_eq!(
            T.violations(&bad),
            [
                Violation::Nulls {
                    column: "id",
                    count: 1
                },
                Violation::WrongType {
                    column: "note",
                    declared: Dtype::Str,
                    found: "i64".into()
                },
                Violation::WrongType {
                    column: "extra",
                    declared: Dtype::U32,
                    found: "str".into()
                },
                Violation::ExtraColumn {
                    column: "z".into(),
                    found: "bool".into()
                },
            ]
        );
        let open = TableDef::open("o", "anything");
        assert_eq!(open.violations(&bad), []);
    }

    #[test]
    fn a_result_must_hold_exactly_the_declared_tables() {
        let ok = df!("id" => ["a"], "note" => ["x"]).unwrap();
        assert_eq!(check_tables("k", &[&T], [("t", &ok)]), Ok(()));
        assert_eq!(
            check_tables("k", &[&T], []),
            Err(OutputError::MissingTable {
                kind: "k",
                table: "t"
            })
        );
        let err = check_tables("k", &[&T], [("t", &ok), ("u", &ok)]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "kind `k` wrote table `u`, which it does not declare (its tables: t); declare it in the kind's OUTPUT_DEFS (a bug in the kind)"
        );
        let missing = df!("note" => ["x"]).unwrap();
        let err = check_tables("k", &[&T], [("t", &missing)]).unwrap_err();
        assert!(
            err.to_string().starts_with(
                "kind `k` wrote table `t` against its definition: declared column `id` (str) is missing"
            ),
            "{err}"
        );
    }
}
