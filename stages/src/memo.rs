//! A memo keyed by the identity of two tables' buffers. Per-item stages see the same secondary
//! inputs (the world's tables, a whole `steps` table) for every item; hashing their content per
//! item would cost O(rows) each time, while their buffer addresses identify them in O(columns).
//! Each entry keeps clones of its tables, so their buffers stay alive and no other table can
//! take those addresses while the entry exists: a hit is always the same data.

use std::sync::{Arc, Mutex};

use polars::prelude::DataFrame;

/// Entries kept per memo; a run judges one steps table in one world, tests a few.
const CAPACITY: usize = 4;

/// A memoized value with clones of the two tables it was built from: holding them keeps their
/// buffers alive, so the buffer addresses that key the entry cannot be reused by other tables.
struct Entry<T> {
    key: Vec<usize>,
    _tables: (DataFrame, DataFrame),
    value: Arc<T>,
}

/// A memo keyed by the identity of two tables' buffers: O(columns) per lookup, where hashing
/// the content would be O(rows) for every item.
pub(crate) struct Memo<T>(Mutex<Vec<Entry<T>>>);

impl<T> Memo<T> {
    /// An empty memo.
    pub(crate) const fn new() -> Self {
        Self(Mutex::new(Vec::new()))
    }

    /// The value for tables `a` and `b`, built once.
    pub(crate) fn get_or_build<E>(
        &self,
        a: &DataFrame,
        b: &DataFrame,
        build: impl FnOnce() -> Result<Arc<T>, E>,
    ) -> Result<Arc<T>, E> {
        let mut key = Vec::new();
        identity(a, &mut key);
        identity(b, &mut key);
        // Held while building, so concurrent items wait for one build instead of repeating it.
        let mut entries = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = entries.iter().find(|e| e.key == key) {
            return Ok(e.value.clone());
        }
        let value = build()?;
        if entries.len() >= CAPACITY {
            entries.remove(0);
        }
        entries.push(Entry {
            key,
            _tables: (a.clone(), b.clone()),
            value: value.clone(),
        });
        Ok(value)
    }
}

/// The identity of a table's buffers: its height and the address of every column's chunks.
fn identity(df: &DataFrame, out: &mut Vec<usize>) {
    out.push(df.height());
    for c in df.columns() {
        let s = c.as_materialized_series();
        out.push(s.chunks().len());
        for chunk in s.chunks() {
            out.push(std::ptr::from_ref(chunk.as_ref()).cast::<u8>() as usize);
        }
    }
    out.push(usize::MAX);
}
