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
pub use llm::{LlmAgent, LlmAgentConfig, LlmFactory};
pub use replay::Replay;
pub use scripted::{Defaults, Oracle, ScriptedAgent};

use super::agent::AgentFactory;
use crate::episodes::access::ModelAccess;

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

/// What builds a stage's agents: which agent, with the settings of those that have some, parsed
/// once per stage instance (`RunEpisodesParams::agent_config`, in `prepare`) and built into a
/// factory per item ([`AgentConfig::build`], which binds the item's model access).
pub enum AgentConfig {
    /// See [`AgentName::Oracle`].
    Oracle,
    /// See [`AgentName::Defaults`].
    Defaults,
    /// See [`AgentName::AskAll`].
    AskAll,
    /// See [`AgentName::Heuristic`].
    Heuristic,
    /// A chat-completions model, with its compiled templates.
    Llm(Box<LlmAgentConfig>),
    /// The authored trajectories, read.
    Authored(Authored),
}

impl AgentConfig {
    /// The factory of the stage's agents; an input error names the stage.
    pub fn build<'a>(
        &'a self,
        access: ModelAccess<'a>,
    ) -> Result<Box<dyn AgentFactory + 'a>, StageError> {
        Ok(match self {
            AgentConfig::Oracle => Box::new(Oracle),
            AgentConfig::Defaults => Box::new(Defaults),
            AgentConfig::Llm(llm) => Box::new(llm.build(access)?),
            AgentConfig::AskAll => Box::new(AskAll),
            AgentConfig::Heuristic => Box::new(Heuristic),
            AgentConfig::Authored(authored) => Box::new(authored),
        })
    }

    /// The `llm` agent's configuration (`None` for the other agents).
    pub fn llm(&self) -> Option<&LlmAgentConfig> {
        match self {
            AgentConfig::Llm(llm) => Some(llm),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
