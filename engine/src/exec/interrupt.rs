//! SIGINT and SIGTERM on a local run: stop cleanly instead of dying outright.
//!
//! The first signal stops new work: no item or stage starts any more, items already running get
//! [`grace`] to finish and commit (a commit under way always completes: it is bounded by the
//! store's own deadlines), and the run then writes its record and errors table and releases its
//! lease as any failed run does; the CLI exits 130 (SIGINT) or 143 (SIGTERM). A second signal
//! ends the process at once, as a kill would (committed items are still kept).
//!
//! Only the CLI installs the handler ([`install`]): a library or a test binary that runs
//! pipelines keeps the default behaviour of its signals.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Once;
use std::time::Duration;

static SIGNAL: AtomicI32 = AtomicI32::new(0);
static INSTALL: Once = Once::new();

/// Seconds items already running get to finish after an interrupt
/// (`PREFFLOW_INTERRUPT_GRACE_SECS`, default 10).
pub fn grace() -> Duration {
    let secs = std::env::var("PREFFLOW_INTERRUPT_GRACE_SECS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
        .unwrap_or(10.0);
    Duration::from_secs_f64(secs)
}

/// Makes SIGINT and SIGTERM stop this process's run cleanly (see the module documentation).
pub fn install() {
    INSTALL.call_once(|| {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
            tracing::warn!("cannot handle SIGINT/SIGTERM: an interrupt ends the run without a record");
            return;
        };
        let spawned = std::thread::Builder::new()
            .name("prefflow-signals".into())
            .spawn(move || {
                for sig in signals.forever() {
                    if SIGNAL.swap(sig, Ordering::SeqCst) != 0 {
                        eprintln!("interrupted again: stopping now (committed items are kept; re-run to resume)");
                        std::process::exit(128 + sig);
                    }
                    eprintln!(
                        "interrupted ({}): no new work starts; items in flight get {:.0} s to finish, then the run record is written (interrupt again to stop at once)",
                        name(sig),
                        grace().as_secs_f64()
                    );
                }
            });
        if spawned.is_err() {
            tracing::warn!("cannot handle SIGINT/SIGTERM: an interrupt ends the run without a record");
        }
    });
}

/// The signal that interrupted this process's run, if one did.
pub fn interrupted() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}

/// `SIGINT`, `SIGTERM` (or the number).
pub fn name(sig: i32) -> String {
    match sig {
        signal_hook::consts::SIGINT => "SIGINT".into(),
        signal_hook::consts::SIGTERM => "SIGTERM".into(),
        n => format!("signal {n}"),
    }
}

/// The exit code for a run interrupted by `sig`: 128 + its number (130 SIGINT, 143 SIGTERM).
pub fn exit_code(sig: i32) -> i32 {
    128 + sig
}
