//! Choosing the user simulator a `run_episodes` stage uses: the scripted user (offline,
//! deterministic), or a model of its own (`user_model`, e.g. `PREFFLOW_USER_BASE_URL`) that is
//! never the model under test unless the stage asks for that explicitly (`simulator:
//! agent_model`, warned about and named in the `user` column).

mod llm;
pub mod relevance;

use std::path::Path;
use std::sync::Arc;

use prefflow_engine::StageError;
use serde::{Deserialize, Serialize};

pub use llm::{system_prompt, LlmUser};

use super::prompts::{self, Prompts};
use super::simulator::{ScriptedUser, Simulator};
use crate::episodes::access::ModelAccess;
use crate::llm::{LlmClient, LlmConfig};
use crate::tasks::TaskBundle;
use crate::world::World;

/// Who answers `ask_user`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SimulatorName {
    /// `llm` when the stage's `user_model` has an endpoint here (its `base_url`, or its
    /// `base_url_env` set), else `scripted` (default): configuring a user model is all it takes.
    #[default]
    Auto,
    /// Answers matched from the task's slots (free, exact, offline).
    Scripted,
    /// The stage's `user_model` playing the user over the relevant profile entries and the
    /// hidden context (iPrefBench C.3, G.1).
    Llm,
    /// The model under test (the agent's `llm`) plays the user too. Only when asked for by
    /// name: the user then knows what the agent's model knows, so the stage warns and the
    /// `user` column of `episodes` and Table 1 says so.
    AgentModel,
}

/// Who answers `ask_user` in a stage's episodes, resolved from its params and the environment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum User<'a> {
    /// The scripted user.
    Scripted,
    /// The stage's own user model.
    Model(&'a LlmConfig),
    /// The agent's model, asked for explicitly (`simulator: agent_model`).
    AgentModel(&'a LlmConfig),
}

impl<'a> User<'a> {
    /// Resolves `simulator` with the stage's `user_model` and the agent's `llm`; an error says
    /// what to add.
    pub fn resolve(
        simulator: SimulatorName,
        user_model: Option<&'a LlmConfig>,
        agent_model: Option<&'a LlmConfig>,
    ) -> Result<Self, String> {
        let configured = user_model.filter(|m| m.resolved_base_url().is_ok());
        match simulator {
            SimulatorName::Scripted => Ok(User::Scripted),
            SimulatorName::Auto => Ok(configured.map_or(User::Scripted, User::Model)),
            SimulatorName::Llm => user_model.map(User::Model).ok_or_else(|| {
                "simulator `llm` needs `user_model: { model, base_url or base_url_env }` (the user simulator's own endpoint, e.g. `base_url_env: PREFFLOW_USER_BASE_URL`); to let the model under test play the user, write `simulator: agent_model`".into()
            }),
            SimulatorName::AgentModel => agent_model.map(User::AgentModel).ok_or_else(|| {
                "simulator `agent_model` needs the agent's `llm: { model, base_url or base_url_env }`".into()
            }),
        }
    }

    /// The model that plays the user, if one does.
    pub fn config(self) -> Option<&'a LlmConfig> {
        match self {
            User::Scripted => None,
            User::Model(c) | User::AgentModel(c) => Some(c),
        }
    }

    /// The `user` column of `episodes` and Table 1: `scripted`, `llm:<model>`, or
    /// `llm:<model> (the model under test)`. Part of the stage's key, so configuring a user
    /// model (or removing it) re-plays the episodes it answers.
    pub fn label(self) -> String {
        match self {
            User::Scripted => "scripted".into(),
            User::Model(c) => format!("llm:{}", c.model),
            User::AgentModel(c) => format!("llm:{} (the model under test)", c.model),
        }
    }

    /// Why this choice deserves a warning: the model under test (`agent`, the `llm` agent's
    /// model) answers its own questions, by request or because the user model is the agent's
    /// endpoint and model.
    pub fn warning(self, agent: Option<&LlmConfig>) -> Option<String> {
        match (self, agent) {
            (User::AgentModel(c), _) => Some(format!(
                "the model under test (`{}`) also plays the user (`simulator: agent_model`): it answers its own questions; the `user` column says so. Configure `user_model` (PREFFLOW_USER_BASE_URL) for a separate simulator",
                c.model
            )),
            (User::Model(u), Some(a))
                if u.model == a.model && u.resolved_base_url().ok() == a.resolved_base_url().ok() =>
            {
                Some(format!(
                    "`user_model` is the model under test (`{}` at the same endpoint): it answers its own questions",
                    u.model
                ))
            }
            _ => None,
        }
    }
}

/// Who answers `ask_user` in a stage's episodes, parsed once per stage instance (in
/// `prepare`): the scripted user, or a model with the user templates compiled.
pub struct UserConfig {
    /// The `user` column ([`User::label`]).
    label: String,
    /// The model that plays the user and its templates (`None`: the scripted user).
    model: Option<(LlmConfig, Arc<Prompts>)>,
}

impl UserConfig {
    /// `user` with the templates of `prompts_dir` (relative to `workdir`) when a model plays it;
    /// an input error names a template that is missing or does not parse.
    pub fn load(user: User<'_>, workdir: &Path, prompts_dir: &str) -> Result<Self, StageError> {
        let model = match user.config() {
            None => None,
            Some(config) => {
                let prompts = Prompts::load(workdir, prompts_dir, &prompts::USER_TEMPLATES)?;
                Some((config.clone(), Arc::new(prompts)))
            }
        };
        Ok(Self {
            label: user.label(),
            model,
        })
    }

    /// The `user` column of the stage's episodes.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The model that plays the user (`None` for the scripted user).
    pub fn model(&self) -> Option<&LlmConfig> {
        self.model.as_ref().map(|(config, _)| config)
    }

    /// The user model's compiled templates (`None` for the scripted user).
    pub fn prompts(&self) -> Option<&Prompts> {
        self.model.as_ref().map(|(_, prompts)| &**prompts)
    }

    /// The simulator for one episode (`epoch` keeps repeats distinct recorded requests): the
    /// scripted user, or the model with the compiled templates.
    pub fn simulator<'a>(
        &self,
        access: ModelAccess<'a>,
        world: &'a World,
        bundle: &'a TaskBundle,
        seed: u64,
        epoch: u32,
    ) -> Result<Box<dyn Simulator + 'a>, StageError> {
        let Some((config, prompts)) = &self.model else {
            return Ok(Box::new(ScriptedUser::for_task(bundle, &world.catalog)));
        };
        config
            .check_endpoint(access.offline)
            .map_err(|e| access.named(e))?;
        let client = LlmClient::new(config.for_episode(seed), access.cache, access.offline)?
            .metered(access.usage, "user")
            .flow(&access.flow());
        let user = LlmUser::new(client, prompts.clone(), world, bundle, epoch)
            .map_err(|e| access.named(StageError::Input(e.to_string())))?;
        Ok(Box::new(user))
    }
}
