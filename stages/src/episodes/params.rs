//! The parameters of an episode stage (`run_episodes`, `run_knowu_episodes`): which agent,
//! which history, which user simulator and model. They live beside the episode code because the
//! agent and simulator factories read them; the kinds only deserialize them.

use serde::Deserialize;

use super::agents::AgentName;
use super::exposure::{Exposure, LogKind};
use super::simulators::SimulatorName;
use crate::llm::LlmConfig;
use crate::world::phone::ActionSpace;

/// Parameters of `run_episodes`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunEpisodesParams {
    /// `oracle`, `defaults`, `ask_all`, `heuristic` or `llm`.
    pub agent: AgentName,
    /// History exposure: `all`, `top_k:N` or `none` (default `all`).
    #[serde(default)]
    pub history: Exposure,
    /// `noisy` (as recorded, default) or `clean` (signal events only).
    #[serde(default)]
    pub log: LogKind,
    /// Pre-execution clarification (iPrefBench G.5): the agent may ask before acting.
    #[serde(default)]
    pub clarify: bool,
    /// Who answers ask_user: `scripted` (default) or `llm`.
    #[serde(default)]
    pub simulator: SimulatorName,
    /// Independent repeats per task (default 1).
    #[serde(default = "one")]
    pub epochs: u32,
    /// Step bound per episode (default 30).
    #[serde(default = "thirty")]
    pub max_steps: u32,
    /// Raises the limit on `epochs` (default 100; see README, "Limits").
    #[serde(default)]
    pub max_epochs: Option<u64>,
    /// `tools` (default) or `gui`.
    #[serde(default = "tools")]
    pub space: ActionSpace,
    /// Root seed; each episode's seed is hash(seed, task, variant, epoch).
    #[serde(default)]
    pub seed: u64,
    /// The agent's model (agent `llm`); with `models`, the defaults every entry starts from.
    #[serde(default)]
    pub llm: Option<LlmConfig>,
    /// Models the `llm` agent may play, each an endpoint block with a `name`:
    /// `{ name, model, base_url | base_url_env, api_key_env, prices, concurrency, … }`; fields an
    /// entry leaves out come from `llm`. Sweep `model` over the names to compare models side by
    /// side: each gets its own variant (`agent=llm,model=NAME,…`), cache entries and endpoint pool.
    #[serde(default)]
    pub models: Vec<serde_json::Value>,
    /// The entry of `models` the `llm` agent plays, by `name`.
    #[serde(default)]
    pub model: Option<String>,
    /// The simulator's model (simulator `llm`).
    #[serde(default)]
    pub user_llm: Option<LlmConfig>,
    /// Directory of prompt templates (default `datasets/prompts`).
    #[serde(default = "prompts_dir")]
    pub prompts: String,
    /// `llm` agent in tools mode: offer at most this many phone tools, chosen per task so that
    /// it stays solvable (`episodes::toolset`; hosted APIs cap function lists, e.g. 128);
    /// default: all.
    #[serde(default)]
    pub max_tools: Option<usize>,
    /// Agent `authored`: the directory of authored trajectories (default
    /// `datasets/judge-labels/episodes`; datasets/judge-labels/README.md).
    #[serde(default = "trajectories_dir")]
    pub trajectories: String,
    /// Retrieve `top_k` / `rag` history through this OpenAI-compatible embeddings endpoint
    /// (`/v1/embeddings`) instead of lexical BM25.
    #[serde(default)]
    pub embeddings: Option<LlmConfig>,
}

fn one() -> u32 {
    1
}
fn thirty() -> u32 {
    30
}
fn tools() -> ActionSpace {
    ActionSpace::Tools
}
fn prompts_dir() -> String {
    "datasets/prompts".into()
}
fn trajectories_dir() -> String {
    "datasets/judge-labels/episodes".into()
}

impl RunEpisodesParams {
    /// The `models` entry `model` names (`None` when `model` is unset), or why there is none.
    pub fn model_entry(&self) -> Result<Option<&serde_json::Value>, String> {
        let Some(name) = &self.model else {
            return Ok(None);
        };
        let names: Vec<&str> = self
            .models
            .iter()
            .filter_map(|m| m.get("name").and_then(serde_json::Value::as_str))
            .collect();
        self.models
            .iter()
            .find(|m| m.get("name").and_then(serde_json::Value::as_str) == Some(name))
            .map(Some)
            .ok_or_else(|| {
                format!(
                    "`model: {name}` names no entry of `models` (names: [{}]); add `{{ name: {name}, model: …, base_url_env: … }}` to `models` or pick one of those",
                    names.join(", ")
                )
            })
    }

    /// These params with `llm` set to the chosen `models` entry over the `llm` defaults (an
    /// entry's endpoint replaces the defaults' endpoint whole), so everything downstream reads
    /// one endpoint block.
    pub fn with_chosen_model(&self) -> Result<RunEpisodesParams, String> {
        let Some(entry) = self.model_entry()? else {
            return Ok(self.clone());
        };
        let name = self.model.clone().unwrap_or_default();
        let mut merged = match &self.llm {
            Some(defaults) => serde_json::to_value(defaults).map_err(|e| e.to_string())?,
            None => serde_json::json!({}),
        };
        let (Some(base), Some(over)) = (merged.as_object_mut(), entry.as_object()) else {
            return Err(format!("`models` entry `{name}` must be a mapping"));
        };
        if over.contains_key("base_url") || over.contains_key("base_url_env") {
            base.remove("base_url");
            base.remove("base_url_env");
        }
        for (k, v) in over.iter().filter(|(k, _)| k.as_str() != "name") {
            base.insert(k.clone(), v.clone());
        }
        let llm: LlmConfig =
            serde_json::from_value(merged).map_err(|e| format!("`models` entry `{name}`: {e}"))?;
        Ok(RunEpisodesParams {
            llm: Some(llm),
            ..self.clone()
        })
    }

    /// The name the agent's model is reported under: the `models` entry's name, else `llm.model`.
    pub fn model_name(&self) -> Option<String> {
        self.model
            .clone()
            .or_else(|| self.llm.as_ref().map(|l| l.model.clone()))
    }
}
