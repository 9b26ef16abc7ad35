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

mod contract;
pub mod deadline;
pub mod diagnose;
mod fs;
mod host;
pub mod lease;
pub mod names;
pub mod object;
pub mod team;

pub use contract::{check_key, ObjectMeta, Store, Version, QUARANTINE};
pub use deadline::Deadlines;
pub use fs::FsStore;
pub use host::{
    host_name, pid_alive, proc_start_ticks, tmp_is_stale, tmp_writer, unix_now, FOREIGN_TMP_AGE,
    TMP_SUFFIX,
};
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
