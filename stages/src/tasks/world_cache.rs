//! The world, rebuilt from `build_world`'s tables and memoized by content: per-item stages over
//! tasks would otherwise parse the same apps, persona and history once per task. The cache is a
//! pure-function memo (keyed by a hash of the tables), so it holds no run state.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use polars::prelude::DataFrame;
use prefflow_engine::keys::{hash_bytes, row_hashes};

use super::error::TaskError;
use crate::world::from_tables::world_from_tables;
use crate::world::World;

/// Worlds kept at most; a run uses one, tests a few.
const CAPACITY: usize = 4;

type Cache = Mutex<HashMap<String, Arc<World>>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

fn content_key(sources: &DataFrame, history: &DataFrame) -> Result<String, TaskError> {
    let mut bytes = Vec::new();
    for df in [sources, history] {
        for h in row_hashes(df)? {
            bytes.extend_from_slice(&h);
        }
        bytes.push(0);
    }
    Ok(hash_bytes(&bytes))
}

/// The world described by the `sources` and `history_events` tables.
pub fn world_from_inputs(
    sources: &DataFrame,
    history: &DataFrame,
) -> Result<Arc<World>, TaskError> {
    let key = content_key(sources, history)?;
    // Held while building, so concurrent items wait for one build instead of repeating it.
    let mut map = cache().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(w) = map.get(&key) {
        return Ok(w.clone());
    }
    let world = Arc::new(world_from_tables(sources, history)?);
    if map.len() >= CAPACITY {
        map.clear();
    }
    map.insert(key, world.clone());
    Ok(world)
}

/// The world of `sources` and `history_events`, memoized by the identity of the tables' buffers
/// (see [`crate::memo`]) before falling back to [`world_from_inputs`]: per-item stages call this
/// once per item with the same tables, and hashing 3,000 history rows per item adds up.
pub fn world_of(sources: &DataFrame, history: &DataFrame) -> Result<Arc<World>, TaskError> {
    static MEMO: crate::memo::Memo<World> = crate::memo::Memo::new();
    MEMO.get_or_build(sources, history, || world_from_inputs(sources, history))
}
