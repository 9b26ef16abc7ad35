//! One episode's rows, as the runner produces them: the `episodes` row, its `steps` rows and its
//! final state diff. See docs/tables.md for the column contract.

use crate::llm::{LlmError, Usage};
/// The `episodes` row of one episode: the runners' row struct itself, so the record is the
/// table's row and nothing converts between them.
pub use crate::tables::episodes::PlayedEpisode as EpisodeRow;
/// One `steps` row: likewise the runners' row struct.
pub use crate::tables::episodes::PlayedStep as StepRow;

/// The token usage an episode row carries as columns, read and added as [`Usage`].
impl EpisodeRow {
    /// The agent's tokens.
    pub fn agent_usage(&self) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens_agent,
            completion_tokens: self.completion_tokens_agent,
            cached_prompt_tokens: self.cached_tokens_agent,
        }
    }

    /// The user simulator's tokens.
    pub fn user_usage(&self) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens_user,
            completion_tokens: self.completion_tokens_user,
            cached_prompt_tokens: self.cached_tokens_user,
        }
    }

    /// Counts one agent call's tokens.
    pub fn add_agent_usage(&mut self, usage: &Usage) {
        self.prompt_tokens_agent += usage.prompt_tokens;
        self.completion_tokens_agent += usage.completion_tokens;
        self.cached_tokens_agent += usage.cached_prompt_tokens;
    }

    /// Counts one user-simulator call's tokens.
    pub fn add_user_usage(&mut self, usage: &Usage) {
        self.prompt_tokens_user += usage.prompt_tokens;
        self.completion_tokens_user += usage.completion_tokens;
        self.cached_tokens_user += usage.cached_prompt_tokens;
    }
}

/// Everything one episode produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EpisodeRun {
    /// The episode row.
    pub episode: EpisodeRow,
    /// Its steps.
    pub steps: Vec<StepRow>,
    /// The final state diff as JSON text.
    pub diff: String,
    /// The provider fault (endpoint down after retries, unusable replies, an offline miss) that
    /// ended the episode, if one did. Such an episode measured the provider, not the model:
    /// `run_episodes` fails its item instead of storing it as a result.
    pub fault: Option<LlmError>,
}
