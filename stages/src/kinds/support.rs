//! What several stage kinds share, in one place so no kind borrows from a sibling: reading
//! inputs by name, the world input, how errors and model access are named, and the common
//! path of the episode kinds (`run_episodes`, `run_knowu_episodes`): prepare the shared state,
//! play an item in the domain (`episodes::play`), refuse faulted episodes, write the tables.

use std::borrow::Cow;
use std::sync::Arc;

use polars::prelude::DataFrame;
use prefflow_engine::{InputTable, StageContext, StageError, Tables};

use crate::episodes::frames::episode_tables;
use crate::episodes::hooks::EpisodeHooks;
use crate::episodes::params::RunEpisodesParams;
use crate::episodes::play::{play_item, EpisodeState};
use crate::episodes::setup::EpisodeSetup;
use crate::episodes::{EpisodeRun, ModelAccess};
use crate::tasks::error::TaskError;
use crate::tasks::frames::bundles_from_table;
use crate::world::error::WorldError;
use crate::world::from_tables::world_from_tables;
use crate::world::World;

/// The world described by a stage's `sources` and `history_events` inputs. Kinds whose items
/// share it build it once per instance, in `prepare`.
pub(crate) fn world_input(ctx: &StageContext<'_>) -> Result<Arc<World>, StageError> {
    let world = world_from_tables(ctx.input("sources")?, ctx.input("history_events")?)
        .map_err(TaskError::from)?;
    Ok(Arc::new(world))
}

/// The input `name` (a table name, a `stage.table` label or a one-table stage, as
/// [`StageContext::input`] resolves it) when the stage lists it: for optional inputs. A table
/// name listed from several stages (a gather over the built-in agents' `judged.scores` and the
/// models' `judged_llm.scores`) is every one of them stacked, so each kind reads one table with
/// every variant's rows; stages that are disabled (no endpoint) simply contribute none.
pub fn optional_input<'a>(
    ctx: &'a StageContext<'_>,
    name: &str,
) -> Result<Option<Cow<'a, DataFrame>>, StageError> {
    let by_name: Vec<&InputTable> = ctx
        .inputs
        .iter()
        .filter(|t| t.table == name || t.label() == name)
        .collect();
    match by_name.as_slice() {
        [] => {
            let listed = ctx.inputs.iter().any(|t| t.stage == name);
            Ok(listed
                .then(|| ctx.input(name).ok().map(Cow::Borrowed))
                .flatten())
        }
        [only] => Ok(Some(Cow::Borrowed(&only.df))),
        [first, rest @ ..] => {
            let mut stacked = first.df.clone();
            for t in rest {
                stacked.vstack_mut(&t.df).map_err(|e| {
                    StageError::Failed(format!(
                        "stage `{}`: input `{}` does not stack onto `{}` (both are `{name}` tables): {e}",
                        ctx.stage,
                        t.label(),
                        first.label()
                    ))
                })?;
            }
            Ok(Some(Cow::Owned(stacked)))
        }
    }
}

/// [`optional_input`] for an input the kind cannot do without: an error naming the inputs when
/// no listed input is called `name`.
pub fn required_input<'a>(
    ctx: &'a StageContext<'_>,
    name: &str,
) -> Result<Cow<'a, DataFrame>, StageError> {
    match optional_input(ctx, name)? {
        Some(df) => Ok(df),
        None => ctx.input(name).map(Cow::Borrowed),
    }
}

/// World errors are problems in the user's dataset files: exit code 2 with the located message.
pub fn input_error(e: WorldError) -> StageError {
    StageError::Input(e.to_string())
}

/// How this stage's agents and simulators reach their models.
pub(crate) fn model_access<'a>(ctx: &'a StageContext<'_>) -> ModelAccess<'a> {
    ModelAccess {
        stage: ctx.stage,
        variant: ctx.variant,
        cache: ctx.cache,
        offline: ctx.offline,
        workdir: ctx.workdir,
        usage: Some(ctx.usage),
    }
}

/// Builds an episode kind's [`EpisodeState`] from its params and whole inputs: the params
/// parsed once ([`EpisodeSetup`]; a warning when the model under test answers its own
/// questions), the world, and the retrieval index its episodes search ([`EpisodeState::new`]).
pub fn prepare_episodes(
    params: &RunEpisodesParams,
    ctx: &StageContext<'_>,
) -> Result<EpisodeState, StageError> {
    let setup = EpisodeSetup::new(params, ctx.stage, ctx.variant, ctx.workdir)?;
    if let Some(w) = &setup.warning {
        tracing::warn!("stage `{}`: {w}", ctx.stage);
    }
    Ok(EpisodeState::new(setup, world_input(ctx)?))
}

/// An episode kind's item, with a stage kind's additions to each episode (see
/// [`EpisodeHooks`]): the item's bundles played in the domain ([`play_item`]) on the prepared
/// state, each episode refused when a fault ended it, the tables written.
pub async fn run_with(
    ctx: &StageContext<'_, EpisodeState>,
    hooks: &dyn EpisodeHooks,
) -> Result<Tables, StageError> {
    let state = ctx.state;
    let ctx = &ctx.with_state(&());
    let bundles = bundles_from_table(bundles_input(ctx)?)?;
    let played = play_item(model_access(ctx), state, &bundles, hooks).await?;
    let mut runs = Vec::with_capacity(played.len());
    for run in played {
        let run = run?;
        refuse_faults(ctx, &run)?;
        runs.push(run);
    }
    tables(&runs)
}

/// An episode ended by a provider fault measured the provider, not the model, so it is never
/// stored as a result: the item fails, with a row in the run's errors table, and a later run
/// plays it again. Offline, any failed episode means a request was never recorded (or the cache
/// is unreadable): the item fails as bad input (exit 2) instead of caching an `error` episode
/// that an online run would reuse.
fn refuse_faults(ctx: &StageContext<'_>, run: &EpisodeRun) -> Result<(), StageError> {
    let id = &run.episode.episode_id;
    if let (Some(e), true) = (&run.episode.error, ctx.offline) {
        return Err(StageError::Input(format!(
            "stage `{}`: episode `{id}` cannot be replayed offline: {e}",
            ctx.stage
        )));
    }
    let Some(fault) = &run.fault else {
        return Ok(());
    };
    let named = |m: String| format!("stage `{}`: episode `{id}`: {m}", ctx.stage);
    Err(match StageError::from(fault.clone()) {
        StageError::Input(m) => StageError::Input(named(m)),
        StageError::Transient(m) => StageError::Transient(named(m)),
        StageError::Exhausted(m) => StageError::Exhausted(named(m)),
        StageError::Failed(m) => StageError::Failed(named(m)),
    })
}

/// The task bundles: the input named `bundles`, else the first input (the per-item one), so a
/// `query` selecting a subset of tasks can feed the stage directly.
fn bundles_input<'c>(ctx: &'c StageContext<'_>) -> Result<&'c DataFrame, StageError> {
    ctx.input("bundles")
        .or_else(|e| ctx.inputs.first().map(|t| &t.df).ok_or(e))
}

fn tables(runs: &[EpisodeRun]) -> Result<Tables, StageError> {
    Ok(Tables::new(episode_tables(runs)?))
}
