//! `prefflow verify`: reads every object of the store (or what one pipeline's records reach),
//! checks it against its hash or format, and reports — or, with `--repair`, quarantines —
//! what is damaged, so the next run recomputes it instead of failing on it.

use std::collections::BTreeSet;

use crate::artifact::{blob_path, item_path, recipe_path, Manifest};
use crate::error::Result;
use crate::keys::hash_bytes;
use crate::record::{load_last_run, load_latest, RunRecord};
use crate::store::{Store, TMP_SUFFIX};

/// What `verify` found.
#[derive(Debug, Default)]
pub struct VerifyReport {
    /// Objects read and checked.
    pub checked: usize,
    /// Bytes read.
    pub bytes: u64,
    /// Blobs whose content does not match their hash, and item manifests whose inline tables
    /// do not (quarantined whole by `--repair`: the item is recomputed).
    pub damaged_blobs: Vec<String>,
    /// Manifests that cannot be decoded.
    pub unreadable_manifests: Vec<String>,
    /// Manifests pointing at blobs that are missing or damaged: their results are recomputed
    /// by the next run (manifest key, missing blob key).
    pub incomplete: Vec<(String, String)>,
    /// Manifests or records naming manifests that are not in the store (referrer, missing key).
    pub dangling: Vec<(String, String)>,
    /// Run records (`runs/<pipeline>/latest.json`, `last-run.json`) that cannot be decoded.
    pub unreadable_records: Vec<String>,
    /// Whether the damaged objects were quarantined.
    pub repaired: bool,
}

impl VerifyReport {
    /// True when nothing is damaged (missing results are not damage: runs recompute them).
    pub fn clean(&self) -> bool {
        self.damaged_blobs.is_empty()
            && self.unreadable_manifests.is_empty()
            && self.unreadable_records.is_empty()
    }

    /// True when the store is whole: nothing damaged, unreadable, incomplete or missing. With
    /// `--repair`, what was quarantined (and the results it leaves incomplete, which the next
    /// run recomputes) no longer counts; what was missing before still does.
    pub fn whole(&self) -> bool {
        let missing_before = self
            .incomplete
            .iter()
            .filter(|(_, blob)| !self.damaged_blobs.contains(blob))
            .count()
            + self.dangling.len();
        match self.repaired {
            true => missing_before == 0,
            false => self.clean() && self.incomplete.is_empty() && self.dangling.is_empty(),
        }
    }
}

/// Checks the whole store (`pipeline: None`) or what `pipeline`'s run records reach;
/// with `repair`, quarantines every damaged object.
pub fn verify(store: &dyn Store, pipeline: Option<&str>, repair: bool) -> Result<VerifyReport> {
    let mut report = VerifyReport {
        repaired: repair,
        ..VerifyReport::default()
    };
    check_records(store, pipeline, &mut report)?;
    let (manifests, blobs) = match pipeline {
        None => whole_store(store)?,
        Some(name) => reached_by(store, name, &mut report)?,
    };
    let mut bad_blobs: BTreeSet<String> = BTreeSet::new();
    for key in &blobs {
        let Some(bytes) = store.get(key)? else {
            continue;
        };
        report.checked += 1;
        report.bytes += bytes.len() as u64;
        if !blob_matches(key, &bytes) {
            bad_blobs.insert(key.clone());
        }
    }
    for key in &manifests {
        let Some(bytes) = store.get(key)? else {
            continue;
        };
        report.checked += 1;
        report.bytes += bytes.len() as u64;
        let Ok(m) = serde_json::from_slice::<Manifest>(&bytes) else {
            report.unreadable_manifests.push(key.clone());
            continue;
        };
        for t in m.tables.values() {
            if let Some(inline) = t.inline_bytes() {
                // The manifest carries the table: damaged bytes damage the manifest.
                if inline.is_err() {
                    bad_blobs.insert(key.clone());
                }
                continue;
            }
            let blob = blob_path(&t.blob);
            if bad_blobs.contains(&blob) || !store.exists(&blob)? {
                report.incomplete.push((key.clone(), blob));
            }
        }
        for item in &m.item_keys {
            let ik = item_path(item);
            if !manifests.contains(&ik) && !store.exists(&ik)? {
                report.dangling.push((key.clone(), ik));
            }
        }
    }
    report.damaged_blobs = bad_blobs.into_iter().collect();
    if repair {
        for key in report
            .damaged_blobs
            .iter()
            .chain(&report.unreadable_manifests)
            .chain(&report.unreadable_records)
        {
            store.quarantine(key)?;
            tracing::warn!("quarantined {key}");
        }
    }
    Ok(report)
}

/// Reads every run record (of `pipeline`, or of the whole store) and lists those that cannot
/// be decoded: `show` and `plan` would silently lose them.
fn check_records(
    store: &dyn Store,
    pipeline: Option<&str>,
    report: &mut VerifyReport,
) -> Result<()> {
    let prefix = match pipeline {
        Some(p) => format!("runs/{p}"),
        None => "runs".to_string(),
    };
    for key in store.list(&prefix)? {
        let name = key.rsplit('/').next().unwrap_or_default();
        if name != "latest.json" && name != "last-run.json" {
            continue;
        }
        let Some(bytes) = store.get(&key)? else {
            continue;
        };
        report.checked += 1;
        report.bytes += bytes.len() as u64;
        if serde_json::from_slice::<RunRecord>(&bytes).is_err() {
            report.unreadable_records.push(key);
        }
    }
    Ok(())
}

/// Whether blob `key` (`blobs/ab/<hash>.parquet`) holds content with that hash.
fn blob_matches(key: &str, bytes: &[u8]) -> bool {
    let hash = key
        .rsplit('/')
        .next()
        .and_then(|n| n.strip_suffix(".parquet"))
        .unwrap_or_default();
    hash_bytes(bytes) == hash
}

type Keys = BTreeSet<String>;

fn whole_store(store: &dyn Store) -> Result<(Keys, Keys)> {
    let committed = |k: &String| {
        !k.ends_with(TMP_SUFFIX) && !k.rsplit('/').next().unwrap_or_default().starts_with('.')
    };
    let mut manifests: Keys = store
        .list("recipes")?
        .into_iter()
        .filter(committed)
        .collect();
    manifests.extend(store.list("items")?.into_iter().filter(committed));
    let blobs = store.list("blobs")?.into_iter().filter(committed).collect();
    Ok((manifests, blobs))
}

/// The manifests and blobs `pipeline`'s latest and last run reach; records naming missing
/// manifests are reported as dangling.
fn reached_by(
    store: &dyn Store,
    pipeline: &str,
    report: &mut VerifyReport,
) -> Result<(Keys, Keys)> {
    let (mut manifests, mut blobs) = (Keys::new(), Keys::new());
    let records = [
        load_latest(store, pipeline)?,
        load_last_run(store, pipeline)?,
    ];
    let recorded = store.exists(&format!("runs/{pipeline}/latest.json"))?
        || store.exists(&format!("runs/{pipeline}/last-run.json"))?;
    if !recorded {
        return Err(crate::error::Error::Usage(format!(
            "no run records for pipeline `{pipeline}` in {}; run it first, or verify the whole store (no --pipeline)",
            store.describe()
        )));
    }
    for record in records.into_iter().flatten() {
        let referrer = format!("runs/{pipeline} ({})", record.run_id);
        blobs.extend(record.errors_blob.iter().map(|b| blob_path(b)));
        for inst in &record.instances {
            for t in inst.tables.values() {
                blobs.insert(blob_path(&t.blob));
            }
            let keys = inst
                .recipe_key
                .iter()
                .map(|k| recipe_path(k))
                .chain(inst.item_keys.iter().map(|k| item_path(k)));
            for key in keys {
                if !manifests.insert(key.clone()) {
                    continue;
                }
                match store.get(&key)? {
                    None if inst.status.succeeded() => {
                        report.dangling.push((referrer.clone(), key))
                    }
                    None => {}
                    Some(bytes) => {
                        if let Ok(m) = serde_json::from_slice::<Manifest>(&bytes) {
                            blobs.extend(m.tables.values().map(|t| blob_path(&t.blob)));
                        }
                    }
                }
            }
        }
    }
    Ok((manifests, blobs))
}
