//! Tests over the authored datasets in `datasets/`: every app and persona file loads, and the
//! default world synthesizes.

use std::path::PathBuf;

use super::*;

/// The repository's `datasets/` directory.
pub(crate) fn datasets() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../datasets")
}

#[test]
fn every_app_file_loads() {
    let cat = match Catalog::load_dir(&datasets().join("apps")) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    assert!(cat.apps.len() >= 4);
}
