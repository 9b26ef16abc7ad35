//! One `run_remote_episodes` item composed in the domain: the stage's params parsed once per
//! instance ([`RemoteSetup`]: the agent with its compiled templates, the suite, the patience
//! with a failing device), then per item a device leased, its suite switched, every task ×
//! epoch played on it ([`play_item`]) and the episode tables written with the device's
//! columns ([`remote_tables`]).

use std::sync::Arc;
use std::time::Duration;

use polars::prelude::DataFrame;
use prefflow_engine::StageError;
use serde_json::Value;

use super::client::{DeviceClient, DevicePatience};
use super::episode::{play_remote, Played, RemoteSpec};
use super::error::DeviceError;
use super::lease::{self, Lease, Suite};
use super::params::{RemoteAgent, RunRemoteEpisodesParams};
use super::tasks::{replay_actions, RemoteTask};
use crate::episodes::access::{named, ModelAccess};
use crate::episodes::agent::AgentFactory;
use crate::episodes::agents::{LlmAgentConfig, Replay};
use crate::episodes::frames::episode_tables;
use crate::episodes::record::{EpisodeRow, EpisodeRun};
use crate::episodes::seed::{episode_id, episode_seed};
use crate::tables::episodes::DeviceColumns;

/// A remote episode stage's params, parsed once per instance (in `prepare`).
pub struct RemoteSetup {
    /// The params as written (devices, epochs, seeds, replay actions).
    pub params: RunRemoteEpisodesParams,
    /// The `llm` agent's model and compiled templates (`None` for `replay`).
    pub llm: Option<LlmAgentConfig>,
    /// The suite to switch each device to before its first task.
    pub suite: Option<Suite>,
    /// How long one request may take.
    pub timeout: Duration,
    /// How patient to be with a failing device.
    pub patience: DevicePatience,
}

impl RemoteSetup {
    /// Parses `params` of `stage`, reading templates relative to `workdir`; an input error
    /// names the stage and says what to fix.
    pub fn new(
        params: &RunRemoteEpisodesParams,
        stage: &str,
        workdir: &std::path::Path,
    ) -> Result<Self, StageError> {
        if params.devices.is_empty() {
            return Err(StageError::Input(format!(
                "stage `{stage}`: `devices` is empty; list at least one env server URL"
            )));
        }
        let suite = suite_query(params, stage)?;
        // All tools: a device offers none; the episode's GUI space comes with its brief.
        let llm = match params.agent {
            RemoteAgent::Replay => None,
            RemoteAgent::Llm => Some(
                LlmAgentConfig::load(params.llm.as_ref(), workdir, &params.prompts, None)
                    .map_err(|e| named(stage, e))?,
            ),
        };
        Ok(Self {
            params: params.clone(),
            llm,
            suite,
            timeout: Duration::from_secs(params.timeout_s.max(1)),
            patience: DevicePatience::new(
                params.device_retries,
                Duration::from_millis(params.retry_backoff_ms),
                params.health_polls,
            ),
        })
    }
}

/// `suite` as the query of `POST /suite_family/switch`: every value a string, `target_family`
/// required.
fn suite_query(params: &RunRemoteEpisodesParams, stage: &str) -> Result<Option<Suite>, StageError> {
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
                    "stage `{stage}`: suite.{k} must be a string, number or boolean, got {other}"
                )))
            }
        };
        out.insert(k.clone(), text);
    }
    if !out.contains_key("target_family") {
        return Err(StageError::Input(format!(
            "stage `{stage}`: `suite` needs `target_family` (e.g. knowu_bench)"
        )));
    }
    Ok(Some(out))
}

/// The item's tasks on one leased device: every task × epoch played, the lease told whether
/// the device failed; a device failure is the item's error (see [`give_up`]).
pub async fn play_item(
    setup: &RemoteSetup,
    access: ModelAccess<'_>,
    tasks: &[RemoteTask],
) -> Result<(Vec<Played>, String), StageError> {
    let factory: Box<dyn AgentFactory + '_> = match &setup.llm {
        None => Box::new(Replay::new(replay_actions(&setup.params.actions, tasks))),
        Some(llm) => Box::new(llm.build(access)?),
    };
    let lease = lease::acquire(&setup.params.devices).await;
    let client = DeviceClient::new(lease.url(), &setup.params.device_id, setup.timeout)
        .map(Arc::new)
        .map_err(|e| StageError::Input(format!("stage `{}`: {e}", access.stage)))?;
    let played = match switch_suite(&lease, &client, &setup.patience, setup.suite.clone()).await {
        Ok(()) => play_all(setup, access.variant, tasks, &client, factory.as_ref()).await,
        Err(e) => Err(e),
    };
    // A rejected request says nothing against the device; only failures it may recover from count.
    lease.record(!matches!(&played, Err((_, e)) if e.is_retryable()));
    let url = lease.url().to_string();
    let played = played.map_err(|e| give_up(e, &url, &setup.params))?;
    Ok((played, url))
}

/// Every task × epoch of this item on the leased device.
async fn play_all(
    setup: &RemoteSetup,
    variant: &str,
    tasks: &[RemoteTask],
    client: &Arc<DeviceClient>,
    factory: &dyn AgentFactory,
) -> Result<Vec<Played>, (String, DeviceError)> {
    let params = &setup.params;
    let mut played = Vec::new();
    for task in tasks {
        for epoch in 0..params.epochs {
            let spec = spec(params, variant, task, factory.name(), epoch);
            let mut p = play_remote(client, &setup.patience, factory, &spec)
                .await
                .map_err(|e| (format!("task `{}` epoch {epoch}", task.task_id), e))?;
            let prices = params.llm.as_ref().and_then(|l| l.prices);
            p.run.episode.cost_agent = p.run.episode.agent_usage().cost(prices);
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
    variant: &str,
    task: &RemoteTask,
    agent: String,
    epoch: u32,
) -> RemoteSpec {
    let persona = task.task_id.split_once('@').map(|(_, p)| p.to_string());
    RemoteSpec {
        row: EpisodeRow {
            episode_id: episode_id(&task.task_id, variant, epoch),
            task_id: task.task_id.clone(),
            variant: variant.to_string(),
            epoch,
            persona,
            agent,
            seed: episode_seed(params.seed, &task.task_id, variant, epoch),
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
pub fn remote_tables(
    played: &[Played],
    url: &str,
) -> Result<Vec<(&'static str, DataFrame)>, StageError> {
    let runs: Vec<EpisodeRun> = played.iter().map(|p| p.run.clone()).collect();
    let mut frames = episode_tables(&runs)?;
    if let Some((_, episodes)) = frames.iter_mut().find(|(n, _)| *n == "episodes") {
        add_device_columns(episodes, played, url)?;
    }
    Ok(frames)
}

fn add_device_columns(df: &mut DataFrame, played: &[Played], url: &str) -> Result<(), StageError> {
    let rows: Vec<DeviceColumns> = played
        .iter()
        .map(|p| DeviceColumns {
            device: url.to_string(),
            device_attempts: p.attempts,
            eval_reason: p.eval.as_ref().map(|e| e.reason.clone()),
        })
        .collect();
    for column in DeviceColumns::to_frame(&rows)?.columns() {
        df.with_column(column.clone())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(yaml: serde_json::Value) -> RunRemoteEpisodesParams {
        serde_json::from_value(yaml).unwrap()
    }

    #[test]
    fn the_llm_agent_gets_the_stages_model_and_compiled_prompts_once() {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut p = params(serde_json::json!({
            "devices": ["http://127.0.0.1:1"],
            "agent": "llm",
            "seed": 7,
            "llm": {"base_url": "http://127.0.0.1:2/v1", "model": "m", "temperature": 0.0},
            "prompts": "datasets/prompts",
        }));
        let setup = RemoteSetup::new(&p, "remote", &root).unwrap();
        let agent = setup.llm.as_ref().expect("an llm agent");
        assert_eq!(Some(&agent.llm), p.llm.as_ref());
        assert_eq!(agent.max_tools, None);
        p.prompts = "my/prompts".into();
        let e = RemoteSetup::new(&p, "remote", &root)
            .err()
            .expect("no such prompts");
        let e = e.to_string();
        assert!(
            e.contains("stage `remote`") && e.contains("my/prompts"),
            "{e}"
        );
    }
}
