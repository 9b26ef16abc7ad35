//! `prefflow gc`: delete the artifacts no pipeline's latest run uses.

use std::time::Duration;

use prefflow_engine::inspect;

use super::session::Session;

/// The arguments of `prefflow gc`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// List what would be removed, and what is protected and why, without removing it.
    #[arg(long)]
    dry_run: bool,
    /// Wait up to SECS for live runs to finish instead of refusing at once.
    #[arg(long, value_name = "SECS")]
    wait: Option<f64>,
    /// Also let go of the results of killed runs that no run record holds (by default a
    /// killed run's committed items are kept until a later run adopts them).
    #[arg(long)]
    drop_dead_leases: bool,
}

/// Collects (or, with `--dry-run`, lists) the garbage and prints what it removed and kept.
pub(crate) fn run(args: &Args, session: &Session) -> anyhow::Result<u8> {
    let opts = inspect::GcOptions {
        dry_run: args.dry_run,
        wait: args.wait.map(|w| Duration::from_secs_f64(w.max(0.0))),
        drop_dead_leases: args.drop_dead_leases,
    };
    let report = inspect::gc(session.store()?, &opts)?;
    let removed = if args.dry_run {
        "would remove"
    } else {
        "removed"
    };
    for key in &report.removed {
        println!("{removed} {key}");
    }
    for line in &report.dropped {
        println!("dropped lease: {line}");
    }
    for line in &report.protected {
        println!("protected: {line}");
    }
    if args.dry_run && !report.live.is_empty() {
        println!(
            "note: {} live lease(s): `gc` would refuse (exit code 3) until they end, or wait with --wait",
            report.live.len()
        );
    }
    println!(
        "{removed} {} objects ({:.1} MiB), kept {}",
        report.removed.len(),
        report.bytes as f64 / 1048576.0,
        report.kept
    );
    Ok(0)
}
