//! Generic stage kinds: enough to use the engine on its own (load, transform, export tables) and to
//! exercise scheduling, retries and resume in tests (`probe`).

mod probe;
mod probe_async;
mod query;
mod read_table;
mod write_table;

pub use probe::{Probe, ProbeParams, ProbeState};
pub use probe_async::ProbeAsync;
pub use query::Query;
pub use read_table::{ReadTable, TableFormat};
pub use write_table::WriteTable;

use crate::kind::Registry;
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

/// Registers every generic kind.
pub fn register(registry: &mut Registry) {
    registry.register(ReadTable);
    registry.register(Query);
    registry.register(WriteTable);
    registry.register(Probe);
    registry.register(ProbeAsync);
}

impl Registry {
    /// A registry holding the engine's generic kinds (`read_table`, `query`, `write_table`, `probe`,
    /// `probe_async`).
    pub fn with_generic_kinds() -> Self {
        let mut registry = Self::new();
        register(&mut registry);
        registry
    }
}
