//! Looking without running, one file per command: `plan` (what would run and why), `why` (what
//! changed since the last successful run), `show` lookups, `gc` and `verify`.

mod gc;
mod plan;
mod show;
mod verify;
mod why;

pub use gc::{gc, GcOptions, GcReport};
pub use plan::{dry_run, ItemPlan, PlanLine, PlanStatus};
pub use show::{find_tables, last_errors, record_for_show, run_usage, UsageRow};
pub use verify::{verify, VerifyReport};
pub use why::why;
