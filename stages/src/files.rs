//! Reading a dataset directory: every loader of YAML apps, templates, review sheets and label
//! files lists "the files with these extensions, in name order" the same way.

use std::path::{Path, PathBuf};

/// The files directly in `dir` whose extension is one of `extensions`, sorted by path, so
/// loading order (and so every derived id and cache key) never depends on the file system.
pub fn sorted_files(dir: &Path, extensions: &[&str]) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension()
                .is_some_and(|x| extensions.iter().any(|e| x == *e))
        })
        .collect();
    files.sort();
    Ok(files)
}
