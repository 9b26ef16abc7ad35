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
            doc,
        }
    }

    /// A nullable column.
    pub const fn nullable(name: &'static str, dtype: Dtype, doc: &'static str) -> Self {
        Self {
            name,
            dtype,
            nullable: true,
            doc,
        }
    }
}

/// One inter-stage table: its name and the columns every producer writes and every consumer
/// may rely on (a producer may add columns, never rename or drop these).
#[derive(Debug, Clone, Copy)]
pub struct TableDef {
    /// The table's name, as kinds write it and `inputs` name it.
    pub name: &'static str,
    /// What one row is (Markdown).
    pub doc: &'static str,
    /// The declared columns, in order.
    pub columns: &'static [ColumnDef],
}

impl TableDef {
    /// The column called `name`.
    pub fn column(&self, name: &str) -> Option<&ColumnDef> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// A table with no rows and the declared columns: what a stage writes when it has nothing
    /// to say (a per-item stage with no items), so consumers still find every column.
    pub fn empty_frame(&self) -> DataFrame {
        let columns: Vec<Column> = self
            .columns
            .iter()
            .map(|c| Column::new_empty(c.name.into(), &c.dtype.polars()))
            .collect();
        DataFrame::new(0, columns).unwrap_or_else(|_| DataFrame::empty())
    }

    /// The declared columns `df` lacks or holds with another type, phrased for a message;
    /// empty when `df` honours the definition.
    pub fn mismatches(&self, df: &DataFrame) -> Vec<String> {
        let mut out = Vec::new();
        for c in self.columns {
            match df.column(c.name) {
                Err(_) => out.push(format!("no column `{}` ({})", c.name, c.dtype.name())),
                Ok(col) if !c.dtype.matches(col.dtype()) => out.push(format!(
                    "column `{}` is {}, not {}",
                    c.name,
                    col.dtype(),
                    c.dtype.name()
                )),
                Ok(col) if !c.nullable && col.null_count() > 0 => {
                    out.push(format!("column `{}` holds nulls", c.name))
                }
                Ok(_) => {}
            }
        }
        out
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
