//! The JSON bodies of the phone server: what creating an episode takes and returns.

use serde::{Deserialize, Serialize};

use super::user::ScriptedAnswer;
use crate::world::clock::DateTime;
use crate::world::phone::{ActionSpace, EpisodeConfig, Observation, Overrides, ToolSpec};

/// `POST /episodes` body: an [`EpisodeConfig`] plus optional scripted user answers. Every
/// field is optional; `{}` starts a tools-mode episode at the persona's clock.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateEpisode {
    /// `tools` (default) or `gui`.
    #[serde(default = "tools")]
    pub space: ActionSpace,
    /// The pinned clock (default: the persona's `now`).
    #[serde(default)]
    pub clock: Option<DateTime>,
    /// Task overrides applied to the episode's overlay only.
    #[serde(default)]
    pub overrides: Overrides,
    /// Replies to `ask_user`, matched by phrase; unmatched questions get "I don't know."
    #[serde(default)]
    pub answers: Vec<ScriptedAnswer>,
}

fn tools() -> ActionSpace {
    ActionSpace::Tools
}

impl CreateEpisode {
    /// The phone's configuration (everything but the answers).
    pub fn config(&self) -> EpisodeConfig {
        EpisodeConfig {
            space: self.space,
            clock: self.clock,
            overrides: self.overrides.clone(),
        }
    }
}

/// `POST /episodes` response.
#[derive(Debug, Clone, Serialize)]
pub struct Created {
    /// Id for the other endpoints.
    pub episode_id: String,
    /// The action space in use.
    pub space: ActionSpace,
    /// The pinned clock.
    pub clock: DateTime,
    /// What the agent sees first.
    pub observation: Observation,
    /// Callable tools (tools mode; empty in GUI mode).
    pub tools: Vec<ToolSpec>,
}
