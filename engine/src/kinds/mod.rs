//! Generic stage kinds: enough to use the engine on its own (load, transform, export tables) and to
//! exercise scheduling, retries and resume in tests (`probe`).

mod probe;
mod probe_async;
mod query;
mod read_table;
mod tables;
mod write_table;

pub use probe::{Probe, ProbeParams, ProbeState};
pub use probe_async::ProbeAsync;
pub use query::Query;
pub use read_table::{ReadTable, TableFormat};
pub use tables::{TABLE, WRITTEN};
pub use write_table::WriteTable;

use crate::kind::Registry;

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
