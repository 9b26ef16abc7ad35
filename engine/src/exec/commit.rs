//! Committing results: a result's tables become blobs, then its manifest is written last (the
//! commit point) under the instance's recipe key or the item's key.

use std::time::Instant;

use super::ExecEnv;
use crate::artifact::{
    item_path, recipe_path, save_manifest, store_tables, unix_now, ItemCounts, KeyParts, Manifest,
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

/// Commits one item of a per-item stage under its item key (`key` is the hash of `parts`);
/// `usage` is what computing it cost.
pub fn commit_item(
    env: &ExecEnv,
    inst: &Instance,
    (parts, key): (&KeyParts, &str),
    tables: &Tables,
    how: Provenance,
    usage: Usage,
) -> Result<Manifest, StageError> {
    let manifest = manifest(env, inst, (parts, key), tables, how, usage)?;
    save(env, &item_path(&manifest.recipe_key), &manifest)?;
    Ok(manifest)
}

/// Commits an instance's whole result under its recipe key; `usage` is what producing it cost
/// (for a per-item stage: prepare plus every item, cached ones included); `items` are a
/// per-item stage's counts and item keys.
pub fn commit_instance(
    env: &ExecEnv,
    inst: &Instance,
    (parts, key): (&KeyParts, &str),
    tables: &Tables,
    how: Provenance,
    usage: Usage,
    items: Option<(ItemCounts, Vec<String>)>,
) -> Result<Manifest, StageError> {
    let mut manifest = manifest(env, inst, (parts, key), tables, how, usage)?;
    if let Some((counts, keys)) = items {
        manifest.items = Some(counts);
        manifest.item_keys = keys;
    }
    save(env, &recipe_path(&manifest.recipe_key), &manifest)?;
    Ok(manifest)
}

/// Stores `tables` as blobs and describes them in a manifest (not yet written).
fn manifest(
    env: &ExecEnv,
    inst: &Instance,
    (parts, key): (&KeyParts, &str),
    tables: &Tables,
    how: Provenance,
    usage: Usage,
) -> Result<Manifest, StageError> {
    let (entries, data_version) =
        store_tables(env.store.as_ref(), tables).map_err(|e| not_stored(env, e))?;
    let seconds = how.started.elapsed().as_secs_f64();
    Ok(Manifest {
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
    })
}

fn save(env: &ExecEnv, path: &str, manifest: &Manifest) -> Result<(), StageError> {
    save_manifest(env.store.as_ref(), path, manifest).map_err(|e| not_stored(env, e))
}

/// A failed write stops new work in this run (see [`ExecEnv::note_store_failure`]).
fn not_stored(env: &ExecEnv, e: Error) -> StageError {
    StageError::Failed(format!(
        "could not store result: {}",
        env.note_store_failure(&e)
    ))
}
