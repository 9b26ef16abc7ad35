//! Reading a dataset directory: every loader of YAML apps, templates, review sheets and label
//! files lists "the files with these extensions, in name order" the same way, and reads a
//! file a stage is pointed at with the same messages.

use std::path::{Path, PathBuf};

use prefflow_engine::StageError;

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

/// Reads a text file a stage was pointed at (`shown` as the pipeline wrote it): a missing file
/// or one that is not UTF-8 (UTF-16, Latin-1, binary) is bad input, named and explained.
pub fn read_input(path: &Path, shown: &str) -> Result<String, StageError> {
    prefflow_engine::input::read_text(path, shown).map_err(|e| StageError::Input(e.to_string()))
}
