//! Run records: what the last run of each pipeline produced.
//!
//! `runs/<pipeline>/latest.json` holds, per stage instance, the last *successful* result (what
//! `show` and `why` read); `runs/<pipeline>/last-run.json` holds exactly what the most recent run
//! did, failures and errors included. `gc` keeps everything either of them reaches. Both are
//! plain store objects, so any machine sharing the store sees them.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::artifact::{ItemCounts, Manifest, TableEntry};
use crate::error::{Error, Result};
use crate::store::{check_name, NameRule, Store};
use crate::usage::Usage;

/// What happened to one stage instance in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The result was already in the store.
    Cached,
    /// The stage ran.
    Executed,
    /// The stage (or some of its items) failed.
    Failed,
    /// Not run because an upstream instance failed.
    Skipped,
    /// Not needed for `--only`.
    NotSelected,
    /// Not run because its `when:` condition (or an upstream instance's) does not hold.
    Disabled,
}

impl Status {
    /// True when the instance has a usable result.
    pub fn succeeded(self) -> bool {
        matches!(self, Status::Cached | Status::Executed)
    }
}

/// The outcome of one stage instance.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InstanceRecord {
    /// Stage name.
    pub stage: String,
    /// Variant name (`""` when unswept).
    pub variant: String,
    /// Kind name.
    pub kind: String,
    /// What happened.
    pub status: Status,
    /// Recipe key, when it could be computed.
    #[serde(default)]
    pub recipe_key: Option<String>,
    /// Data version of the output.
    #[serde(default)]
    pub data_version: Option<String>,
    /// Output tables.
    #[serde(default)]
    pub tables: IndexMap<String, TableEntry>,
    /// Item counts for per-item stages.
    #[serde(default)]
    pub items: Option<ItemCounts>,
    /// Keys of the item manifests this instance is made of (kept alive by `gc`).
    #[serde(default)]
    pub item_keys: Vec<String>,
    /// Wall time spent in this run.
    #[serde(default)]
    pub seconds: f64,
    /// True when the stage re-ran but produced exactly its previous output (downstream keys
    /// unchanged: early cutoff).
    #[serde(default)]
    pub unchanged_output: bool,
    /// Failure, skip or disable reason.
    #[serde(default)]
    pub message: Option<String>,
    /// What this run spent on the instance's model calls (prepare and the items it ran; none
    /// for a cached instance). The result's own total is in its manifest.
    #[serde(default, skip_serializing_if = "Usage::is_empty")]
    pub usage: Usage,
}

impl InstanceRecord {
    /// A record with no result yet (failed, skipped, not selected).
    pub fn empty(stage: &str, variant: String, kind: &str, status: Status) -> Self {
        Self {
            stage: stage.to_string(),
            variant,
            kind: kind.to_string(),
            status,
            recipe_key: None,
            data_version: None,
            tables: IndexMap::new(),
            items: None,
            item_keys: Vec::new(),
            seconds: 0.0,
            unchanged_output: false,
            message: None,
            usage: Usage::default(),
        }
    }

    /// The record of a result described by `manifest`.
    pub fn from_manifest(
        stage: &str,
        variant: String,
        kind: &str,
        status: Status,
        manifest: &Manifest,
    ) -> Self {
        Self {
            recipe_key: Some(manifest.recipe_key.clone()),
            data_version: Some(manifest.data_version.clone()),
            tables: manifest.tables.clone(),
            items: manifest.items.clone(),
            item_keys: manifest.item_keys.clone(),
            ..Self::empty(stage, variant, kind, status)
        }
    }

    /// `stage` or `stage[variant]`.
    pub fn label(&self) -> String {
        if self.variant.is_empty() {
            self.stage.clone()
        } else {
            format!("{}[{}]", self.stage, self.variant)
        }
    }
}

/// One failed stage or item, as written to the errors table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorRow {
    /// Stage name.
    pub stage: String,
    /// Variant name.
    pub variant: String,
    /// Item value, for per-item stages.
    pub item: Option<String>,
    /// Attempts made.
    pub attempts: u32,
    /// `input`, `transient` or `failed`.
    pub kind: String,
    /// The cause.
    pub message: String,
    /// Where a cluster executor ran the failed attempt (`slurm 1234_5`: job and array task),
    /// so it can be looked up in the scheduler; `None` on the local executor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran_in: Option<String>,
}

/// Counts for the run summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Instances that ran.
    pub stages_executed: usize,
    /// Instances served from the store.
    pub stages_cached: usize,
    /// Instances that failed.
    pub stages_failed: usize,
    /// Instances skipped because of an upstream failure.
    pub stages_skipped: usize,
    /// Instances not run because their `when:` condition does not hold.
    #[serde(default)]
    pub stages_disabled: usize,
    /// Items computed.
    pub items_executed: usize,
    /// Items served from the store (including those of cached instances).
    pub items_cached: usize,
    /// Items that failed.
    pub items_failed: usize,
}

/// The record of a run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunRecord {
    /// Pipeline name.
    pub pipeline: String,
    /// Pipeline file as given (relative paths stay relative).
    pub file: String,
    /// Unique id of the run.
    pub run_id: String,
    /// Unix start time in seconds.
    pub started_at: f64,
    /// Wall time in seconds.
    pub seconds: f64,
    /// Counts.
    pub summary: Summary,
    /// Per instance, in dependency order.
    pub instances: Vec<InstanceRecord>,
    /// Failed stages and items.
    #[serde(default)]
    pub errors: Vec<ErrorRow>,
    /// Blob hash of the errors table, when there were errors.
    #[serde(default)]
    pub errors_blob: Option<String>,
}

impl RunRecord {
    /// The instance record for `stage` under `variant`.
    pub fn instance(&self, stage: &str, variant: &str) -> Option<&InstanceRecord> {
        self.instances
            .iter()
            .find(|i| i.stage == stage && i.variant == variant)
    }

    /// Recomputes the summary from the instance records.
    pub fn summarize(&mut self, items_failed: usize) {
        let mut s = Summary {
            items_failed,
            ..Summary::default()
        };
        for i in &self.instances {
            match i.status {
                Status::Executed => s.stages_executed += 1,
                Status::Cached => s.stages_cached += 1,
                Status::Failed => s.stages_failed += 1,
                Status::Skipped => s.stages_skipped += 1,
                Status::Disabled => s.stages_disabled += 1,
                Status::NotSelected => {}
            }
            if let Some(items) = &i.items {
                if i.status == Status::Cached {
                    s.items_cached += items.total;
                } else {
                    s.items_executed += items.executed;
                    s.items_cached += items.cached;
                }
            }
        }
        self.summary = s;
    }
}

/// The store folder of `pipeline`'s records; the name is checked again here because
/// `show -p NAME` and the like come from the command line, not from a validated pipeline.
fn runs_dir(pipeline: &str) -> Result<String> {
    check_name(NameRule::Pipeline, pipeline).map_err(|why| {
        Error::Usage(format!(
            "pipeline name `{pipeline}` {why}; {}",
            crate::store::names::hint(NameRule::Pipeline)
        ))
    })?;
    Ok(format!("runs/{pipeline}"))
}

fn latest_key(pipeline: &str) -> Result<String> {
    Ok(format!("{}/latest.json", runs_dir(pipeline)?))
}

fn last_run_key(pipeline: &str) -> Result<String> {
    Ok(format!("{}/last-run.json", runs_dir(pipeline)?))
}

const MOST_RECENT: &str = "runs/most-recent";

/// Reads a record, `None` when absent or unreadable.
fn load(store: &dyn Store, key: &str) -> Result<Option<RunRecord>> {
    Ok(store.get(key)?.and_then(|bytes| decode(key, &bytes)))
}

fn decode(key: &str, bytes: &[u8]) -> Option<RunRecord> {
    match serde_json::from_slice(bytes) {
        Ok(r) => Some(r),
        Err(e) => {
            tracing::warn!("ignoring unreadable run record {key}: {e}");
            None
        }
    }
}

fn encode(key: &str, record: &RunRecord) -> Result<Vec<u8>> {
    serde_json::to_vec_pretty(record).map_err(|e| Error::Corrupt {
        key: key.into(),
        reason: e.to_string(),
    })
}

/// The last successful state of every instance of `pipeline`.
pub fn load_latest(store: &dyn Store, pipeline: &str) -> Result<Option<RunRecord>> {
    load(store, &latest_key(pipeline)?)
}

/// Exactly what the most recent run of `pipeline` did.
pub fn load_last_run(store: &dyn Store, pipeline: &str) -> Result<Option<RunRecord>> {
    load(store, &last_run_key(pipeline)?)
}

/// The name of the pipeline run most recently in this store.
pub fn most_recent_pipeline(store: &dyn Store) -> Result<Option<String>> {
    Ok(store
        .get(MOST_RECENT)?
        .map(|b| String::from_utf8_lossy(&b).trim().to_string()))
}

/// Names of all pipelines with records in this store.
pub fn pipelines(store: &dyn Store) -> Result<Vec<String>> {
    let mut names: Vec<String> = store
        .list("runs")?
        .into_iter()
        .filter_map(|k| {
            let rest = k.strip_prefix("runs/")?;
            let (name, file) = rest.split_once('/')?;
            (file == "latest.json" || file == "last-run.json").then(|| name.to_string())
        })
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

/// How often a run record merge retries when other runs keep winning the swap.
const MERGE_ATTEMPTS: u32 = 200;

/// Saves this run: `last-run.json` as is, and `latest.json` merged so that instances which did
/// not succeed keep their previous successful state.
///
/// The merge is a compare-and-swap loop on `latest.json`: read it with its version, merge this
/// run's successful instances into it, write it only if nobody changed it since, else start
/// again from what the other writer left. So two runs of one pipeline finishing together (one
/// `--only a`, one `--only b`) both land their results; neither overwrites the other.
pub fn save_run(store: &dyn Store, record: &RunRecord) -> Result<()> {
    let last_key = last_run_key(&record.pipeline)?;
    store.put(&last_key, &encode(&last_key, record)?)?;
    let key = latest_key(&record.pipeline)?;
    for attempt in 0..MERGE_ATTEMPTS {
        let current = store.get_versioned(&key)?;
        let (previous, version) = match current {
            Some((bytes, v)) => (decode(&key, &bytes), Some(v)),
            None => (None, None),
        };
        let latest = merge_latest(previous.as_ref(), record);
        if store.put_if(&key, &encode(&key, &latest)?, version.as_ref())? {
            return store.put(MOST_RECENT, record.pipeline.as_bytes());
        }
        // Another run merged first: back off a little (more each time) and merge again.
        let pause = 1 + u64::from(attempt % 16) * (1 + u64::from(std::process::id() % 7));
        std::thread::sleep(std::time::Duration::from_millis(pause));
    }
    Err(Error::RunFailed(format!(
        "could not merge the run record into {key}: {MERGE_ATTEMPTS} other writers got there first; \
         the run's own record is in {last_key}"
    )))
}

/// `latest.json` after this run: for every instance of this run's plan, this run's result
/// when it succeeded, else the previous successful one. Instances the plan no longer has are
/// dropped (their results become garbage for `gc`).
pub fn merge_latest(previous: Option<&RunRecord>, record: &RunRecord) -> RunRecord {
    let mut latest = record.clone();
    latest.instances = record
        .instances
        .iter()
        .filter_map(|inst| {
            if inst.status.succeeded() {
                Some(inst.clone())
            } else {
                previous
                    .and_then(|p| p.instance(&inst.stage, &inst.variant))
                    .cloned()
            }
        })
        .collect();
    latest
}
