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

pub mod access;
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

pub use access::{named, ModelAccess};
pub use agent::{Agent, AgentError, AgentFactory, Brief, Turn};
pub use env::{Environment, PhoneEnv};
pub use exposure::{Exposure, LogKind};
pub use record::{EpisodeRow, EpisodeRun, StepRow};
pub use runner::{run_episode, EpisodeSpec};
pub use simulator::{ScriptedUser, Simulator, UserReply};
