//! The artifact store: a byte store addressed by string keys, shared by every run, person and
//! machine that points at it.
//!
//! Everything the engine persists goes through [`Store`], so a local directory ([`FsStore`]) and
//! a remote object store behave the same to the engine. Writers never clobber each other: blobs
//! and manifests are content-addressed (writing one twice writes the same bytes), leases and
//! leases are created only if absent ([`Store::put_new`]), and run records are merged with
//! compare-and-swap ([`Store::get_versioned`], [`Store::put_if`]).
//!
//! Keys are `/`-separated relative paths built only from validated names ([`check_name`]) and
//! hashes, so no user-chosen string can reach outside the store.

pub mod deadline;
pub mod diagnose;
mod fs;
pub mod lease;
pub mod names;
pub mod object;
pub mod team;

pub use deadline::Deadlines;
pub use fs::{FsStore, TMP_SUFFIX};
pub use names::{check_name, NameRule};
pub use object::{RemoteStore, RemoteUrl};

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};

/// Where a `--store` argument points: a local (or shared-filesystem) directory, or an object
/// store. Parsing touches nothing, so a bad URL is a usage error before any work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// A directory (a plain path, or `file:///abs/path`).
    Local(PathBuf),
    /// An object store (`s3://bucket/prefix`, `gs://…`, `az://…`).
    Remote(RemoteUrl),
}

impl StoreLocation {
    /// Parses a `--store` argument: `s3://`, `gs://`, `az://` and `file://` URLs, or a path.
    pub fn parse(spec: &str) -> Result<Self> {
        if let Some(remote) = RemoteUrl::parse(spec) {
            return remote.map(StoreLocation::Remote);
        }
        if let Some(path) = spec.strip_prefix("file://") {
            if path.is_empty() {
                return Err(Error::Usage(format!(
                    "--store {spec}: a file:// URL needs a path, e.g. file:///data/prefflow-store"
                )));
            }
            return Ok(StoreLocation::Local(PathBuf::from(path)));
        }
        if let Some((scheme, _)) = spec.split_once("://") {
            return Err(Error::Usage(format!(
                "--store {spec}: `{scheme}://` stores are not built in; use a directory, file://, \
                 s3:// (also S3-compatible servers through AWS_ENDPOINT_URL), gs:// or az://"
            )));
        }
        Ok(StoreLocation::Local(PathBuf::from(spec)))
    }

    /// Opens the store (an object store's client is set up, nothing is requested yet).
    pub fn open(&self) -> Result<Arc<dyn Store>> {
        Ok(match self {
            StoreLocation::Local(dir) => Arc::new(FsStore::new(dir)),
            StoreLocation::Remote(url) => Arc::new(RemoteStore::open(url)?),
        })
    }
}

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

/// A temporary file written on another machine whose writer cannot be asked is stale after
/// this long (seconds): no single object write takes an hour.
pub const FOREIGN_TMP_AGE: f64 = 3600.0;

/// Who wrote a temporary file, from its name (`.<name>.<host>-<pid>-<n>.tmp`, or the older
/// `.<name>.<pid>-<n>.tmp` written on this machine).
pub fn tmp_writer(key: &str) -> Option<(String, u32)> {
    let name = key.rsplit('/').next()?.strip_suffix(TMP_SUFFIX)?;
    let tag = name.rsplit_once('.')?.1;
    let mut parts = tag.rsplitn(3, '-');
    let _n = parts.next()?;
    let pid = parts.next()?.parse().ok()?;
    let host = parts.next().map_or_else(host_name, str::to_string);
    Some((host, pid))
}

/// A temporary file is stale when its writer is gone: a dead process on this machine, or, for
/// another machine's, after [`FOREIGN_TMP_AGE`]. One whose name says nothing is stale too.
pub fn tmp_is_stale(meta: &ObjectMeta, now: f64) -> bool {
    match tmp_writer(&meta.key) {
        Some((host, pid)) if host == host_name() => !pid_alive(pid, None),
        Some(_) => now - meta.modified > FOREIGN_TMP_AGE,
        None => true,
    }
}

/// Prefix under which damaged objects are kept (see [`Store::quarantine`]).
pub const QUARANTINE: &str = "quarantine";

/// This machine's name as it appears in leases and temporary file names (only letters,
/// digits, `-` and `_`), so a lease or temp file can be told apart from another machine's.
pub fn host_name() -> String {
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOST.get_or_init(|| {
        let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .or_else(|_| std::fs::read_to_string("/etc/hostname"))
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_else(|| "unknown".into());
        let clean: String = raw
            .trim()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if clean.is_empty() {
            "unknown".into()
        } else {
            clean
        }
    })
    .clone()
}

/// Whether process `pid` on this machine is alive and is still the process that started at
/// `start_ticks` (its start time in clock ticks since boot, `/proc/<pid>/stat` field 22), so a
/// reused pid does not keep a dead writer's lease or temp file alive. `None` skips that check.
pub fn pid_alive(pid: u32, start_ticks: Option<u64>) -> bool {
    match proc_start_ticks(pid) {
        None => false,
        Some(now) => start_ticks.is_none_or(|t| t == now),
    }
}

/// Start time of process `pid` in clock ticks since boot, `None` when it does not exist (or is
/// a zombie: it has exited and only waits to be reaped).
pub fn proc_start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    if fields.first() == Some(&"Z") || fields.first() == Some(&"X") {
        return None;
    }
    // `rest` starts at field 3 (state), so field 22 (starttime) is index 19.
    fields.get(19)?.parse().ok()
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
    fn temp_file_names_say_who_wrote_them() {
        let me = host_name();
        assert_eq!(
            tmp_writer(&format!("llm/ab/.x.json.{me}-42-7.tmp")),
            Some((me.clone(), 42))
        );
        assert_eq!(
            tmp_writer("blobs/ab/.h.parquet.other-host-9-0.tmp"),
            Some(("other-host".into(), 9))
        );
        assert_eq!(tmp_writer("runs/p/.latest.json.17-3.tmp"), Some((me, 17)));
    }

    #[test]
    fn temp_files_of_live_writers_are_kept() {
        let me = host_name();
        let mine = ObjectMeta {
            key: format!("runs/p/.latest.json.{me}-{}-0.tmp", std::process::id()),
            size: 1,
            modified: 0.0,
        };
        assert!(!tmp_is_stale(&mine, unix_now()));
        let foreign = ObjectMeta {
            key: "runs/p/.latest.json.elsewhere-1-0.tmp".into(),
            size: 1,
            modified: unix_now(),
        };
        assert!(!tmp_is_stale(&foreign, unix_now()));
        assert!(tmp_is_stale(&foreign, unix_now() + 2.0 * FOREIGN_TMP_AGE));
    }
}
