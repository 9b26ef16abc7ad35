//! A remote device as an [`Environment`], and the device's own user agent as the episode's
//! [`Simulator`]. On KnowU-Bench the simulated user lives in the env server (it holds the hidden
//! profile), so `ask_user` is forwarded there by [`DeviceUser`] and the reply comes back as the
//! step's `result`; [`RemoteEnv::ask`] then only records the exchange. A device failure mid-episode
//! cannot be shown to the agent as an observation (the device state is gone), so it is kept in
//! the shared session, the episode ends, and the caller retries from a fresh task init.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::episodes::agent::{AgentError, AgentFuture};
use crate::episodes::env::{Environment, StepFuture};
use crate::episodes::simulator::{Simulator, UserReply};
use crate::world::phone::{Action, Observation, Status, ToolSpec};

use super::actions::{ends_episode, to_device};
use super::client::DeviceClient;
use super::error::DeviceError;
use super::screen::{render, Element};

/// What the environment and the simulator of one episode share: the device and what the
/// episode has seen of it. The state's lock is never held across a request.
struct Session {
    client: Arc<DeviceClient>,
    read_screen: bool,
    state: Mutex<State>,
}

/// The episode's view of the device.
#[derive(Default)]
struct State {
    screen: Vec<Element>,
    failure: Option<DeviceError>,
    finished: bool,
}

impl Session {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends device actions in order; the text of their results.
    async fn send(&self, actions: &[serde_json::Value]) -> Result<String, DeviceError> {
        let mut results = Vec::new();
        for a in actions {
            results.push(self.client.step(a).await?);
        }
        Ok(results.join("\n"))
    }

    /// Reads the screen again (when observations show it).
    async fn refresh(&self) -> Result<(), DeviceError> {
        if self.read_screen {
            let screen = self.client.screen().await?;
            self.state().screen = screen;
        }
        Ok(())
    }

    fn observation(&self, result: &str) -> String {
        if !self.read_screen {
            return format!("result: {result}");
        }
        format!(
            "result: {result}\nscreen:\n{}",
            render(&self.state().screen)
        )
    }

    /// Records a failure the episode cannot continue after.
    fn fail(&self, e: DeviceError) -> Observation {
        let text = format!("the device failed: {e}");
        let mut state = self.state();
        state.failure = Some(e);
        state.finished = true;
        Observation {
            status: Status::Done,
            text,
        }
    }

    /// One non-`ask_user` action: its device actions, the screen after them, the observation.
    async fn step(&self, action: &Action) -> Observation {
        let device_actions = match to_device(action, &self.state().screen) {
            Ok(a) => a,
            Err(why) => return Observation::error(why),
        };
        let sent = match self.send(&device_actions).await {
            Ok(r) => self.refresh().await.map(|()| r),
            Err(e) => Err(e),
        };
        let result = match sent {
            Ok(r) => r,
            Err(DeviceError::Rejected { detail, .. }) => return Observation::error(detail),
            Err(e) => return self.fail(e),
        };
        if ends_episode(action) {
            self.state().finished = true;
            return Observation {
                status: Status::Done,
                text: format!("result: {result}"),
            };
        }
        Observation::ok(self.observation(&result))
    }
}

/// One episode on a remote device whose task is already initialized.
pub struct RemoteEnv {
    session: Arc<Session>,
    first: Observation,
}

impl RemoteEnv {
    /// Starts on the device's current screen (read with `GET /a11y` when `read_screen`).
    pub async fn new(client: Arc<DeviceClient>, read_screen: bool) -> Result<Self, DeviceError> {
        let session = Session {
            client,
            read_screen,
            state: Mutex::default(),
        };
        session.refresh().await?;
        let first = Observation::ok(session.observation("task initialized"));
        Ok(Self {
            session: Arc::new(session),
            first,
        })
    }

    /// The simulator that forwards `ask_user` to this device.
    pub fn user(&self) -> DeviceUser {
        DeviceUser {
            session: self.session.clone(),
        }
    }

    /// The device failure that ended the episode, if one did (taken, so it is reported once).
    pub fn take_failure(&self) -> Option<DeviceError> {
        self.session.state().failure.take()
    }
}

impl Environment for RemoteEnv {
    fn observe(&self) -> Observation {
        self.first.clone()
    }

    fn tools(&self) -> std::sync::Arc<[ToolSpec]> {
        std::sync::Arc::new([])
    }

    fn now(&self) -> String {
        "(the device's clock)".into()
    }

    fn step<'a>(&'a mut self, action: &'a Action) -> StepFuture<'a> {
        Box::pin(self.session.step(action))
    }

    fn ask(&mut self, _question: &str, reply: &str) -> Observation {
        // DeviceUser already sent the question to the device; the reply is its result.
        Observation::ok(reply.to_string())
    }

    fn finished(&self) -> bool {
        self.session.state().finished
    }

    fn diff(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}

/// Answers `ask_user` by sending it to the device (`{"action_type": "ask_user", "text": …}`),
/// whose user agent replies; no disclosure audit is possible (the profile stays on the device).
pub struct DeviceUser {
    session: Arc<Session>,
}

impl Simulator for DeviceUser {
    fn reply<'a>(&'a mut self, question: &'a str) -> AgentFuture<'a, UserReply> {
        Box::pin(async move {
            let ask = serde_json::json!({"action_type": "ask_user", "text": question});
            match self.session.send(std::slice::from_ref(&ask)).await {
                Ok(text) => Ok(UserReply {
                    text,
                    ..UserReply::default()
                }),
                Err(e) => {
                    let msg = e.to_string();
                    self.session.fail(e);
                    Err(AgentError::Other(msg))
                }
            }
        })
    }
}
