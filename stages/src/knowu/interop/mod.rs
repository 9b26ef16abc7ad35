//! KnowU-Bench interop: import and export its run directories, compute its paper metrics and
//! place runs on its leaderboard — the numbers KnowU-Bench's own scripts give, on its own files.
//!
//! The specification is the benchmark's METRICS.md (run layout and metric definitions); the
//! modules split it by concept: files of a run ([`traj`], [`result_file`], [`report`]), the run
//! as tables ([`run`]), benchmark metadata ([`tasks`]; persona habits come from [`crate::knowu::profile`]), per-step rules ([`rules`]),
//! per-episode facts ([`features`], [`classify`]) and aggregation ([`aggregate`]), plus one module
//! per stage kind.

pub mod aggregate;
pub mod classify;
pub mod export;
pub mod features;
pub mod import;
pub mod leaderboard;
pub mod metrics;
pub mod report;
pub mod result_file;
pub mod rules;
pub mod run;
pub mod tasks;
pub mod traj;
pub mod vocab;

#[cfg(test)]
mod scale_tests;
#[cfg(test)]
mod scenario_tests;
#[cfg(test)]
mod testkit;
