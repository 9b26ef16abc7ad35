//! `export_knowu_runs`: prefflow `episodes` + `steps` → a KnowU-Bench results directory
//! (`<dir>/<task_id>/traj.json`, and `result.txt` when the episode has a result), so KnowU's own
//! scripts (`calc_paper_metrics.py`, `calc_split_difficulty_metrics.py`,
//! `calc_persona_pref_routine_avg.py`) and viewers give the numbers `knowu_metrics` gives.
//! `import_knowu_runs` reads it back.
//!
//! - Actions are written in KnowU's vocabulary ([`super::vocab`]: `finished`, `click`, `mcp`, …).
//! - Only KnowU-Bench classes go to `dir`; prefflow-only classes (`Prefflow…`, which KnowU's
//!   scripts would drop or bucket by name) go to `prefflow_only_dir` (default `<dir>-prefflow-only`).
//! - A result is written exactly when `knowu_metrics` counts one ([`super::run::has_result`]).
//! - `dir` holds nothing else: the exporter records the task directories it wrote in
//!   `.prefflow-export` and removes the ones a later export no longer has; it refuses a
//!   directory holding anything it did not write (another run's tasks, an `eval_report_*.json`,
//!   which KnowU's split and persona scripts read instead of the task directories).
//!
//! One directory per task: episodes must have distinct `task_id`s (filter one variant and epoch
//! first).

use std::path::{Path, PathBuf};

use polars::prelude::*;
use serde::Deserialize;

use super::result_file;
use super::run::{self, RunEpisode};
use super::traj;
use crate::knowu::error::KnowuError;
use crate::tables::knowu::Written;

/// Parameters of `export_knowu_runs`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportParams {
    /// Target results directory (KnowU-Bench classes), relative to the working directory.
    pub dir: String,
    /// Where prefflow-only classes go (default `<dir>-prefflow-only`).
    #[serde(default)]
    pub prefflow_only_dir: Option<String>,
}

impl ExportParams {
    pub(crate) fn prefflow_only_dir(&self) -> String {
        self.prefflow_only_dir
            .clone()
            .unwrap_or_else(|| format!("{}-prefflow-only", self.dir.trim_end_matches('/')))
    }
}

/// The file in an export directory listing the task directories the exporter wrote.
const MANIFEST: &str = ".prefflow-export";

/// Whether a task's class is prefflow's own (`Prefflow…`), not one of KnowU-Bench's.
pub fn is_prefflow_only(task_id: &str) -> bool {
    let class = task_id.split_once('@').map_or(task_id, |(c, _)| c);
    class.starts_with(super::tasks::PREFFLOW_PREFIX)
}

/// Writes every episode's task directory under `dir`, which then holds exactly those: task
/// directories an earlier export wrote and this one does not are removed; content the exporter
/// did not write is refused.
pub fn write_run(dir: &Path, run: &[RunEpisode]) -> Result<(), KnowuError> {
    let previous = check_dir(dir)?;
    std::fs::create_dir_all(dir).map_err(|e| KnowuError::write(dir, e))?;
    let now: std::collections::BTreeSet<&str> = run.iter().map(|e| e.task_id.as_str()).collect();
    for stale in previous.iter().filter(|p| !now.contains(p.as_str())) {
        let path = dir.join(stale);
        if path.is_dir() {
            std::fs::remove_dir_all(&path).map_err(|e| KnowuError::write(&path, e))?;
        }
    }
    for episode in run {
        write_episode(&dir.join(&episode.task_id), episode)?;
    }
    let names: Vec<&str> = now.into_iter().collect();
    write_file(&dir.join(MANIFEST), &format!("{}\n", names.join("\n")))
}

/// The task directories a previous export wrote into `dir` (none if it does not exist), or an
/// error naming what else is there.
fn check_dir(dir: &Path) -> Result<Vec<String>, KnowuError> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let previous: Vec<String> = std::fs::read_to_string(dir.join(MANIFEST))
        .map(|m| {
            m.lines()
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let entries = std::fs::read_dir(dir).map_err(|e| KnowuError::read(dir, e))?;
    let mut foreign = Vec::new();
    for entry in entries {
        let name = entry
            .map_err(|e| KnowuError::read(dir, e))?
            .file_name()
            .to_string_lossy()
            .into_owned();
        if name != MANIFEST && !previous.contains(&name) {
            foreign.push(name);
        }
    }
    if foreign.is_empty() {
        return Ok(previous);
    }
    foreign.sort();
    let shown: Vec<&str> = foreign.iter().take(5).map(String::as_str).collect();
    Err(KnowuError::Content {
        path: dir.to_path_buf(),
        message: format!(
            "holds {} entr{} the exporter did not write ({}{}); KnowU's scripts would count them with this run (and read an eval_report_*.json instead of the task directories): export into a new or empty directory",
            foreign.len(),
            if foreign.len() == 1 { "y" } else { "ies" },
            shown.join(", "),
            if foreign.len() > shown.len() { ", …" } else { "" }
        ),
    })
}

fn write_episode(task_dir: &Path, episode: &RunEpisode) -> Result<(), KnowuError> {
    std::fs::create_dir_all(task_dir).map_err(|e| KnowuError::write(task_dir, e))?;
    let traj_json = serde_json::to_string_pretty(&traj::render(&episode.traj))
        .map_err(|e| KnowuError::write(task_dir, std::io::Error::other(e)))?;
    write_file(&task_dir.join("traj.json"), &traj_json)?;
    let result_path = task_dir.join("result.txt");
    let reason = episode.result.reason.as_deref();
    let status = episode.error.as_ref().map(|_| run::ERROR);
    let score = episode
        .result
        .score
        .filter(|_| run::has_result(status, episode.result.score));
    match (score, reason) {
        (Some(score), _) => write_file(&result_path, &result_file::render(score, reason)),
        // KnowU writes a reason without a score when scoring failed; keep it, still no result.
        (None, Some(reason)) => write_file(&result_path, &result_file::render_unscored(reason)),
        // A stale result would turn a no-result episode into a scored one.
        (None, None) if result_path.exists() => {
            std::fs::remove_file(&result_path).map_err(|e| KnowuError::write(&result_path, e))
        }
        (None, None) => Ok(()),
    }
}

/// Writes through a temporary file so a crash never leaves half a file KnowU would misread.
fn write_file(path: &Path, text: &str) -> Result<(), KnowuError> {
    let tmp = path.with_extension("prefflow-tmp");
    std::fs::write(&tmp, text).map_err(|e| KnowuError::write(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| KnowuError::write(path, e))
}

/// Task ids become directory names: they must be distinct plain names.
pub(crate) fn check_task_ids(run: &[RunEpisode]) -> Result<(), KnowuError> {
    let mut seen = std::collections::HashSet::new();
    for e in run {
        let id = e.task_id.as_str();
        if id.is_empty() || id == "." || id == ".." || id.contains(['/', '\\']) {
            return Err(KnowuError::table(
                "episodes",
                format!("task_id {id:?} cannot be a directory name; KnowU task names look like `Class@persona`"),
            ));
        }
        if !seen.insert(id) {
            return Err(KnowuError::table(
                "episodes",
                format!("task_id `{id}` appears more than once; KnowU keeps one directory per task, so filter one variant and epoch before exporting"),
            ));
        }
    }
    Ok(())
}

/// The `written` table: one row per task directory of `run` (directory, episode).
pub(crate) fn written_frame(run: &[(&str, &RunEpisode)]) -> PolarsResult<DataFrame> {
    let rows: Vec<Written> = run
        .iter()
        .map(|(d, e)| Written {
            task_id: e.task_id.clone(),
            path: format!("{d}/{}", e.task_id),
            knowu_class: !is_prefflow_only(&e.task_id),
            steps: e.traj.steps.len() as u32,
            has_result: e.error.is_none() && e.result.score.is_some(),
        })
        .collect();
    Written::to_frame(&rows)
}

/// `<dir>.prefflow-hash`, beside the directory so it is not part of the hashed content.
pub(crate) fn marker(dir: &Path) -> PathBuf {
    let mut name = dir
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".prefflow-hash");
    dir.with_file_name(name)
}
