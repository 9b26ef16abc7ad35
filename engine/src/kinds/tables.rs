//! The tables the generic kinds write, declared once for all of them.

use crate::schema::{ColumnDef, Dtype, TableDef};

/// The one table of `read_table`, `query` and the probes: its columns are the file's, the
/// query's or the input's.
pub static TABLE: TableDef = TableDef::open(
    "table",
    "the data read, queried or passed through (columns as the params make them)",
);

/// `write_table`'s record of an export.
pub static WRITTEN: TableDef = TableDef {
    name: "written",
    doc: "one row: the file exported",
    columns: &[
        ColumnDef::new("path", Dtype::Str, "the file, as the params name it"),
        ColumnDef::new("rows", Dtype::U64, "rows written"),
        ColumnDef::new("blake3", Dtype::Str, "hash of the file's bytes"),
    ],
    open: false,
};
