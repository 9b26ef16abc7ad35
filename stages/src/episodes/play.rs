//! One episode stage item composed in the domain: every task × epoch of the item played with
//! the stage's agent, user and history exposure, on the world and indexes its instance shares.
//! The episode kinds (`run_episodes`, `run_knowu_episodes`) only read their inputs, build an
//! [`EpisodeState`] in `prepare` (the parsed [`EpisodeSetup`], the world, the indexes) and call
//! [`play_item`] per item.

use std::sync::Arc;

use prefflow_engine::StageError;

use super::access::ModelAccess;
use super::agent::AgentFactory;
use super::embeddings::{self, Embedder};
use super::env::PhoneEnv;
use super::exposure::{self, Exposure, LogKind};
use super::hooks::EpisodeHooks;
use super::params::RunEpisodesParams;
use super::record::{EpisodeRow, EpisodeRun};
use super::retrieval::IndexCache;
use super::runner::join_all;
use super::runner::{run_episode, EpisodeSpec};
use super::seed::{episode_id, episode_seed};
use super::setup::EpisodeSetup;
use crate::tasks::TaskBundle;
use crate::world::history::HistoryEvent;
use crate::world::phone::EpisodeConfig;
use crate::world::World;

/// What the episodes of one episode stage instance share, built once in `prepare`: the
/// stage's parsed setup, the world (rebuilt from its tables) and the retrieval indexes over its
/// history.
pub struct EpisodeState {
    /// The stage's parameters, parsed.
    pub setup: EpisodeSetup,
    /// The world every episode of the instance plays in.
    pub world: Arc<World>,
    /// BM25 indexes of the event lists the instance's episodes search.
    pub indexes: Arc<IndexCache>,
}

impl EpisodeState {
    /// The state of an instance playing in `world`, with the retrieval index its episodes
    /// search built already: over the world's history as the log filter leaves it, which
    /// `top_k:N` exposure ranks and the `heuristic` agent searches under `all` — so the first
    /// items do not build it on the runtime (a task whose overrides add history events still
    /// gets its own, built when first needed).
    pub fn new(setup: EpisodeSetup, world: Arc<World>) -> Self {
        let state = EpisodeState {
            setup,
            world,
            indexes: Arc::default(),
        };
        let params = &state.setup.params;
        let ranked = matches!(params.history, Exposure::TopK(_)) && params.embeddings.is_none();
        let searched =
            params.agent == super::agents::AgentName::Heuristic && params.history == Exposure::All;
        if ranked || searched {
            let mut history: Vec<&HistoryEvent> = state.world.history.iter().collect();
            history.sort_by_key(|e| e.time);
            let pool = exposure::select(&history, Exposure::All, params.log, "", &state.indexes);
            state.indexes.index(&pool);
        }
        state
    }
}

/// Plays `bundles` (tasks × epochs) with the stage's agent and user, with a stage kind's
/// additions to each episode (see [`EpisodeHooks`]). The item's episodes are in flight
/// together, at most as many as the agent's endpoint lets be on the wire
/// ([`EpisodeSetup::in_flight`]); results keep task-then-epoch order, each episode's own error
/// in its place.
pub async fn play_item(
    access: ModelAccess<'_>,
    state: &EpisodeState,
    bundles: &[TaskBundle],
    hooks: &dyn EpisodeHooks,
) -> Result<Vec<Result<EpisodeRun, StageError>>, StageError> {
    let setup = &state.setup;
    let factory = setup.agent.build(access)?;
    check_episode_count(bundles.len(), setup.params.epochs)?;
    let mut episodes = Vec::new();
    for bundle in bundles {
        for epoch in 0..factory.epochs(bundle, setup.params.epochs) {
            let episode = Episode {
                bundle,
                epoch,
                factory: factory.as_ref(),
            };
            episodes.push(play(access, state, episode, hooks));
        }
    }
    Ok(join_all(episodes, setup.in_flight()).await)
}

/// Refuses a call that would play more than [`crate::limits::EPISODES`] episodes (tasks ×
/// epochs): a typo, or a job for `per_item: task_id`, which commits each task on its own.
fn check_episode_count(tasks: usize, epochs: u32) -> Result<(), StageError> {
    let episodes = tasks as u64 * u64::from(epochs);
    if episodes <= crate::limits::EPISODES {
        return Ok(());
    }
    Err(StageError::Input(format!(
        "{tasks} tasks × {epochs} epochs = {episodes} episodes in one call, over the limit of {}; lower `epochs`, or add `per_item: task_id` so each task is its own cached item",
        crate::limits::EPISODES
    )))
}

/// Which episode of the item: a task, an epoch, and the stage's agent factory.
#[derive(Clone, Copy)]
struct Episode<'b> {
    bundle: &'b TaskBundle,
    epoch: u32,
    factory: &'b dyn AgentFactory,
}

/// Plays one episode of `bundle`.
async fn play(
    access: ModelAccess<'_>,
    state: &EpisodeState,
    Episode {
        bundle,
        epoch,
        factory,
    }: Episode<'_>,
    hooks: &dyn EpisodeHooks,
) -> Result<EpisodeRun, StageError> {
    let (setup, world, indexes) = (&state.setup, &*state.world, &state.indexes);
    let (params, task) = (&setup.params, &bundle.task);
    let seed = episode_seed(params.seed, &task.task_id, &setup.variant, epoch);
    let config = EpisodeConfig {
        space: params.space,
        clock: hooks.clock(bundle),
        overrides: task.overrides.clone(),
    };
    let mut env = phone_env(world, config, &task.task_id)?;
    let extra: Vec<HistoryEvent> = env.phone.extra_history().to_vec();
    let history = exposure::episode_history(world, &extra);
    let shown = shown_events(params, access, &history, &task.instruction, indexes).await?;
    let mut agent = factory.make_epoch(bundle, seed, epoch);
    let mut user = match hooks.scripted_user(bundle) {
        Some(user) if setup.user.model().is_none() => user,
        _ => setup.user.simulator(access, world, bundle, seed, epoch)?,
    };
    let spec = EpisodeSpec {
        row: episode_row(setup, bundle, epoch, seed, factory.name()),
        instruction: task.instruction.clone(),
        space: params.space,
        max_steps: params.max_steps,
        clarify: params.clarify,
        indexes: indexes.clone(),
    };
    let mut run = run_episode(&mut env, agent.as_mut(), user.as_mut(), &shown, spec).await;
    if !matches!(params.history, Exposure::TopK(_)) {
        // `all` and `none` are fully described by the `exposure` column and the count; listing
        // 3,000 ids on every episode would dominate the steps table and the run's memory.
        for step in &mut run.steps {
            step.shown_events.clear();
        }
    }
    run.episode.score = hooks.score(bundle, &env.phone, &run.steps);
    run.episode.cost_agent = run
        .episode
        .agent_usage()
        .cost(params.llm.as_ref().and_then(|l| l.prices));
    run.episode.cost_user = run
        .episode
        .user_usage()
        .cost(setup.user.model().and_then(|l| l.prices));
    Ok(run)
}

/// The history events an episode is shown: ranked by the embeddings endpoint when the stage
/// names one, else as [`exposure::select`] picks them.
async fn shown_events<'h>(
    params: &RunEpisodesParams,
    access: ModelAccess<'_>,
    history: &[&'h HistoryEvent],
    instruction: &str,
    indexes: &IndexCache,
) -> Result<Vec<&'h HistoryEvent>, StageError> {
    let Some(cfg) = &params.embeddings else {
        return Ok(exposure::select(
            history,
            params.history,
            params.log,
            instruction,
            indexes,
        ));
    };
    let embedder = Embedder::new(cfg, access.cache, access.offline)?.metered(access.usage);
    embeddings::select(
        &embedder,
        history,
        params.history,
        params.log,
        instruction,
        indexes,
    )
    .await
    .map_err(StageError::from)
}

/// The `episodes` row an episode starts with: its identity, who plays and what it is shown.
fn episode_row(
    setup: &EpisodeSetup,
    bundle: &TaskBundle,
    epoch: u32,
    seed: u64,
    agent: String,
) -> EpisodeRow {
    let (params, task) = (&setup.params, &bundle.task);
    let retrieval = if params.embeddings.is_some() {
        "/embeddings"
    } else {
        ""
    };
    EpisodeRow {
        episode_id: episode_id(&task.task_id, &setup.variant, epoch),
        task_id: task.task_id.clone(),
        variant: setup.variant.clone(),
        epoch,
        persona: Some(task.persona.clone()),
        agent,
        user: setup.user.label().to_string(),
        seed,
        exposure: format!("{}/{}{retrieval}", params.history, log_name(params.log)),
        ..EpisodeRow::default()
    }
}

/// The phone one episode of task `task_id` plays on; an input error when the task's overrides
/// do not apply to `world`.
pub fn phone_env<'w>(
    world: &'w World,
    config: EpisodeConfig,
    task_id: &str,
) -> Result<PhoneEnv<'w>, StageError> {
    PhoneEnv::new(world, config).map_err(|e| {
        StageError::Input(format!(
            "task `{task_id}`: overrides do not apply to this world: {e}"
        ))
    })
}

fn log_name(log: LogKind) -> &'static str {
    match log {
        LogKind::Noisy => "noisy",
        LogKind::Clean => "clean",
    }
}
