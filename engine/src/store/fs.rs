//! [`FsStore`]: the store in a local (or shared, NFS-like) directory.
//!
//! Every write goes to a temporary file first and is renamed (or hard-linked, for
//! create-if-absent) into place, so a reader, or a run that was killed, never sees a
//! half-written object; a failed write (disk full) removes its temporary file. Compare-and-swap
//! holds an advisory lock on a side file for the few microseconds of the swap; the kernel
//! releases it if the writer dies.

use std::collections::HashSet;
use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use super::contract::{check_key, ObjectMeta, Store, Version, QUARANTINE};
use super::host::{host_name, TMP_SUFFIX};
use super::team;
use crate::error::{Error, Result};
use crate::keys::hash_bytes;

/// A store in a local directory (default `.prefflow/`). The directory is created on first write,
/// so validating a pipeline never touches the disk.
#[derive(Debug, Clone)]
pub struct FsStore {
    root: PathBuf,
    /// Directories already created by this process (saves a syscall per write).
    made: Arc<Mutex<HashSet<PathBuf>>>,
    /// Whether the store is shared by a group ([`team::is_shared`]), looked at on the first
    /// write: then every directory and file it writes gets the shared modes.
    shared: Arc<OnceLock<bool>>,
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl FsStore {
    /// A store rooted at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            made: Arc::default(),
            shared: Arc::default(),
        }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file of `key`. Keys are built from validated names and hashes; one that could
    /// leave the root (`..`, absolute, empty segments) is refused all the same.
    fn path(&self, key: &str) -> Result<PathBuf> {
        check_key(key)?;
        Ok(self.root.join(key))
    }

    /// The error for a failed write to `path`: a permission or read-only filesystem names the
    /// owner and the fix ([`team::not_permitted`]).
    fn io(&self, path: &Path, source: std::io::Error) -> Error {
        if team::io_is_not_permitted(&source) {
            return team::not_permitted(&self.root, path, &source, true);
        }
        Error::Store {
            path: path.to_path_buf(),
            source,
        }
    }

    /// The error for a failed read of `path` (a permission names the fix).
    fn io_read(&self, path: &Path, source: std::io::Error) -> Error {
        if team::io_is_not_permitted(&source) {
            return team::not_permitted(&self.root, path, &source, false);
        }
        Error::Store {
            path: path.to_path_buf(),
            source,
        }
    }

    /// Whether this store is shared by a group (see [`team`]).
    fn shared(&self) -> bool {
        *self.shared.get_or_init(|| team::is_shared(&self.root))
    }

    /// Gives a file this process wrote the shared mode, in a shared store (whatever the umask).
    fn share_file(&self, path: &Path) -> Result<()> {
        if self.shared() {
            let mode = std::fs::Permissions::from_mode(team::SHARED_FILE_MODE);
            std::fs::set_permissions(path, mode).map_err(|e| self.io(path, e))?;
        }
        Ok(())
    }

    fn ensure_dir(&self, dir: &Path) -> Result<()> {
        let known = self.made.lock().map(|m| m.contains(dir)).unwrap_or(false);
        if !known {
            match self.shared() {
                true => self.make_shared_dirs(dir)?,
                false => std::fs::create_dir_all(dir).map_err(|e| self.io(dir, e))?,
            }
            if let Ok(mut made) = self.made.lock() {
                made.insert(dir.to_path_buf());
            }
        }
        Ok(())
    }

    /// Creates `dir` and its missing parents with the shared directory mode.
    fn make_shared_dirs(&self, dir: &Path) -> Result<()> {
        if dir.is_dir() {
            return Ok(());
        }
        if let Some(parent) = dir.parent() {
            self.make_shared_dirs(parent)?;
        }
        match std::fs::create_dir(dir) {
            Ok(()) => {
                let mode = std::fs::Permissions::from_mode(team::SHARED_DIR_MODE);
                std::fs::set_permissions(dir, mode).map_err(|e| self.io(dir, e))
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(self.io(dir, e)),
        }
    }

    /// A temporary name next to `path`: renames stay within one directory, and concurrent
    /// writers spread over the store's shard directories instead of contending on one. The
    /// name carries host and pid (`.<name>.<host>-<pid>-<n>.tmp`) so `gc` can tell whether
    /// its writer is gone.
    fn tmp_path(&self, path: &Path) -> PathBuf {
        let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        path.with_file_name(format!(
            ".{name}.{}-{}-{n}{TMP_SUFFIX}",
            host_name(),
            std::process::id()
        ))
    }

    /// Writes `bytes` to a fresh temporary file beside `path` and returns its name; on any
    /// failure (disk full, quota) the partial file is removed before the error is returned.
    fn write_tmp(&self, path: &Path, bytes: &[u8]) -> Result<PathBuf> {
        if let Some(dir) = path.parent() {
            self.ensure_dir(dir)?;
        }
        let tmp = self.tmp_path(path);
        let mut written = std::fs::write(&tmp, bytes);
        if matches!(&written, Err(e) if e.kind() == std::io::ErrorKind::NotFound) {
            // The directory went away under us (removed by hand): make it again, once.
            if let Some(dir) = path.parent() {
                if let Ok(mut made) = self.made.lock() {
                    made.remove(dir);
                }
                self.ensure_dir(dir)?;
            }
            written = std::fs::write(&tmp, bytes);
        }
        written.map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            // Named by the object being written: the temporary name means nothing to a reader.
            self.io(path, e)
        })?;
        if let Err(e) = self.share_file(&tmp) {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        Ok(tmp)
    }

    /// The advisory lock guarding compare-and-swap on `path` (held while the guard lives).
    fn lock(&self, path: &Path) -> Result<File> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let lock_path = path.with_file_name(format!(".{name}.lock"));
        if let Some(dir) = path.parent() {
            self.ensure_dir(dir)?;
        }
        let existed = lock_path.exists();
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| self.io(&lock_path, e))?;
        if !existed {
            self.share_file(&lock_path)?;
        }
        file.lock().map_err(|e| self.io(&lock_path, e))?;
        Ok(file)
    }
}

impl FsStore {
    fn read_opt(&self, path: &Path) -> Result<Option<Vec<u8>>> {
        match std::fs::read(path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.io_read(path, e)),
        }
    }
}

impl Store for FsStore {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.read_opt(&self.path(key)?)
    }

    fn put(&self, key: &str, bytes: &[u8]) -> Result<()> {
        let path = self.path(key)?;
        let tmp = self.write_tmp(&path, bytes)?;
        std::fs::rename(&tmp, &path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            self.io(&path, e)
        })
    }

    fn put_new(&self, key: &str, bytes: &[u8]) -> Result<bool> {
        let path = self.path(key)?;
        let tmp = self.write_tmp(&path, bytes)?;
        // A hard link fails when the target exists: create-if-absent with the whole content.
        let linked = std::fs::hard_link(&tmp, &path);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(self.io(&path, e)),
        }
    }

    fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>> {
        Ok(self.get(key)?.map(|b| {
            let v = Version(hash_bytes(&b));
            (b, v)
        }))
    }

    fn put_if(&self, key: &str, bytes: &[u8], expected: Option<&Version>) -> Result<bool> {
        let path = self.path(key)?;
        let _guard = self.lock(&path)?;
        let current = self.read_opt(&path)?.map(|b| Version(hash_bytes(&b)));
        if current.as_ref() != expected {
            return Ok(false);
        }
        self.put(key, bytes)?;
        Ok(true)
    }

    fn exists(&self, key: &str) -> Result<bool> {
        Ok(self.path(key)?.is_file())
    }

    fn list_meta(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        let mut out = Vec::new();
        let base = if prefix.is_empty() {
            self.root.clone()
        } else {
            self.path(prefix.trim_end_matches('/'))?
        };
        if base.is_dir() {
            walk(&base, &mut |p, meta| {
                if let Ok(rel) = p.strip_prefix(&self.root) {
                    out.push(ObjectMeta {
                        key: rel.to_string_lossy().replace('\\', "/"),
                        size: meta.len(),
                        modified: modified_secs(meta),
                    });
                }
            })
            .map_err(|e| self.io_read(&base, e))?;
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    fn delete(&self, key: &str) -> Result<()> {
        let path = self.path(key)?;
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(self.io(&path, e)),
            _ => Ok(()),
        }
    }

    fn stat(&self, key: &str) -> Result<Option<ObjectMeta>> {
        let path = self.path(key)?;
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() => Ok(Some(ObjectMeta {
                key: key.to_string(),
                size: meta.len(),
                modified: modified_secs(&meta),
            })),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.io_read(&path, e)),
        }
    }

    fn size(&self, key: &str) -> Result<u64> {
        Ok(std::fs::metadata(self.path(key)?)
            .map(|m| m.len())
            .unwrap_or(0))
    }

    fn local_path(&self, key: &str) -> Option<PathBuf> {
        self.path(key).ok()
    }

    fn describe(&self) -> String {
        self.root.display().to_string()
    }

    fn quarantine(&self, key: &str) -> Result<()> {
        let from = self.path(key)?;
        let to = self.path(&format!("{}/{key}", QUARANTINE))?;
        if let Some(dir) = to.parent() {
            self.ensure_dir(dir)?;
        }
        match std::fs::rename(&from, &to) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(self.io(&from, e)),
            _ => Ok(()),
        }
    }
}

/// A file's modification time in Unix seconds (0 when the filesystem does not say).
fn modified_secs(meta: &std::fs::Metadata) -> f64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0.0, |d| d.as_secs_f64())
}

fn walk(dir: &Path, visit: &mut dyn FnMut(&Path, &std::fs::Metadata)) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        // An entry removed between the listing and this call (a concurrent gc) is skipped.
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_dir() {
            match walk(&path, visit) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                other => other?,
            }
        } else {
            visit(&path, &meta);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("prefflow-store-{name}-{}", std::process::id()))
    }

    #[test]
    fn puts_are_visible_whole_and_leave_no_temp_files() {
        let dir = scratch("put");
        let store = FsStore::new(&dir);
        store.put("a/b.json", b"{}").expect("put");
        assert_eq!(
            store.get("a/b.json").expect("get").as_deref(),
            Some(&b"{}"[..])
        );
        assert_eq!(store.get("a/missing").expect("get"), None);
        assert_eq!(store.list("a").expect("list"), vec!["a/b.json".to_string()]);
        store.delete("a/b.json").expect("delete");
        assert!(!store.exists("a/b.json").expect("exists"));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn put_new_has_one_winner_and_put_if_detects_a_concurrent_change() {
        let dir = scratch("cas");
        let store = FsStore::new(&dir);
        assert!(store.put_new("l/x", b"first").expect("put_new"));
        assert!(!store.put_new("l/x", b"second").expect("put_new"));
        assert_eq!(
            store.get("l/x").expect("get").as_deref(),
            Some(&b"first"[..])
        );
        let (_, v1) = store.get_versioned("l/x").expect("get").expect("present");
        assert!(store.put_if("l/x", b"third", Some(&v1)).expect("cas"));
        // v1 is stale now: a writer that read before the swap must read again.
        assert!(!store.put_if("l/x", b"fourth", Some(&v1)).expect("cas"));
        assert!(!store.put_if("l/x", b"fifth", None).expect("cas"));
        assert!(store.put_if("l/new", b"n", None).expect("cas"));
        assert_eq!(
            store.get("l/x").expect("get").as_deref(),
            Some(&b"third"[..])
        );
        let tmp = store
            .list("l")
            .expect("list")
            .into_iter()
            .filter(|k| k.ends_with(TMP_SUFFIX))
            .count();
        assert_eq!(tmp, 0);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn keys_cannot_leave_the_root() {
        let store = FsStore::new(scratch("keys"));
        for bad in ["../x", "a/../../x", "/etc/passwd", "a//b", ""] {
            assert!(store.put(bad, b"x").is_err(), "{bad}");
            assert!(store.get(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn quarantine_moves_the_object_aside() {
        let dir = scratch("quarantine");
        let store = FsStore::new(&dir);
        store.put("blobs/ab/x.parquet", b"bad").expect("put");
        store.quarantine("blobs/ab/x.parquet").expect("quarantine");
        assert!(!store.exists("blobs/ab/x.parquet").expect("exists"));
        assert!(store
            .exists("quarantine/blobs/ab/x.parquet")
            .expect("exists"));
        let _ = std::fs::remove_dir_all(dir);
    }
}
