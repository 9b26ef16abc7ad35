//! Tasks (design §1, iPrefBench §3.3 and D.1): the task model, the authoring templates and their
//! instantiation over the world, the predicate language criteria are checked with, the
//! human-review round trip, execution-based validation, and the statistics of a task set.

pub mod check;
pub mod error;
pub mod eval;
pub mod frames;
pub mod generate;
pub mod instantiate;
pub mod language;
pub mod lints;
pub mod matcher;
pub mod model;
pub mod predicate;
pub mod rejection;
pub mod review;
pub mod sheet;
pub mod stats;
pub mod subst;
pub mod template;
pub mod user;
pub mod validate;
pub mod values;
pub mod world_index;

pub use error::{PredicateError, TaskError};
pub use model::{Criterion, CriterionKind, Perturbation, Slot, Source, Task, TaskBundle, TaskType};
pub use predicate::Predicate;

#[cfg(test)]
mod eval_tests;
#[cfg(test)]
mod lints_tests;
#[cfg(test)]
mod review_tests;
#[cfg(test)]
pub(crate) mod testkit;
#[cfg(test)]
mod tests;
