//! The work hand-off, as objects in the shared store: the coordinator writes a job (what to
//! compute: the instance, its inputs, the item keys, how they are sharded); each worker reads
//! it, computes its shard and writes a report; the coordinator records its Slurm submissions
//! next to the job, so a restarted coordinator can adopt them. The store is the only thing
//! coordinator and workers share, and nothing here holds an absolute path.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::artifact::KeyParts;
use crate::error::{Error, Result};
use crate::exec::InputBlob;
use crate::store::Store;

/// Store prefix of everything the cluster executor writes.
pub const PREFIX: &str = "cluster/jobs";

/// One input table of a job: `stage.table` and its blob.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobInput {
    /// Upstream stage.
    pub stage: String,
    /// Table name.
    pub table: String,
    /// Blob hash.
    pub blob: String,
}

impl From<&InputBlob> for JobInput {
    fn from(b: &InputBlob) -> Self {
        Self {
            stage: b.stage.clone(),
            table: b.table.clone(),
            blob: b.blob.clone(),
        }
    }
}

impl From<&JobInput> for InputBlob {
    fn from(b: &JobInput) -> Self {
        InputBlob {
            stage: b.stage.clone(),
            table: b.table.clone(),
            blob: b.blob.clone(),
        }
    }
}

/// What a worker computes: the items of one stage instance, dealt over `shards` tasks, or a
/// whole-table instance in one task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobSpec {
    /// The job id (the instance's recipe key).
    pub job: String,
    /// The pipeline file as the coordinator was given it (relative to the working directory).
    pub file: String,
    /// The coordinator's `--set` overrides, so the worker builds the same plan.
    pub overrides: Vec<String>,
    /// Serve model calls from the store's cache only.
    pub offline: bool,
    /// The stage.
    pub stage: String,
    /// The variant name (empty when not swept).
    pub variant: String,
    /// The instance's key parts (the worker checks its own plan against them).
    pub parts: KeyParts,
    /// Input tables, in binding order.
    pub inputs: Vec<JobInput>,
    /// The item keys to compute, in item order; item `j` belongs to shard `j % shards`. For
    /// a whole-stage job: the recipe key alone.
    pub items: Vec<String>,
    /// The job computes a whole-table stage in one task (committed under its recipe key, the
    /// job id), not items.
    #[serde(default)]
    pub whole_stage: bool,
    /// Number of shards (array tasks).
    pub shards: u32,
    /// The slots each worker may hold of each resource pool (the pool divided among the
    /// tasks that run at once).
    pub pools: BTreeMap<String, u32>,
    /// The pools' declared sizes (what the shares were divided from).
    #[serde(default)]
    pub pools_declared: BTreeMap<String, u32>,
}

impl JobSpec {
    /// The item keys of shard `shard`.
    pub fn shard_items(&self, shard: u32) -> Vec<&str> {
        self.items
            .iter()
            .enumerate()
            .filter(|(j, _)| *j as u32 % self.shards.max(1) == shard)
            .map(|(_, k)| k.as_str())
            .collect()
    }
}

/// One Slurm submission of a job: which shards it runs, as which array.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Submission {
    /// The array's Slurm job id.
    pub slurm_job: String,
    /// The shards it runs; the array index is the shard number.
    pub shards: Vec<u32>,
    /// When it was submitted (Unix seconds).
    pub at: f64,
}

/// Every submission of a job, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Submissions {
    /// The submissions.
    pub list: Vec<Submission>,
}

/// One item a worker could not commit (or the worker's own failure, with no item).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemFailure {
    /// The item value; `None` when the worker failed before computing items.
    pub item: Option<String>,
    /// The item key.
    pub key: Option<String>,
    /// Attempts made.
    pub attempts: u32,
    /// `input`, `transient` or `failed` (as in the errors table).
    pub kind: String,
    /// The error message.
    pub message: String,
}

/// What one worker did with its shard, written when it ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardReport {
    /// The shard.
    pub shard: u32,
    /// `JOB_TASK` when run under Slurm.
    pub slurm: Option<String>,
    /// The host it ran on.
    pub host: String,
    /// Items it computed and committed.
    pub committed: usize,
    /// Items of its shard already committed when it started (not computed again).
    pub already: usize,
    /// What failed.
    pub failures: Vec<ItemFailure>,
    /// Its exit code.
    pub exit_code: i32,
}

/// Store key of a job's spec.
pub fn spec_key(job: &str) -> String {
    format!("{PREFIX}/{job}/spec.json")
}

/// Store key of a job's submissions.
pub fn submissions_key(job: &str) -> String {
    format!("{PREFIX}/{job}/submissions.json")
}

/// Store key of a shard's report.
pub fn report_key(job: &str, shard: u32) -> String {
    format!("{PREFIX}/{job}/shard-{shard}.json")
}

/// Store prefix under which workers mark the items they committed (`done/<item key>`, empty
/// objects; a whole-stage job's worker marks its recipe key): the coordinator lists it once per poll instead of asking for every pending item.
pub fn done_prefix(job: &str) -> String {
    format!("{PREFIX}/{job}/done")
}

/// Store key of the mark a worker leaves when it has committed item `item_key` of `job`.
pub fn done_key(job: &str, item_key: &str) -> String {
    format!("{}/{item_key}", done_prefix(job))
}

/// Reads a JSON object from the store; `None` when absent.
pub fn load<T: serde::de::DeserializeOwned>(store: &dyn Store, key: &str) -> Result<Option<T>> {
    let Some(bytes) = store.get(key)? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| Error::Corrupt {
            key: key.to_string(),
            reason: e.to_string(),
        })
}

/// Writes a JSON object to the store.
pub fn save<T: Serialize>(store: &dyn Store, key: &str, value: &T) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(value).map_err(|e| Error::Corrupt {
        key: key.to_string(),
        reason: e.to_string(),
    })?;
    store.put(key, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_dealt_round_robin_over_the_shards() {
        let spec = JobSpec {
            job: "k".into(),
            file: "p.yaml".into(),
            overrides: vec![],
            offline: false,
            stage: "s".into(),
            variant: String::new(),
            parts: KeyParts {
                engine: String::new(),
                kind: String::new(),
                kind_version: String::new(),
                code: Default::default(),
                params: serde_json::Value::Null,
                inputs: BTreeMap::new(),
                external: BTreeMap::new(),
                item: None,
                when: None,
                subset: None,
            },
            inputs: vec![],
            items: (0..7).map(|i| format!("k{i}")).collect(),
            whole_stage: false,
            shards: 3,
            pools: BTreeMap::new(),
            pools_declared: BTreeMap::new(),
        };
        assert_eq!(spec.shard_items(0), vec!["k0", "k3", "k6"]);
        assert_eq!(spec.shard_items(2), vec!["k2", "k5"]);
        let all: usize = (0..3).map(|s| spec.shard_items(s).len()).sum();
        assert_eq!(all, 7);
    }
}
