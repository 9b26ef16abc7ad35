//! Episodes (iPrefBench §3.2, §4.4; KnowU-Bench §3.3): an agent acts in an environment on one
//! task, asking a user simulator when it chooses to, shown the history events its variant
//! exposes. The runner turns that into `episodes` / `steps` / `diffs` rows; judges replay the
//! steps later (see [`codec`]).
//!
//! - [`agent`]: the agent trait and what an agent is told ([`Brief`]).
//! - [`agents`]: the built-in agents.
//! - [`simulator`]: who answers `ask_user`, with a disclosure audit.
//! - [`exposure`] / [`retrieval`]: which history events an agent sees.
//! - [`subset`]: which tasks a run plays (`--tasks`, `--sample`, `--limit`).
//! - [`toolset`]: which phone tools a capped episode offers (every task stays solvable).
//! - [`env`]: where actions land (the simulated phone, or a remote device).
//! - [`params`]: an episode stage's parameters; [`setup`]: them parsed once per stage
//!   instance; [`ModelAccess`]: where its model calls are recorded.
//! - [`estimate`]: what an episode stage's model calls would cost (`plan`).
//! - [`runner`]: the episode loop; [`frames`]: its rows as tables; [`hooks`]: what a
//!   benchmark-specific stage kind adds to it.

pub mod agent;
pub mod agents;
pub mod codec;
pub mod embeddings;
pub mod env;
pub mod estimate;
pub mod exposure;
pub mod frames;
pub mod hooks;
pub mod labelled;
pub mod params;
pub mod play;
pub mod prompts;
pub mod record;
pub mod remote;
pub mod retrieval;
pub mod runner;
pub mod seed;
pub mod setup;
pub mod simulator;
pub mod simulators;
pub mod subset;
pub mod toolset;

#[cfg(test)]
mod llm_tests;
#[cfg(test)]
mod prompt_tests;
#[cfg(test)]
mod space_tests;

pub use agent::{Agent, AgentError, AgentFactory, Brief, Turn};
pub use env::{Environment, PhoneEnv};
pub use exposure::{Exposure, LogKind};
pub use record::{EpisodeRow, EpisodeRun, StepRow};
pub use runner::{run_episode, EpisodeSpec};
pub use simulator::{ScriptedUser, Simulator, UserReply};

/// How an episode stage's model calls run: where they are recorded and replayed, whether the
/// network may be used, where prompt files are found, and the stage name errors begin with.
/// The kinds build it from their context, so agents and simulators never see the engine's.
#[derive(Clone, Copy)]
pub struct ModelAccess<'a> {
    /// The stage, for messages (`stage `episodes_llm`: …`).
    pub stage: &'a str,
    /// The stage's variant (`""` when not swept): with the stage, the flow its model calls
    /// belong to in the endpoint's fair queue (`llm::budget`).
    pub variant: &'a str,
    /// The store model requests are recorded in.
    pub cache: &'a dyn prefflow_engine::store::Store,
    /// Serve every request from `cache`; a miss is an error.
    pub offline: bool,
    /// What relative prompt directories are resolved against.
    pub workdir: &'a std::path::Path,
    /// Where the stage's model calls are counted (roles `agent` and `user`), when metered.
    pub usage: Option<&'a prefflow_engine::usage::UsageMeter>,
}

impl ModelAccess<'_> {
    /// The flow this stage instance's model calls form in their endpoint's fair queue.
    pub fn flow(&self) -> String {
        format!("{}[{}]", self.stage, self.variant)
    }

    /// `e`, an input error naming the stage (other errors as they are).
    pub fn named(&self, e: impl Into<prefflow_engine::StageError>) -> prefflow_engine::StageError {
        named(self.stage, e.into())
    }
}

/// `e`, an input error naming `stage` (other errors as they are).
pub fn named(stage: &str, e: prefflow_engine::StageError) -> prefflow_engine::StageError {
    use prefflow_engine::StageError;
    match e {
        StageError::Input(m) => StageError::Input(format!("stage `{stage}`: {m}")),
        other => other,
    }
}
