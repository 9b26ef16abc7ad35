//! Choosing the user simulator a `run_episodes` stage uses.

mod llm;

use prefflow_engine::StageError;
use serde::{Deserialize, Serialize};

pub use llm::{system_prompt, LlmUser};

use super::agents::llm::{check_endpoint, episode_config, prefix};
use super::prompts::{self, Prompts};
use super::simulator::{ScriptedUser, Simulator};
use crate::episodes::params::RunEpisodesParams;
use crate::episodes::ModelAccess;
use crate::llm::LlmClient;
use crate::tasks::TaskBundle;
use crate::world::World;

/// Who answers `ask_user`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SimulatorName {
    /// Keyword-matched answers from the hidden context (default; free and exact).
    #[default]
    Scripted,
    /// A chat model playing the user over profile and hidden context (iPrefBench G.1).
    Llm,
}

/// The model that plays the user (simulator `llm`): the simulator's own, else the agent's.
/// `None` for the scripted user, or when no model is configured.
pub fn user_config(params: &RunEpisodesParams) -> Option<&crate::llm::LlmConfig> {
    if params.simulator != SimulatorName::Llm {
        return None;
    }
    params.user_llm.as_ref().or(params.llm.as_ref())
}

/// The simulator for one episode (`epoch` keeps repeats distinct recorded requests).
pub fn make<'a>(
    params: &'a RunEpisodesParams,
    access: ModelAccess<'a>,
    world: &'a World,
    bundle: &'a TaskBundle,
    seed: u64,
    epoch: u32,
) -> Result<Box<dyn Simulator + 'a>, StageError> {
    match params.simulator {
        SimulatorName::Scripted => Ok(Box::new(ScriptedUser::for_task(bundle, &world.catalog))),
        SimulatorName::Llm => {
            let input = |m: String| StageError::Input(format!("stage `{}`: {m}", access.stage));
            let config = user_config(params).ok_or_else(|| {
                input("simulator `llm` needs `user_llm: { model, base_url or base_url_env }` (or `llm`) in params".into())
            })?;
            check_endpoint(config, access.offline).map_err(|e| prefix(access.stage, e))?;
            let prompts = Prompts::load(access.workdir, &params.prompts, &prompts::USER_TEMPLATES)
                .map_err(|e| prefix(access.stage, e))?;
            let client =
                LlmClient::new(episode_config(config, seed), access.cache, access.offline)?
                    .metered(access.usage, "user")
                    .flow(&access.flow());
            let user = LlmUser::new(client, prompts, &world.persona, bundle, epoch)
                .map_err(|e| input(e.to_string()))?;
            Ok(Box::new(user))
        }
    }
}
