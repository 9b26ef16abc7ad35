//! What a stage kind built on the generic episode runner adds to each task's episodes, so the
//! runner stays benchmark-agnostic: `run_episodes` uses [`NoHooks`]; `run_knowu_episodes` pins a
//! proactive situation's clock, plays the KnowU user and writes KnowU's rule score.

use super::record::StepRow;
use super::simulator::Simulator;
use crate::tasks::TaskBundle;
use crate::world::clock::DateTime;
use crate::world::phone::Phone;

/// Per-task additions to an episode; every method defaults to "nothing added".
pub trait EpisodeHooks: Sync {
    /// The phone clock `bundle`'s episodes start at (default: the persona's `now`).
    fn clock(&self, _bundle: &TaskBundle) -> Option<DateTime> {
        None
    }

    /// The user who answers when the stage's simulator is `scripted` (default: the generic
    /// scripted user).
    fn scripted_user<'a>(&'a self, _bundle: &'a TaskBundle) -> Option<Box<dyn Simulator + 'a>> {
        None
    }

    /// The score of a finished episode from its final phone and steps, written to
    /// `episodes.score` (default: none).
    fn score(&self, _bundle: &TaskBundle, _phone: &Phone<'_>, _steps: &[StepRow]) -> Option<f64> {
        None
    }
}

/// The generic runner's hooks: none.
pub struct NoHooks;

impl EpisodeHooks for NoHooks {}
