//! An instance's input tables: which blobs its bindings name in the upstream records, loaded
//! into [`InputTable`]s, with a `gather` stage's variants concatenated.

use std::sync::Arc;

use crate::artifact::load_table;
use crate::error::{Error, Result};
use crate::kind::InputTable;
use crate::plan::Instance;
use crate::record::{InstanceRecord, Status};
use crate::store::Store;

/// One input table to load: `stage.table` and the blob holding it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputBlob {
    /// The upstream stage.
    pub stage: String,
    /// The table's name within it.
    pub table: String,
    /// Its blob hash.
    pub blob: String,
}

/// The blobs `inst` reads, in binding order, from its upstream records (binding order too).
/// A disabled upstream instance has no tables and contributes none: the decision only lets an
/// instance run without one when it is a `gather` over the variants that remain.
pub fn input_blobs(inst: &Instance, upstream: &[Arc<InstanceRecord>]) -> Result<Vec<InputBlob>> {
    let mut wanted = Vec::new();
    let enabled = inst
        .bindings
        .iter()
        .zip(upstream)
        .filter(|(_, up)| up.status != Status::Disabled);
    for (b, up) in enabled {
        for t in &b.tables {
            let blob = up
                .tables
                .get(t)
                .map(|e| e.blob.clone())
                .ok_or_else(|| Error::Corrupt {
                    key: format!("{}.{t}", b.stage),
                    reason: "upstream record has no such table".into(),
                })?;
            wanted.push(InputBlob {
                stage: b.stage.clone(),
                table: t.clone(),
                blob,
            });
        }
    }
    Ok(wanted)
}

/// Loads `blobs` (blocking) and concatenates what a `gather` stage receives once per variant.
pub fn load_inputs(store: &dyn Store, blobs: Vec<InputBlob>) -> Result<Vec<InputTable>> {
    let loaded = blobs
        .into_iter()
        .map(|b| {
            load_table(store, &b.blob).map(|df| InputTable {
                stage: b.stage,
                table: b.table,
                df,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    gather_variants(loaded)
}

/// Concatenates the tables a `gather` stage receives once per upstream variant, keeping the
/// first appearance's order; ordinary stages never receive the same table twice.
fn gather_variants(tables: Vec<InputTable>) -> Result<Vec<InputTable>> {
    let mut out: Vec<InputTable> = Vec::new();
    for t in tables {
        match out
            .iter_mut()
            .find(|o| o.stage == t.stage && o.table == t.table)
        {
            None => out.push(t),
            Some(acc) => {
                acc.df.vstack_mut(&t.df).map_err(|e| {
                    Error::RunFailed(format!(
                        "gather: the variants of `{}` have different columns ({e}); a kind must write the same columns in every variant",
                        t.label()
                    ))
                })?;
            }
        }
    }
    for t in &mut out {
        t.df.rechunk_mut();
    }
    Ok(out)
}
