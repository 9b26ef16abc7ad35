//! An episode stage's parameters parsed once per stage instance (in the kind's `prepare`, and by
//! `plan`'s estimate), so no item or episode parses them again: the chosen `models` entry merged
//! into the agent's endpoint, the agent's typed configuration with its compiled templates
//! ([`AgentConfig`]), who answers `ask_user` with theirs ([`UserConfig`]), and the name the
//! episodes' `variant` column gives the instance.

use std::path::Path;

use prefflow_engine::StageError;

use super::agents::AgentConfig;
use super::params::RunEpisodesParams;
use super::seed::episode_variant;
use super::simulators::UserConfig;
use crate::llm::LlmConfig;

/// What an episode stage instance's items share of its parameters, parsed.
pub struct EpisodeSetup {
    /// The params with the chosen `models` entry applied
    /// ([`RunEpisodesParams::with_chosen_model`]): exposure, epochs, space, seeds.
    pub params: RunEpisodesParams,
    /// What builds the stage's agents.
    pub agent: AgentConfig,
    /// Who answers `ask_user`.
    pub user: UserConfig,
    /// The `variant` column of the instance's episodes ([`episode_variant`]).
    pub variant: String,
    /// Why the user deserves a warning (the model under test answers its own questions).
    pub warning: Option<String>,
}

impl EpisodeSetup {
    /// Parses `params` for the instance `variant` of `stage`, reading templates and trajectories
    /// relative to `workdir`; an input error names the stage and says what to fix.
    pub fn new(
        params: &RunEpisodesParams,
        stage: &str,
        variant: &str,
        workdir: &Path,
    ) -> Result<Self, StageError> {
        let named = |e: StageError| super::access::named(stage, e);
        let params = params
            .with_chosen_model()
            .map_err(|m| named(StageError::Input(m)))?;
        let agent = params.agent_config(workdir).map_err(named)?;
        let user = params.user().map_err(|m| named(StageError::Input(m)))?;
        let warning = user.warning(params.agent_llm());
        let user = UserConfig::load(user, workdir, &params.prompts).map_err(named)?;
        let variant = episode_variant(&params, variant);
        Ok(Self {
            params,
            agent,
            user,
            variant,
            warning,
        })
    }

    /// The agent's model (`None` unless the agent is `llm`).
    pub fn agent_model(&self) -> Option<&LlmConfig> {
        self.agent.llm().map(|a| &a.llm)
    }

    /// How many of one item's episodes are played at once: as many as the model endpoint lets
    /// be on the wire (the agent's, else the simulator's `concurrency`) — more would only wait
    /// for its slots while holding their phones — and one at a time without a model (such
    /// episodes never wait, so they run to the end one after another anyway).
    pub fn in_flight(&self) -> usize {
        self.agent_model()
            .or(self.user.model())
            .map_or(1, |l| l.concurrency.max(1))
    }
}
