//! What every subcommand gets from the command line they share: the `--store` location (checked,
//! opened on demand), `--quiet`, and the directory relative paths resolve against.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use prefflow_engine::store::{Store, StoreLocation};
use prefflow_engine::Error;

/// What every command gets: the store's location (opened on demand), `--store` as given,
/// `--quiet`, and the working directory that relative paths resolve against.
pub(crate) struct Session<'a> {
    /// `--store` as the user spelled it (for messages).
    pub(crate) store_arg: &'a str,
    /// Where the store is.
    pub(crate) location: StoreLocation,
    /// Only warnings and errors on stderr.
    pub(crate) quiet: bool,
    /// The directory pipelines' relative paths start from.
    pub(crate) workdir: PathBuf,
}

impl<'a> Session<'a> {
    /// Parses `--store`; for a command that uses the store, a local one must be a directory
    /// or a path one can be created at.
    pub(super) fn new(store_arg: &'a str, quiet: bool, uses_store: bool) -> anyhow::Result<Self> {
        let location = StoreLocation::parse(store_arg)?;
        if let (true, StoreLocation::Local(dir)) = (uses_store, &location) {
            check_store_path(dir)?;
        }
        Ok(Session {
            store_arg,
            location,
            quiet,
            workdir: PathBuf::from("."),
        })
    }

    /// The store, opened.
    pub(crate) fn store(&self) -> anyhow::Result<Arc<dyn Store>> {
        Ok(self.location.open()?)
    }
}

/// `--store` must be a directory or a path one can be created at; a file there (or above it)
/// is the user's mistake, not an I/O failure halfway through a run.
fn check_store_path(store: &Path) -> Result<(), Error> {
    let Some(existing) = store
        .ancestors()
        .find(|p| !p.as_os_str().is_empty() && p.exists())
    else {
        return Ok(());
    };
    if existing.is_dir() {
        return Ok(());
    }
    let what = if existing == store {
        "is a file".to_string()
    } else {
        format!("cannot be created: {} is a file", existing.display())
    };
    Err(Error::Usage(format!(
        "--store {}: {what}, not a store directory; pass a directory (it is created if missing), or unset PREFFLOW_STORE",
        store.display()
    )))
}
