//! One task on one device, start to finish, surviving device failures: wait for `/health`,
//! `POST /task/init`, play the episode with a fresh agent, `/task/eval`, `/task/tear_down`. When
//! the device fails in the middle (unreachable, 5xx, unhealthy), the half-played episode is
//! discarded and the task is played again from a fresh init, up to the policy's retries; only
//! the attempt that finished is recorded.
//!
//! The device client is blocking (`reqwest::blocking`, which refuses to run inside an async
//! runtime), so remote episodes run on the kind's blocking thread — one per leased device, and
//! devices are few — and drive the async episode loop there with [`block_on`]; an `llm` agent's
//! requests still run on the model client's I/O runtime.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use crate::episodes::agent::AgentFactory;
use crate::episodes::record::{EpisodeRow, EpisodeRun};
use crate::episodes::runner::{run_episode, EpisodeSpec};
use crate::tasks::{Task, TaskBundle};
use crate::world::phone::ActionSpace;

use super::client::{DeviceClient, Evaluation, RetryPolicy};
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

/// Plays `spec` on `client`, retrying device failures per `policy`. The error is the last
/// device failure, or the first one that retrying cannot fix (a rejected request).
pub fn play_remote(
    client: &Arc<DeviceClient>,
    policy: &RetryPolicy,
    factory: &dyn AgentFactory,
    spec: &RemoteSpec,
) -> Result<Played, DeviceError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let outcome = policy
            .wait_healthy(client)
            .and_then(|()| play_once(client, factory, spec));
        match outcome {
            Ok((run, eval)) => {
                return Ok(Played {
                    run,
                    eval,
                    attempts: attempt,
                })
            }
            Err(e) if e.is_retryable() && attempt <= policy.retries => {
                tracing::warn!(
                    "task `{}` attempt {attempt}: {e}; re-checking /health and re-initializing",
                    spec.row.task_id
                );
            }
            Err(e) => return Err(e),
        }
    }
}

fn play_once(
    client: &Arc<DeviceClient>,
    factory: &dyn AgentFactory,
    spec: &RemoteSpec,
) -> Result<(EpisodeRun, Option<Evaluation>), DeviceError> {
    let task_id = spec.row.task_id.as_str();
    client.init_task(task_id)?;
    let goal = match &spec.goal {
        Some(g) => g.clone(),
        None => client.goal(task_id)?,
    };
    let mut env = RemoteEnv::new(client.clone(), spec.read_screen)?;
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
    let mut run = block_on(run_episode(
        &mut env,
        agent.as_mut(),
        &mut user,
        &[],
        episode,
    ));
    if let Some(e) = env.take_failure() {
        return Err(e);
    }
    let eval = if run.episode.status == "error" {
        None
    } else {
        Some(client.eval(task_id)?)
    };
    run.episode.score = eval.as_ref().map(|e| e.score);
    if let Err(e) = client.tear_down(task_id) {
        tracing::warn!("task `{task_id}`: tear down failed ({e}); the next init resets the device");
    }
    Ok((run, eval))
}

/// Runs `future` to completion on the calling thread, parking it while the future waits (no
/// runtime is entered, so the blocking device client may be called inside). Must not be called
/// from inside an async task.
fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(out) => return out,
            Poll::Pending => std::thread::park(),
        }
    }
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
