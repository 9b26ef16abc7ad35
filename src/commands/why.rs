//! `prefflow why`: what changed for a stage since its last successful run, field by field.

use std::path::PathBuf;

use prefflow_engine::inspect;
use prefflow_engine::store::Store;

use super::session::Session;
use crate::pipeline::load_plan;

/// The arguments of `prefflow why`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// Stage name.
    stage: String,
    /// Pipeline file (default: the file of the most recent run).
    #[arg(long, short)]
    pipeline: Option<PathBuf>,
    /// Parameter overrides.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

/// Prints the reasons, one a line.
pub(crate) fn run(args: &Args, session: &Session) -> anyhow::Result<u8> {
    let store = session.store()?;
    let file = match &args.pipeline {
        Some(p) => p.clone(),
        None => most_recent_file(store.as_ref())?,
    };
    let plan = load_plan(&file, &args.set)?;
    for line in inspect::why(&plan, store.as_ref(), &session.workdir, &args.stage)? {
        println!("{line}");
    }
    Ok(0)
}

/// The pipeline file of the store's most recent run.
fn most_recent_file(store: &dyn Store) -> anyhow::Result<PathBuf> {
    let record = inspect::record_for_show(store, None)?;
    Ok(PathBuf::from(record.file))
}
