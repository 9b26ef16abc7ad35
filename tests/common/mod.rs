//! Helpers for driving the CLI in a scratch directory.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use polars::prelude::*;
use serde_json::Value;

/// A scratch working directory with its own store.
pub struct Workspace {
    pub dir: tempfile::TempDir,
}

/// The result of one CLI invocation.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The exit code and output of a finished command.
    pub fn from(out: Output) -> Self {
        Self {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Panics with the output when the exit code differs.
    pub fn expect_code(self, code: i32) -> Self {
        assert_eq!(
            self.code, code,
            "exit code\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_prefflow")
}

impl Workspace {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn store(&self) -> PathBuf {
        self.path().join(".prefflow")
    }

    pub fn write(&self, rel: &str, text: &str) {
        let p = self.path().join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(p, text).expect("write file");
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin());
        cmd.current_dir(self.path())
            .args(args)
            .env("NO_COLOR", "1")
            .env_remove("PREFFLOW_STORE");
        cmd
    }

    pub fn cli(&self, args: &[&str]) -> Run {
        Run::from(self.command(args).output().expect("spawn prefflow"))
    }

    /// `prefflow run FILE --progress none ARGS…`, expecting success.
    pub fn run_ok(&self, file: &str, extra: &[&str]) -> Value {
        let mut args = vec!["run", file, "--progress", "none"];
        args.extend_from_slice(extra);
        self.cli(&args).expect_code(0);
        self.last_run(&pipeline_name(&self.path().join(file)))
    }

    /// The last-run record of a pipeline.
    pub fn last_run(&self, pipeline: &str) -> Value {
        let p = self
            .store()
            .join("runs")
            .join(pipeline)
            .join("last-run.json");
        serde_json::from_slice(&std::fs::read(&p).expect("run record")).expect("record json")
    }

    /// Number of committed item manifests in the store. A write in flight is a temporary file
    /// beside its final name (`.<name>.<host>-<pid>-<n>.tmp`, engine/src/store/fs.rs) until it
    /// is renamed or linked; a process killed mid-write leaves one behind, and it is no commit.
    pub fn committed_items(&self) -> usize {
        count_files_where(&self.store().join("items"), &|name| {
            !(name.starts_with('.') && name.ends_with(".tmp"))
        })
    }

    /// Reads a stage's table from the latest run via `show --path`.
    pub fn table(&self, target: &str, variant: Option<&str>) -> DataFrame {
        self.table_of(None, target, variant)
    }

    /// Reads a stage's table from the latest run of `pipeline` (default: the most recent one).
    pub fn table_of(
        &self,
        pipeline: Option<&str>,
        target: &str,
        variant: Option<&str>,
    ) -> DataFrame {
        let mut args = vec!["show", target, "--path"];
        if let Some(p) = pipeline {
            args.extend(["-p", p]);
        }
        if let Some(v) = variant {
            args.extend(["--variant", v]);
        }
        let file = std::fs::File::open(self.table_path(&args)).expect("parquet file");
        ParquetReader::new(file).finish().expect("parquet")
    }

    /// The file `prefflow ARGS` names (`show TARGET --path …`): the first line it prints.
    pub fn table_path(&self, args: &[&str]) -> String {
        let out = self.cli(args).expect_code(0);
        out.stdout
            .lines()
            .next()
            .expect("a path")
            .trim()
            .to_string()
    }
}

/// A table's column as text, nulls as `None` (any dtype, cast to strings).
pub fn column_texts(df: &DataFrame, col: &str) -> Vec<Option<String>> {
    df.column(col)
        .expect("column")
        .cast(&DataType::String)
        .expect("as text")
        .str()
        .expect("strings")
        .iter()
        .map(|s| s.map(str::to_string))
        .collect()
}

/// `read_table` of `data/rows.csv` and two per-item `probe` stages `a` and `b` over it, each
/// waiting `delay_ms` per item: the pipeline the store-sharing tests overlap runs of.
pub fn two_probe_stages(pipeline: &str, delay_ms: u64) -> String {
    format!(
        r#"
pipeline: {pipeline}
stages:
  rows:
    kind: read_table
    params: {{ path: data/rows.csv }}
  a:
    kind: probe
    inputs: [rows]
    per_item: id
    concurrency: 2
    params: {{ delay_ms: {delay_ms}, label: a }}
  b:
    kind: probe
    inputs: [rows]
    per_item: id
    concurrency: 2
    params: {{ delay_ms: {delay_ms}, label: b }}
"#
    )
}

pub fn pipeline_name(file: &Path) -> String {
    let text = std::fs::read_to_string(file).expect("pipeline file");
    text.lines()
        .find_map(|l| l.strip_prefix("pipeline:"))
        .map(|s| s.trim().to_string())
        .expect("pipeline name")
}

/// Files under `dir`, recursively (0 when absent).
pub fn count_files(dir: &Path) -> usize {
    count_files_where(dir, &|_| true)
}

/// Files under `dir`, recursively, whose names `keep` accepts (0 when absent).
pub fn count_files_where(dir: &Path, keep: &dyn Fn(&str) -> bool) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| {
            let p = e.path();
            if p.is_dir() {
                count_files_where(&p, keep)
            } else {
                usize::from(keep(&e.file_name().to_string_lossy()))
            }
        })
        .sum()
}

/// Bytes of the files under `dir`, recursively (0 when absent).
pub fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Status of each instance label in a run record, e.g. `{"b": "executed"}`.
pub fn statuses(record: &Value) -> std::collections::BTreeMap<String, String> {
    record["instances"]
        .as_array()
        .expect("instances")
        .iter()
        .map(|i| {
            let stage = i["stage"].as_str().unwrap_or_default();
            let variant = i["variant"].as_str().unwrap_or_default();
            let label = if variant.is_empty() {
                stage.to_string()
            } else {
                format!("{stage}[{variant}]")
            };
            (label, i["status"].as_str().unwrap_or_default().to_string())
        })
        .collect()
}

pub fn summary(record: &Value, field: &str) -> u64 {
    record["summary"][field]
        .as_u64()
        .unwrap_or_else(|| panic!("summary.{field} in {record}"))
}

/// A CSV with `n` rows: id, group, value.
pub fn numbers_csv(n: usize) -> String {
    let mut s = String::from("id,grp,value\n");
    for i in 0..n {
        s.push_str(&format!("r{i:04},g{},{}\n", i % 3, i * 7 % 11));
    }
    s
}

/// The record of stage `stage` in a run record (the first variant).
pub fn instance<'a>(record: &'a Value, stage: &str) -> &'a Value {
    record["instances"]
        .as_array()
        .and_then(|a| a.iter().find(|i| i["stage"] == stage))
        .unwrap_or_else(|| panic!("no instance `{stage}` in {record}"))
}

/// Deletes the recipe and item manifests of `stage` (every variant), so the next run executes
/// that stage again while upstream stages stay cached.
pub fn forget_stage(ws: &Workspace, stage: &str) {
    for dir in ["recipes", "items"] {
        forget_in(&ws.store().join(dir), stage);
    }
}

fn forget_in(dir: &Path, stage: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            forget_in(&p, stage);
            continue;
        }
        let manifest: Value = std::fs::read(&p)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        if manifest["stage"] == stage {
            std::fs::remove_file(&p).expect("remove manifest");
        }
    }
}

/// Asserts that every instance of `stage` in the pipeline's last run executed (was not served
/// from the engine cache), e.g. after [`forget_stage`].
pub fn assert_executed(ws: &Workspace, pipeline: &str, stage: &str) {
    let record = ws.last_run(pipeline);
    let mine: Vec<(String, String)> = statuses(&record)
        .into_iter()
        .filter(|(label, _)| label == stage || label.starts_with(&format!("{stage}[")))
        .collect();
    assert!(!mine.is_empty(), "no instance of `{stage}` in {record}");
    for (label, status) in mine {
        assert!(status.starts_with("executed"), "{label}: {status}");
    }
}

/// A file or folder of the repository, as an absolute path (tests run elsewhere).
pub fn repo(rel: &str) -> String {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

/// The head of a test pipeline: `name`, optional pipeline-level `extra` lines (e.g. resources),
/// the maya world, and `count` candidate tasks drawn with `seed` from `templates`. Tests append
/// their own stages.
pub fn world_and_candidates(
    name: &str,
    extra: &str,
    templates: &str,
    count: usize,
    seed: u64,
) -> String {
    format!(
        "pipeline: {name}
{extra}stages:
  world:
    kind: build_world
    params: {{ persona: '{}', apps: '{}' }}
  candidates:
    kind: generate_tasks
    inputs: [world.sources, world.history_events]
    params: {{ templates: '{templates}', count: {count}, seed: {seed} }}
",
        repo("datasets/personas/maya.yaml"),
        repo("datasets/apps")
    )
}

/// The `validated` and `episodes` stages that follow [`world_and_candidates`]: candidates
/// validated per task, then `run_episodes` per task with `params` and `sweep` (YAML flow maps).
pub fn validated_episodes(params: &str, sweep: &str) -> String {
    format!(
        "  validated:
    kind: validate_tasks
    inputs: [candidates.bundles, world.sources, world.history_events]
    per_item: task_id
  episodes:
    kind: run_episodes
    inputs: [validated.bundles, world.sources, world.history_events]
    per_item: task_id
    params: {params}
    sweep: {sweep}
"
    )
}

/// Every instance's tables of a run record as blob hashes (content addresses: equal hashes,
/// equal bytes), for comparing runs on different stores or executors.
pub fn table_blobs(record: &Value) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    for inst in record["instances"].as_array().expect("instances") {
        let label = format!(
            "{}[{}]",
            inst["stage"].as_str().unwrap_or_default(),
            inst["variant"].as_str().unwrap_or_default()
        );
        for (name, t) in inst["tables"].as_object().into_iter().flatten() {
            out.insert(
                format!("{label}.{name}"),
                t["blob"].as_str().unwrap_or_default().to_string(),
            );
        }
    }
    out
}

/// The built-in agents' sweep of `pipelines/iprefbench.yaml`, as shipped.
pub const SHIPPED_SWEEP: &str =
    "sweep: { agent: [oracle, defaults, ask_all, heuristic], history: [all] }";

/// `pipelines/iprefbench.yaml` with the built-in agents' sweep replaced by `sweep` (a flow map,
/// e.g. `{ agent: [oracle], history: [all] }`), so a test plays only the agents it needs.
pub fn shipped_iprefbench(sweep: &str) -> String {
    let yaml = std::fs::read_to_string(repo("pipelines/iprefbench.yaml")).expect("pipeline");
    assert!(
        yaml.contains(SHIPPED_SWEEP),
        "the shipped sweep changed; update SHIPPED_SWEEP in tests/common"
    );
    yaml.replace(SHIPPED_SWEEP, &format!("sweep: {sweep}"))
}

/// Links the repository's `name` (e.g. `datasets`) into the workspace, for pipelines whose
/// paths are relative to the repository root.
pub fn link_repo(ws: &Workspace, name: &str) {
    std::os::unix::fs::symlink(repo(name), ws.path().join(name)).expect("symlink");
}

/// Runs `future` to completion on a fresh single-threaded runtime (the model client is async;
/// its requests run on the client's own I/O runtime).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a test runtime")
        .block_on(future)
}

/// [`prefflow_stages::llm::LlmClient::chat`] awaited on the test's thread.
pub trait ChatNow {
    /// The reply to `request`, waiting for it.
    fn chat_now(
        &self,
        request: &prefflow_stages::llm::ChatRequest,
        epoch: u32,
    ) -> Result<prefflow_stages::llm::Reply, prefflow_stages::llm::LlmError>;
}

impl ChatNow for prefflow_stages::llm::LlmClient<'_> {
    fn chat_now(
        &self,
        request: &prefflow_stages::llm::ChatRequest,
        epoch: u32,
    ) -> Result<prefflow_stages::llm::Reply, prefflow_stages::llm::LlmError> {
        block_on(self.chat(request, epoch))
    }
}

/// The lease files in the workspace's store: one per live (or dead, not yet dropped) run.
pub fn leases(ws: &Workspace) -> usize {
    std::fs::read_dir(ws.store().join("leases"))
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                .count()
        })
        .unwrap_or(0)
}
