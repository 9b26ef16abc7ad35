//! Content hashing: recipe keys, data versions and item identities.
//!
//! Keys are blake3 over canonical JSON (serde_json with sorted object keys), so the same recipe
//! always hashes the same, on any machine, and nothing outside the recipe can change a key.

use polars::prelude::{AnyValue, DataFrame, PolarsResult};
use serde::Serialize;
use serde_json::Value;

/// Length of the hex keys used throughout the store (128 bits).
const KEY_HEX_LEN: usize = 32;

/// Hash of arbitrary bytes, as a short hex key.
pub fn hash_bytes(bytes: &[u8]) -> String {
    short(blake3::hash(bytes))
}

/// Hash of a serializable value's canonical JSON (object keys sorted at every level, whatever
/// order the YAML or the serializer used).
pub fn hash_json<T: Serialize>(value: &T) -> String {
    // Converting plain data to a JSON value cannot fail; an error would hash as null.
    let value = serde_json::to_value(value).unwrap_or(Value::Null);
    let mut bytes = Vec::new();
    write_canonical(&value, &mut bytes);
    hash_bytes(&bytes)
}

/// Writes `value` as JSON with object keys sorted, so equal values give equal bytes.
pub fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push(b'{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(Value::String(k.clone()).to_string().as_bytes());
                out.push(b':');
                write_canonical(&map[k], out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(v, out);
            }
            out.push(b']');
        }
        scalar => out.extend_from_slice(scalar.to_string().as_bytes()),
    }
}

/// `params` with the list at `catalog` (entries `{ name, … }`) narrowed to the entry named
/// `picked`: the usual [`crate::Kind::key_params`] of a kind whose params hold a catalog and
/// the name a sweep chose from it. Unchanged when `picked` is `None` or the field is no list;
/// an empty list when no entry has that name (the kind's own check reports that).
pub fn only_picked_entry(params: &Value, catalog: &str, picked: Option<&str>) -> Value {
    let mut out = params.clone();
    let (Some(name), Some(Value::Array(entries))) =
        (picked, out.get_mut(catalog).filter(|v| v.is_array()))
    else {
        return out;
    };
    entries.retain(|e| e.get("name").and_then(Value::as_str) == Some(name));
    out
}

fn short(hash: blake3::Hash) -> String {
    hash.to_hex()[..KEY_HEX_LEN].to_string()
}

/// Hashes a file or a directory tree (paths and contents), or `"missing"`.
pub fn hash_path(path: &std::path::Path) -> String {
    if path.is_file() {
        return match std::fs::read(path) {
            Ok(bytes) => hash_bytes(&bytes),
            Err(e) => format!("unreadable: {}", e.kind()),
        };
    }
    if path.is_dir() {
        let mut files = Vec::new();
        collect_files(path, path, &mut files);
        files.sort();
        let mut hasher = blake3::Hasher::new();
        for rel in files {
            hasher.update(rel.as_bytes());
            hasher.update(hash_path(&path.join(&rel)).as_bytes());
        }
        return short(hasher.finalize());
    }
    "missing".into()
}

fn collect_files(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_files(root, &path, out);
        } else if let Ok(rel) = path.strip_prefix(root) {
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// One group of rows of a per-item stage's main input.
#[derive(Debug, Clone)]
pub struct ItemGroup {
    /// The item's value in the per-item column, as text.
    pub value: String,
    /// Row positions in the main input.
    pub rows: Vec<u32>,
    /// Hash of exactly these rows' content: the item's identity in its cache key.
    pub content_hash: String,
}

/// Groups `df` by `column` in order of first appearance and hashes each group's rows.
pub fn item_groups(df: &DataFrame, column: &str) -> PolarsResult<Vec<ItemGroup>> {
    let row_hashes = row_hashes(df)?;
    let key_col = df.column(column)?.as_materialized_series().clone();
    let mut groups: indexmap::IndexMap<String, Vec<u32>> = indexmap::IndexMap::new();
    for (i, v) in key_col.iter().enumerate() {
        groups.entry(item_text(&v)).or_default().push(i as u32);
    }
    Ok(groups
        .into_iter()
        .map(|(value, rows)| {
            let mut hasher = blake3::Hasher::new();
            for &r in &rows {
                hasher.update(&row_hashes[r as usize]);
            }
            ItemGroup {
                value,
                rows,
                content_hash: short(hasher.finalize()),
            }
        })
        .collect())
}

fn item_text(v: &AnyValue) -> String {
    match v {
        AnyValue::String(s) => s.to_string(),
        AnyValue::StringOwned(s) => s.to_string(),
        AnyValue::Null => "null".into(),
        other => other.to_string(),
    }
}

/// A content hash per row, over column names and values (stable for equal data).
pub fn row_hashes(df: &DataFrame) -> PolarsResult<Vec<[u8; 32]>> {
    let mut hashers: Vec<blake3::Hasher> =
        (0..df.height()).map(|_| blake3::Hasher::new()).collect();
    for col in df.columns() {
        let series = col.as_materialized_series();
        let name = series.name().as_bytes();
        for (hasher, value) in hashers.iter_mut().zip(series.iter()) {
            hasher.update(name);
            write_value(hasher, &value);
        }
    }
    Ok(hashers
        .into_iter()
        .map(|h| *h.finalize().as_bytes())
        .collect())
}

fn write_value(h: &mut blake3::Hasher, v: &AnyValue) {
    match v {
        AnyValue::Null => {
            h.update(b"\0N");
        }
        AnyValue::String(s) => write_tagged(h, b"S", s.as_bytes()),
        AnyValue::StringOwned(s) => write_tagged(h, b"S", s.as_bytes()),
        AnyValue::List(series) => {
            h.update(b"\0L");
            h.update(&(series.len() as u64).to_le_bytes());
            for x in series.iter() {
                write_value(h, &x);
            }
        }
        other => write_tagged(h, b"V", format!("{other:?}").as_bytes()),
    }
}

fn write_tagged(h: &mut blake3::Hasher, tag: &[u8], bytes: &[u8]) {
    h.update(b"\0");
    h.update(tag);
    h.update(&(bytes.len() as u64).to_le_bytes());
    h.update(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::*;

    #[test]
    fn groups_keep_first_appearance_order_and_hash_only_their_rows() {
        let df = df!("id" => ["b", "a", "b"], "x" => [1, 2, 3]).expect("frame");
        let groups = item_groups(&df, "id").expect("groups");
        assert_eq!(
            groups.iter().map(|g| g.value.as_str()).collect::<Vec<_>>(),
            ["b", "a"]
        );
        assert_eq!(groups[0].rows, [0, 2]);
        let grown = df!("id" => ["b", "a", "b", "c"], "x" => [1, 2, 3, 4]).expect("frame");
        let grown_groups = item_groups(&grown, "id").expect("groups");
        assert_eq!(groups[0].content_hash, grown_groups[0].content_hash);
        assert_eq!(groups[1].content_hash, grown_groups[1].content_hash);
        let edited = df!("id" => ["b", "a", "b"], "x" => [1, 2, 4]).expect("frame");
        assert_ne!(
            groups[0].content_hash,
            item_groups(&edited, "id").expect("groups")[0].content_hash
        );
    }

    #[test]
    fn a_catalog_keeps_only_the_picked_entry() {
        let params = serde_json::json!({
            "pick": "b",
            "catalog": [{"name": "a", "x": 1}, {"name": "b", "x": 2}],
        });
        let grown = serde_json::json!({
            "pick": "b",
            "catalog": [{"name": "a", "x": 1}, {"name": "b", "x": 2}, {"name": "c"}],
        });
        let keyed = only_picked_entry(&params, "catalog", Some("b"));
        assert_eq!(keyed["catalog"], serde_json::json!([{"name": "b", "x": 2}]));
        assert_eq!(keyed, only_picked_entry(&grown, "catalog", Some("b")));
        assert_ne!(keyed, only_picked_entry(&params, "catalog", Some("a")));
        assert_eq!(only_picked_entry(&params, "catalog", None), params);
        assert_eq!(only_picked_entry(&params, "other", Some("b")), params);
    }

    #[test]
    fn json_hash_ignores_nothing_but_formatting() {
        let a = serde_json::json!({"a": 1, "b": [1, 2]});
        let b: serde_json::Value = serde_json::from_str(r#"{ "b": [1,2], "a": 1 }"#).expect("json");
        assert_eq!(hash_json(&a), hash_json(&b));
        assert_ne!(
            hash_json(&a),
            hash_json(&serde_json::json!({"a": 2, "b": [1, 2]}))
        );
    }
}
