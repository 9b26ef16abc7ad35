//! One episode stage item composed in the domain: every task × epoch of the item played with
//! the stage's agent, user and history exposure, on the world and indexes its instance shares.
//! The episode kinds (`run_episodes`, `run_knowu_episodes`) only read their inputs, build an
//! [`EpisodeState`] in `prepare` and call [`play_item`] per item.

use std::sync::Arc;

use prefflow_engine::StageError;

use super::agent::AgentFactory;
use super::embeddings::{self, Embedder};
use super::exposure::{self, Exposure, LogKind};
use super::hooks::EpisodeHooks;
use super::params::RunEpisodesParams;
use super::retrieval::IndexCache;
use super::runner::join_all;
use super::seed::{episode_id, episode_seed, episode_variant};
use super::simulators::{self, User};
use super::{run_episode, EpisodeRow, EpisodeRun, EpisodeSpec, ModelAccess, PhoneEnv};
use crate::tasks::TaskBundle;
use crate::world::history::HistoryEvent;
use crate::world::phone::EpisodeConfig;
use crate::world::World;

/// What the episodes of one episode stage instance share, built once in `prepare`: the world
/// (rebuilt from its tables) and the retrieval indexes over its history.
pub struct EpisodeState {
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
    pub fn new(params: &RunEpisodesParams, world: Arc<World>) -> Self {
        let state = EpisodeState {
            world,
            indexes: Arc::default(),
        };
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
/// together, at most as many as the agent's endpoint lets be on the wire ([`in_flight`]);
/// results keep task-then-epoch order, each episode's own error in its place.
pub async fn play_item(
    params: &RunEpisodesParams,
    access: ModelAccess<'_>,
    state: &EpisodeState,
    bundles: &[TaskBundle],
    hooks: &dyn EpisodeHooks,
) -> Result<Vec<Result<EpisodeRun, StageError>>, StageError> {
    let factory = params.agent_config().build(access)?;
    check_episode_count(bundles.len(), params.epochs)?;
    let mut episodes = Vec::new();
    for bundle in bundles {
        for epoch in 0..factory.epochs(bundle, params.epochs) {
            let episode = Episode {
                bundle,
                epoch,
                factory: factory.as_ref(),
            };
            episodes.push(play(params, access, state, episode, hooks));
        }
    }
    Ok(join_all(episodes, in_flight(params)).await)
}

/// How many of one item's episodes are played at once: as many as the model endpoint lets be
/// on the wire (the agent's, else the simulator's `concurrency`) — more would only wait for its
/// slots while holding their phones — and one at a time without a model (such episodes never
/// wait, so they run to the end one after another anyway).
fn in_flight(params: &RunEpisodesParams) -> usize {
    let user = params.user_config();
    params
        .agent_llm()
        .or(user)
        .map_or(1, |l| l.concurrency.max(1))
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
    params: &RunEpisodesParams,
    access: ModelAccess<'_>,
    state: &EpisodeState,
    Episode {
        bundle,
        epoch,
        factory,
    }: Episode<'_>,
    hooks: &dyn EpisodeHooks,
) -> Result<EpisodeRun, StageError> {
    let (world, indexes) = (&*state.world, &state.indexes);
    let task = &bundle.task;
    let variant = episode_variant(params, access.variant);
    let seed = episode_seed(params.seed, &task.task_id, &variant, epoch);
    let config = EpisodeConfig {
        space: params.space,
        clock: hooks.clock(bundle),
        overrides: task.overrides.clone(),
    };
    let mut env = phone_env(world, config, &task.task_id)?;
    let extra: Vec<HistoryEvent> = env.phone.extra_history().to_vec();
    let history = exposure::episode_history(world, &extra);
    let shown = match &params.embeddings {
        Some(cfg) => {
            let embedder = Embedder::new(cfg, access.cache, access.offline)?.metered(access.usage);
            embeddings::select(
                &embedder,
                &history,
                params.history,
                params.log,
                &task.instruction,
                indexes,
            )
            .await?
        }
        None => exposure::select(
            &history,
            params.history,
            params.log,
            &task.instruction,
            indexes,
        ),
    };
    let retrieval = if params.embeddings.is_some() {
        "/embeddings"
    } else {
        ""
    };
    let mut agent = factory.make_epoch(bundle, seed, epoch);
    let mut user = match hooks.scripted_user(bundle) {
        Some(user) if params.user() == Ok(User::Scripted) => user,
        _ => {
            let who = params
                .user()
                .map_err(|m| access.named(StageError::Input(m)))?;
            simulators::make(who, &params.prompts, access, world, bundle, seed, epoch)?
        }
    };
    let row = EpisodeRow {
        episode_id: episode_id(&task.task_id, &variant, epoch),
        task_id: task.task_id.clone(),
        variant,
        epoch,
        persona: Some(task.persona.clone()),
        agent: factory.name(),
        user: params.user().map(User::label).unwrap_or_default(),
        seed,
        exposure: format!("{}/{}{retrieval}", params.history, log_name(params.log)),
        ..EpisodeRow::default()
    };
    let spec = EpisodeSpec {
        row,
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
        .agent_usage
        .cost(params.llm.as_ref().and_then(|l| l.prices));
    run.episode.cost_user = run
        .episode
        .user_usage
        .cost(params.user_config().and_then(|l| l.prices));
    Ok(run)
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
