//! The simulated phone: one generic engine serves every app defined as data, in two action
//! spaces (`gui` screens or `tools` calls), plus `ask_user`, `answer` and `finish`. An episode
//! runs on a copy-on-write overlay of the immutable [`World`], with a pinned clock and per-task
//! overrides; judges read its final state and its diff against the initial state.

mod action;
mod diff;
mod eval;
mod exec;
mod gui;
mod handset;
mod overlay;
mod overrides;
mod screens;
mod tools;
mod user;

pub use crate::world::tool_specs::{tool_specs, ParamSpec, ToolSpec};
pub use action::{Action, ActionSpace, Direction, Observation, Status};
pub use diff::{TableDiff, UpdatedRecord, WorldDiff};
pub use handset::{
    AskRecord, EpisodeConfig, OpRecord, Phone, RecordRef, StateView, APPS_OVERVIEW_HEAD,
};
pub use overlay::Overlay;
pub use overrides::{DataEdit, OverrideError, Overrides, ProfileEdit};
pub use user::{AskUser, NoUser};

#[cfg(test)]
mod tests;
