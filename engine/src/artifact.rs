//! Artifacts: a stage's (or item's) tables plus the manifest that explains them.
//!
//! Layout in the store:
//! - `blobs/ab/<hash>.parquet` — one table, named by the hash of its Parquet bytes (deduplicated);
//! - `recipes/ab/<recipe key>.json` — the manifest of a stage instance's output;
//! - `items/ab/<item key>.json` — the manifest of one item of a per-item stage. An item's small
//!   tables (at most [`INLINE_MAX_BYTES`] of Parquet) travel inside it, base64, instead of as
//!   blobs, so one item is one object (one PUT on an object store, one file on NFS); their
//!   hashes are the same as a blob's, so keys and data versions do not depend on where the bytes
//!   are.
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
pub use crate::store::unix_now;
use crate::store::Store;
use crate::tables::Tables;
use crate::usage::Usage;

/// Bumped when the key or manifest layout changes, invalidating every cached result.
pub const ENGINE_VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "+keys2");

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
    /// The code the kind is built from: source hash by crate (see [`crate::code`]).
    #[serde(default)]
    pub code: crate::code::CodeFingerprint,
    /// Fully resolved parameters.
    pub params: Value,
    /// Data versions of the input tables, by `stage.table`.
    pub inputs: BTreeMap<String, String>,
    /// Content hashes of files the kind reads directly, by path as written.
    pub external: BTreeMap<String, String>,
    /// For items: the item's column, value and the hash of its rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<ItemIdentity>,
    /// The stage's `when:` condition, as described by [`crate::when::When::describe`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// The item subset the instance plays ([`crate::subset::ItemSubset::describe`]); never set
    /// on an item's key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subset: Option<String>,
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

/// Item tables whose Parquet bytes are at most this long are kept inside the item manifest
/// ([`TableEntry::inline`]) rather than as a blob of their own: most items' tables are a few
/// rows, and an object per table would double the writes of every item commit.
pub const INLINE_MAX_BYTES: usize = 64 * 1024;

/// One stored table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableEntry {
    /// Blob hash (also the table's data version): the hash of its Parquet bytes, wherever
    /// they are kept.
    pub blob: String,
    /// Row count.
    pub rows: usize,
    /// Column names.
    pub columns: Vec<String>,
    /// The Parquet bytes themselves, base64, for a small table of an item manifest (see
    /// [`INLINE_MAX_BYTES`]); `None`: they are the blob `blob` (every instance manifest, and
    /// stores written before inlining).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<String>,
}

impl TableEntry {
    /// The inline Parquet bytes, checked against `blob`: `None` when the table is a blob,
    /// `Some(Err(why))` when they do not decode or do not match (damaged).
    pub fn inline_bytes(&self) -> Option<std::result::Result<Vec<u8>, String>> {
        let text = self.inline.as_ref()?;
        Some(match base64_decode(text) {
            None => Err("is not valid base64".into()),
            Some(bytes) if hash_bytes(&bytes) != self.blob => Err("does not match its hash".into()),
            Some(bytes) => Ok(bytes),
        })
    }

    /// Whether the table's bytes are in `store` and usable: an inline table when intact, a
    /// blob when present (its content is checked when read).
    pub fn present(&self, store: &dyn Store) -> Result<bool> {
        match self.inline_bytes() {
            Some(bytes) => Ok(bytes.is_ok()),
            None => store.exists(&blob_path(&self.blob)),
        }
    }
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
    /// What the model calls behind this result cost, by role and model (see [`crate::usage`]);
    /// for a per-item stage, the sum over its items.
    #[serde(default, skip_serializing_if = "Usage::is_empty")]
    pub usage: Usage,
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

/// Tables smaller than this are stored uncompressed and plain-encoded: compression and
/// dictionary encoding cost more than they save on the many tiny tables items produce.
const COMPRESS_FROM_ROWS: usize = 1024;

/// Encodes a table as Parquet. Frames are rechunked first so equal data gives equal bytes.
pub fn encode_parquet(df: &DataFrame) -> Result<Vec<u8>> {
    let mut df = df.clone();
    df.rechunk_mut();
    let mut buf = Vec::new();
    if df.height() < COMPRESS_FROM_ROWS {
        encode_plain(&df, &mut buf)?;
        return Ok(buf);
    }
    ParquetWriter::new(&mut buf)
        .with_compression(ParquetCompression::Zstd(None))
        .set_parallel(df.height() > 100_000)
        .finish(&mut df)?;
    Ok(buf)
}

/// Writes a small single-chunk table with every column plain-encoded and uncompressed.
/// polars' writer tries dictionary encoding on every string column (a HyperLogLog cardinality
/// sketch and a hash cast per column, ~35 µs each even for two rows): a two-row table of 35
/// string columns took 1.36 ms to encode that way and takes 0.23 ms plain (bench-fast), which
/// matters when dozens of items commit at once. It reads back identically.
fn encode_plain(df: &DataFrame, buf: &mut Vec<u8>) -> Result<()> {
    use polars_parquet::write::{
        get_dtype_encoding, CompressionOptions, Encoding, FileWriter, RowGroupIterator,
        StatisticsOptions, Version, WriteOptions,
    };
    let schema = df.schema().to_arrow(CompatLevel::newest());
    let encodings: Vec<Vec<Encoding>> = schema
        .iter_values()
        .map(|f| {
            let mut leaves = get_dtype_encoding(&f.dtype);
            for e in &mut leaves {
                if *e == Encoding::RleDictionary {
                    *e = Encoding::Plain;
                }
            }
            leaves
        })
        .collect();
    let options = WriteOptions {
        statistics: StatisticsOptions::default(),
        compression: CompressionOptions::Uncompressed,
        version: Version::V1,
        data_page_size: None,
    };
    let batches: Vec<_> = df
        .iter_chunks(CompatLevel::newest(), false)
        .filter(|batch| !batch.is_empty())
        .collect();
    let rows: Vec<u64> = batches.iter().map(|b| b.len() as u64).collect();
    let groups = RowGroupIterator::try_new(
        batches.into_iter().map(Ok),
        &schema,
        options,
        encodings.into(),
    )?;
    let mut writer = FileWriter::try_new(buf, schema.clone(), options)?;
    for (group, rows) in groups.zip(rows) {
        writer.write(rows, group?)?;
    }
    writer.end(None)?;
    Ok(())
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
    store_tables_inlining(store, tables, 0)
}

/// [`store_tables`] for an item manifest: tables of at most [`INLINE_MAX_BYTES`] are kept
/// inline (in the entries), only bigger ones become blobs.
pub fn store_item_tables(
    store: &dyn Store,
    tables: &Tables,
) -> Result<(IndexMap<String, TableEntry>, String)> {
    store_tables_inlining(store, tables, INLINE_MAX_BYTES)
}

/// Encodes each table; keeps those of at most `inline_max` bytes inline, writes the others as
/// blobs.
fn store_tables_inlining(
    store: &dyn Store,
    tables: &Tables,
    inline_max: usize,
) -> Result<(IndexMap<String, TableEntry>, String)> {
    let mut entries = IndexMap::new();
    for (name, df) in &tables.0 {
        let bytes = encode_parquet(df)?;
        let blob = hash_bytes(&bytes);
        let inline = (bytes.len() <= inline_max).then(|| base64_encode(&bytes));
        if inline.is_none() {
            store.put_content(&blob_path(&blob), &bytes)?;
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
                inline,
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

/// Reads one table blob, verifying it against its hash. A blob whose content does not match
/// is quarantined (see [`Store::quarantine`]) and logged, so it counts as missing from now on
/// and the result it belongs to is recomputed.
pub fn load_table(store: &dyn Store, blob: &str) -> Result<DataFrame> {
    let key = blob_path(blob);
    let bytes = store.get(&key)?.ok_or_else(|| Error::Corrupt {
        key: key.clone(),
        reason: "blob is missing (run the pipeline again to recompute it)".into(),
    })?;
    if let Some(damage) = check_blob(store, blob, &bytes)? {
        return Err(damage);
    }
    decode_parquet(bytes)
}

/// Whether `bytes` (read from blob `blob`) are intact; when not, quarantines the blob and
/// returns the error to report. Every reader of blobs goes through here, so damage is found,
/// logged and set aside the same way everywhere.
pub fn check_blob(store: &dyn Store, blob: &str, bytes: &[u8]) -> Result<Option<Error>> {
    if hash_bytes(bytes) == blob {
        return Ok(None);
    }
    let key = blob_path(blob);
    store.quarantine(&key)?;
    tracing::warn!(
        "store object {key} in {} does not match its hash: moved to {}/{key}; the results \
         that use it will be recomputed",
        store.describe(),
        crate::store::QUARANTINE
    );
    Ok(Some(Error::Corrupt {
        key,
        reason: format!(
            "content does not match its hash; moved to {}/ (run the pipeline again to recompute it)",
            crate::store::QUARANTINE
        ),
    }))
}

/// Whether blob `blob` is present and intact (read and hashed); a damaged one is quarantined.
pub fn blob_intact(store: &dyn Store, blob: &str) -> Result<bool> {
    match store.get(&blob_path(blob))? {
        None => Ok(false),
        Some(bytes) => Ok(check_blob(store, blob, &bytes)?.is_none()),
    }
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

/// What committing a manifest came to: this writer's manifest is the commit, or another
/// writer committed the same key first and its result stands.
#[derive(Debug)]
pub enum Committed {
    /// This manifest was written.
    Written,
    /// Another writer's manifest for the same key was already there, readable and with every
    /// blob present; it stays, so everyone downstream sees one result per key.
    Kept(Box<Manifest>),
}

/// Writes a manifest under `key` (the commit point) only if no usable one is there.
///
/// Two writers (runs, cluster workers, people sharing a store) may compute the same key; a
/// plain put would let the later one overwrite a result that others may already have read —
/// for a non-deterministic kind, with different data. So the manifest is created only if absent
/// (`put_new`: `If-None-Match` on object stores); when one exists and is usable, it is kept;
/// when it is unreadable or points at missing blobs (a healed store), it is replaced with a
/// compare-and-swap on the version just read, so a concurrent healer cannot be clobbered either.
pub fn commit_manifest(store: &dyn Store, key: &str, manifest: &Manifest) -> Result<Committed> {
    const ROUNDS: usize = 8;
    let bytes = serde_json::to_vec_pretty(manifest).map_err(|e| Error::Corrupt {
        key: key.into(),
        reason: e.to_string(),
    })?;
    for _ in 0..ROUNDS {
        if store.put_new(key, &bytes)? {
            return Ok(Committed::Written);
        }
        let Some((theirs, version)) = store.get_versioned(key)? else {
            continue; // deleted between the two calls: try to create it again
        };
        if let Ok(m) = serde_json::from_slice::<Manifest>(&theirs) {
            if blobs_present(store, &m)? {
                return Ok(Committed::Kept(Box::new(m)));
            }
        }
        if store.put_if(key, &bytes, Some(&version))? {
            return Ok(Committed::Written);
        }
    }
    Err(Error::Corrupt {
        key: key.into(),
        reason: format!(
            "{ROUNDS} concurrent writers kept replacing this manifest; run again (the store is \
             shared by writers that disagree about it)"
        ),
    })
}

/// Whether every table of a manifest is present: each blob it points at, each inline table
/// intact.
pub fn blobs_present(store: &dyn Store, manifest: &Manifest) -> Result<bool> {
    for t in manifest.tables.values() {
        if !t.present(store)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Loads all tables of a manifest, verified: blobs against their hashes (see [`load_table`]),
/// inline tables too (a damaged one is an [`Error::Corrupt`] naming the manifest, so the
/// item is recomputed and its manifest replaced).
pub fn load_tables(store: &dyn Store, manifest: &Manifest) -> Result<Tables> {
    let mut out = IndexMap::new();
    for (name, entry) in &manifest.tables {
        let df = match entry.inline_bytes() {
            None => load_table(store, &entry.blob)?,
            Some(Ok(bytes)) => decode_parquet(bytes)?,
            Some(Err(why)) => {
                let key = item_path(&manifest.recipe_key);
                tracing::warn!(
                    "item manifest {key} in {}: inline table `{name}` {why}; the item will be recomputed",
                    store.describe()
                );
                return Err(Error::Corrupt {
                    key,
                    reason: format!("inline table `{name}` {why}"),
                });
            }
        };
        out.insert(name.clone(), df);
    }
    Ok(Tables(out))
}

/// Standard base64 with padding (inline tables in JSON manifests).
fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decodes [`base64_encode`]'s output; `None` when `text` is not valid base64.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(text).ok()
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

    /// A frame with the column types stages write: strings and numbers with nulls, booleans,
    /// lists (empty, null), datetimes, structs.
    fn mixed(rows: usize) -> DataFrame {
        let n = rows as i64;
        let text: Vec<Option<String>> = (0..n)
            .map(|i| (i % 3 != 0).then(|| format!("value {i}")))
            .collect();
        let lists: Vec<Option<Series>> = (0..n)
            .map(|i| match i % 4 {
                0 => None,
                1 => Some(Series::new_empty("".into(), &DataType::String)),
                _ => Some(Series::new("".into(), &[format!("a{i}"), "b".to_string()])),
            })
            .collect();
        let mut df = df!(
            "text" => text,
            "count" => (0..n).map(|i| (i % 5 != 0).then_some(i as u32)).collect::<Vec<_>>(),
            "score" => (0..n).map(|i| i as f64 / 3.0).collect::<Vec<_>>(),
            "flag" => (0..n).map(|i| i % 2 == 0).collect::<Vec<_>>(),
            "big" => (0..n).map(|i| i * 1_000_000_007).collect::<Vec<_>>(),
            "shown" => lists,
        )
        .expect("frame");
        let at = Series::new("at".into(), (0..n).map(|i| i * 1000).collect::<Vec<_>>())
            .cast(&DataType::Datetime(TimeUnit::Milliseconds, None))
            .expect("datetime");
        df.with_column(at.into_column()).expect("column");
        let pair = StructChunked::from_series(
            "pair".into(),
            rows,
            [
                df.column("text").expect("text"),
                df.column("count").expect("count"),
            ]
            .into_iter()
            .map(|c| c.as_materialized_series()),
        )
        .expect("struct");
        df.with_column(pair.into_series().into_column())
            .expect("column");
        df
    }

    #[test]
    fn tables_of_every_size_and_type_read_back_equal() {
        // 0 and 7 rows take the plain path, 3,000 rows polars' dictionary-encoding writer.
        for rows in [0, 7, COMPRESS_FROM_ROWS + 1, 3000] {
            let df = mixed(rows);
            let back = decode_parquet(encode_parquet(&df).expect("encode")).expect("decode");
            assert_eq!(back.schema(), df.schema(), "{rows} rows");
            assert!(back.equals_missing(&df), "{rows} rows:\n{back}\n{df}");
        }
    }

    #[test]
    fn small_tables_are_plain_encoded() {
        let mut repetitive = df!("agent" => vec!["heuristic"; 500]).expect("frame");
        let plain = encode_parquet(&repetitive).expect("encode");
        let mut dictionary = Vec::new();
        ParquetWriter::new(&mut dictionary)
            .with_compression(ParquetCompression::Uncompressed)
            .finish(&mut repetitive)
            .expect("polars writer");
        // 500 copies of a 9-byte string: plain stores them all, a dictionary only once.
        assert!(plain.len() > 500 * 9, "{} bytes", plain.len());
        assert!(dictionary.len() < 500 * 9, "{} bytes", dictionary.len());
        let back = decode_parquet(plain).expect("decode");
        assert!(back.equals(&repetitive));
    }

    #[test]
    fn base64_round_trips_and_refuses_what_is_not_base64() {
        for n in 0..40usize {
            let bytes: Vec<u8> = (0..n).map(|i| (i * 37 % 256) as u8).collect();
            let text = base64_encode(&bytes);
            assert!(text.len().is_multiple_of(4));
            assert_eq!(base64_decode(&text), Some(bytes), "{n} bytes: {text}");
        }
        assert_eq!(base64_encode(b"Man"), "TWFu");
        assert_eq!(base64_encode(b"Ma"), "TWE=");
        for bad in ["TWF", "TW=u", "T*Fu", "TQ===", "TQ==TWFu"] {
            assert_eq!(base64_decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn small_item_tables_are_inline_verified_and_equal_to_blobs() {
        let dir = std::env::temp_dir().join(format!("prefflow-inline-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = crate::store::FsStore::new(&dir);
        let small = df!("v" => ["a", "b"]).expect("frame");
        // Hashes do not compress: well over the inline limit.
        let hashes: Vec<String> = (0..5000u32).map(|i| hash_bytes(&i.to_le_bytes())).collect();
        let big = df!("v" => hashes).expect("frame");
        let tables = Tables(
            [("small", small.clone()), ("big", big)]
                .into_iter()
                .map(|(n, d)| (n.to_string(), d))
                .collect(),
        );
        let (as_blobs, v1) = store_tables(&store, &tables).expect("blobs");
        let (items, v2) = store_item_tables(&store, &tables).expect("item");
        // Same hashes and data version wherever the bytes are kept.
        assert_eq!(v1, v2);
        assert_eq!(as_blobs["small"].blob, items["small"].blob);
        assert!(items["small"].inline.is_some() && items["big"].inline.is_none());
        assert!(as_blobs.values().all(|e| e.inline.is_none()));
        let mut m = committed_value(&store, "x");
        m.tables = items;
        store
            .delete(&blob_path(&m.tables["small"].blob))
            .expect("delete the small blob");
        assert!(blobs_present(&store, &m).expect("present"));
        assert!(load_tables(&store, &m).expect("load").0["small"].equals(&small));
        // A damaged inline table is found and named.
        let entry = m.tables.get_mut("small").expect("small");
        let text = entry.inline.clone().expect("inline");
        let flipped = if text.starts_with('A') { "B" } else { "A" };
        entry.inline = Some(format!("{flipped}{}", &text[1..]));
        assert!(!blobs_present(&store, &m).expect("present"));
        match load_tables(&store, &m) {
            Err(Error::Corrupt { reason, .. }) => assert!(reason.contains("`small`"), "{reason}"),
            other => panic!("damage not found: {:?}", other.map(|t| t.0.len())),
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A manifest of one one-column table holding `value`, its blob stored in `store`.
    fn committed_value(store: &dyn Store, value: &str) -> Manifest {
        let mut tables = IndexMap::new();
        tables.insert("t".to_string(), df!("v" => [value]).expect("frame"));
        let (entries, data_version) = store_tables(store, &Tables(tables)).expect("store");
        Manifest {
            recipe_key: "k".repeat(64),
            key: KeyParts {
                engine: ENGINE_VERSION.into(),
                kind: "probe".into(),
                kind_version: "1".into(),
                code: Default::default(),
                params: serde_json::json!({}),
                inputs: Default::default(),
                external: Default::default(),
                item: None,
                when: None,
                subset: None,
            },
            pipeline: "p".into(),
            stage: "s".into(),
            variant: String::new(),
            deterministic: false,
            data_version,
            tables: entries,
            started_at: 0.0,
            seconds: 0.0,
            attempts: 1,
            items: None,
            item_keys: Vec::new(),
            usage: Usage::default(),
        }
    }

    #[test]
    fn the_first_committed_manifest_stands_unless_its_blobs_are_gone() {
        let dir = std::env::temp_dir().join(format!("prefflow-commit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = crate::store::FsStore::new(&dir);
        let key = recipe_path(&"k".repeat(64));
        let first = committed_value(&store, "first");
        let second = committed_value(&store, "second");
        assert!(matches!(
            commit_manifest(&store, &key, &first).expect("commit"),
            Committed::Written
        ));
        // A second writer of the same key (a non-deterministic kind: other data) keeps the first.
        match commit_manifest(&store, &key, &second).expect("commit") {
            Committed::Kept(m) => assert_eq!(m.data_version, first.data_version),
            Committed::Written => panic!("the second writer overwrote the first's result"),
        }
        let standing = load_manifest(&store, &key).expect("load").expect("present");
        assert_eq!(standing.data_version, first.data_version);
        // Once the first result's blob is gone (gc'd, quarantined), a new commit replaces it.
        store
            .delete(&blob_path(&first.tables["t"].blob))
            .expect("delete");
        assert!(matches!(
            commit_manifest(&store, &key, &second).expect("commit"),
            Committed::Written
        ));
        let standing = load_manifest(&store, &key).expect("load").expect("present");
        assert_eq!(standing.data_version, second.data_version);
        // So does an unreadable manifest.
        store.put(&key, b"{ not json").expect("put");
        assert!(matches!(
            commit_manifest(&store, &key, &first).expect("commit"),
            Committed::Written
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
