//! `run_remote_episodes` (per item over `task_id`): plays KnowU-Bench / MobileWorld tasks on real
//! devices — env servers each driving one Android emulator (docs/remote-device.md) — and writes
//! the standard `episodes` / `steps` / `diffs` tables, with the device's `/task/eval` score in
//! `episodes.score`. Each running item leases one device URL for all its episodes, so with a
//! pipeline pool `resources: { devices: N }` (N = number of URLs) and `resources: [devices]` on
//! the stage, N emulators play N tasks at once and no emulator ever plays two.
//!
//! Items are async ([`Execution::Async`]), as in `run_episodes`: an episode waiting on its
//! device or its model is a task, and the waits between attempts are the engine's
//! [`prefflow_engine::retry::RetryPolicy`] sleeps.

use polars::prelude::{DataFrame, DataType};
use prefflow_engine::schema::{InputDef, TableDef};
use prefflow_engine::{Execution, Kind, StageContext, StageError, Tables};

pub use crate::episodes::remote::item::RemoteSetup;
use crate::episodes::remote::item::{play_item, remote_tables};
pub use crate::episodes::remote::params::{RemoteAgent, RunRemoteEpisodesParams};
use crate::episodes::remote::tasks::RemoteTask;
use crate::tables::episodes::RemoteTaskRow;

/// Plays tasks on remote devices.
pub struct RunRemoteEpisodes;

impl Kind for RunRemoteEpisodes {
    type Params = RunRemoteEpisodesParams;
    type State = RemoteSetup;
    const NAME: &'static str = "run_remote_episodes";
    const VERSION: &'static str = "2";
    const OUTPUT_DEFS: &'static [&'static TableDef] = &[
        &crate::tables::episodes::EPISODES,
        &crate::tables::episodes::STEPS,
        &crate::tables::episodes::DIFFS,
    ];
    /// Its tasks are its first input, whatever its name (often a CSV `read_table` read); when
    /// that is a `tasks` table, the plan checks it has `task_id`.
    const INPUTS: &'static [InputDef] = &[InputDef::optional(
        &crate::tables::tasks::TASKS,
        &[crate::tables::tasks::TASK_ID],
    )];
    const DETERMINISTIC: bool = false;
    const SUMMARY: &'static str = "tasks (task_id, goal?, actions?) → episodes, steps, diffs played on env servers (params: devices, agent, actions, suite, epochs, max_steps, device_retries; use per_item: task_id and resources: [devices])";

    fn external_inputs(&self, params: &Self::Params) -> Vec<String> {
        match params.agent {
            RemoteAgent::Llm => vec![params.prompts.clone()],
            RemoteAgent::Replay => Vec::new(),
        }
    }

    fn prepare(
        &self,
        params: &Self::Params,
        ctx: &StageContext<'_>,
    ) -> Result<RemoteSetup, StageError> {
        RemoteSetup::new(params, ctx.stage, ctx.workdir)
    }

    const EXECUTION: Execution = Execution::Async;

    fn run_async<'a>(
        &'a self,
        _params: &'a Self::Params,
        ctx: &'a StageContext<'a, RemoteSetup>,
    ) -> impl std::future::Future<Output = Result<Tables, StageError>> + Send + 'a {
        run(ctx)
    }
}

/// The item's tasks on one leased device, played in the domain
/// ([`crate::episodes::remote::item`]).
async fn run(ctx: &StageContext<'_, RemoteSetup>) -> Result<Tables, StageError> {
    let setup = ctx.state;
    let ctx = &ctx.with_state(&());
    let tasks = read_tasks(ctx)?;
    let (played, url) = play_item(setup, super::support::model_access(ctx), &tasks).await?;
    Ok(Tables::new(remote_tables(&played, &url)?))
}

/// The item's rows of the first input (the tasks), whatever its name.
fn read_tasks(ctx: &StageContext<'_>) -> Result<Vec<RemoteTask>, StageError> {
    let input = ctx.inputs.first().ok_or_else(|| {
        StageError::Input(format!(
            "stage `{}` needs a tasks input with a `task_id` column",
            ctx.stage
        ))
    })?;
    let table = input.label();
    let rows = RemoteTaskRow::from_frame(&as_text(&input.df)?)
        .map_err(|e| StageError::Input(format!("{table}: {e}")))?;
    RemoteTask::from_rows(&table, rows)
}

/// `df` with [`RemoteTaskRow`]'s columns, where present, as text: a CSV task list's ids may
/// have been read as numbers.
fn as_text(df: &DataFrame) -> Result<DataFrame, StageError> {
    let mut df = df.clone();
    for name in RemoteTaskRow::COLUMNS {
        if let Ok(col) = df.column(name) {
            let text = col.cast(&DataType::String).map_err(|e| {
                StageError::Input(format!("column `{name}` cannot be read as text ({e})"))
            })?;
            df.with_column(text)?;
        }
    }
    Ok(df)
}
