//! Artifacts: a stage's (or item's) tables plus the manifest that explains them.
//!
//! Layout in the store:
//! - `blobs/ab/<hash>.parquet` — one table, named by the hash of its Parquet bytes (deduplicated);
//! - `recipes/ab/<recipe key>.json` — the manifest of a stage instance's output;
//! - `items/ab/<item key>.json` — the manifest of one item of a per-item stage.
//!
//! A manifest is written last and only after its blobs exist, so it is the commit point: an
//! interrupted write leaves at worst an orphan blob that `gc` removes, never a manifest that
//! points at nothing.

use std::collections::BTreeMap;
use std::io::Cursor;

use indexmap::IndexMap;
use polars::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::keys::{hash_bytes, hash_json};
use crate::kind::Tables;
use crate::store::Store;

/// Bumped when the key or manifest layout changes, invalidating every cached result.
pub const ENGINE_VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "+keys1");

/// Everything that determines a result: its hash is the recipe (or item) key. Kept in the
/// manifest so `why` can say which field changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyParts {
    /// Engine version (see [`ENGINE_VERSION`]).
    pub engine: String,
    /// Stage kind name.
    pub kind: String,
    /// Stage kind version.
    pub kind_version: String,
    /// Fully resolved parameters.
    pub params: Value,
    /// Data versions of the input tables, by `stage.table`.
    pub inputs: BTreeMap<String, String>,
    /// Content hashes of files the kind reads directly, by path as written.
    pub external: BTreeMap<String, String>,
    /// For items: the item's column, value and the hash of its rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<ItemIdentity>,
}

impl KeyParts {
    /// The key these parts hash to.
    pub fn key(&self) -> String {
        hash_json(self)
    }
}

/// What identifies one item of a per-item stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemIdentity {
    /// The per-item column.
    pub column: String,
    /// The item's value.
    pub value: String,
    /// Hash of the item's rows.
    pub rows: String,
}

/// One stored table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableEntry {
    /// Blob hash (also the table's data version).
    pub blob: String,
    /// Row count.
    pub rows: usize,
    /// Column names.
    pub columns: Vec<String>,
}

/// Item counts of a per-item stage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ItemCounts {
    /// Items in the main input.
    pub total: usize,
    /// Items computed by the run that wrote this manifest.
    pub executed: usize,
    /// Items taken from the cache.
    pub cached: usize,
}

/// The record of one computed result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    /// The recipe or item key (hash of `key`).
    pub recipe_key: String,
    /// What the key was computed from.
    pub key: KeyParts,
    /// Pipeline that produced it (informational: keys do not depend on it).
    pub pipeline: String,
    /// Stage name.
    pub stage: String,
    /// Variant name.
    pub variant: String,
    /// Whether the kind is deterministic.
    pub deterministic: bool,
    /// Hash over the tables' blob hashes: downstream keys use this (or per-table blobs).
    pub data_version: String,
    /// The tables.
    pub tables: IndexMap<String, TableEntry>,
    /// Unix time the computation started, in seconds.
    pub started_at: f64,
    /// Wall time of the computation, in seconds.
    pub seconds: f64,
    /// Attempts used (1 = no retry).
    pub attempts: u32,
    /// Item counts, for per-item stages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<ItemCounts>,
    /// Keys of the item manifests a per-item stage's output was assembled from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub item_keys: Vec<String>,
    /// Resource usage reported by the kind (tokens, cost…); free-form.
    #[serde(default)]
    pub usage: Value,
}

/// Store key of a recipe manifest.
pub fn recipe_path(key: &str) -> String {
    format!("recipes/{}/{key}.json", &key[..2.min(key.len())])
}

/// Store key of an item manifest.
pub fn item_path(key: &str) -> String {
    format!("items/{}/{key}.json", &key[..2.min(key.len())])
}

/// Store key of a table blob.
pub fn blob_path(hash: &str) -> String {
    format!("blobs/{}/{hash}.parquet", &hash[..2.min(hash.len())])
}

/// Tables smaller than this are stored uncompressed: compression costs more than it saves on
/// the many tiny tables items produce.
const COMPRESS_FROM_ROWS: usize = 1024;

/// Encodes a table as Parquet. Frames are rechunked first so equal data gives equal bytes.
pub fn encode_parquet(df: &DataFrame) -> Result<Vec<u8>> {
    let mut df = df.clone();
    df.rechunk_mut();
    let mut buf = Vec::new();
    let compression = if df.height() < COMPRESS_FROM_ROWS {
        ParquetCompression::Uncompressed
    } else {
        ParquetCompression::Zstd(None)
    };
    ParquetWriter::new(&mut buf)
        .with_compression(compression)
        .set_parallel(df.height() > 100_000)
        .finish(&mut df)?;
    Ok(buf)
}

/// Decodes a Parquet table.
pub fn decode_parquet(bytes: Vec<u8>) -> Result<DataFrame> {
    Ok(ParquetReader::new(Cursor::new(bytes)).finish()?)
}

/// Writes each table as a blob and returns the entries and the combined data version.
pub fn store_tables(
    store: &dyn Store,
    tables: &Tables,
) -> Result<(IndexMap<String, TableEntry>, String)> {
    let mut entries = IndexMap::new();
    for (name, df) in &tables.0 {
        let bytes = encode_parquet(df)?;
        let blob = hash_bytes(&bytes);
        let key = blob_path(&blob);
        if !store.exists(&key)? {
            store.put(&key, &bytes)?;
        }
        let columns = df
            .get_column_names()
            .iter()
            .map(|c| c.to_string())
            .collect();
        entries.insert(
            name.clone(),
            TableEntry {
                blob,
                rows: df.height(),
                columns,
            },
        );
    }
    let version = data_version(&entries);
    Ok((entries, version))
}

/// The data version of a set of tables: a hash of their names and blob hashes.
pub fn data_version(entries: &IndexMap<String, TableEntry>) -> String {
    let pairs: BTreeMap<&String, &String> = entries.iter().map(|(k, v)| (k, &v.blob)).collect();
    hash_json(&pairs)
}

/// Reads one table blob, verifying it against its hash.
pub fn load_table(store: &dyn Store, blob: &str) -> Result<DataFrame> {
    let key = blob_path(blob);
    let bytes = store.get(&key)?.ok_or_else(|| Error::Corrupt {
        key: key.clone(),
        reason: "blob is missing".into(),
    })?;
    if hash_bytes(&bytes) != blob {
        return Err(Error::Corrupt {
            key,
            reason: "content does not match its hash".into(),
        });
    }
    decode_parquet(bytes)
}

/// Reads a manifest; a missing or undecodable one is `None` (a cache miss, never an error).
pub fn load_manifest(store: &dyn Store, key: &str) -> Result<Option<Manifest>> {
    let Some(bytes) = store.get(key)? else {
        return Ok(None);
    };
    match serde_json::from_slice::<Manifest>(&bytes) {
        Ok(m) => Ok(Some(m)),
        Err(e) => {
            tracing::warn!("ignoring unreadable manifest {key}: {e}");
            Ok(None)
        }
    }
}

/// Writes a manifest (the commit point).
pub fn save_manifest(store: &dyn Store, key: &str, manifest: &Manifest) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(manifest).map_err(|e| Error::Corrupt {
        key: key.into(),
        reason: e.to_string(),
    })?;
    store.put(key, &bytes)
}

/// Whether every blob a manifest points at is present.
pub fn blobs_present(store: &dyn Store, manifest: &Manifest) -> Result<bool> {
    for t in manifest.tables.values() {
        if !store.exists(&blob_path(&t.blob))? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Loads all tables of a manifest.
pub fn load_tables(store: &dyn Store, manifest: &Manifest) -> Result<Tables> {
    let mut out = IndexMap::new();
    for (name, entry) in &manifest.tables {
        out.insert(name.clone(), load_table(store, &entry.blob)?);
    }
    Ok(Tables(out))
}

/// Now, as Unix seconds.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_frames_encode_to_equal_bytes_regardless_of_chunking() {
        let a = df!("x" => [1, 2], "y" => ["a", "b"]).expect("frame");
        let b1 = df!("x" => [1], "y" => ["a"]).expect("frame");
        let b2 = df!("x" => [2], "y" => ["b"]).expect("frame");
        let mut b = b1.clone();
        b.vstack_mut(&b2).expect("vstack");
        assert_eq!(
            encode_parquet(&a).expect("enc"),
            encode_parquet(&b).expect("enc")
        );
        let back = decode_parquet(encode_parquet(&a).expect("enc")).expect("dec");
        assert!(back.equals(&a));
    }
}
