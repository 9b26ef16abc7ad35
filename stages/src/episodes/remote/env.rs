//! A remote device as an [`Environment`], and the device's own user agent as the episode's
//! [`Simulator`]. On KnowU-Bench the simulated user lives in the env server (it holds the hidden
//! profile), so `ask_user` is forwarded there by [`DeviceUser`] and the reply comes back as the
//! step's `result`; [`RemoteEnv::ask`] then only records the exchange. A device failure mid-episode
//! cannot be shown to the agent as an observation (the device state is gone), so it is kept in
//! the shared session, the episode ends, and the caller retries from a fresh task init.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::episodes::agent::{ready, AgentError, AgentFuture};
use crate::episodes::env::Environment;
use crate::episodes::simulator::{Simulator, UserReply};
use crate::world::phone::{Action, Observation, Status, ToolSpec};

use super::actions::{ends_episode, to_device};
use super::client::DeviceClient;
use super::error::DeviceError;
use super::screen::{render, Element};

/// What the environment and the simulator of one episode share.
struct Session {
    client: Arc<DeviceClient>,
    read_screen: bool,
    screen: Vec<Element>,
    failure: Option<DeviceError>,
    finished: bool,
}

impl Session {
    /// Sends device actions in order; the text of their results.
    fn send(&mut self, actions: &[serde_json::Value]) -> Result<String, DeviceError> {
        let mut results = Vec::new();
        for a in actions {
            results.push(self.client.step(a)?);
        }
        Ok(results.join("\n"))
    }

    fn refresh(&mut self) -> Result<(), DeviceError> {
        if self.read_screen {
            self.screen = self.client.screen()?;
        }
        Ok(())
    }

    fn observation(&self, result: &str) -> String {
        if !self.read_screen {
            return format!("result: {result}");
        }
        format!("result: {result}\nscreen:\n{}", render(&self.screen))
    }

    /// Records a failure the episode cannot continue after.
    fn fail(&mut self, e: DeviceError) -> Observation {
        let text = format!("the device failed: {e}");
        self.failure = Some(e);
        self.finished = true;
        Observation {
            status: Status::Done,
            text,
        }
    }
}

/// One episode on a remote device whose task is already initialized.
pub struct RemoteEnv {
    session: Arc<Mutex<Session>>,
    first: Observation,
}

impl RemoteEnv {
    /// Starts on the device's current screen (read with `GET /a11y` when `read_screen`).
    pub fn new(client: Arc<DeviceClient>, read_screen: bool) -> Result<Self, DeviceError> {
        let mut session = Session {
            client,
            read_screen,
            screen: Vec::new(),
            failure: None,
            finished: false,
        };
        session.refresh()?;
        let first = Observation::ok(session.observation("task initialized"));
        Ok(Self {
            session: Arc::new(Mutex::new(session)),
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
        lock(&self.session).failure.take()
    }
}

/// The session, whoever panicked while holding it (its fields stay meaningful).
fn lock(session: &Mutex<Session>) -> MutexGuard<'_, Session> {
    session.lock().unwrap_or_else(|p| p.into_inner())
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

    fn step(&mut self, action: &Action) -> Observation {
        let mut s = lock(&self.session);
        let device_actions = match to_device(action, &s.screen) {
            Ok(a) => a,
            Err(why) => return Observation::error(why),
        };
        let result = match s
            .send(&device_actions)
            .and_then(|r| s.refresh().map(|()| r))
        {
            Ok(r) => r,
            Err(DeviceError::Rejected { detail, .. }) => return Observation::error(detail),
            Err(e) => return s.fail(e),
        };
        if ends_episode(action) {
            s.finished = true;
            return Observation {
                status: Status::Done,
                text: format!("result: {result}"),
            };
        }
        Observation::ok(s.observation(&result))
    }

    fn ask(&mut self, _question: &str, reply: &str) -> Observation {
        // DeviceUser already sent the question to the device; the reply is its result.
        Observation::ok(reply.to_string())
    }

    fn finished(&self) -> bool {
        lock(&self.session).finished
    }

    fn diff(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}

/// Answers `ask_user` by sending it to the device (`{"action_type": "ask_user", "text": …}`),
/// whose user agent replies; no disclosure audit is possible (the profile stays on the device).
pub struct DeviceUser {
    session: Arc<Mutex<Session>>,
}

impl Simulator for DeviceUser {
    /// Asks the device at once (the device client is blocking; see `run_remote_episodes`).
    fn reply<'a>(&'a mut self, question: &'a str) -> AgentFuture<'a, UserReply> {
        let mut s = lock(&self.session);
        let ask = serde_json::json!({"action_type": "ask_user", "text": question});
        ready(match s.send(std::slice::from_ref(&ask)) {
            Ok(text) => Ok(UserReply {
                text,
                ..UserReply::default()
            }),
            Err(e) => {
                let msg = e.to_string();
                s.fail(e);
                Err(AgentError::Other(msg))
            }
        })
    }
}
