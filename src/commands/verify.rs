//! `prefflow verify`: check stored objects against their hashes; `--repair` quarantines the
//! damaged ones so the next run recomputes them.

use prefflow_engine::inspect;

use super::session::Session;

/// The arguments of `prefflow verify`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// Only what this pipeline's run records reach (default: the whole store).
    #[arg(long, short)]
    pipeline: Option<String>,
    /// Move damaged objects to quarantine/ (the next run recomputes what used them).
    #[arg(long)]
    repair: bool,
}

/// Verifies and prints the findings; the exit code is 1 unless the store is whole.
pub(crate) fn run(args: &Args, session: &Session) -> anyhow::Result<u8> {
    let report = inspect::verify(
        session.store()?.as_ref(),
        args.pipeline.as_deref(),
        args.repair,
    )?;
    Ok(print_verify(&report))
}

/// Prints what `verify` found; the exit code is 1 unless the store is whole (see
/// [`inspect::VerifyReport::whole`]).
fn print_verify(r: &inspect::VerifyReport) -> u8 {
    print_findings(r);
    let damage = r.damaged_blobs.len() + r.unreadable_manifests.len() + r.unreadable_records.len();
    println!(
        "checked {} objects ({:.1} MiB): {damage} damaged, {} incomplete, {} missing",
        r.checked,
        r.bytes as f64 / 1048576.0,
        r.incomplete.len(),
        r.dangling.len()
    );
    if damage > 0 && r.repaired {
        println!("damaged objects moved to quarantine/; run the pipeline again to recompute them");
    } else if damage > 0 {
        println!(
            "run `prefflow verify --repair` to quarantine them (the next run then recomputes them)"
        );
    }
    if r.whole() {
        return 0;
    }
    if !r.incomplete.is_empty() || !r.dangling.is_empty() {
        println!("the store is incomplete: run the pipelines again to recompute what is missing");
    }
    1
}

/// One line per damaged, incomplete or missing object.
fn print_findings(r: &inspect::VerifyReport) {
    let verb = if r.repaired { "quarantined" } else { "damaged" };
    for key in &r.damaged_blobs {
        println!("{verb}: {key} (content does not match its hash)");
    }
    for key in &r.unreadable_manifests {
        println!("{verb}: {key} (manifest cannot be decoded)");
    }
    for key in &r.unreadable_records {
        println!("{verb}: {key} (run record cannot be decoded; `show` and `plan` cannot use it)");
    }
    for (manifest, blob) in &r.incomplete {
        println!("incomplete: {manifest} needs {blob}, which is missing or damaged (recomputed by the next run)");
    }
    for (referrer, key) in &r.dangling {
        println!("missing: {referrer} names {key} (recomputed by the next run)");
    }
}
