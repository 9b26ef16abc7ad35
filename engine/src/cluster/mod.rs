//! Cluster execution on an existing scheduler, Slurm first, the way Nextflow and Snakemake run
//! on clusters: the coordinator (`prefflow run --executor slurm`) plans as usual and hands the
//! missing items of each per-item instance to one Slurm job array; each array task runs
//! `prefflow work --store URL --job ID --shard i/N`, which computes its share and commits items
//! to the shared store as it goes; the coordinator follows the jobs, re-submits what failed and
//! assembles the instance from the store. A whole-table stage marked `executor: slurm` is one
//! such job with one task, which computes the whole stage and commits it. The store is the
//! only thing they share.
//!
//! - [`config`]: the `executor:` block (its types are the pipeline file's, `crate::config`),
//!   profile files, `--executor`; checked with locations;
//! - [`slurm`]: the Slurm client (sbatch, squeue, scontrol, scancel as processes);
//! - [`job`]: the job, its submissions and the workers' reports, as store objects;
//! - [`worker`]: one array task (a shard of items, or a whole stage);
//! - [`coordinator`]: submission, supervision, re-submission, Ctrl-C.

pub mod config;
pub mod coordinator;
pub mod job;
pub mod slurm;
pub mod worker;

pub use config::{
    ExecutorChoice, ExecutorKind, ExecutorSpec, SlurmSettings, StageExecutor, StagePlacement,
};
pub use coordinator::{SlurmExecutor, SlurmSetup};
pub use worker::{work, Shard, WorkExit, WorkRequest};
