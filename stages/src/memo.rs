//! A memo keyed by the identity of two tables' buffers. Per-item stages see the same secondary
//! inputs (the world's tables, a whole `steps` table) for every item; hashing their content per
//! item would cost O(rows) each time, while their buffer addresses identify them in O(columns).
//! Each entry keeps clones of its tables, so their buffers stay alive and no other table can
//! take those addresses while the entry exists: a hit is always the same data.

use std::sync::{Arc, Mutex, OnceLock};

use polars::prelude::DataFrame;

/// Entries kept per memo; a run judges one steps table in one world, tests a few.
const CAPACITY: usize = 4;

/// Where one value is built once and read by everyone who asked for it meanwhile. `None` once
/// set means the build failed: waiters then try again themselves.
type Cell<T> = Arc<OnceLock<Option<Arc<T>>>>;

/// A memoized value with clones of the two tables it was built from: holding them keeps their
/// buffers alive, so the buffer addresses that key the entry cannot be reused by other tables.
struct Entry<T> {
    key: Vec<usize>,
    _tables: (DataFrame, DataFrame),
    cell: Cell<T>,
}

/// A memo keyed by the identity of two tables' buffers: O(columns) per lookup, where hashing
/// the content would be O(rows) for every item.
///
/// The first caller builds; callers arriving meanwhile wait on the entry's cell, not on the
/// memo's lock, so they are all released together when the value lands. (Waiting on the lock
/// released them one at a time: with 64 items starting at once, each hand-over waited for a
/// busy core and the last item started ~70 ms after the first.)
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
        let mut build = Some(build);
        loop {
            let (cell, builder) = self.claim(&key, a, b);
            // A caller builds at most once: it returns whatever its build gives.
            if let Some(build) = build.take_if(|_| builder) {
                return self.fill(&cell, build);
            }
            if let Some(value) = cell.wait() {
                return Ok(value.clone());
            }
            // The builder failed and dropped the entry: build it here (and see the error).
        }
    }

    /// The entry for `key` and whether this caller must build it (a new entry).
    fn claim(&self, key: &[usize], a: &DataFrame, b: &DataFrame) -> (Cell<T>, bool) {
        let mut entries = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = entries.iter().find(|e| e.key == key) {
            return (e.cell.clone(), false);
        }
        if entries.len() >= CAPACITY {
            entries.remove(0);
        }
        let cell = Cell::default();
        entries.push(Entry {
            key: key.to_vec(),
            _tables: (a.clone(), b.clone()),
            cell: cell.clone(),
        });
        (cell, true)
    }

    /// Builds into `cell`. A failure (or a panic) removes the entry before releasing the
    /// waiters, so they build again instead of waiting forever.
    fn fill<E>(
        &self,
        cell: &Cell<T>,
        build: impl FnOnce() -> Result<Arc<T>, E>,
    ) -> Result<Arc<T>, E> {
        let unfilled = Unfilled { memo: self, cell };
        let built = build();
        if let Ok(value) = &built {
            let _ = cell.set(Some(value.clone()));
        }
        drop(unfilled);
        built
    }

    fn forget(&self, cell: &Cell<T>) {
        let mut entries = self.0.lock().unwrap_or_else(|p| p.into_inner());
        entries.retain(|e| !Arc::ptr_eq(&e.cell, cell));
    }
}

/// Releases the waiters of a build that did not set its cell (it failed or panicked).
struct Unfilled<'m, T> {
    memo: &'m Memo<T>,
    cell: &'m Cell<T>,
}

impl<T> Drop for Unfilled<'_, T> {
    fn drop(&mut self) {
        if self.cell.get().is_none() {
            self.memo.forget(self.cell);
            let _ = self.cell.set(None);
        }
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use polars::prelude::*;

    use super::*;

    fn table(values: &[i64]) -> DataFrame {
        df!("x" => values).unwrap()
    }

    #[test]
    fn concurrent_callers_share_one_build() {
        let memo: Memo<usize> = Memo::new();
        let (a, b) = (table(&[1, 2]), table(&[3]));
        let builds = AtomicUsize::new(0);
        let results: Vec<usize> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..16)
                .map(|_| {
                    s.spawn(|| {
                        memo.get_or_build(&a, &b, || {
                            std::thread::sleep(std::time::Duration::from_millis(20));
                            Ok::<_, String>(Arc::new(builds.fetch_add(1, Ordering::SeqCst)))
                        })
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| *h.join().unwrap().unwrap())
                .collect()
        });
        assert_eq!(builds.load(Ordering::SeqCst), 1);
        assert!(results.iter().all(|&r| r == 0));
    }

    #[test]
    fn other_tables_build_their_own_value() {
        let memo: Memo<i64> = Memo::new();
        let (a, b, c) = (table(&[1]), table(&[2]), table(&[1]));
        let first = memo
            .get_or_build(&a, &b, || Ok::<_, String>(Arc::new(1)))
            .unwrap();
        // `c` holds the same values as `a` in other buffers: a different entry.
        let other = memo
            .get_or_build(&c, &b, || Ok::<_, String>(Arc::new(2)))
            .unwrap();
        let again = memo.get_or_build(&a.clone(), &b, || Ok::<_, String>(Arc::new(3)));
        assert_eq!((*first, *other, *again.unwrap()), (1, 2, 1));
    }

    #[test]
    fn a_failed_build_is_not_kept() {
        let memo: Memo<i64> = Memo::new();
        let (a, b) = (table(&[1]), table(&[2]));
        let failed = memo.get_or_build(&a, &b, || Err::<Arc<i64>, _>("no world".to_string()));
        assert_eq!(failed.unwrap_err(), "no world");
        let built = memo.get_or_build(&a, &b, || Ok::<_, String>(Arc::new(7)));
        assert_eq!(*built.unwrap(), 7);
    }

    #[test]
    fn waiters_on_a_failed_build_build_again() {
        let memo: Memo<usize> = Memo::new();
        let (a, b) = (table(&[1]), table(&[2]));
        let builds = AtomicUsize::new(0);
        let results: Vec<Result<usize, String>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        memo.get_or_build(&a, &b, || {
                            let n = builds.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(20));
                            if n == 0 {
                                Err("first build fails".to_string())
                            } else {
                                Ok(Arc::new(n))
                            }
                        })
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap().map(|v| *v))
                .collect()
        });
        assert_eq!(builds.load(Ordering::SeqCst), 2);
        assert_eq!(results.iter().filter(|r| r.is_err()).count(), 1);
        assert!(results
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .all(|&v| v == 1));
    }

    #[test]
    fn a_panicking_build_releases_its_waiters() {
        let memo: Memo<i64> = Memo::new();
        let (a, b) = (table(&[1]), table(&[2]));
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            memo.get_or_build(&a, &b, || -> Result<Arc<i64>, String> {
                panic!("bad world")
            })
        }));
        assert!(panicked.is_err());
        let built = memo.get_or_build(&a, &b, || Ok::<_, String>(Arc::new(5)));
        assert_eq!(*built.unwrap(), 5);
    }
}
