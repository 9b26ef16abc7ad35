//! The pipeline file format: what users write, parsed with source locations.
//!
//! These types mirror the YAML one to one. They are deliberately loose (parameters are untyped
//! JSON values) because a stage's parameters are only typed once its kind is known; `plan.rs`
//! turns this into a validated [`crate::plan::Plan`].

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_saphyr::Spanned;

use crate::error::{ConfigError, Error, Location, Result};

/// A whole pipeline file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "prefflow pipeline",
    description = "A prefflow pipeline: named stages forming a DAG"
)]
pub struct PipelineSpec {
    /// The pipeline's name; run records and `show` are keyed by it.
    #[schemars(with = "String")]
    pub pipeline: Spanned<String>,
    /// Free text for humans.
    #[serde(default)]
    pub description: Option<String>,
    /// Pipeline-level parameters, referenced from stage params as `${params.NAME}`.
    #[serde(default)]
    #[schemars(with = "IndexMap<String, Value>")]
    pub params: IndexMap<String, Spanned<Value>>,
    /// Named resource pools (e.g. one per LLM endpoint) and how many items may hold each at once.
    #[serde(default)]
    #[schemars(with = "IndexMap<String, u32>")]
    pub resources: IndexMap<String, Spanned<u32>>,
    /// The stages, by name. Order does not matter: dependencies come from `inputs`.
    #[schemars(with = "IndexMap<String, StageSpec>")]
    pub stages: IndexMap<String, Spanned<StageSpec>>,
    /// Where per-item work runs and how cluster jobs are asked for (docs/cluster.md); a
    /// profile file (`--profile`) overrides it field by field, `--executor` picks the kind.
    #[serde(default)]
    pub executor: Option<ExecutorSpec>,
}

/// One stage of a pipeline.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StageSpec {
    /// The registered stage kind (see `prefflow kinds`).
    #[schemars(with = "String")]
    pub kind: Spanned<String>,
    /// Free text for humans.
    #[serde(default)]
    pub description: Option<String>,
    /// Upstream tables: `stage` (all its tables) or `stage.table`.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub inputs: Vec<Spanned<String>>,
    /// The kind's parameters; strings may contain `${params.NAME}`.
    #[serde(default)]
    #[schemars(with = "IndexMap<String, Value>")]
    pub params: IndexMap<String, Spanned<Value>>,
    /// Map over the rows of the first input, grouped by this column; each group is one item,
    /// cached and committed on its own.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub per_item: Option<Spanned<String>>,
    /// A grid over parameter paths: `{ path: [v1, v2] }`, or
    /// `{ grid: {...}, include: [{...}], exclude: [{...}] }`.
    #[serde(default)]
    #[schemars(with = "Option<IndexMap<String, Value>>")]
    pub sweep: Option<Spanned<IndexMap<String, Value>>>,
    /// At most this many items of this stage run at once (default: number of CPUs; 1,024 for
    /// async kinds, whose items wait on I/O and are bounded by resource pools).
    #[serde(default)]
    #[schemars(with = "Option<u32>")]
    pub concurrency: Option<Spanned<u32>>,
    /// Named resource pools each running item holds one slot of.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub resources: Vec<Spanned<String>>,
    /// How many times a transient failure is retried (default 0).
    #[serde(default)]
    pub retries: Option<u32>,
    /// First retry delay in milliseconds; doubles each attempt (default 200).
    #[serde(default)]
    pub retry_backoff_ms: Option<u64>,
    /// Collect every variant of the (swept) inputs into one table each (rows concatenated in
    /// variant order) and run once, instead of once per variant. For comparisons across
    /// variants: aggregate tables, paired differences, reports.
    #[serde(default)]
    pub gather: bool,
    /// Run the stage only when this holds, e.g. `when: { env: PREFFLOW_LLM_BASE_URL }`;
    /// otherwise it is disabled (no result, no error, `plan` says why), and so is every stage
    /// that needs it, except that a `gather` stage goes on without it. Part of the key.
    #[serde(default)]
    #[schemars(with = "Option<crate::when::When>")]
    pub when: Option<Spanned<crate::when::When>>,
    /// Where the stage runs under a cluster executor: `local` keeps a per-item stage's items on
    /// the coordinator (for cheap stages, where a job's start-up costs more than the work);
    /// `slurm` runs a whole-table stage as one Slurm job (for an expensive one; whole-table
    /// stages run on the coordinator by default).
    #[serde(default)]
    #[schemars(with = "Option<StageExecutor>")]
    pub executor: Option<Spanned<StageExecutor>>,
}

/// A parsed pipeline file together with where it came from.
#[derive(Debug)]
pub struct PipelineFile {
    /// The path as the user gave it (kept relative: it ends up in run records).
    pub path: PathBuf,
    /// The parsed content.
    pub spec: PipelineSpec,
}

/// Converts a serde-saphyr location into ours.
pub fn location(file: &Path, loc: &serde_saphyr::Location) -> Location {
    Location {
        file: file.to_path_buf(),
        line: loc.line(),
        column: loc.column(),
    }
}

/// The location of a spanned value.
pub fn at<T>(file: &Path, spanned: &Spanned<T>) -> Location {
    location(file, &spanned.referenced)
}

impl PipelineFile {
    /// Reads and parses a pipeline file; YAML and shape errors carry their location.
    pub fn load(path: &Path) -> Result<Self> {
        let shown = path.display().to_string();
        let text = crate::input::read_text(path, &shown).map_err(|e| {
            let hint = match &e {
                crate::input::TextError::Io { .. } => {
                    "check the path; pipelines usually live in pipelines/"
                }
                crate::input::TextError::Encoding { .. } => {
                    "a pipeline file is UTF-8 YAML text; open it in an editor and save it as UTF-8"
                }
            };
            let place = e.place();
            let loc = Location {
                file: path.to_path_buf(),
                line: place.line,
                column: place.column,
            };
            let message = match e {
                crate::input::TextError::Io { source, .. } => {
                    format!("cannot read pipeline file: {source}")
                }
                crate::input::TextError::Encoding { what, .. } => {
                    format!("cannot read pipeline file: {what}")
                }
            };
            Error::config(loc, message, Some(hint.into()))
        })?;
        Self::parse(path, &text)
    }

    /// Parses pipeline text; `path` is used for error locations only.
    pub fn parse(path: &Path, text: &str) -> Result<Self> {
        let spec: PipelineSpec = from_yaml(text).map_err(|e| yaml_error(path, &e))?;
        let file = Self {
            path: path.to_path_buf(),
            spec,
        };
        let mut errors = file.check_names();
        errors.extend(file.check_counts());
        if errors.is_empty() {
            Ok(file)
        } else {
            Err(Error::Config(errors))
        }
    }

    /// Names become store keys and labels: the pipeline's and every stage's must be a plain
    /// name (see [`crate::store::check_name`]), so `pipeline: ../../escaped` never writes
    /// outside the store.
    fn check_names(&self) -> Vec<ConfigError> {
        use crate::store::{check_name, names::hint, NameRule};
        let mut errors = Vec::new();
        let pipeline = &self.spec.pipeline;
        if let Err(why) = check_name(NameRule::Pipeline, &pipeline.value) {
            errors.push(ConfigError::new(
                at(&self.path, pipeline),
                format!("pipeline name `{}` {why}", pipeline.value),
                Some(hint(NameRule::Pipeline).into()),
            ));
        }
        for (name, stage) in &self.spec.stages {
            if let Err(why) = check_name(NameRule::Stage, name) {
                errors.push(ConfigError::new(
                    at(&self.path, stage),
                    format!("stage name `{name}` {why}"),
                    Some(hint(NameRule::Stage).into()),
                ));
            }
        }
        errors
    }

    /// Counts that parse but cannot work: `concurrency: 0` would never run an item, a pool of
    /// size 0 would wait forever.
    fn check_counts(&self) -> Vec<ConfigError> {
        let mut errors = Vec::new();
        for (name, size) in &self.spec.resources {
            if size.value == 0 {
                errors.push(ConfigError::new(
                    at(&self.path, size),
                    format!(
                        "resource pool `{name}` has size 0, so no item holding it could ever run"
                    ),
                    Some(format!("give it at least one slot, e.g. `{name}: 4`")),
                ));
            }
        }
        for (name, stage) in &self.spec.stages {
            if let Some(c) = stage.value.concurrency.as_ref().filter(|c| c.value == 0) {
                errors.push(ConfigError::new(
                    at(&self.path, c),
                    format!("stage `{name}`: `concurrency: 0` would never run an item"),
                    Some("give at least 1, or leave `concurrency` out for one item per CPU".into()),
                ));
            }
        }
        errors
    }
}

fn yaml_error(path: &Path, e: &serde_saphyr::Error) -> Error {
    let problem = crate::input::yaml_problem(e);
    let loc = match problem.line_column {
        Some((line, column)) => Location {
            file: path.to_path_buf(),
            line,
            column,
        },
        None => Location::file(path),
    };
    let hint = problem
        .fix
        .unwrap_or_else(|| "see `prefflow schema` for the pipeline format".into());
    Error::Config(vec![ConfigError::new(loc, problem.message, Some(hint))])
}

/// YAML parsing options shared by everything prefflow reads: YAML 1.2 booleans only, so `no`,
/// `y` or `off` stay strings (the "Norway problem") while `true`/`false` are booleans.
pub fn yaml_options() -> serde_saphyr::Options {
    serde_saphyr::options! { strict_booleans: true }
}

/// Deserializes YAML text with [`yaml_options`]; errors carry line and column.
pub fn from_yaml<T: serde::de::DeserializeOwned>(
    text: &str,
) -> std::result::Result<T, serde_saphyr::Error> {
    serde_saphyr::from_str_with_options(text, yaml_options())
}

/// The JSON Schema of the pipeline format, published so editors can validate pipeline files.
pub fn json_schema() -> Value {
    let schema = schemars::schema_for!(PipelineSpec);
    serde_json::to_value(schema).unwrap_or(Value::Null)
}

/// Which executor runs per-item work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExecutorKind {
    /// Everything runs in this process (the default).
    Local,
    /// Per-item work goes to Slurm job arrays; this process plans, follows and assembles.
    Slurm,
}

impl ExecutorKind {
    /// The name as written in YAML and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ExecutorKind::Local => "local",
            ExecutorKind::Slurm => "slurm",
        }
    }
}

/// The `executor:` block of a pipeline, or the content of a profile file. Every field is
/// optional; see [`SlurmSettings`] for the defaults.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecutorSpec {
    /// `local` (default) or `slurm`; `--executor` overrides it.
    #[serde(default)]
    #[schemars(with = "Option<ExecutorKind>")]
    pub kind: Option<Spanned<ExecutorKind>>,
    /// Slurm partition (`sbatch --partition`); the cluster's default when absent.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub partition: Option<Spanned<String>>,
    /// Account to charge (`--account`).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub account: Option<Spanned<String>>,
    /// Quality of service (`--qos`).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub qos: Option<Spanned<String>>,
    /// Time limit of each array task, in a Slurm format: `MM`, `MM:SS`, `HH:MM:SS`, `D-HH`,
    /// `D-HH:MM` or `D-HH:MM:SS` (`--time`).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub time: Option<Spanned<String>>,
    /// CPUs per array task (`--cpus-per-task`).
    #[serde(default)]
    #[schemars(with = "Option<u32>")]
    pub cpus_per_task: Option<Spanned<u32>>,
    /// Memory per array task, e.g. `4G` or `512M` (`--mem`).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub mem: Option<Spanned<String>>,
    /// At most this many tasks in one job array (default 100; the cluster's `MaxArraySize`
    /// bounds it too). Items are dealt round-robin over the tasks.
    #[serde(default)]
    #[schemars(with = "Option<u32>")]
    pub max_array_size: Option<Spanned<u32>>,
    /// Items per array task before a second task is added (default 1).
    #[serde(default)]
    #[schemars(with = "Option<u32>")]
    pub items_per_task: Option<Spanned<u32>>,
    /// At most this many tasks of one array run at once (`--array=…%N`); also bounded by the
    /// smallest resource pool the stage holds, so pools keep their meaning across workers.
    #[serde(default)]
    #[schemars(with = "Option<u32>")]
    pub parallel: Option<Spanned<u32>>,
    /// Extra `sbatch` options, one per entry, e.g. `--constraint=a100` or `--gres=gpu:1`.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub sbatch_args: Vec<Spanned<String>>,
    /// Environment variables the array tasks receive (`--export=NAME,…`, values taken from
    /// the submitting shell, never written anywhere); all of them when empty.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub export: Vec<Spanned<String>>,
    /// The `prefflow` binary the tasks run, as the compute nodes see it (default: this one).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub worker: Option<Spanned<String>>,
    /// Where the tasks' stdout/stderr go (default `.prefflow-slurm/` in the working directory).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub log_dir: Option<Spanned<String>>,
    /// Milliseconds between two looks at the jobs and the store (default 1000).
    #[serde(default)]
    #[schemars(with = "Option<u64>")]
    pub poll_ms: Option<Spanned<u64>>,
}

/// Where a stage's work runs under a cluster executor (the stage's `executor:` field). A
/// per-item stage's items go to job arrays unless it says `local` (for cheap stages, where a
/// job's start-up would cost more than the work); a whole-table stage runs on the coordinator
/// unless it says `slurm` (for an expensive one: it then runs as one Slurm job). Under the
/// local executor both mean this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StageExecutor {
    /// On the coordinator, in this process (the default for whole-table stages).
    Local,
    /// Through the run's executor: job arrays for a per-item stage (its default), one job for
    /// a whole-table stage.
    Slurm,
}

/// A reference to an upstream table as written in `inputs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputRef {
    /// Upstream stage name.
    pub stage: String,
    /// One table of it, or all of them.
    pub table: Option<String>,
}

impl InputRef {
    /// Splits `stage` or `stage.table`.
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = text.splitn(2, '.');
        let stage = parts.next()?.trim();
        if stage.is_empty() {
            return None;
        }
        let table = parts.next().map(|t| t.trim().to_string());
        if table.as_deref() == Some("") {
            return None;
        }
        Some(Self {
            stage: stage.to_string(),
            table,
        })
    }
}
