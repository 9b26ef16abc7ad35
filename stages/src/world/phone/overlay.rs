//! The episode's copy-on-write state: only records that were inserted, updated or deleted are
//! stored; everything else is read through to the immutable world. Creating an overlay costs
//! nothing, and every read or write is O(1) in the size of the world.

use crate::world::hash::FastMap;

use serde_json::Value;

use crate::world::app::{Catalog, Record};
use crate::world::history::HistoryEvent;
use crate::world::types::TableId;

/// Changes to one table.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct TableDelta {
    /// Id → new record, or `None` when deleted.
    pub changed: FastMap<String, Option<Record>>,
    /// Ids that did not exist in the world, in insertion order.
    pub inserted: Vec<String>,
    /// World records currently deleted.
    deleted_base: usize,
    /// Inserted records not deleted since.
    live_inserted: usize,
}

/// All changes of an episode relative to the world.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overlay {
    pub(crate) tables: FastMap<TableId, TableDelta>,
    /// History events appended by task overrides.
    pub(crate) history: Vec<HistoryEvent>,
    /// Profile entry id → replacement value (task overrides).
    pub(crate) profile: FastMap<String, Value>,
}

impl Overlay {
    /// The current version of a record, if it exists.
    pub fn get<'a>(&'a self, cat: &'a Catalog, t: TableId, id: &str) -> Option<&'a Record> {
        match self.tables.get(&t).and_then(|d| d.changed.get(id)) {
            Some(changed) => changed.as_ref(),
            None => cat.table(t).record(id),
        }
    }

    /// Whether a record exists.
    pub fn exists(&self, cat: &Catalog, t: TableId, id: &str) -> bool {
        self.get(cat, t, id).is_some()
    }

    /// Every current record of a table: world records in seed order (updated or skipped when
    /// deleted), then inserted ones in insertion order.
    pub fn records<'a>(
        &'a self,
        cat: &'a Catalog,
        t: TableId,
    ) -> impl Iterator<Item = &'a Record> + 'a {
        let delta = self.tables.get(&t);
        let base = cat.table(t).records.iter().filter_map(move |r| {
            match delta.and_then(|d| d.changed.get(&r.id)) {
                Some(changed) => changed.as_ref(),
                None => Some(r),
            }
        });
        let inserted = delta.into_iter().flat_map(|d| {
            d.inserted
                .iter()
                .filter_map(move |id| d.changed.get(id).and_then(Option::as_ref))
        });
        base.chain(inserted)
    }

    /// Number of current records of a table, in O(1).
    pub fn count(&self, cat: &Catalog, t: TableId) -> usize {
        let base = cat.table(t).records.len();
        self.tables
            .get(&t)
            .map_or(base, |d| base - d.deleted_base + d.live_inserted)
    }

    /// Adds a new record; the caller guarantees its id is unused.
    pub(crate) fn insert(&mut self, t: TableId, record: Record) {
        let d = self.tables.entry(t).or_default();
        d.inserted.push(record.id.clone());
        d.live_inserted += 1;
        d.changed.insert(record.id.clone(), Some(record));
    }

    /// Replaces an existing record.
    pub(crate) fn put(&mut self, t: TableId, record: Record) {
        self.tables
            .entry(t)
            .or_default()
            .changed
            .insert(record.id.clone(), Some(record));
    }

    /// Deletes an existing record.
    pub(crate) fn delete(&mut self, cat: &Catalog, t: TableId, id: &str) {
        let in_base = cat.table(t).record(id).is_some();
        let d = self.tables.entry(t).or_default();
        let was_live = match d.changed.get(id) {
            Some(r) => r.is_some(),
            None => in_base,
        };
        if was_live {
            if in_base {
                d.deleted_base += 1;
            } else {
                d.live_inserted -= 1;
            }
        }
        d.changed.insert(id.to_string(), None);
    }

    /// A fresh id for a new record of `t`: `<table>-<n>` with the first free `n`.
    pub(crate) fn fresh_id(&self, cat: &Catalog, t: TableId, taken: &[String]) -> String {
        let name = &cat.table(t).name;
        let mut n = self.count(cat, t) + taken.len() + 1;
        loop {
            let id = format!("{name}-{n}");
            if !self.exists(cat, t, &id)
                && !taken.contains(&id)
                && !self
                    .tables
                    .get(&t)
                    .is_some_and(|d| d.changed.contains_key(&id))
            {
                return id;
            }
            n += 1;
        }
    }

    /// Number of changed records over all tables (a cheap size measure).
    pub fn change_count(&self) -> usize {
        self.tables.values().map(|d| d.changed.len()).sum()
    }
}
