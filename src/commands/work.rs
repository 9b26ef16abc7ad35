//! `prefflow work`: compute one shard of a cluster job (what each Slurm array task runs).

use prefflow_engine::cluster::{work, Shard, WorkRequest};
use prefflow_engine::Error;

use super::session::Session;

/// The arguments of `prefflow work`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// The job id the coordinator wrote to the store.
    #[arg(long)]
    job: String,
    /// This task's share: INDEX/COUNT, e.g. `$SLURM_ARRAY_TASK_ID/16`.
    #[arg(long, value_name = "INDEX/COUNT")]
    shard: String,
}

/// Computes the shard and prints what it committed; the exit code is the worker's.
pub(crate) fn run(args: &Args, session: &Session) -> anyhow::Result<u8> {
    let shard: Shard = args.shard.parse().map_err(Error::Usage)?;
    let registry = crate::pipeline::registry();
    let (exit, report) = work(WorkRequest {
        store: session.store()?,
        job: &args.job,
        shard,
        registry: &registry,
        workdir: session.workdir.clone(),
    });
    println!(
        "shard {}/{}: {} item(s) committed, {} already committed, {} failed (exit {})",
        shard.index,
        shard.count,
        report.committed,
        report.already,
        report.failures.len(),
        exit as i32
    );
    Ok(exit as u8)
}
