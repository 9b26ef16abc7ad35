//! What an episode changed: inserted, updated and deleted records per app table, computed from
//! the overlay in O(changes). Judges check criteria against this and the final state.

use serde::Serialize;
use serde_json::Value;

use crate::world::app::Catalog;
use crate::world::types::TableId;

use super::overlay::Overlay;

/// A record whose fields changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UpdatedRecord {
    /// The record id.
    pub id: String,
    /// Names of the fields that differ.
    pub fields: Vec<String>,
    /// The record before (JSON object).
    pub before: Value,
    /// The record after (JSON object).
    pub after: Value,
}

/// Changes to one table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TableDiff {
    /// App id.
    pub app: String,
    /// Table name.
    pub table: String,
    /// New records (JSON objects), by id.
    pub inserted: Vec<Value>,
    /// Changed records, by id.
    pub updated: Vec<UpdatedRecord>,
    /// Removed records as they were, by id.
    pub deleted: Vec<Value>,
}

/// All changes of an episode, tables in catalog order.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct WorldDiff {
    /// Tables with at least one change.
    pub tables: Vec<TableDiff>,
}

impl WorldDiff {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }

    /// The changes of `app.table`, if any.
    pub fn table(&self, app: &str, table: &str) -> Option<&TableDiff> {
        self.tables
            .iter()
            .find(|t| t.app == app && t.table == table)
    }
}

/// Compares `after` with `before` (both overlays of the same world).
pub(crate) fn diff(cat: &Catalog, before: &Overlay, after: &Overlay) -> WorldDiff {
    let mut ids: Vec<&TableId> = after.tables.keys().collect();
    ids.sort();
    let tables = ids
        .into_iter()
        .filter_map(|&t| table_diff(cat, before, after, t))
        .collect();
    WorldDiff { tables }
}

fn table_diff(cat: &Catalog, before: &Overlay, after: &Overlay, t: TableId) -> Option<TableDiff> {
    let table = cat.table(t);
    let mut changed: Vec<&String> = after.tables.get(&t)?.changed.keys().collect();
    changed.sort();
    let mut d = TableDiff {
        app: cat.apps[t.app as usize].id.clone(),
        table: table.name.clone(),
        inserted: vec![],
        updated: vec![],
        deleted: vec![],
    };
    for id in changed {
        match (before.get(cat, t, id), after.get(cat, t, id)) {
            (None, Some(a)) => d.inserted.push(table.record_json(a)),
            (Some(b), None) => d.deleted.push(table.record_json(b)),
            (Some(b), Some(a)) if a != b => {
                let fields = table
                    .fields
                    .iter()
                    .zip(b.values.iter().zip(&a.values))
                    .filter(|(_, (x, y))| x != y)
                    .map(|(f, _)| f.name.clone())
                    .collect();
                d.updated.push(UpdatedRecord {
                    id: id.clone(),
                    fields,
                    before: table.record_json(b),
                    after: table.record_json(a),
                });
            }
            _ => {}
        }
    }
    let empty = d.inserted.is_empty() && d.updated.is_empty() && d.deleted.is_empty();
    (!empty).then_some(d)
}
