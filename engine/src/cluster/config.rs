//! Executor configuration: which executor runs the per-item work, and how Slurm jobs are asked
//! for. It comes from an `executor:` block in the pipeline file, from a profile file
//! (`--profile FILE`, the same fields at the top level, so one cluster's settings serve every
//! pipeline) and from `--executor`; the profile wins field by field over the pipeline's block.
//!
//! Everything is checked before anything is submitted: a bad value is a located error
//! (`file:line:column`) with the fix, and the run exits 2 with the store untouched.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::{at, from_yaml, PipelineFile};
pub use crate::config::{ExecutorKind, ExecutorSpec, StageExecutor};
use crate::error::{ConfigError, Error, Location, Result};

/// Resolved, checked settings of the Slurm executor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlurmSettings {
    /// `--partition`.
    pub partition: Option<String>,
    /// `--account`.
    pub account: Option<String>,
    /// `--qos`.
    pub qos: Option<String>,
    /// `--time`.
    pub time: Option<String>,
    /// `--cpus-per-task`.
    pub cpus_per_task: Option<u32>,
    /// `--mem`.
    pub mem: Option<String>,
    /// Most tasks per array.
    pub max_array_size: u32,
    /// Items per task before another task is added.
    pub items_per_task: u32,
    /// `%N` of `--array`.
    pub parallel: Option<u32>,
    /// Extra sbatch options.
    pub sbatch_args: Vec<String>,
    /// Variables to export (all when empty).
    pub export: Vec<String>,
    /// The worker binary (`None`: this executable).
    pub worker: Option<PathBuf>,
    /// Task logs directory, relative to the working directory unless absolute.
    pub log_dir: PathBuf,
    /// Poll period.
    pub poll: Duration,
}

impl Default for SlurmSettings {
    fn default() -> Self {
        Self {
            partition: None,
            account: None,
            qos: None,
            time: None,
            cpus_per_task: None,
            mem: None,
            max_array_size: 100,
            items_per_task: 1,
            parallel: None,
            sbatch_args: Vec::new(),
            export: Vec::new(),
            worker: None,
            log_dir: PathBuf::from(".prefflow-slurm"),
            poll: Duration::from_millis(1000),
        }
    }
}

/// The executor a run uses, resolved from the pipeline, the profile and the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecutorChoice {
    /// In-process.
    Local,
    /// Slurm job arrays with these settings.
    Slurm(Box<SlurmSettings>),
}

/// One source of settings and the file its locations point into.
pub struct SpecSource<'a> {
    /// The file the spec was read from (pipeline or profile).
    pub file: &'a Path,
    /// The spec.
    pub spec: &'a ExecutorSpec,
}

/// Reads a profile file: an [`ExecutorSpec`] at the top level. YAML and shape errors are
/// located in `path`.
pub fn load_profile(path: &Path) -> Result<ExecutorSpec> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::config(
            Location::file(path),
            format!("cannot read executor profile: {e}"),
            Some("check the --profile path".into()),
        )
    })?;
    from_yaml::<ExecutorSpec>(&text).map_err(|e| {
        let problem = crate::input::yaml_problem(&e);
        let loc = match problem.line_column {
            Some((line, column)) => Location {
                file: path.to_path_buf(),
                line,
                column,
            },
            None => Location::file(path),
        };
        let fix = problem.fix.unwrap_or_else(|| {
            "a profile holds the fields of an `executor:` block: kind, partition, account, qos, time, cpus_per_task, mem, max_array_size, items_per_task, parallel, sbatch_args, export, worker, log_dir, poll_ms (docs/cluster.md)".into()
        });
        Error::Config(vec![ConfigError::new(loc, problem.message, Some(fix))])
    })
}

/// Resolves the executor: `flag` (`--executor`) over the sources' `kind`, later sources over
/// earlier ones field by field. Every problem found is reported at once.
pub fn resolve(flag: Option<ExecutorKind>, sources: &[SpecSource<'_>]) -> Result<ExecutorChoice> {
    let mut errors = Vec::new();
    let mut kind = ExecutorKind::Local;
    let mut s = SlurmSettings::default();
    for src in sources {
        apply(src, &mut kind, &mut s, &mut errors);
    }
    if !errors.is_empty() {
        return Err(Error::Config(errors));
    }
    Ok(match flag.unwrap_or(kind) {
        ExecutorKind::Local => ExecutorChoice::Local,
        ExecutorKind::Slurm => ExecutorChoice::Slurm(Box::new(s)),
    })
}

/// Applies one source's fields to `s`, collecting located errors (in the fields' order).
fn apply(
    src: &SpecSource<'_>,
    kind: &mut ExecutorKind,
    s: &mut SlurmSettings,
    errors: &mut Vec<ConfigError>,
) {
    let spec = src.spec;
    if let Some(k) = &spec.kind {
        *kind = k.value;
    }
    let mut problems = Problems {
        file: src.file,
        errors,
    };
    apply_names(spec, s, &mut problems);
    apply_time_and_mem(spec, s, &mut problems);
    apply_counts(spec, s, &mut problems);
    apply_lists(spec, s, &mut problems);
    apply_worker(spec, s, &mut problems);
    if let Some(d) = &spec.log_dir {
        s.log_dir = PathBuf::from(&d.value);
    }
    if let Some(p) = &spec.poll_ms {
        if p.value == 0 {
            problems.push(
                at(problems.file, p),
                "`poll_ms: 0` would ask Slurm without pause".into(),
                "give e.g. 1000 (one look per second)",
            );
        } else {
            s.poll = Duration::from_millis(p.value);
        }
    }
}

/// The located errors of one executor source.
struct Problems<'a> {
    file: &'a Path,
    errors: &'a mut Vec<ConfigError>,
}

impl Problems<'_> {
    /// One error at `location`, with its fix.
    fn push(&mut self, location: Location, message: String, fix: &str) {
        self.errors
            .push(ConfigError::new(location, message, Some(fix.to_string())));
    }
}

/// `partition`, `account`, `qos`: one Slurm name each.
fn apply_names(spec: &ExecutorSpec, s: &mut SlurmSettings, problems: &mut Problems<'_>) {
    for (field, value, slot) in [
        ("partition", &spec.partition, &mut s.partition),
        ("account", &spec.account, &mut s.account),
        ("qos", &spec.qos, &mut s.qos),
    ] {
        if let Some(v) = value {
            if v.value.trim().is_empty() || v.value.chars().any(char::is_whitespace) {
                problems.push(
                    at(problems.file, v),
                    format!("`{field}: {:?}` is not a Slurm name", v.value),
                    "write one name without spaces, or leave the field out for the cluster's default",
                );
            } else {
                *slot = Some(v.value.clone());
            }
        }
    }
}

/// `time` (a Slurm time limit) and `mem` (a Slurm memory size).
fn apply_time_and_mem(spec: &ExecutorSpec, s: &mut SlurmSettings, problems: &mut Problems<'_>) {
    if let Some(t) = &spec.time {
        if slurm_time_ok(&t.value) {
            s.time = Some(t.value.clone());
        } else {
            problems.push(
                at(problems.file, t),
                format!("`time: {:?}` is not a Slurm time limit", t.value),
                "write MM, HH:MM:SS or D-HH:MM:SS, e.g. `time: \"02:00:00\"` for two hours",
            );
        }
    }
    if let Some(m) = &spec.mem {
        if mem_ok(&m.value) {
            s.mem = Some(m.value.clone());
        } else {
            problems.push(
                at(problems.file, m),
                format!("`mem: {:?}` is not a Slurm memory size", m.value),
                "write a number with an optional unit K, M, G or T, e.g. `mem: 4G`",
            );
        }
    }
}

/// `cpus_per_task`, `max_array_size`, `items_per_task`, `parallel`: at least 1 each, and an
/// array no larger than Slurm's index limit.
fn apply_counts(spec: &ExecutorSpec, s: &mut SlurmSettings, problems: &mut Problems<'_>) {
    for (field, value, slot, fix) in [
        (
            "cpus_per_task",
            &spec.cpus_per_task,
            None,
            "give at least 1, or leave it out for the cluster's default",
        ),
        (
            "max_array_size",
            &spec.max_array_size,
            Some(&mut s.max_array_size),
            "give at least 1 (default 100)",
        ),
        (
            "items_per_task",
            &spec.items_per_task,
            Some(&mut s.items_per_task),
            "give at least 1 (default 1)",
        ),
        (
            "parallel",
            &spec.parallel,
            None,
            "give at least 1, or leave it out to let Slurm run every task it can",
        ),
    ] {
        let Some(v) = value else { continue };
        if v.value == 0 {
            problems.push(
                at(problems.file, v),
                format!("`{field}: 0` would never run a task"),
                fix,
            );
            continue;
        }
        match (field, slot) {
            (_, Some(slot)) => *slot = v.value,
            ("cpus_per_task", None) => s.cpus_per_task = Some(v.value),
            _ => s.parallel = Some(v.value),
        }
    }
    if let Some(v) = spec.max_array_size.as_ref().filter(|v| v.value > 1001) {
        problems.push(
            at(problems.file, v),
            format!(
                "`max_array_size: {}` is over Slurm's array index limit",
                v.value
            ),
            "give at most 1001 (Slurm's default MaxArraySize); more items share tasks",
        );
    }
}

/// `sbatch_args` and `export`: a source that gives a list replaces the earlier one.
fn apply_lists(spec: &ExecutorSpec, s: &mut SlurmSettings, problems: &mut Problems<'_>) {
    if !spec.sbatch_args.is_empty() {
        s.sbatch_args.clear();
    }
    for a in &spec.sbatch_args {
        match sbatch_arg_problem(&a.value) {
            None => s.sbatch_args.push(a.value.clone()),
            Some((why, fix)) => problems.push(
                at(problems.file, a),
                format!("sbatch_args `{}`: {why}", a.value),
                fix,
            ),
        }
    }
    if !spec.export.is_empty() {
        s.export.clear();
    }
    for v in &spec.export {
        if env_name_ok(&v.value) {
            s.export.push(v.value.clone());
        } else {
            problems.push(
                at(problems.file, v),
                format!("export `{}` is not an environment variable name", v.value),
                "list names only (e.g. `export: [PREFFLOW_LLM_BASE_URL, OPENAI_API_KEY]`); values come from the submitting shell and are never written down",
            );
        }
    }
}

/// `worker`: an executable file, the prefflow binary the tasks run.
fn apply_worker(spec: &ExecutorSpec, s: &mut SlurmSettings, problems: &mut Problems<'_>) {
    use std::os::unix::fs::PermissionsExt;
    let Some(w) = &spec.worker else {
        return;
    };
    let path = PathBuf::from(&w.value);
    match std::fs::metadata(&path) {
        Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => s.worker = Some(path),
        Ok(_) => problems.push(
            at(problems.file, w),
            format!("`worker: {}` is not an executable file", w.value),
            "point it at a prefflow binary built from this commit (`chmod +x` it), at a path every node can run",
        ),
        Err(e) => problems.push(
            at(problems.file, w),
            format!("`worker: {}` cannot be run from here: {e}", w.value),
            "the tasks run this path on the nodes: give the prefflow binary's path on the shared filesystem, built from this commit (docs/cluster.md, \"What has to be where\"), or leave `worker:` out to use this executable",
        ),
    }
}

/// Whether `t` is a Slurm time: `MM`, `MM:SS`, `HH:MM:SS`, `D-HH`, `D-HH:MM`, `D-HH:MM:SS`
/// (or `UNLIMITED`/`INFINITE`).
pub fn slurm_time_ok(t: &str) -> bool {
    let t = t.trim();
    if matches!(t, "UNLIMITED" | "INFINITE" | "unlimited" | "infinite") {
        return true;
    }
    let digits = |s: &str| !s.is_empty() && s.len() <= 6 && s.bytes().all(|b| b.is_ascii_digit());
    let (days, rest) = match t.split_once('-') {
        Some((d, r)) => (Some(d), r),
        None => (None, t),
    };
    if days.is_some_and(|d| !digits(d)) {
        return false;
    }
    let parts: Vec<&str> = rest.split(':').collect();
    !parts.is_empty() && parts.len() <= 3 && parts.iter().all(|p| digits(p))
}

/// Whether `m` is a Slurm memory size: digits and an optional K/M/G/T unit.
pub fn mem_ok(m: &str) -> bool {
    let m = m.trim();
    let digits = m.trim_end_matches(['K', 'M', 'G', 'T', 'k', 'm', 'g', 't']);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && m.len() - digits.len() <= 1
}

/// Whether `n` is a portable environment variable name.
pub fn env_name_ok(n: &str) -> bool {
    let mut chars = n.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Why an extra sbatch option cannot be used: not an option, or one the executor sets itself.
fn sbatch_arg_problem(a: &str) -> Option<(String, &'static str)> {
    if !a.starts_with('-') {
        return Some((
            "is not an option".into(),
            "write one option per entry, starting with `-`, e.g. `--gres=gpu:1`",
        ));
    }
    let name = a.split(['=', ' ']).next().unwrap_or(a);
    const OWN: &[&str] = &[
        "--array",
        "-a",
        "--parsable",
        "--wrap",
        "--output",
        "-o",
        "--error",
        "-e",
        "--chdir",
        "-D",
        "--export",
        "--job-name",
        "-J",
    ];
    OWN.contains(&name).then(|| {
        (
            format!("`{name}` is set by the executor"),
            "leave it out: use `max_array_size`/`parallel` for the array, `export` for the environment, `log_dir` for output",
        )
    })
}

/// Which stages leave the default placement under a cluster executor (see [`StageExecutor`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StagePlacement {
    /// Per-item stages whose items stay on the coordinator (`executor: local`).
    pub local: BTreeSet<String>,
    /// Whole-table stages that run as one Slurm job each (`executor: slurm`).
    pub jobs: BTreeSet<String>,
}

/// The stages' placement from their `executor:` fields.
pub fn stage_placement(file: &PipelineFile) -> StagePlacement {
    let mut placement = StagePlacement::default();
    for (name, stage) in &file.spec.stages {
        let Some(e) = &stage.value.executor else {
            continue;
        };
        let whole = stage.value.per_item.is_none();
        match (e.value, whole) {
            (StageExecutor::Local, false) => {
                placement.local.insert(name.clone());
            }
            (StageExecutor::Slurm, true) => {
                placement.jobs.insert(name.clone());
            }
            // The defaults, spelled out.
            (StageExecutor::Local, true) | (StageExecutor::Slurm, false) => {}
        }
    }
    placement
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> ExecutorSpec {
        from_yaml(yaml).expect("spec parses")
    }

    #[test]
    fn times_memory_and_names_follow_slurm() {
        for ok in [
            "30",
            "30:00",
            "02:00:00",
            "1-00",
            "1-12:00",
            "2-00:00:00",
            "UNLIMITED",
        ] {
            assert!(slurm_time_ok(ok), "{ok}");
        }
        for bad in ["", "2h", "1:2:3:4", "-1", "a-10", "1-"] {
            assert!(!slurm_time_ok(bad), "{bad}");
        }
        assert!(mem_ok("4G") && mem_ok("512") && mem_ok("100m"));
        assert!(!mem_ok("4GB") && !mem_ok("G") && !mem_ok("four"));
        assert!(env_name_ok("OPENAI_API_KEY") && !env_name_ok("A=b") && !env_name_ok("1X"));
    }

    #[test]
    fn the_profile_wins_field_by_field_and_the_flag_wins_the_kind() {
        let pipeline = spec("kind: local\npartition: cpu\nmem: 2G\n");
        let profile = spec("partition: gpu\nparallel: 4\nexport: [HOME]\n");
        let sources = [
            SpecSource {
                file: Path::new("p.yaml"),
                spec: &pipeline,
            },
            SpecSource {
                file: Path::new("profile.yaml"),
                spec: &profile,
            },
        ];
        assert_eq!(resolve(None, &sources).expect("ok"), ExecutorChoice::Local);
        let ExecutorChoice::Slurm(s) = resolve(Some(ExecutorKind::Slurm), &sources).expect("ok")
        else {
            panic!("slurm expected")
        };
        assert_eq!(s.partition.as_deref(), Some("gpu"));
        assert_eq!(s.mem.as_deref(), Some("2G"));
        assert_eq!(s.parallel, Some(4));
        assert_eq!(s.export, vec!["HOME".to_string()]);
    }

    #[test]
    fn every_bad_field_is_reported_with_its_place_and_fix() {
        let bad = spec("kind: slurm\ntime: 2h\nmem: lots\nparallel: 0\nsbatch_args: [--array=1-3, gres]\nexport: [A=b]\n");
        let err = resolve(
            None,
            &[SpecSource {
                file: Path::new("profile.yaml"),
                spec: &bad,
            }],
        )
        .expect_err("bad profile");
        let text = err.to_string();
        for want in [
            "profile.yaml:2:7",
            "HH:MM:SS",
            "profile.yaml:3:6",
            "profile.yaml:4:11",
            "`--array` is set by the executor",
            "is not an option",
            "profile.yaml:6:",
            "never written down",
        ] {
            assert!(text.contains(want), "`{want}` missing from:\n{text}");
        }
    }
}
