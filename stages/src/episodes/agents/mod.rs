//! The agents prefflow ships. `oracle` and `defaults` are reference bounds that read the task's
//! solutions; `ask_all` and `heuristic` are honest baselines that see only the brief; `llm`
//! drives a chat-completions model.

mod ask_all;
mod authored;
mod driver;
mod heuristic;
pub mod llm;
pub mod plan;
mod replay;
mod scripted;
pub mod values;

use prefflow_engine::StageError;
use serde::{Deserialize, Serialize};

pub use ask_all::{AskAll, AskAllPolicy};
pub use authored::Authored;
pub use driver::{Decision, FieldKey, PlanAgent, Policy};
pub use heuristic::{Heuristic, HeuristicPolicy, TOP_K};
pub use llm::{LlmAgent, LlmFactory};
pub use replay::Replay;
pub use scripted::{Defaults, Oracle, ScriptedAgent};

use super::agent::AgentFactory;
use crate::episodes::params::RunEpisodesParams;
use crate::episodes::ModelAccess;

/// The agent a `run_episodes` stage plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentName {
    /// Plays the reference solution (upper bound).
    Oracle,
    /// Completes the operation with app defaults, never asks (no personalization).
    Defaults,
    /// Asks about every open field, then acts on the answers.
    AskAll,
    /// Retrieves evidence per open field, infers when it agrees, asks otherwise.
    Heuristic,
    /// A chat-completions model.
    Llm,
    /// Plays the authored trajectories of labelled episodes (`trajectories`, judge validation).
    Authored,
}

impl AgentName {
    /// The parameter spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentName::Oracle => "oracle",
            AgentName::Defaults => "defaults",
            AgentName::AskAll => "ask_all",
            AgentName::Heuristic => "heuristic",
            AgentName::Llm => "llm",
            AgentName::Authored => "authored",
        }
    }
}

/// The factory for the stage's agent.
pub fn factory<'a>(
    params: &'a RunEpisodesParams,
    access: ModelAccess<'a>,
) -> Result<Box<dyn AgentFactory + 'a>, StageError> {
    match params.agent {
        AgentName::Oracle => Ok(Box::new(Oracle)),
        AgentName::Defaults => Ok(Box::new(Defaults)),
        AgentName::Llm => Ok(Box::new(LlmFactory::new(params, access)?)),
        AgentName::AskAll => Ok(Box::new(AskAll)),
        AgentName::Heuristic => Ok(Box::new(Heuristic)),
        AgentName::Authored => {
            let dir = access.workdir.join(&params.trajectories);
            Authored::load(&dir, &params.trajectories)
                .map(|a| Box::new(a) as Box<dyn AgentFactory>)
                .map_err(|m| StageError::Input(format!("stage `{}`: {m}", access.stage)))
        }
    }
}

#[cfg(test)]
mod tests;
