//! Where KnowU-Bench's published data lives: one setting, read in place, never shipped.
//!
//! KnowU-Bench's persona profiles (`user_profile/`), logs (`user_logs/`), task list (`tasks.csv`)
//! and published leaderboard (`leaderboard.json`) are third-party data (Apache-2.0) that prefflow
//! reads where the user keeps them. The location is one setting: the pipeline param
//! [`PARAM`] (`--set knowu=PATH`), or the environment variable [`ENV`] when `--set` does not
//! give it; the pipelines default to [`DEFAULT`], the folder beside a checkout of this
//! repository in the project's own workspace. The folder may be laid out flat (as
//! `../shared/knowu-bench`) or be a checkout of KnowU-Bench's repository, where profiles and logs
//! sit under `src/knowu_bench/` and the leaderboard under `site/` ([`locate`] finds either).
//! A missing file gets [`missing`]: what the data is, where to get it and the exact setting.

use std::path::{Component, Path, PathBuf};

/// The pipeline param naming the KnowU data folder.
pub const PARAM: &str = "knowu";
/// The environment variable giving [`PARAM`] when `--set` does not.
pub const ENV: &str = "PREFFLOW_KNOWU";
/// The pipelines' default: the folder beside this repository's checkout.
pub const DEFAULT: &str = "../shared/knowu-bench";

/// The folders and files of KnowU's data, and where a checkout of KnowU-Bench's repository keeps
/// each (relative to the checkout).
const REPO_LAYOUT: [(&str, &str); 3] = [
    ("user_profile", "src/knowu_bench/user_profile"),
    ("user_logs", "src/knowu_bench/user_logs"),
    ("leaderboard.json", "site/leaderboard.json"),
];

/// The pipeline params the environment may give (`(param, variable)`): applied by the CLI as a
/// `--set` placed before the user's own, so an explicit `--set` wins.
pub const ENV_PARAMS: [(&str, &str); 1] = [(PARAM, ENV)];

/// `path` itself when it exists; otherwise the same file in a KnowU-Bench repository checkout
/// (`<root>/user_profile/x.yaml` → `<root>/src/knowu_bench/user_profile/x.yaml`,
/// `<root>/leaderboard.json` → `<root>/site/leaderboard.json`) when that exists; else `path`.
pub fn locate(path: &Path) -> PathBuf {
    if path.exists() {
        return path.to_path_buf();
    }
    let parts: Vec<Component<'_>> = path.components().collect();
    for (i, part) in parts.iter().enumerate().rev() {
        let Component::Normal(name) = part else {
            continue;
        };
        let Some((_, in_repo)) = REPO_LAYOUT.iter().find(|(flat, _)| name == flat) else {
            continue;
        };
        let root: PathBuf = parts[..i].iter().collect();
        let mut candidate = root.join(in_repo);
        if i + 1 < parts.len() {
            candidate = candidate.join(parts[i + 1..].iter().collect::<PathBuf>());
        }
        if candidate.exists() {
            return candidate;
        }
    }
    path.to_path_buf()
}

/// [`locate`] for a path written as text (a stage param), kept as text.
pub fn locate_str(path: &str) -> String {
    locate(Path::new(path)).to_string_lossy().into_owned()
}

/// Reads a text file of KnowU's data a stage was pointed at (`shown` as the pipeline wrote it),
/// in either layout ([`locate`]); a missing one gets [`missing`].
pub fn read_text(path: &Path, shown: &str) -> Result<String, prefflow_engine::StageError> {
    let found = locate(path);
    if !found.exists() {
        return Err(prefflow_engine::StageError::Input(missing(Path::new(
            shown,
        ))));
    }
    crate::files::read_input(&found, shown)
}

/// The message for KnowU data that is not where the setting points: what it is, where to get
/// it, and the exact setting.
pub fn missing(path: &Path) -> String {
    format!(
        "{}: not found. This is KnowU-Bench's published data (persona profiles `user_profile/`, \
         logs `user_logs/`, the task list `tasks.csv`, `leaderboard.json`; Apache-2.0), which \
         prefflow reads in place and does not ship. Get it with `git clone \
         https://github.com/ZJU-REAL/KnowU-Bench` (profiles, logs and leaderboard; or a folder \
         laid out like `../shared/knowu-bench`, which also has `tasks.csv`) and point prefflow at \
         it with `--set {PARAM}=PATH` or `export {ENV}=PATH` (default `{DEFAULT}`, relative to \
         the working directory); see docs/knowu.md#knowu-data",
        path.display()
    )
}

/// The KnowU data folder for a test: [`ENV`] (relative paths are taken from the repository
/// root), or `None` with a line on stderr naming the setting, so the test skips. Under `CI=true`
/// an unset or missing folder is a failure: CI must provide the data (`.ci/run` sets [`ENV`]).
pub fn for_tests(test: &str) -> Option<PathBuf> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let dir = std::env::var_os(ENV)
        .filter(|v| !v.is_empty())
        .map(|v| repo.join(v));
    match dir {
        Some(d) if d.is_dir() => Some(d),
        Some(d) => {
            let why = format!(
                "{ENV}={} is not a directory: KnowU-Bench's published data is absent",
                d.display()
            );
            assert!(!ci, "{test}: {why} (.ci/run sets it to {DEFAULT})");
            eprintln!("skipping {test}: {why}");
            None
        }
        None => {
            assert!(
                !ci,
                "{test}: {ENV} is unset under CI=true; .ci/run must export {ENV}={DEFAULT}"
            );
            eprintln!(
                "skipping {test}: it needs KnowU-Bench's published data; set {ENV}=PATH (e.g. {ENV}={DEFAULT}, relative to the repository root) to run it"
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locate_finds_the_repository_layout_and_keeps_the_flat_one() {
        let dir = tempfile::tempdir().expect("tmp");
        let flat = dir.path().join("flat");
        std::fs::create_dir_all(flat.join("user_profile")).expect("mkdir");
        std::fs::write(flat.join("user_profile/a.yaml"), "x").expect("write");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join("src/knowu_bench/user_logs")).expect("mkdir");
        std::fs::create_dir_all(repo.join("site")).expect("mkdir");
        std::fs::write(repo.join("src/knowu_bench/user_logs/a.json"), "[]").expect("write");
        std::fs::write(repo.join("site/leaderboard.json"), "{}").expect("write");

        let a = flat.join("user_profile/a.yaml");
        assert_eq!(locate(&a), a);
        assert_eq!(
            locate(&repo.join("user_logs/a.json")),
            repo.join("src/knowu_bench/user_logs/a.json")
        );
        assert_eq!(
            locate(&repo.join("leaderboard.json")),
            repo.join("site/leaderboard.json")
        );
        // Nothing anywhere: the path as given (the caller's error names it).
        let none = repo.join("user_profile/b.yaml");
        assert_eq!(locate(&none), none);
    }

    #[test]
    fn the_missing_message_says_what_where_and_the_setting() {
        let m = missing(Path::new("../shared/knowu-bench/user_profile/student.yaml"));
        for part in [
            "student.yaml: not found",
            "KnowU-Bench's published data",
            "git clone https://github.com/ZJU-REAL/KnowU-Bench",
            "--set knowu=PATH",
            "export PREFFLOW_KNOWU=PATH",
        ] {
            assert!(m.contains(part), "{part} missing from: {m}");
        }
    }
}
