//! `prefflow init-store`: make the `--store` directory shareable by a team.

use prefflow_engine::store::StoreLocation;
use prefflow_engine::Error;

use super::session::Session;

/// The arguments of `prefflow init-store`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// The group that shares the store (a name or a gid; default: the directory's group).
    #[arg(long)]
    group: Option<String>,
}

/// Gives the store directory to the group with shared modes; an object store is refused
/// (it is shared through its bucket policy).
pub(crate) fn run(args: &Args, session: &Session) -> anyhow::Result<u8> {
    let StoreLocation::Local(dir) = &session.location else {
        return Err(Error::Usage(format!(
            "init-store prepares a store directory; {} is an object store, shared through its bucket policy and credentials (docs/store.md)",
            session.store_arg
        ))
        .into());
    };
    let r = prefflow_engine::store::team::init_shared(dir, args.group.as_deref())?;
    println!(
        "store {} is shared with group {}: directories 2775 (setgid), files 0664; {} of {} entries changed",
        r.root.display(),
        r.group.0,
        r.changed,
        r.entries
    );
    Ok(0)
}
