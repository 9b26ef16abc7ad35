//! The store's contract, which every backend keeps: the [`Store`] trait, what it lists and
//! versions, the key rule and the quarantine prefix.

use std::path::PathBuf;

use crate::error::{Error, Result};

/// Refuses a store key that could leave the store (`..`, absolute, empty segments, `\`). Keys
/// are built from validated names and hashes; this is the last line of defence.
pub fn check_key(key: &str) -> Result<()> {
    let bad = key.is_empty()
        || key.starts_with('/')
        || key.contains('\\')
        || key
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..");
    if bad {
        return Err(Error::Usage(format!(
            "store key `{key}` is not a relative path inside the store"
        )));
    }
    Ok(())
}

/// An opaque version of a stored object, for compare-and-swap ([`Store::put_if`]): an object
/// store's ETag, or a hash of a local file's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version(pub String);

/// A listed object: its key, size and last modification (Unix seconds).
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectMeta {
    /// Store key.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// Last modified, Unix seconds (what `gc` compares with lease start times).
    pub modified: f64,
}

/// A key/value byte store with atomic puts. Keys are `/`-separated relative paths.
pub trait Store: Send + Sync {
    /// The bytes under `key`, or `None` when absent.
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>>;
    /// Writes `bytes` under `key` atomically (readers see all or nothing).
    fn put(&self, key: &str, bytes: &[u8]) -> Result<()>;
    /// Writes a content-addressed object (its key names its bytes, so every writer writes the
    /// same): skipped when it exists already. An object store overrides this with a plain PUT,
    /// one request instead of a HEAD and a PUT.
    fn put_content(&self, key: &str, bytes: &[u8]) -> Result<()> {
        if !self.exists(key)? {
            self.put(key, bytes)?;
        }
        Ok(())
    }
    /// Writes `bytes` under `key` only when nothing is there yet; `false` when something was
    /// (the existing object is left alone). Leases rely on exactly one winner.
    fn put_new(&self, key: &str, bytes: &[u8]) -> Result<bool>;
    /// The bytes under `key` with their version, for a later [`Store::put_if`].
    fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>>;
    /// Replaces `key` only when its version is still `expected` (`None`: only when absent);
    /// `false` when another writer got there first (read again, merge, retry).
    fn put_if(&self, key: &str, bytes: &[u8], expected: Option<&Version>) -> Result<bool>;
    /// Whether `key` exists.
    fn exists(&self, key: &str) -> Result<bool>;
    /// All keys under `prefix` (recursively), sorted.
    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        Ok(self.list_meta(prefix)?.into_iter().map(|m| m.key).collect())
    }
    /// All objects under `prefix` (recursively) with size and modification time, sorted by key.
    fn list_meta(&self, prefix: &str) -> Result<Vec<ObjectMeta>>;
    /// Removes `key`; absent keys are fine.
    fn delete(&self, key: &str) -> Result<()>;
    /// Size and modification time of `key`, `None` when absent.
    fn stat(&self, key: &str) -> Result<Option<ObjectMeta>>;
    /// Size in bytes of `key` (0 when absent).
    fn size(&self, key: &str) -> Result<u64>;
    /// A local file path for `key`, when the store is local (for `show --path`).
    fn local_path(&self, key: &str) -> Option<PathBuf>;
    /// Where the store is, for messages (`/path/.prefflow`, `s3://bucket/prefix`).
    fn describe(&self) -> String;
    /// The store's clock minus this machine's, in seconds, when the store stamps objects with
    /// its own clock (an object store): lease heartbeats are then judged by the lease object's
    /// modification time, not by the writer's clock. `None` for a local directory, where the
    /// lease records' own times are used.
    fn clock_offset(&self) -> Option<f64> {
        None
    }
    /// Moves a damaged object out of the way to `quarantine/<key>` (kept for inspection, never
    /// read again), so the next read treats it as missing and it is recomputed.
    fn quarantine(&self, key: &str) -> Result<()> {
        if let Some(bytes) = self.get(key)? {
            self.put(&format!("{QUARANTINE}/{key}"), &bytes)?;
        }
        self.delete(key)
    }
}

/// Prefix under which damaged objects are kept (see [`Store::quarantine`]).
pub const QUARANTINE: &str = "quarantine";
