//! The Slurm client: `sbatch`, `squeue`, `scontrol` and `scancel` run as real processes, their
//! output parsed. Only what every Slurm installation has is used — no `sacct` (it needs the
//! accounting database, which many clusters and every single-node test setup lack).
//!
//! Job states come from `squeue --states=all` (which still lists finished jobs until
//! `MinJobAge` passes) and, once squeue has forgotten a job, from `scontrol -o show job`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// A Slurm command that could not run or did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    /// The command is not installed or could not start.
    #[error(
        "cannot run `{command}`: {source} (is Slurm installed and on PATH on this login node?)"
    )]
    Spawn {
        /// The program.
        command: String,
        /// Why it could not start.
        source: std::io::Error,
    },
    /// The command ran and failed.
    #[error("`{command}` failed (exit {code}): {stderr}")]
    Failed {
        /// The command line, without the script.
        command: String,
        /// Its exit code (-1 when killed by a signal).
        code: i32,
        /// What it printed on stderr.
        stderr: String,
    },
    /// The command printed something this client does not understand.
    #[error("`{command}` printed `{output}`, which is not {expected}")]
    Unexpected {
        /// The command.
        command: String,
        /// Its output.
        output: String,
        /// What was expected.
        expected: &'static str,
    },
}

/// The state of one array task, as Slurm names it (`%T` of squeue, `JobState` of scontrol).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskState {
    /// Waiting to start (PENDING, CONFIGURING, REQUEUED, RESIZING, SUSPENDED…).
    Waiting(String),
    /// Running (RUNNING, COMPLETING, STAGE_OUT).
    Running(String),
    /// Finished with exit code 0.
    Completed,
    /// Ended any other way: FAILED, CANCELLED, TIMEOUT, PREEMPTED, NODE_FAIL, OUT_OF_MEMORY,
    /// BOOT_FAIL, DEADLINE.
    Ended(String),
}

impl TaskState {
    /// From a Slurm state name (`CANCELLED by 0` is CANCELLED).
    pub fn parse(state: &str) -> Self {
        let name = state
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .trim_end_matches('+')
            .to_ascii_uppercase();
        match name.as_str() {
            "COMPLETED" => TaskState::Completed,
            "RUNNING" | "COMPLETING" | "STAGE_OUT" | "SIGNALING" => TaskState::Running(name),
            "FAILED" | "CANCELLED" | "TIMEOUT" | "PREEMPTED" | "NODE_FAIL" | "OUT_OF_MEMORY"
            | "BOOT_FAIL" | "DEADLINE" | "REVOKED" | "SPECIAL_EXIT" => TaskState::Ended(name),
            _ => TaskState::Waiting(name),
        }
    }

    /// Whether the task is over (it will not change any more).
    pub fn is_final(&self) -> bool {
        matches!(self, TaskState::Completed | TaskState::Ended(_))
    }
}

/// What to submit: one job array running `script` once per index.
#[derive(Debug, Clone)]
pub struct ArrayRequest {
    /// `--job-name`.
    pub name: String,
    /// The array indices.
    pub indices: Vec<u32>,
    /// `%N`: at most this many at once.
    pub parallel: Option<u32>,
    /// The other sbatch options (partition, time, …), fully formed.
    pub options: Vec<String>,
    /// `--export` value (`ALL` or a list of names).
    pub export: String,
    /// `--chdir`.
    pub workdir: PathBuf,
    /// `--output` pattern (`%A` array job id, `%a` task index).
    pub output: PathBuf,
    /// The batch script, fed on stdin.
    pub script: String,
}

/// Runs the Slurm commands. The program names can be overridden (tests, wrappers), through
/// `PREFFLOW_SBATCH`, `PREFFLOW_SQUEUE`, `PREFFLOW_SCONTROL` and `PREFFLOW_SCANCEL`.
#[derive(Debug, Clone)]
pub struct SlurmClient {
    sbatch: String,
    squeue: String,
    scontrol: String,
    scancel: String,
}

impl Default for SlurmClient {
    fn default() -> Self {
        let var = |name: &str, default: &str| {
            std::env::var(name)
                .ok()
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| default.to_string())
        };
        Self {
            sbatch: var("PREFFLOW_SBATCH", "sbatch"),
            squeue: var("PREFFLOW_SQUEUE", "squeue"),
            scontrol: var("PREFFLOW_SCONTROL", "scontrol"),
            scancel: var("PREFFLOW_SCANCEL", "scancel"),
        }
    }
}

/// `--array` value: compact ranges (`0-7,9`) and the `%N` limit.
pub fn array_spec(indices: &[u32], parallel: Option<u32>) -> String {
    let mut sorted = indices.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    let mut spec = parts.join(",");
    if let Some(p) = parallel {
        spec.push_str(&format!("%{p}"));
    }
    spec
}

impl SlurmClient {
    /// Submits a job array (`sbatch --parsable`, the script on stdin); returns its job id.
    pub fn submit(&self, req: &ArrayRequest) -> Result<String, SlurmError> {
        let mut args = vec![
            "--parsable".to_string(),
            format!("--job-name={}", req.name),
            format!("--array={}", array_spec(&req.indices, req.parallel)),
            format!("--export={}", req.export),
            format!("--chdir={}", req.workdir.display()),
            format!("--output={}", req.output.display()),
        ];
        args.extend(req.options.iter().cloned());
        let shown = format!("{} {}", self.sbatch, args.join(" "));
        let mut child = Command::new(&self.sbatch)
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| SlurmError::Spawn {
                command: self.sbatch.clone(),
                source,
            })?;
        if let Some(mut stdin) = child.stdin.take() {
            // A failure to write shows as sbatch's own error below.
            let _ = stdin.write_all(req.script.as_bytes());
        }
        let out = child
            .wait_with_output()
            .map_err(|source| SlurmError::Spawn {
                command: self.sbatch.clone(),
                source,
            })?;
        let stdout = checked(&shown, out)?;
        // `--parsable` prints `jobid` or `jobid;cluster`.
        let id = stdout
            .trim()
            .split(';')
            .next()
            .unwrap_or_default()
            .to_string();
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
            return Err(SlurmError::Unexpected {
                command: shown,
                output: stdout.trim().to_string(),
                expected: "a job id",
            });
        }
        Ok(id)
    }

    /// The states of the tasks of array job `job`, by task index, from `squeue --states=all`;
    /// a pending range (`12_[3-9%2]`) is expanded. Empty when squeue no longer knows the job.
    pub fn squeue(&self, job: &str) -> Result<BTreeMap<u32, TaskState>, SlurmError> {
        let args = ["--states=all", "-h", "-r", "-j", job, "-o", "%i %T"];
        let shown = format!("{} {}", self.squeue, args.join(" "));
        let out = Command::new(&self.squeue)
            .args(args)
            .output()
            .map_err(|source| SlurmError::Spawn {
                command: self.squeue.clone(),
                source,
            })?;
        match checked(&shown, out) {
            Ok(text) => Ok(parse_squeue(job, &text)),
            // squeue exits 1 with "Invalid job id specified" once the job is purged.
            Err(SlurmError::Failed { stderr, .. }) if stderr.contains("Invalid job id") => {
                Ok(BTreeMap::new())
            }
            Err(e) => Err(e),
        }
    }

    /// The states of the tasks of array job `job` from `scontrol -o show job`, with each task's
    /// exit code; empty when Slurm no longer knows the job.
    pub fn scontrol(&self, job: &str) -> Result<BTreeMap<u32, (TaskState, String)>, SlurmError> {
        let args = ["-o", "show", "job", job];
        let shown = format!("{} {}", self.scontrol, args.join(" "));
        let out = Command::new(&self.scontrol)
            .args(args)
            .output()
            .map_err(|source| SlurmError::Spawn {
                command: self.scontrol.clone(),
                source,
            })?;
        match checked(&shown, out) {
            Ok(text) => Ok(parse_scontrol(&text)),
            Err(SlurmError::Failed { stderr, .. }) if stderr.contains("Invalid job id") => {
                Ok(BTreeMap::new())
            }
            Err(e) => Err(e),
        }
    }

    /// The states of every task of `job`: squeue's, completed from scontrol for the tasks
    /// squeue does not list.
    pub fn states(&self, job: &str) -> Result<BTreeMap<u32, TaskState>, SlurmError> {
        let states = self.squeue(job)?;
        if !states.is_empty() {
            return Ok(states);
        }
        Ok(self
            .scontrol(job)?
            .into_iter()
            .map(|(i, (s, _))| (i, s))
            .collect())
    }

    /// Cancels jobs (whole arrays or `job_task` ids); unknown ids are fine.
    pub fn cancel(&self, jobs: &[String]) -> Result<(), SlurmError> {
        if jobs.is_empty() {
            return Ok(());
        }
        let shown = format!("{} {}", self.scancel, jobs.join(" "));
        let out = Command::new(&self.scancel)
            .args(jobs)
            .output()
            .map_err(|source| SlurmError::Spawn {
                command: self.scancel.clone(),
                source,
            })?;
        match checked(&shown, out) {
            Ok(_) => Ok(()),
            Err(SlurmError::Failed { stderr, .. }) if stderr.contains("Invalid job id") => Ok(()),
            Err(e) => Err(e),
        }
    }
}

fn checked(shown: &str, out: std::process::Output) -> Result<String, SlurmError> {
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    Err(SlurmError::Failed {
        command: shown.to_string(),
        code: out.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
    })
}

/// Parses `squeue -h -r -o '%i %T'` lines: `12_3 RUNNING`, and (without `-r` on old
/// versions) `12_[4-9%2] PENDING`. Lines of other jobs are ignored.
pub fn parse_squeue(job: &str, text: &str) -> BTreeMap<u32, TaskState> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let (Some(id), Some(state)) = (fields.next(), fields.next()) else {
            continue;
        };
        let Some((base, task)) = id.split_once('_') else {
            continue;
        };
        if base != job {
            continue;
        }
        let state = TaskState::parse(state);
        for index in expand_indices(task) {
            out.insert(index, state.clone());
        }
    }
    out
}

/// `3` → [3]; `[4-9%2]` → 4..=9; `[1,3-4]` → [1, 3, 4].
fn expand_indices(task: &str) -> Vec<u32> {
    let inner = task.trim_start_matches('[').trim_end_matches(']');
    let inner = inner.split('%').next().unwrap_or_default();
    let mut out = Vec::new();
    for part in inner.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                    out.extend(a..=b);
                }
            }
            None => out.extend(part.parse::<u32>().ok()),
        }
    }
    out
}

/// Parses `scontrol -o show job` output: one line per task with `ArrayTaskId=`, `JobState=`
/// and `ExitCode=`.
pub fn parse_scontrol(text: &str) -> BTreeMap<u32, (TaskState, String)> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|f| f.strip_prefix(name))
                .map(str::to_string)
        };
        let (Some(task), Some(state)) = (field("ArrayTaskId="), field("JobState=")) else {
            continue;
        };
        let exit = field("ExitCode=").unwrap_or_default();
        let state = TaskState::parse(&state);
        for index in expand_indices(&task) {
            out.insert(index, (state.clone(), exit.clone()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_specs_are_compact_ranges() {
        assert_eq!(array_spec(&[0, 1, 2, 3], None), "0-3");
        assert_eq!(array_spec(&[5, 0, 1, 3], Some(2)), "0-1,3,5%2");
        assert_eq!(array_spec(&[7], None), "7");
    }

    #[test]
    fn squeue_lines_expand_pending_ranges_and_skip_other_jobs() {
        let text =
            "12_0 COMPLETED\n12_1 FAILED\n12_[2-4%2] PENDING\n13_0 RUNNING\n12_5 CANCELLED by 0\n";
        let s = parse_squeue("12", text);
        assert_eq!(s.len(), 6);
        assert_eq!(s[&0], TaskState::Completed);
        assert_eq!(s[&1], TaskState::Ended("FAILED".into()));
        assert_eq!(s[&3], TaskState::Waiting("PENDING".into()));
        assert_eq!(s[&5], TaskState::Ended("CANCELLED".into()));
        assert!(s[&1].is_final() && !s[&3].is_final());
    }

    #[test]
    fn scontrol_lines_give_state_and_exit_code() {
        let text = "JobId=21 ArrayJobId=20 ArrayTaskId=1 JobName=x JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0\nJobId=20 ArrayJobId=20 ArrayTaskId=2-3 JobState=PENDING ExitCode=0:0\n";
        let s = parse_scontrol(text);
        assert_eq!(s[&1], (TaskState::Ended("FAILED".into()), "3:0".into()));
        assert_eq!(s[&3].0, TaskState::Waiting("PENDING".into()));
    }
}
