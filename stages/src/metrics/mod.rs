//! Aggregate metrics of iPrefBench (§4.2–4.5): Table 1 with bootstrap confidence intervals,
//! pass^k / pass@k, paired differences between variants, subset tables (perturbations, history
//! exposure, failure labels) and judge agreement (Cohen's κ). Conventions are in docs/metrics.md:
//! macro-average per task first (epochs within a task), then over tasks; recall and precision
//! micro-aggregated; undefined values are null, never 0 or 1.

pub mod bootstrap;
pub mod judge_agreement;
pub mod judge_labels;
pub mod judge_validation;
pub mod kappa;
pub mod paired;
pub mod passk;
pub mod pertask;
pub mod subsets;
pub mod table1;
pub mod usage;

#[cfg(test)]
mod tests;

pub use bootstrap::{Bootstrap, Estimate, Ratio};
pub use pertask::{per_task, Metric, PerTask, TaskRow, METRICS};
pub use table1::{aggregate, AggregateOptions, Aggregates};
