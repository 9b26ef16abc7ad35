//! The world: apps as data, one persona with a hidden profile and a visible history, and the
//! simulated phone an episode runs on. Everything here is deterministic and offline.

pub mod app;
mod assemble;
pub mod audit;
pub mod clock;
pub mod core_text;
pub mod error;
pub mod from_tables;
mod hash;
pub mod history;
pub mod persona;
pub mod phone;
pub mod rules;
pub mod summary;
pub mod tables;
pub mod template;
pub mod tool_specs;
pub mod types;
pub(crate) mod yaml;

pub use app::Catalog;
pub use assemble::World;
pub use error::{Loc, Problem, ProblemKind, Result, WorldError};
pub use history::{HistoryEvent, HistoryParams, Label};
pub use persona::Persona;

#[cfg(test)]
pub(crate) mod dataset_tests;
