//! One episode's rows, as the runner produces them: the `episodes` row, its `steps` rows and its
//! final state diff. See docs/tables.md for the column contract.

use crate::llm::{LlmError, Usage};

/// The `episodes` row of one episode.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EpisodeRow {
    /// `<task_id>#<variant>#<epoch>`.
    pub episode_id: String,
    /// The task.
    pub task_id: String,
    /// The engine variant name.
    pub variant: String,
    /// 0-based repeat.
    pub epoch: u32,
    /// The persona the task is grounded in.
    pub persona: Option<String>,
    /// The agent's name.
    pub agent: String,
    /// Who answered `ask_user` (`scripted`, `llm:<model>`, `llm:<model> (the model under
    /// test)`, `device`): the `user` column ([`crate::episodes::simulators::User::label`]).
    pub user: String,
    /// `ok`, `max_steps` or `error`.
    pub status: String,
    /// Step rows written (clarification questions included).
    pub steps: u32,
    /// `ask_user` exchanges.
    pub ask_user_calls: u32,
    /// The last `answer` text.
    pub final_answer: Option<String>,
    /// A score carried with the episode: a remote device's `/task/eval`, a KnowU task's rule
    /// score; null otherwise.
    pub score: Option<f64>,
    /// Agent tokens.
    pub agent_usage: Usage,
    /// Simulator tokens.
    pub user_usage: Usage,
    /// Agent cost.
    pub cost_agent: f64,
    /// Simulator cost.
    pub cost_user: f64,
    /// Replies that disclosed a slot the question did not ask about.
    pub volunteered: u32,
    /// Replies that stated something the hidden context does not ground.
    pub ungrounded: u32,
    /// The seed the episode ran with.
    pub seed: u64,
    /// The history exposure shown (`all`, `top_k:10`, …) and log (`noisy`/`clean`).
    pub exposure: String,
    /// Number of history events shown.
    pub shown_events: u32,
    /// Why the episode failed, when `status` is `error`.
    pub error: Option<String>,
}

/// One `steps` row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepRow {
    /// Owning episode.
    pub episode_id: String,
    /// 1-based.
    pub step: u32,
    /// `clarify` (pre-execution questions) or `act`.
    pub phase: &'static str,
    /// `agent` (simulator replies ride on the agent's ask_user step).
    pub actor: &'static str,
    /// Action tag or tool name; `unknown` when the output did not parse.
    pub action_type: String,
    /// JSON object of the action's fields.
    pub arguments: String,
    /// What the environment returned.
    pub observation: Option<String>,
    /// `ok`, `error` or `done`.
    pub observation_status: &'static str,
    /// The simulator's reply to an ask_user.
    pub user_reply: Option<String>,
    /// Slots the reply disclosed.
    pub disclosed_slots: Vec<String>,
    /// History events shown to the agent before this step (listed once, on the first step).
    pub shown_events: Vec<String>,
    /// The model's raw output.
    pub raw: Option<String>,
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
