//! The parameters of an episode stage (`run_episodes`, `run_knowu_episodes`): which agent,
//! which history, which user simulator and model. They live beside the episode code, which
//! turns them into the typed configurations agents and simulators are built from
//! ([`RunEpisodesParams::agent_config`], [`RunEpisodesParams::user`]) once per stage instance
//! ([`super::setup::EpisodeSetup`]); builders never see them.

use std::path::Path;

use prefflow_engine::StageError;
use serde::Deserialize;

use super::agents::{AgentConfig, AgentName, Authored, LlmAgentConfig};
use super::exposure::{Exposure, LogKind};
use super::simulators::{SimulatorName, User};
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
    /// Who answers ask_user: `auto` (default: the `user_model` when its endpoint is
    /// configured, else `scripted`), `scripted`, `llm` (the `user_model`, required) or
    /// `agent_model` (the model under test plays the user too: explicit only, warned about).
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
    /// The user simulator's own model, an endpoint block like `llm`'s (`{ model, base_url |
    /// base_url_env, api_key_env, prices, concurrency, … }`; the shipped pipelines use
    /// `base_url_env: PREFFLOW_USER_BASE_URL`): it answers every episode's questions, built-in
    /// agents' too, whenever its endpoint is configured (simulator `auto`). Never the agent's
    /// model by default. (`user_llm` is the older spelling.)
    #[serde(default, alias = "user_llm")]
    pub user_model: Option<LlmConfig>,
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
    /// What builds this stage's agent, parsed once (in `prepare`, and by `plan`): the `llm`
    /// agent's model and compiled templates (`prompts` relative to `workdir`), the `authored`
    /// agent's trajectories read. An input error says what is missing.
    pub fn agent_config(&self, workdir: &Path) -> Result<AgentConfig, StageError> {
        Ok(match self.agent {
            AgentName::Oracle => AgentConfig::Oracle,
            AgentName::Defaults => AgentConfig::Defaults,
            AgentName::AskAll => AgentConfig::AskAll,
            AgentName::Heuristic => AgentConfig::Heuristic,
            AgentName::Llm => AgentConfig::Llm(Box::new(LlmAgentConfig::load(
                self.llm.as_ref(),
                workdir,
                &self.prompts,
                self.max_tools,
            )?)),
            AgentName::Authored => {
                let dir = workdir.join(&self.trajectories);
                let authored =
                    Authored::load(&dir, &self.trajectories).map_err(StageError::Input)?;
                AgentConfig::Authored(authored)
            }
        })
    }

    /// The model of the `llm` agent (`None` for the other agents).
    pub fn agent_llm(&self) -> Option<&LlmConfig> {
        self.llm.as_ref().filter(|_| self.agent == AgentName::Llm)
    }

    /// Who answers `ask_user` ([`User::resolve`] of `simulator`); an error says what to add.
    pub fn user(&self) -> Result<User<'_>, String> {
        User::resolve(self.simulator, self.user_model.as_ref(), self.llm.as_ref())
    }

    /// The model that plays the user, when one does (`None` for the scripted user, or when the
    /// params do not resolve).
    pub fn user_config(&self) -> Option<&LlmConfig> {
        self.user().ok().and_then(User::config)
    }

    /// The name `entry` of `models` goes by: its `name`, else its provider model id (its
    /// `model`, else the `llm` defaults' `model`), so an entry that only sets an endpoint is
    /// named — and its Table 1 column labelled — by the model it asks for.
    pub fn entry_name(&self, entry: &serde_json::Value) -> Option<String> {
        let field = |k: &str| entry.get(k).and_then(serde_json::Value::as_str);
        field("name")
            .or_else(|| field("model"))
            .map(str::to_string)
            .or_else(|| self.llm.as_ref().map(|l| l.model.clone()))
    }

    /// The position in `models` of the entry `model` names (`None` when `model` is unset), or
    /// why there is none.
    pub fn model_index(&self) -> Result<Option<usize>, String> {
        let Some(name) = &self.model else {
            return Ok(None);
        };
        let names: Vec<String> = self
            .models
            .iter()
            .map(|m| self.entry_name(m).unwrap_or_else(|| "(unnamed)".into()))
            .collect();
        names
            .iter()
            .position(|n| n == name)
            .map(Some)
            .ok_or_else(|| {
                format!(
                    "`model: {name}` names no entry of `models` (names: [{}]); add `{{ name: {name}, model: …, base_url_env: … }}` to `models` or pick one of those",
                    names.join(", ")
                )
            })
    }

    /// The `models` entry `model` names (`None` when `model` is unset), or why there is none.
    pub fn model_entry(&self) -> Result<Option<&serde_json::Value>, String> {
        Ok(self.model_index()?.map(|i| &self.models[i]))
    }

    /// These params with `llm` set to the chosen `models` entry over the `llm` defaults (an
    /// entry's endpoint replaces the defaults' endpoint whole), so everything downstream reads
    /// one endpoint block.
    pub fn with_chosen_model(&self) -> Result<RunEpisodesParams, String> {
        let Some(entry) = self.model_entry()? else {
            return Ok(self.clone());
        };
        let name = self.model.clone().unwrap_or_default();
        let llm = LlmConfig::with_entry(self.llm.as_ref(), entry, &name)?;
        Ok(RunEpisodesParams {
            llm: Some(llm),
            ..self.clone()
        })
    }

    /// The name the agent's model is reported under (the `model=` part of its Table 1 column):
    /// the chosen `models` entry's name, else `llm.model`.
    pub fn model_name(&self) -> Option<String> {
        self.model
            .clone()
            .or_else(|| self.llm.as_ref().map(|l| l.model.clone()))
    }

    /// These raw params (`raw`, as the plan resolved them) narrowed to the one `models` entry
    /// this variant plays: what its key holds, so adding a model re-runs no other model.
    pub fn key_params(&self, raw: &serde_json::Value) -> serde_json::Value {
        let mut out = raw.clone();
        let picked = self.model_index().ok().flatten();
        if let (Some(i), Some(serde_json::Value::Array(entries))) = (picked, out.get_mut("models"))
        {
            let kept = entries.get(i).cloned();
            entries.clear();
            entries.extend(kept);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(v: serde_json::Value) -> RunEpisodesParams {
        serde_json::from_value(v).expect("params")
    }

    #[test]
    fn an_entry_without_a_name_goes_by_its_model_id() {
        let p = params(serde_json::json!({
            "agent": "llm", "model": "gpt-4o-mini",
            "llm": { "base_url": "http://x/v1", "model": "gpt-4o-mini" },
            "models": [
                { "base_url_env": "URL" },
                { "name": "big", "model": "gpt-4o-2024-08-06" },
                { "model": "o3-mini" },
            ],
        }));
        assert_eq!(p.model_index(), Ok(Some(0)));
        let names: Vec<_> = p.models.iter().map(|m| p.entry_name(m).unwrap()).collect();
        assert_eq!(names, ["gpt-4o-mini", "big", "o3-mini"]);
        let chosen = p.with_chosen_model().unwrap();
        assert_eq!(chosen.llm.unwrap().model, "gpt-4o-mini");
        let big = RunEpisodesParams {
            model: Some("big".into()),
            ..p.clone()
        };
        assert_eq!(
            big.with_chosen_model().unwrap().llm.unwrap().model,
            "gpt-4o-2024-08-06"
        );
        assert_eq!(big.model_name().as_deref(), Some("big"));
        // The key holds only the picked entry.
        let raw = serde_json::json!({ "model": "big", "models": p.models });
        assert_eq!(
            big.key_params(&raw)["models"],
            serde_json::json!([p.models[1]])
        );
        let e = RunEpisodesParams {
            model: Some("zzz".into()),
            ..p
        }
        .model_index()
        .unwrap_err();
        assert!(e.contains("[gpt-4o-mini, big, o3-mini]"), "{e}");
    }
}
