//! Committing results: a result's tables become blobs (an item's small tables stay inside its
//! manifest), then its manifest is written last (the commit point) under the instance's recipe
//! key or the item's key.

use std::time::Instant;

use super::env::ExecEnv;
use indexmap::IndexMap;

use crate::artifact::{
    commit_manifest, item_path, recipe_path, store_item_tables, store_tables, unix_now, Committed,
    ItemCounts, KeyParts, Manifest, TableEntry,
};
use crate::error::{Error, StageError};
use crate::kind::Tables;
use crate::plan::Instance;
use crate::usage::Usage;

/// How a result came about, for its manifest.
pub struct Provenance {
    /// When its computation started.
    pub started: Instant,
    /// Attempts the kind needed.
    pub attempts: u32,
}

/// The manifest that stands under a key after a commit.
pub struct Commit {
    /// This writer's manifest, or the one another writer committed first (its result, with
    /// this writer's provenance: time, attempts, usage and item counts).
    pub manifest: Manifest,
    /// Whether `manifest` is another writer's (its tables, not ours, are the result).
    pub theirs: bool,
}

/// Commits one item of a per-item stage under its item key (`key` is the hash of `parts`);
/// `usage` is what computing it cost. Returns the manifest that stands under the key: this
/// one, or another writer's that committed the key first (see [`commit_manifest`]).
pub fn commit_item(
    env: &ExecEnv,
    inst: &Instance,
    (parts, key): (&KeyParts, &str),
    tables: &Tables,
    how: Provenance,
    usage: Usage,
) -> Result<Commit, StageError> {
    let stored = store_item_tables(env.store.as_ref(), tables).map_err(|e| not_stored(env, e))?;
    let manifest = manifest(env, inst, (parts, key), stored, how, usage);
    save(env, &item_path(&manifest.recipe_key), manifest)
}

/// Commits an instance's whole result under its recipe key; `usage` is what producing it cost
/// (for a per-item stage: prepare plus every item, cached ones included); `items` are a
/// per-item stage's counts and item keys. Returns the manifest that stands under the key, as
/// [`commit_item`] does.
pub fn commit_instance(
    env: &ExecEnv,
    inst: &Instance,
    (parts, key): (&KeyParts, &str),
    tables: &Tables,
    how: Provenance,
    usage: Usage,
    items: Option<(ItemCounts, Vec<String>)>,
) -> Result<Commit, StageError> {
    let stored = store_tables(env.store.as_ref(), tables).map_err(|e| not_stored(env, e))?;
    let mut manifest = manifest(env, inst, (parts, key), stored, how, usage);
    if let Some((counts, keys)) = items {
        manifest.items = Some(counts);
        manifest.item_keys = keys;
    }
    save(env, &recipe_path(&manifest.recipe_key), manifest)
}

/// The manifest (not yet written) of stored tables (`entries` and their data version).
fn manifest(
    env: &ExecEnv,
    inst: &Instance,
    (parts, key): (&KeyParts, &str),
    (entries, data_version): (IndexMap<String, TableEntry>, String),
    how: Provenance,
    usage: Usage,
) -> Manifest {
    let seconds = how.started.elapsed().as_secs_f64();
    Manifest {
        recipe_key: key.to_string(),
        key: parts.clone(),
        pipeline: env.pipeline.clone(),
        stage: inst.stage.clone(),
        variant: inst.variant.name(),
        deterministic: inst.kind.deterministic(),
        data_version,
        tables: entries,
        started_at: unix_now() - seconds,
        seconds,
        attempts: how.attempts,
        items: None,
        item_keys: Vec::new(),
        usage,
    }
}

/// Writes `manifest` unless another writer's stands under `path` already; returns the one that
/// stands.
fn save(env: &ExecEnv, path: &str, manifest: Manifest) -> Result<Commit, StageError> {
    match commit_manifest(env.store.as_ref(), path, &manifest) {
        Ok(Committed::Written) => Ok(Commit {
            manifest,
            theirs: false,
        }),
        Ok(Committed::Kept(mut theirs)) => {
            tracing::debug!("{path}: another writer committed it first; keeping theirs");
            // Their result stands; what this run reports (time, attempts, spending, item
            // counts) is still what this run did.
            theirs.started_at = manifest.started_at;
            theirs.seconds = manifest.seconds;
            theirs.attempts = manifest.attempts;
            theirs.usage = manifest.usage;
            theirs.items = manifest.items;
            Ok(Commit {
                manifest: *theirs,
                theirs: true,
            })
        }
        Err(e) => Err(not_stored(env, e)),
    }
}

/// How the message of a result that could not be stored begins.
pub(super) const NOT_STORED: &str = "could not store result";

/// A failed write stops new work in this run (see [`ExecEnv::note_store_failure`]). A setup
/// mistake (a missing bucket, no permission) is the user's to fix: bad input, exit code 2.
fn not_stored(env: &ExecEnv, e: Error) -> StageError {
    let message = format!("{NOT_STORED}: {}", env.note_store_failure(&e));
    match e {
        Error::StoreSetup(_) | Error::NotWritable(_) => StageError::Input(message),
        _ => StageError::Failed(message),
    }
}
