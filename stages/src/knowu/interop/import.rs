//! `import_knowu_runs`: a KnowU-Bench results directory → `episodes`, `steps`, `reports`,
//! `errors`.
//!
//! `<root>/<task_name>/traj.json` and `result.txt` per episode, read as KnowU-Bench's scripts read
//! them: directories whose name contains `_backup_` are ignored, and so is everything in a task
//! directory besides those two files (screenshots, `traj_backup_*.json`, thread logs); a missing
//! `traj.json`, or one KnowU left as `{}`, is an empty trajectory; `eval_report_*.json` files at
//! the root become rows of `reports`. Episodes without a score (no `result.txt`, or no `score:`
//! line) are kept with status `no_result`. With `tasks`, every task of tasks.csv without a
//! directory is added as a `no_result` episode too, so per-persona means count it.
//!
//! A file that cannot be read does not abort the import: it becomes a row of `errors` (task
//! directory, file, what is wrong and how to fix it) and its episode gets status `error` (left
//! out of every metric, counted in `knowu_metrics`' `overall.error_episodes`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use polars::prelude::*;
use serde::Deserialize;

use super::report::{self, EvalReport};
use super::result_file::{self, EpisodeResult};
use super::run::RunEpisode;
use super::traj::{self, Trajectory};
use crate::knowu::error::KnowuError;
use crate::tables::knowu::{ImportError, ReportsRow};

/// Directory names containing this are old copies KnowU-Bench keeps; never imported.
const BACKUP_MARK: &str = "_backup_";

/// Parameters of `import_knowu_runs`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportParams {
    /// The results directory (KnowU's `log_file_root`), relative to the working directory.
    pub root: String,
    /// The run's label: the `variant` and `agent` of every imported episode.
    pub label: String,
    /// tasks.csv; when given, registered tasks without a directory become `no_result` episodes.
    #[serde(default)]
    pub tasks: Option<String>,
}

/// Everything read from one results directory.
#[derive(Debug, Default)]
pub struct RunDir {
    /// One per task directory, sorted by name.
    pub episodes: Vec<RunEpisode>,
    /// One per readable `eval_report_*.json`, sorted by file name.
    pub reports: Vec<EvalReport>,
    /// Files that could not be read, in directory order: the `errors` table's rows.
    pub errors: Vec<ImportError>,
}

/// Reads a results directory.
pub fn read_run_dir(root: &Path) -> Result<RunDir, KnowuError> {
    if !root.is_dir() {
        return Err(KnowuError::NotADirectory {
            path: root.to_path_buf(),
            param: "root",
        });
    }
    let (task_dirs, report_files) = list_entries(root)?;
    let mut out = RunDir::default();
    for (name, dir) in &task_dirs {
        let (episode, errors) = read_episode(name, dir);
        out.episodes.push(episode);
        out.errors.extend(errors);
    }
    for path in &report_files {
        match report::read(path) {
            Ok(r) => out.reports.push(r),
            Err(e) => out.errors.push(ImportError {
                task_id: None,
                file: file_name(path),
                message: e.to_string(),
            }),
        }
    }
    Ok(out)
}

type Entries = (Vec<(String, PathBuf)>, Vec<PathBuf>);

/// Task directories (not backups) and report files at the root, each sorted by name.
fn list_entries(root: &Path) -> Result<Entries, KnowuError> {
    let mut dirs = Vec::new();
    let mut reports = Vec::new();
    let entries = std::fs::read_dir(root).map_err(|e| KnowuError::read(root, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| KnowuError::read(root, e))?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() && !name.contains(BACKUP_MARK) {
            dirs.push((name, path));
        } else if path.is_file() && report::is_report_name(&name) {
            reports.push(path);
        }
    }
    dirs.sort();
    reports.sort();
    Ok((dirs, reports))
}

/// One task directory's episode, and the files of it that could not be read.
fn read_episode(name: &str, dir: &Path) -> (RunEpisode, Vec<ImportError>) {
    let mut errors = Vec::new();
    let mut failed = |path: &Path, e: KnowuError| {
        errors.push(ImportError {
            task_id: Some(name.to_string()),
            file: file_name(path),
            message: e.to_string(),
        })
    };
    let traj_path = dir.join("traj.json");
    let traj = if traj_path.is_file() {
        traj::read(&traj_path)
            .map_err(|e| failed(&traj_path, e))
            .ok()
    } else {
        Some(Trajectory::default())
    };
    let result_path = dir.join("result.txt");
    let result = if result_path.is_file() {
        std::fs::read(&result_path)
            .map(|bytes| result_file::parse(&String::from_utf8_lossy(&bytes)))
            .map_err(|e| failed(&result_path, KnowuError::read(&result_path, e)))
            .ok()
    } else {
        Some(EpisodeResult::none())
    };
    let error = (!errors.is_empty()).then(|| {
        errors
            .iter()
            .map(|e| e.message.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    });
    let episode = RunEpisode {
        task_id: name.to_string(),
        traj: traj.unwrap_or_default(),
        result: result.unwrap_or_else(EpisodeResult::none),
        error,
    };
    (episode, errors)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Appends a `no_result` episode for every task name without a directory, keeping name order.
pub(crate) fn add_missing_tasks(episodes: &mut Vec<RunEpisode>, names: &[String]) {
    let present: BTreeSet<&str> = episodes.iter().map(|e| e.task_id.as_str()).collect();
    let missing: Vec<RunEpisode> = names
        .iter()
        .filter(|n| !present.contains(n.as_str()))
        .map(|n| RunEpisode {
            task_id: n.clone(),
            traj: Trajectory::default(),
            result: EpisodeResult::none(),
            error: None,
        })
        .collect();
    episodes.extend(missing);
    episodes.sort_by(|a, b| a.task_id.cmp(&b.task_id));
}

/// Warns when the run's latest report lists other scores than its task directories (KnowU's
/// split and persona scripts would then read the report's).
pub(crate) fn warn_on_report_mismatch(stage: &str, root: &str, dir: &RunDir) {
    let Some(latest) = dir.reports.last() else {
        return;
    };
    let scores: Vec<(String, Option<f64>)> = dir
        .episodes
        .iter()
        .map(|e| (e.task_id.clone(), e.result.score))
        .collect();
    let differ = report::mismatches(latest, &scores);
    if !differ.is_empty() {
        tracing::warn!(
            "stage `{stage}`: {} task(s) of {root} have another score in {} than in their result.txt (first: {}); KnowU's calc_split_difficulty_metrics.py and calc_persona_pref_routine_avg.py read the report, prefflow and calc_paper_metrics.py the task directories (see reports.score_mismatches)",
            differ.len(),
            latest.summary.file,
            differ[0]
        );
    }
}

/// The `errors` table: one row per unreadable file.
pub fn errors_frame(errors: &[ImportError]) -> PolarsResult<DataFrame> {
    ImportError::to_frame(errors)
}

/// The `reports` table: one row per evaluation report, with how many of its per-task scores
/// differ from the task directories' (`score_mismatches`) and whether it is the latest (the one
/// KnowU's split and persona scripts read).
pub fn reports_frame(
    label: &str,
    reports: &[EvalReport],
    episodes: &[RunEpisode],
) -> PolarsResult<DataFrame> {
    let n = reports.len();
    let scores: Vec<(String, Option<f64>)> = episodes
        .iter()
        .map(|e| (e.task_id.clone(), e.result.score))
        .collect();
    let rows: Vec<ReportsRow> = reports
        .iter()
        .enumerate()
        .map(|(i, r)| ReportsRow {
            label: label.to_string(),
            score_mismatches: report::mismatches(r, &scores).len() as u32,
            latest: i + 1 == n,
            ..r.summary.clone()
        })
        .collect();
    ReportsRow::to_frame(&rows)
}
