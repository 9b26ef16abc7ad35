//! What stages exchange: [`Tables`], the named tables a stage (or an item) produces, and
//! [`InputTable`], one upstream table handed to a stage. The store's artifacts, estimates and the
//! [`crate::kind`] contexts all speak these, so they sit below all three.

use indexmap::IndexMap;
use polars::prelude::DataFrame;

/// Named output tables of one stage (or one item of a per-item stage).
#[derive(Debug, Clone, Default)]
pub struct Tables(pub IndexMap<String, DataFrame>);

impl Tables {
    /// Tables from `(name, frame)` pairs.
    pub fn new(tables: impl IntoIterator<Item = (impl Into<String>, DataFrame)>) -> Self {
        Self(tables.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// A single table, the common case.
    pub fn single(name: &str, df: DataFrame) -> Self {
        Self::new([(name, df)])
    }

    /// The table called `name`.
    pub fn get(&self, name: &str) -> Option<&DataFrame> {
        self.0.get(name)
    }
}

/// One upstream table handed to a stage.
#[derive(Debug, Clone)]
pub struct InputTable {
    /// The upstream stage.
    pub stage: String,
    /// The table's name within that stage.
    pub table: String,
    /// The data; for the main input of a per-item stage, only this item's rows.
    pub df: DataFrame,
}

impl InputTable {
    /// `stage.table`, the name users write in `inputs`.
    pub fn label(&self) -> String {
        format!("{}.{}", self.stage, self.table)
    }
}
