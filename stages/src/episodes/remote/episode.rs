//! One task on one device, start to finish, surviving device failures: wait for `/health`,
//! `POST /task/init`, play the episode with a fresh agent, `/task/eval`, `/task/tear_down`. When
//! the device fails in the middle (unreachable, 5xx, unhealthy), the half-played episode is
//! discarded and the task is played again from a fresh init, up to the policy's retries; only
//! the attempt that finished is recorded.
//!
//! Everything here is async, as in `run_episodes`: the device's requests and an `llm` agent's
//! run as tasks on the model client's I/O runtime, and the waits between attempts and `/health`
//! polls are the engine's [`prefflow_engine::retry::RetryPolicy`] sleeps on the async runtime.

use std::sync::Arc;

use prefflow_engine::retry::Retry;

use crate::episodes::agent::AgentFactory;
use crate::episodes::record::{EpisodeRow, EpisodeRun};
use crate::episodes::runner::{run_episode, EpisodeSpec};
use crate::tasks::{Task, TaskBundle};
use crate::world::phone::ActionSpace;

use super::client::{DeviceClient, DevicePatience, Evaluation};
use super::env::RemoteEnv;
use super::error::DeviceError;

/// What identifies one remote episode.
#[derive(Debug, Clone)]
pub struct RemoteSpec {
    /// The row identity (episode_id, task_id, variant, epoch, persona, agent, seed).
    pub row: EpisodeRow,
    /// The instruction; `None` asks the device (`GET /task/goal`).
    pub goal: Option<String>,
    /// Step bound.
    pub max_steps: u32,
    /// Whether observations include the screen (`GET /a11y`).
    pub read_screen: bool,
}

/// A finished remote episode.
#[derive(Debug, Clone)]
pub struct Played {
    /// Its rows; `episode.score` is the device's score.
    pub run: EpisodeRun,
    /// The device's evaluation (none when the agent itself failed).
    pub eval: Option<Evaluation>,
    /// Attempts used (1 when the device never failed).
    pub attempts: u32,
}

/// Plays `spec` on `client`, replaying it after device failures per `patience`. The error is
/// the last device failure, or the first one that retrying cannot fix (a rejected request).
pub async fn play_remote(
    client: &Arc<DeviceClient>,
    patience: &DevicePatience,
    factory: &dyn AgentFactory,
    spec: &RemoteSpec,
) -> Result<Played, DeviceError> {
    let task = spec.row.task_id.as_str();
    let attempt = |n: u32| async move {
        if n > 0 {
            tracing::warn!(
                "task `{task}` attempt {}: re-checking /health and re-initializing",
                n + 1
            );
        }
        patience.wait_healthy(client).await?;
        play_once(client, factory, spec).await
    };
    let classify = |e: &DeviceError| {
        if e.is_retryable() {
            tracing::warn!("task `{task}`: {e}");
            Retry::After(None)
        } else {
            Retry::No
        }
    };
    match patience.replays.run(attempt, classify).await {
        Ok(((run, eval), attempts)) => Ok(Played {
            run,
            eval,
            attempts,
        }),
        Err(gave_up) => Err(gave_up.error),
    }
}

async fn play_once(
    client: &Arc<DeviceClient>,
    factory: &dyn AgentFactory,
    spec: &RemoteSpec,
) -> Result<(EpisodeRun, Option<Evaluation>), DeviceError> {
    let task_id = spec.row.task_id.as_str();
    client.init_task(task_id).await?;
    let goal = match &spec.goal {
        Some(g) => g.clone(),
        None => client.goal(task_id).await?,
    };
    let mut env = RemoteEnv::new(client.clone(), spec.read_screen).await?;
    let mut user = env.user();
    let bundle = bundle(task_id, &goal, spec.row.persona.as_deref());
    let mut agent = factory.make(&bundle, spec.row.seed);
    let episode = EpisodeSpec {
        indexes: Default::default(),
        row: spec.row.clone(),
        instruction: goal,
        space: ActionSpace::Gui,
        max_steps: spec.max_steps,
        clarify: false,
    };
    let mut run = run_episode(&mut env, agent.as_mut(), &mut user, &[], episode).await;
    if let Some(e) = env.take_failure() {
        return Err(e);
    }
    let eval = if run.episode.status == "error" {
        None
    } else {
        Some(client.eval(task_id).await?)
    };
    run.episode.score = eval.as_ref().map(|e| e.score);
    if let Err(e) = client.tear_down(task_id).await {
        tracing::warn!("task `{task_id}`: tear down failed ({e}); the next init resets the device");
    }
    Ok((run, eval))
}

/// What an agent factory gets for a remote task: only the id, instruction and persona (the
/// device holds everything else), so reference agents that need solutions have none to read.
pub fn bundle(task_id: &str, goal: &str, persona: Option<&str>) -> TaskBundle {
    TaskBundle {
        task: Task {
            task_id: task_id.into(),
            persona: persona.unwrap_or_default().into(),
            template: task_id.split('@').next().unwrap_or(task_id).into(),
            instruction: goal.into(),
            apps: Vec::new(),
            category: String::new(),
            task_type: Default::default(),
            perturbation: Default::default(),
            cross_app: false,
            domain: String::new(),
            offered_apps: Vec::new(),
            overrides: Default::default(),
            hidden_context: Default::default(),
            reference_solution: Vec::new(),
            defaults_solution: Vec::new(),
            lambda: None,
        },
        slots: Vec::new(),
        criteria: Vec::new(),
    }
}
