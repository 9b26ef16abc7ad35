//! KnowU-Bench in the simulated phone (KnowU-Bench §3): KnowU personas become worlds, KnowU-style
//! templates become general / personalized / proactive tasks, a consent-answering user plays the
//! persona, and per-episode rules give the score KnowU's metrics read.
//!
//! - [`world`]: a KnowU persona and its log as the world tables `run_episodes` reads.
//! - [`phone_data`]: the persona's own contacts, accounts, inbox, messages, files and places
//!   on the phone.
//! - [`template`]: the template files in `datasets/knowu/templates/`.
//! - [`generate`]: templates × persona → task bundles, with skipped templates and their reasons.
//! - [`matching`]: finding a template's preference or habit in a profile by meaning.
//! - [`table`]: the `knowu_tasks` table: tasks.csv's columns plus what the episodes need.
//! - [`consent`]: the user simulator (accept / reject from the persona's habits).
//! - [`score`]: the per-episode score (rule, hybrid, act / silent / stop).
//! - [`scoring`]: KnowU's λ per class, from `datasets/knowu/scoring.csv`.
//! - [`prefs`]: a preference as wanted / avoided terms, time windows and bounds, and the check
//!   of the agent's text against them (the offline preference judge).
//! - [`fill`]: a proactive template's habit values and the situation's moment.
//! - [`episode`]: what `run_knowu_episodes` adds to the generic runner (clock, user, score).
//! - `task`: a KnowU task and its facts (split, difficulty, what is expected), shared by all of
//!   the above.
//!
//! The generic [`crate::tasks::Task`] knows nothing of KnowU: a task's KnowU facts
//! ([`KnowuTaskInfo`]) travel in `knowu_tasks`, keyed by task id.

pub mod consent;
pub mod episode;
pub mod fill;
pub mod generate;
pub mod matching;
pub mod phone_data;
pub mod prefs;
pub mod score;
pub mod scoring;
pub mod table;
mod task;
pub mod template;
pub mod world;

/// The consent decision the simulated user gives on a proactive task (KnowU's metrics parse
/// the same type back out of the reply).
pub use crate::knowu::interop::rules::Decision;
pub use task::{Expect, HabitFound, KnowuTask, KnowuTaskInfo, Situation};
pub use template::{Difficulty, Split};

#[cfg(test)]
mod checks_tests;
#[cfg(test)]
mod fit_tests;
#[cfg(test)]
mod prefs_tests;
#[cfg(test)]
mod routine_checks_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod time_tests;
