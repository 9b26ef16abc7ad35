//! KnowU-Bench support, in two halves that share the benchmark's file formats:
//!
//! - [`interop`]: KnowU-Bench's own run directories — import and export them, compute its paper
//!   metrics exactly as its scripts do, place runs on its leaderboard.
//! - [`sim`]: KnowU-Bench in prefflow's simulated phone — KnowU personas as worlds, KnowU-style
//!   templates as general / personalized / proactive tasks, the consent-answering user and the
//!   per-episode score.
//!
//! Both read personas through the one profile parser ([`profile`]) and logs through [`log`];
//! every KnowU error is a [`KnowuError`] naming the file, the place and the fix.

pub mod data;
pub mod error;
pub mod interop;
pub mod log;
pub mod profile;
pub mod sim;

pub use error::KnowuError;
pub use interop::tasks::PREFFLOW_PREFIX;
