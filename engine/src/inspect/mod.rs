//! Looking without running, one file per command: `plan` (what would run and why), `why` (what
//! changed since the last successful run), `show` lookups and `gc`.

mod gc;
mod plan;
mod show;
mod why;

pub use gc::{gc, GcReport};
pub use plan::{dry_run, ItemPlan, PlanLine, PlanStatus};
pub use show::{find_tables, last_errors, record_for_show, run_usage, UsageRow};
pub use why::why;
