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

use prefflow_engine::schema::{InputDef, TableDef};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use polars::prelude::{Column, DataFrame};
use prefflow_engine::{Execution, Kind, StageContext, StageError, Tables};
use serde::Deserialize;
use serde_json::Value;

use crate::episodes::agents::{LlmAgentConfig, Replay};
use crate::episodes::frames::episode_tables;
use crate::episodes::remote::lease::{self, Lease, Suite};
use crate::episodes::remote::{
    play_remote, DeviceClient, DeviceError, DevicePatience, Played, RemoteSpec, DEFAULT_DEVICE_ID,
};
use crate::episodes::seed::{episode_id, episode_seed};
use crate::episodes::{AgentFactory, EpisodeRow, EpisodeRun};
use crate::knowu::columns::{optional_strings, strings};
use crate::llm::LlmConfig;
use crate::world::phone::Action;

/// The agents a remote task can be played by (built-in scripted agents need task bundles that
/// remote tasks do not have).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RemoteAgent {
    /// Plays `actions` (param, by task id) or the task row's `actions` column, then finishes.
    Replay,
    /// A chat-completions model (the `llm` agent of `run_episodes`, in GUI mode).
    Llm,
}

/// Parameters of `run_remote_episodes`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRemoteEpisodesParams {
    /// Env server base URLs, one per device (`http://host:6800`).
    pub devices: Vec<String>,
    /// The adb device id each server drives (default `emulator-5554`).
    #[serde(default = "default_device_id")]
    pub device_id: String,
    /// `replay` or `llm`.
    pub agent: RemoteAgent,
    /// Replay actions by task id (prefflow actions, e.g. `{action: open_app, app: Clock}`).
    #[serde(default)]
    pub actions: BTreeMap<String, Vec<Action>>,
    /// Suite to switch each device to before its first task, as query parameters of
    /// `POST /suite_family/switch` (`target_family` required; e.g. `user_log_source: clean`).
    #[serde(default)]
    pub suite: Option<BTreeMap<String, Value>>,
    /// Independent repeats per task (default 1).
    #[serde(default = "one")]
    pub epochs: u32,
    /// Step bound per episode (default 50, KnowU-Bench's MAX_ROUND).
    #[serde(default = "fifty")]
    pub max_steps: u32,
    /// Root seed; each episode's seed is hash(seed, task, variant, epoch).
    #[serde(default)]
    pub seed: u64,
    /// Show the screen (`GET /a11y`) in observations (default true).
    #[serde(default = "yes")]
    pub screen: bool,
    /// Per-request timeout in seconds (default 300: task init restores a snapshot).
    #[serde(default = "three_hundred")]
    pub timeout_s: u64,
    /// Replays of an episode after a device failure (default 2).
    #[serde(default = "two")]
    pub device_retries: u32,
    /// First wait between `/health` polls, doubling (default 5000 ms).
    #[serde(default = "five_seconds")]
    pub retry_backoff_ms: u64,
    /// `/health` polls before an attempt gives up on the device (default 12).
    #[serde(default = "twelve")]
    pub health_polls: u32,
    /// The agent's model (agent `llm`).
    #[serde(default)]
    pub llm: Option<LlmConfig>,
    /// Directory of prompt templates (default `datasets/prompts`).
    #[serde(default = "prompts_dir")]
    pub prompts: String,
}

fn default_device_id() -> String {
    DEFAULT_DEVICE_ID.into()
}
fn one() -> u32 {
    1
}
fn two() -> u32 {
    2
}
fn twelve() -> u32 {
    12
}
fn fifty() -> u32 {
    50
}
fn yes() -> bool {
    true
}
fn three_hundred() -> u64 {
    300
}
fn five_seconds() -> u64 {
    5000
}
fn prompts_dir() -> String {
    "datasets/prompts".into()
}

/// Plays tasks on remote devices.
pub struct RunRemoteEpisodes;

impl Kind for RunRemoteEpisodes {
    type Params = RunRemoteEpisodesParams;
    type State = ();
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

    const EXECUTION: Execution = Execution::Async;

    fn run_async<'a>(
        &'a self,
        params: &'a Self::Params,
        ctx: &'a StageContext<'a>,
    ) -> impl std::future::Future<Output = Result<Tables, StageError>> + Send + 'a {
        run(params, ctx)
    }
}

/// The item's tasks on one leased device.
async fn run(
    params: &RunRemoteEpisodesParams,
    ctx: &StageContext<'_>,
) -> Result<Tables, StageError> {
    if params.devices.is_empty() {
        return Err(StageError::Input(format!(
            "stage `{}`: `devices` is empty; list at least one env server URL",
            ctx.stage
        )));
    }
    let suite = suite_query(params, ctx)?;
    let tasks = read_tasks(ctx)?;
    let factory: Box<dyn AgentFactory + '_> = match params.agent {
        RemoteAgent::Replay => Box::new(Replay::new(replay_actions(params, &tasks))),
        RemoteAgent::Llm => Box::new(llm_agent(params).build(super::support::model_access(ctx))?),
    };
    let lease = lease::acquire(&params.devices).await;
    let timeout = Duration::from_secs(params.timeout_s.max(1));
    let client = DeviceClient::new(lease.url(), &params.device_id, timeout)
        .map(Arc::new)
        .map_err(|e| StageError::Input(format!("stage `{}`: {e}", ctx.stage)))?;
    let patience = DevicePatience::new(
        params.device_retries,
        Duration::from_millis(params.retry_backoff_ms),
        params.health_polls,
    );
    let played = match switch_suite(&lease, &client, &patience, suite).await {
        Ok(()) => play_all(params, ctx, &tasks, &client, &patience, factory.as_ref()).await,
        Err(e) => Err(e),
    };
    // A rejected request says nothing against the device; only failures it may recover from count.
    lease.record(!matches!(&played, Err((_, e)) if e.is_retryable()));
    let played = played.map_err(|e| give_up(e, lease.url(), params))?;
    tables(&played, lease.url())
}

/// Every task × epoch of this item on the leased device.
async fn play_all(
    params: &RunRemoteEpisodesParams,
    ctx: &StageContext<'_>,
    tasks: &[RemoteTask],
    client: &Arc<DeviceClient>,
    patience: &DevicePatience,
    factory: &dyn AgentFactory,
) -> Result<Vec<Played>, (String, DeviceError)> {
    let mut played = Vec::new();
    for task in tasks {
        for epoch in 0..params.epochs {
            let spec = spec(params, ctx, task, factory.name(), epoch);
            let mut p = play_remote(client, patience, factory, &spec)
                .await
                .map_err(|e| (format!("task `{}` epoch {epoch}", task.task_id), e))?;
            let prices = params.llm.as_ref().and_then(|l| l.prices);
            p.run.episode.cost_agent = p.run.episode.agent_usage.cost(prices);
            played.push(p);
        }
    }
    Ok(played)
}

/// The item's error. A device that may recover gives a transient error, so a stage with
/// `retries:` re-runs the item — on another device when one is free (the lease table now ranks
/// this one last).
fn give_up(
    (what, e): (String, DeviceError),
    url: &str,
    params: &RunRemoteEpisodesParams,
) -> StageError {
    let message = format!(
        "{what} on device {url}: {e} (gave up after {} attempt(s); check `{url}/health`, raise \
         `device_retries`, or set `retries:` on the stage to move the item to another device)",
        params.device_retries + 1
    );
    if e.is_retryable() {
        StageError::Transient(message)
    } else {
        StageError::Failed(message)
    }
}

/// One row of the tasks input.
struct RemoteTask {
    task_id: String,
    goal: Option<String>,
    actions: Option<Vec<Action>>,
}

fn read_tasks(ctx: &StageContext<'_>) -> Result<Vec<RemoteTask>, StageError> {
    let input = ctx.inputs.first().ok_or_else(|| {
        StageError::Input(format!(
            "stage `{}` needs a tasks input with a `task_id` column",
            ctx.stage
        ))
    })?;
    let table = input.label();
    let df = &input.df;
    let ids = strings(df, &table, "task_id")?;
    let goals = optional_strings(df, &table, "goal")?;
    let actions = optional_strings(df, &table, "actions")?;
    let mut out = Vec::new();
    for (row, ((id, goal), acts)) in ids.into_iter().zip(goals).zip(actions).enumerate() {
        let task_id =
            id.ok_or_else(|| StageError::Input(format!("{table} row {row}: `task_id` is empty")))?;
        let actions = acts
            .map(|text| {
                serde_json::from_str::<Vec<Action>>(&text).map_err(|e| {
                    StageError::Input(format!(
                        "{table} row {row} (task `{task_id}`): `actions` is not a JSON list of \
                         actions ({e}); write e.g. [{{\"action\": \"open_app\", \"app\": \"Clock\"}}]"
                    ))
                })
            })
            .transpose()?;
        out.push(RemoteTask {
            task_id,
            goal: goal.filter(|g| !g.trim().is_empty()),
            actions,
        });
    }
    Ok(out)
}

/// Replay actions: the `actions` param wins over the row's `actions` column.
fn replay_actions(
    params: &RunRemoteEpisodesParams,
    tasks: &[RemoteTask],
) -> HashMap<String, Vec<Action>> {
    let mut out: HashMap<String, Vec<Action>> = tasks
        .iter()
        .filter_map(|t| Some((t.task_id.clone(), t.actions.clone()?)))
        .collect();
    out.extend(params.actions.iter().map(|(k, v)| (k.clone(), v.clone())));
    out
}

/// The `llm` agent of `run_episodes` with this stage's model and prompts (all tools: a device
/// offers none; the episode's GUI space comes with its brief).
fn llm_agent(params: &RunRemoteEpisodesParams) -> LlmAgentConfig<'_> {
    LlmAgentConfig {
        llm: params.llm.as_ref(),
        prompts: &params.prompts,
        max_tools: None,
    }
}

fn suite_query(
    params: &RunRemoteEpisodesParams,
    ctx: &StageContext<'_>,
) -> Result<Option<Suite>, StageError> {
    let Some(suite) = &params.suite else {
        return Ok(None);
    };
    let mut out = Suite::new();
    for (k, v) in suite {
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Number(_) | Value::Bool(_) => v.to_string(),
            other => {
                return Err(StageError::Input(format!(
                    "stage `{}`: suite.{k} must be a string, number or boolean, got {other}",
                    ctx.stage
                )))
            }
        };
        out.insert(k.clone(), text);
    }
    if !out.contains_key("target_family") {
        return Err(StageError::Input(format!(
            "stage `{}`: `suite` needs `target_family` (e.g. knowu_bench)",
            ctx.stage
        )));
    }
    Ok(Some(out))
}

/// Switches the leased device's suite unless this process already did.
async fn switch_suite(
    lease: &Lease,
    client: &DeviceClient,
    patience: &DevicePatience,
    suite: Option<Suite>,
) -> Result<(), (String, DeviceError)> {
    let Some(suite) = suite else {
        return Ok(());
    };
    if lease.suite().as_ref() == Some(&suite) {
        return Ok(());
    }
    let switched = match patience.wait_healthy(client).await {
        Ok(()) => client.switch_suite(&suite).await,
        Err(e) => Err(e),
    };
    switched.map_err(|e| ("switching the suite".to_string(), e))?;
    lease.set_suite(Some(suite));
    Ok(())
}

fn spec(
    params: &RunRemoteEpisodesParams,
    ctx: &StageContext<'_>,
    task: &RemoteTask,
    agent: String,
    epoch: u32,
) -> RemoteSpec {
    let persona = task.task_id.split_once('@').map(|(_, p)| p.to_string());
    RemoteSpec {
        row: EpisodeRow {
            episode_id: episode_id(&task.task_id, ctx.variant, epoch),
            task_id: task.task_id.clone(),
            variant: ctx.variant.to_string(),
            epoch,
            persona,
            agent,
            seed: episode_seed(params.seed, &task.task_id, ctx.variant, epoch),
            exposure: "device".into(),
            user: "device".into(),
            ..EpisodeRow::default()
        },
        goal: task.goal.clone(),
        max_steps: params.max_steps,
        read_screen: params.screen,
    }
}

/// The episode tables plus `device`, `device_attempts` and `eval_reason` on `episodes`.
fn tables(played: &[Played], url: &str) -> Result<Tables, StageError> {
    let runs: Vec<EpisodeRun> = played.iter().map(|p| p.run.clone()).collect();
    let mut frames = episode_tables(&runs)?;
    if let Some((_, episodes)) = frames.iter_mut().find(|(n, _)| *n == "episodes") {
        add_device_columns(episodes, played, url)?;
    }
    Ok(Tables::new(frames))
}

fn add_device_columns(df: &mut DataFrame, played: &[Played], url: &str) -> Result<(), StageError> {
    let devices: Vec<String> = played.iter().map(|_| url.to_string()).collect();
    let attempts: Vec<u32> = played.iter().map(|p| p.attempts).collect();
    let reasons: Vec<Option<String>> = played
        .iter()
        .map(|p| p.eval.as_ref().map(|e| e.reason.clone()))
        .collect();
    df.with_column(Column::new("device".into(), devices))?;
    df.with_column(Column::new("device_attempts".into(), attempts))?;
    df.with_column(Column::new("eval_reason".into(), reasons))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(yaml: serde_json::Value) -> RunRemoteEpisodesParams {
        serde_json::from_value(yaml).unwrap()
    }

    #[test]
    fn the_llm_agent_gets_the_stages_model_and_prompts() {
        let p = params(serde_json::json!({
            "devices": ["http://127.0.0.1:1"],
            "agent": "llm",
            "seed": 7,
            "llm": {"base_url": "http://127.0.0.1:2/v1", "model": "m", "temperature": 0.0},
            "prompts": "my/prompts",
        }));
        let agent = llm_agent(&p);
        assert_eq!(agent.llm, p.llm.as_ref());
        assert_eq!(agent.prompts, "my/prompts");
        assert_eq!(agent.max_tools, None);
    }

    #[test]
    fn replay_actions_come_from_the_column_unless_the_param_names_the_task() {
        let p = params(serde_json::json!({
            "devices": ["http://127.0.0.1:1"],
            "agent": "replay",
            "actions": {"a": [{"action": "home"}]},
        }));
        let tasks = vec![
            RemoteTask {
                task_id: "a".into(),
                goal: None,
                actions: Some(vec![Action::Back]),
            },
            RemoteTask {
                task_id: "b".into(),
                goal: None,
                actions: Some(vec![Action::Back]),
            },
        ];
        let got = replay_actions(&p, &tasks);
        assert_eq!(got["a"], vec![Action::Home]);
        assert_eq!(got["b"], vec![Action::Back]);
    }
}
