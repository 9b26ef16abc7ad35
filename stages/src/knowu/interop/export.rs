//! `export_knowu_runs`: prefflow `episodes` + `steps` → a KnowU-Bench results directory
//! (`<dir>/<task_id>/traj.json`, and `result.txt` when the score is known), so KnowU's own
//! scripts and viewers can read prefflow runs. `import_knowu_runs` reads it back to the same
//! tables on every column a KnowU run carries.
//!
//! One directory per task: episodes must have distinct `task_id`s (filter one variant and epoch
//! first). Task directories are overwritten; other content of `dir` is left alone.

use std::path::{Path, PathBuf};

use polars::prelude::*;
use prefflow_engine::keys::hash_path;
use prefflow_engine::{Kind, StageContext, StageError, Tables};
use serde::Deserialize;

use super::result_file;
use super::run::{self, RunEpisode};
use super::traj;
use crate::knowu::error::KnowuError;

/// Parameters of `export_knowu_runs`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportParams {
    /// Target results directory, relative to the working directory.
    pub dir: String,
}

/// Writes episodes in KnowU-Bench's run layout; re-runs when the directory changed since.
pub struct ExportKnowuRuns;

impl Kind for ExportKnowuRuns {
    type Params = ExportParams;
    type State = ();
    const NAME: &'static str = "export_knowu_runs";
    const VERSION: &'static str = "1";
    const OUTPUTS: &'static [&'static str] = &["written"];
    const SUMMARY: &'static str = "write inputs episodes + steps as a KnowU-Bench results directory (params: dir); table `written` lists the task directories";

    fn cached_output_is_valid(&self, params: &Self::Params, workdir: &Path) -> bool {
        let dir = workdir.join(&params.dir);
        std::fs::read_to_string(marker(&dir)).is_ok_and(|m| m.trim() == hash_path(&dir))
    }

    fn run(&self, params: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let run = run::from_frames(ctx.input("episodes")?, ctx.input("steps")?)?;
        check_task_ids(&run)?;
        let dir = ctx.resolve(&params.dir);
        write_run(&dir, &run)?;
        std::fs::write(marker(&dir), hash_path(&dir)).map_err(|e| KnowuError::write(&dir, e))?;
        Ok(Tables::single("written", written_frame(&params.dir, &run)?))
    }
}

/// Writes every episode's task directory under `dir`.
pub fn write_run(dir: &Path, run: &[RunEpisode]) -> Result<(), KnowuError> {
    for episode in run {
        write_episode(&dir.join(&episode.task_id), episode)?;
    }
    Ok(())
}

fn write_episode(task_dir: &Path, episode: &RunEpisode) -> Result<(), KnowuError> {
    std::fs::create_dir_all(task_dir).map_err(|e| KnowuError::write(task_dir, e))?;
    let traj_json = serde_json::to_string_pretty(&traj::render(&episode.traj))
        .map_err(|e| KnowuError::write(task_dir, std::io::Error::other(e)))?;
    write_file(&task_dir.join("traj.json"), &traj_json)?;
    let result_path = task_dir.join("result.txt");
    let reason = episode.result.reason.as_deref();
    match (episode.result.score, reason) {
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
fn check_task_ids(run: &[RunEpisode]) -> Result<(), KnowuError> {
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

fn written_frame(dir: &str, run: &[RunEpisode]) -> PolarsResult<DataFrame> {
    df!(
        "task_id" => run.iter().map(|e| e.task_id.clone()).collect::<Vec<_>>(),
        "path" => run.iter().map(|e| format!("{dir}/{}", e.task_id)).collect::<Vec<_>>(),
        "steps" => run.iter().map(|e| e.traj.steps.len() as u32).collect::<Vec<_>>(),
        "has_result" => run.iter().map(|e| e.result.score.is_some()).collect::<Vec<_>>(),
    )
}

/// `<dir>.prefflow-hash`, beside the directory so it is not part of the hashed content.
fn marker(dir: &Path) -> PathBuf {
    let mut name = dir
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".prefflow-hash");
    dir.with_file_name(name)
}
