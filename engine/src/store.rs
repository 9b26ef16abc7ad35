//! The artifact store: a byte store addressed by string keys.
//!
//! Everything the engine persists goes through [`Store`], so a remote object store (S3-compatible)
//! can back it later and several machines can share one. [`FsStore`] is the local implementation:
//! every write goes to a temporary file first and is renamed into place, so a reader (or a run that
//! was killed) never sees a half-written object.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};

/// A key/value byte store with atomic puts. Keys are `/`-separated relative paths.
pub trait Store: Send + Sync {
    /// The bytes under `key`, or `None` when absent.
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>>;
    /// Writes `bytes` under `key` atomically (readers see all or nothing).
    fn put(&self, key: &str, bytes: &[u8]) -> Result<()>;
    /// Whether `key` exists.
    fn exists(&self, key: &str) -> Result<bool>;
    /// All keys under `prefix` (recursively), sorted.
    fn list(&self, prefix: &str) -> Result<Vec<String>>;
    /// Removes `key`; absent keys are fine.
    fn delete(&self, key: &str) -> Result<()>;
    /// Size in bytes of `key` (0 when absent).
    fn size(&self, key: &str) -> Result<u64>;
    /// A local file path for `key`, when the store is local (for `show --path`).
    fn local_path(&self, key: &str) -> Option<PathBuf>;
}

/// A store in a local directory (default `.prefflow/`). The directory is created on first write,
/// so validating a pipeline never touches the disk.
#[derive(Debug, Clone)]
pub struct FsStore {
    root: PathBuf,
    /// Directories already created by this process (saves a syscall per write).
    made: Arc<Mutex<HashSet<PathBuf>>>,
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl FsStore {
    /// A store rooted at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            made: Arc::default(),
        }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, key: &str) -> PathBuf {
        self.root.join(key)
    }

    fn io(path: &Path, source: std::io::Error) -> Error {
        Error::Store {
            path: path.to_path_buf(),
            source,
        }
    }

    fn ensure_dir(&self, dir: &Path) -> Result<()> {
        let known = self.made.lock().map(|m| m.contains(dir)).unwrap_or(false);
        if !known {
            std::fs::create_dir_all(dir).map_err(|e| Self::io(dir, e))?;
            if let Ok(mut made) = self.made.lock() {
                made.insert(dir.to_path_buf());
            }
        }
        Ok(())
    }

    /// A temporary name next to `path`: renames stay within one directory, and concurrent
    /// writers spread over the store's shard directories instead of contending on one.
    fn tmp_path(&self, path: &Path) -> PathBuf {
        let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        path.with_file_name(format!(".{name}.{}-{n}{TMP_SUFFIX}", std::process::id()))
    }
}

/// Suffix of in-flight temporary files (`gc` removes those whose writer is gone).
pub const TMP_SUFFIX: &str = ".tmp";

impl Store for FsStore {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let path = self.path(key);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Self::io(&path, e)),
        }
    }

    fn put(&self, key: &str, bytes: &[u8]) -> Result<()> {
        let path = self.path(key);
        let tmp = self.tmp_path(&path);
        if let Some(dir) = path.parent() {
            self.ensure_dir(dir)?;
        }
        std::fs::write(&tmp, bytes).map_err(|e| Self::io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            Self::io(&path, e)
        })
    }

    fn exists(&self, key: &str) -> Result<bool> {
        Ok(self.path(key).is_file())
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        let mut out = Vec::new();
        let base = self.path(prefix);
        if base.is_dir() {
            walk(&base, &mut |p| {
                if let Ok(rel) = p.strip_prefix(&self.root) {
                    out.push(rel.to_string_lossy().replace('\\', "/"));
                }
            })
            .map_err(|e| Self::io(&base, e))?;
        }
        out.sort();
        Ok(out)
    }

    fn delete(&self, key: &str) -> Result<()> {
        let path = self.path(key);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Self::io(&path, e)),
            _ => Ok(()),
        }
    }

    fn size(&self, key: &str) -> Result<u64> {
        Ok(std::fs::metadata(self.path(key))
            .map(|m| m.len())
            .unwrap_or(0))
    }

    fn local_path(&self, key: &str) -> Option<PathBuf> {
        Some(self.path(key))
    }
}

fn walk(dir: &Path, visit: &mut dyn FnMut(&Path)) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, visit)?;
        } else {
            visit(&path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn puts_are_visible_whole_and_leave_no_temp_files() {
        let dir = std::env::temp_dir().join(format!("prefflow-store-{}", std::process::id()));
        let store = FsStore::new(&dir);
        store.put("a/b.json", b"{}").expect("put");
        assert_eq!(
            store.get("a/b.json").expect("get").as_deref(),
            Some(&b"{}"[..])
        );
        assert_eq!(store.get("a/missing").expect("get"), None);
        assert_eq!(store.list("a").expect("list"), vec!["a/b.json".to_string()]);
        assert!(store
            .list("a")
            .expect("list")
            .iter()
            .all(|k| !k.ends_with(TMP_SUFFIX)));
        store.delete("a/b.json").expect("delete");
        assert!(!store.exists("a/b.json").expect("exists"));
        let _ = std::fs::remove_dir_all(dir);
    }
}
