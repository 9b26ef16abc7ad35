//! The parameters of `run_remote_episodes`: which devices, which agent, how patient with a
//! failing device. Parsed once per stage instance into a [`super::item::RemoteSetup`].

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::client::DEFAULT_DEVICE_ID;
use crate::llm::LlmConfig;
use crate::world::phone::Action;

/// The agents a remote task can be played by (built-in scripted agents need task bundles that
/// remote tasks do not have).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RemoteAgent {
    /// Plays `actions` (param, by task id) or the task row's `actions` column, then finishes.
    Replay,
    /// A chat-completions model (the `llm` agent of `run_episodes`, in GUI mode).
    Llm,
}

/// Parameters of `run_remote_episodes`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRemoteEpisodesParams {
    /// Env server base URLs, one per device (`http://host:6800`).
    pub devices: Vec<String>,
    /// The adb device id each server drives (default `emulator-5554`).
    #[serde(default = "default_device_id")]
    pub device_id: String,
    /// `replay` or `llm`.
    pub agent: RemoteAgent,
    /// Replay actions by task id (prefflow actions, e.g. `{action: open_app, app: Clock}`).
    #[serde(default)]
    pub actions: BTreeMap<String, Vec<Action>>,
    /// Suite to switch each device to before its first task, as query parameters of
    /// `POST /suite_family/switch` (`target_family` required; e.g. `user_log_source: clean`).
    #[serde(default)]
    pub suite: Option<BTreeMap<String, Value>>,
    /// Independent repeats per task (default 1).
    #[serde(default = "one")]
    pub epochs: u32,
    /// Step bound per episode (default 50, KnowU-Bench's MAX_ROUND).
    #[serde(default = "fifty")]
    pub max_steps: u32,
    /// Root seed; each episode's seed is hash(seed, task, variant, epoch).
    #[serde(default)]
    pub seed: u64,
    /// Show the screen (`GET /a11y`) in observations (default true).
    #[serde(default = "yes")]
    pub screen: bool,
    /// Per-request timeout in seconds (default 300: task init restores a snapshot).
    #[serde(default = "three_hundred")]
    pub timeout_s: u64,
    /// Replays of an episode after a device failure (default 2).
    #[serde(default = "two")]
    pub device_retries: u32,
    /// First wait between `/health` polls, doubling (default 5000 ms).
    #[serde(default = "five_seconds")]
    pub retry_backoff_ms: u64,
    /// `/health` polls before an attempt gives up on the device (default 12).
    #[serde(default = "twelve")]
    pub health_polls: u32,
    /// The agent's model (agent `llm`).
    #[serde(default)]
    pub llm: Option<LlmConfig>,
    /// Directory of prompt templates (default `datasets/prompts`).
    #[serde(default = "prompts_dir")]
    pub prompts: String,
}

fn default_device_id() -> String {
    DEFAULT_DEVICE_ID.into()
}
fn one() -> u32 {
    1
}
fn two() -> u32 {
    2
}
fn twelve() -> u32 {
    12
}
fn fifty() -> u32 {
    50
}
fn yes() -> bool {
    true
}
fn three_hundred() -> u64 {
    300
}
fn five_seconds() -> u64 {
    5000
}
fn prompts_dir() -> String {
    "datasets/prompts".into()
}
