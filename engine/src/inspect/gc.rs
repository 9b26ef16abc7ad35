//! `prefflow gc`: removes every artifact no pipeline's run records reach.

use std::collections::HashSet;
use std::path::Path;

use crate::artifact::{blob_path, item_path, load_manifest, recipe_path};
use crate::error::Result;
use crate::record::{load_last_run, load_latest, pipelines};
use crate::store::{Store, TMP_SUFFIX};

/// What `gc` removed (or would remove).
#[derive(Debug, Default)]
pub struct GcReport {
    /// Store keys removed.
    pub removed: Vec<String>,
    /// Bytes freed.
    pub bytes: u64,
    /// Objects kept.
    pub kept: usize,
}

/// Removes every artifact not reachable from the latest and last run of each pipeline.
pub fn gc(store: &dyn Store, dry_run: bool) -> Result<GcReport> {
    let mut keep: HashSet<String> = HashSet::new();
    for name in pipelines(store)? {
        for record in [load_latest(store, &name)?, load_last_run(store, &name)?]
            .into_iter()
            .flatten()
        {
            if let Some(b) = &record.errors_blob {
                keep.insert(blob_path(b));
            }
            for inst in &record.instances {
                let manifests = inst
                    .recipe_key
                    .iter()
                    .map(|k| recipe_path(k))
                    .chain(inst.item_keys.iter().map(|k| item_path(k)));
                for key in manifests {
                    if let Some(m) = load_manifest(store, &key)? {
                        keep.extend(m.tables.values().map(|t| blob_path(&t.blob)));
                        keep.extend(m.item_keys.iter().map(|k| item_path(k)));
                        keep.insert(key);
                    }
                }
            }
        }
    }
    // Item manifests kept above may point at blobs too.
    let item_keys: Vec<String> = keep
        .iter()
        .filter(|k| k.starts_with("items/"))
        .cloned()
        .collect();
    for key in item_keys {
        if let Some(m) = load_manifest(store, &key)? {
            keep.extend(m.tables.values().map(|t| blob_path(&t.blob)));
        }
    }
    let mut report = GcReport::default();
    for prefix in ["recipes", "items", "blobs", "tmp"] {
        for key in store.list(prefix)? {
            if keep.contains(&key) || (key.ends_with(TMP_SUFFIX) && writer_is_alive(&key)) {
                report.kept += 1;
                continue;
            }
            report.bytes += store.size(&key)?;
            if !dry_run {
                store.delete(&key)?;
            }
            report.removed.push(key);
        }
    }
    Ok(report)
}

/// Temporary files are named `.<name>.<pid>-<n>.tmp`; one whose writer still runs is in flight.
fn writer_is_alive(key: &str) -> bool {
    let name = key.rsplit('/').next().unwrap_or_default();
    let pid = name
        .rsplit('.')
        .nth(1)
        .and_then(|p| p.split('-').next())
        .unwrap_or_default();
    !pid.is_empty()
        && pid.chars().all(|c| c.is_ascii_digit())
        && Path::new(&format!("/proc/{pid}")).exists()
}
