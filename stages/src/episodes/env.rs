//! Where an episode's actions land. The simulated [`Phone`] is the default; a remote device
//! (KnowU-Bench / MobileWorld env server) implements the same trait. `ask_user` never reaches
//! the environment's own user: the runner asks the simulator and hands the reply over with
//! [`Environment::ask`], so the same recorded replies can be replayed later by judges.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use crate::world::phone::{
    Action, AskUser, EpisodeConfig, Observation, OverrideError, Phone, ToolSpec,
};
use crate::world::World;

/// One step's observation, still to come: a remote device answers over the network (the
/// simulated phone's are ready at once), and a boxed future keeps [`Environment`] dyn-compatible.
pub type StepFuture<'a> = Pin<Box<dyn Future<Output = Observation> + Send + 'a>>;

/// An environment one episode runs in (`Send`: an episode awaiting its model may resume on
/// another thread of the runtime).
pub trait Environment: Send {
    /// What the agent sees before its first action.
    fn observe(&self) -> Observation;
    /// The tools the agent may call (empty for GUI-only environments).
    fn tools(&self) -> Arc<[ToolSpec]>;
    /// The environment's clock, as text.
    fn now(&self) -> String;
    /// Performs one non-`ask_user` action.
    fn step<'a>(&'a mut self, action: &'a Action) -> StepFuture<'a>;
    /// Records an `ask_user` exchange whose reply the simulator already produced.
    fn ask(&mut self, question: &str, reply: &str) -> Observation;
    /// Whether the episode has ended (the agent finished).
    fn finished(&self) -> bool;
    /// The final state's difference from the initial state, as JSON (null when the environment
    /// cannot say, e.g. a remote device).
    fn diff(&self) -> serde_json::Value;
}

/// Replies queued by the runner (or by a judge replaying recorded steps), handed to the phone
/// when it forwards `ask_user`.
#[derive(Clone, Default)]
pub struct QueuedReplies(Arc<Mutex<VecDeque<String>>>);

impl QueuedReplies {
    fn queue(&self) -> std::sync::MutexGuard<'_, VecDeque<String>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues the reply the next question gets.
    pub fn push(&self, reply: &str) {
        self.queue().push_back(reply.to_string());
    }
}

impl AskUser for QueuedReplies {
    fn ask(&mut self, _question: &str) -> String {
        self.queue()
            .pop_front()
            .unwrap_or_else(|| super::simulator::DONT_KNOW.to_string())
    }
}

/// The simulated phone as an [`Environment`].
pub struct PhoneEnv<'w> {
    /// The phone; judges read its final state.
    pub phone: Phone<'w>,
    replies: QueuedReplies,
}

impl<'w> PhoneEnv<'w> {
    /// Starts a phone episode on `world`.
    pub fn new(world: &'w World, config: EpisodeConfig) -> Result<Self, OverrideError> {
        let replies = QueuedReplies::default();
        let phone = Phone::new(world, config, Box::new(replies.clone()))?;
        Ok(Self { phone, replies })
    }

    /// Performs one non-`ask_user` action at once (the phone is in memory).
    pub fn step(&mut self, action: &Action) -> Observation {
        self.phone.step(action)
    }
}

impl Environment for PhoneEnv<'_> {
    fn observe(&self) -> Observation {
        self.phone.observe()
    }

    fn tools(&self) -> Arc<[ToolSpec]> {
        self.phone.tools()
    }

    fn now(&self) -> String {
        self.phone.clock().to_string()
    }

    fn step<'a>(&'a mut self, action: &'a Action) -> StepFuture<'a> {
        Box::pin(std::future::ready(self.phone.step(action)))
    }

    fn ask(&mut self, question: &str, reply: &str) -> Observation {
        self.replies.push(reply);
        self.phone.step(&Action::AskUser {
            text: question.to_string(),
        })
    }

    fn finished(&self) -> bool {
        self.phone.is_finished()
    }

    fn diff(&self) -> serde_json::Value {
        serde_json::to_value(self.phone.diff()).unwrap_or_default()
    }
}
