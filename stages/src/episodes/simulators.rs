//! Choosing the user simulator a `run_episodes` stage uses.

use prefflow_engine::{StageContext, StageError};
use serde::{Deserialize, Serialize};

use super::simulator::{ScriptedUser, Simulator};
use crate::kinds::RunEpisodesParams;
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

/// The simulator for one episode.
pub fn make<'a>(
    params: &'a RunEpisodesParams,
    ctx: &'a StageContext<'a>,
    world: &'a World,
    bundle: &'a TaskBundle,
    seed: u64,
) -> Result<Box<dyn Simulator + 'a>, StageError> {
    let _ = (world, seed);
    match params.simulator {
        // KnowU tasks: consent decisions and profile answers (knowu_sim::consent).
        SimulatorName::Scripted if bundle.task.knowu.is_some() => {
            Ok(Box::new(crate::knowu_sim::consent::KnowuUser::new(bundle)))
        }
        SimulatorName::Scripted => Ok(Box::new(ScriptedUser::new(&bundle.slots))),
        SimulatorName::Llm => Err(StageError::Input(format!(
            "stage `{}`: simulator `llm` is not available yet",
            ctx.stage
        ))),
    }
}
