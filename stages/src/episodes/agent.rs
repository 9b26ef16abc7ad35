//! The agent side of an episode. An agent is built per episode (so it may read the task bundle
//! when it is a reference bound such as `oracle`), is told the instruction, the tools and the
//! history events the variant exposes, may ask clarifying questions before acting, and then
//! returns one action per step. Model-backed agents report token usage per turn.
//!
//! The turns that may wait on a model ([`Agent::clarify`], [`Agent::next`],
//! [`super::Simulator::reply`]) return boxed futures ([`AgentFuture`]), so an episode in flight
//! is a task awaiting its endpoint, not an OS thread; the traits stay dyn-compatible. Agents
//! that decide without a model return ready futures ([`ready`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use thiserror::Error;

use super::retrieval::IndexCache;
use crate::llm::{LlmError, Usage};
use crate::tasks::TaskBundle;
use crate::world::history::HistoryEvent;
use crate::world::phone::{Action, ActionSpace, AskRecord, Observation, ToolSpec};

/// What an agent knows when the episode starts. Honest agents read only this; the task bundle
/// is handed to the factory for reference agents (`oracle`, `defaults`) and kept out of here.
pub struct Brief<'a> {
    /// What the user said.
    pub instruction: &'a str,
    /// GUI screens or tool calls.
    pub space: ActionSpace,
    /// The phone's tools (tools mode; also a description of the apps in GUI mode).
    pub tools: &'a Arc<[ToolSpec]>,
    /// The history events this variant exposes, in time order.
    pub history: &'a [&'a HistoryEvent],
    /// The phone's clock, as text.
    pub now: &'a str,
    /// The first observation (home screen or tool overview).
    pub observation: &'a Observation,
    /// The episode's repeat index: model-backed agents pass it to the client so repeats of one
    /// task are distinct recorded requests.
    pub epoch: u32,
    /// Where agents that search the history get their index, built once per stage instance.
    pub indexes: &'a IndexCache,
}

/// One agent turn: the action (or why the output could not be parsed), the model's raw output
/// and the tokens it cost.
#[derive(Debug, Clone)]
pub struct Turn<T = Action> {
    /// The parsed decision, or the parse error shown back to the agent.
    pub decision: Result<T, String>,
    /// The model's raw output, when a model produced it.
    pub raw: Option<String>,
    /// Tokens spent on this turn.
    pub usage: Usage,
}

impl<T> Turn<T> {
    /// A turn decided without a model.
    pub fn plain(decision: T) -> Self {
        Self {
            decision: Ok(decision),
            raw: None,
            usage: Usage::default(),
        }
    }
}

/// Why an agent (or simulator) could not take its turn at all; the episode ends with status
/// `error` and this message.
#[derive(Debug, Error)]
pub enum AgentError {
    /// The model endpoint failed after retries, or an offline replay missed.
    #[error(transparent)]
    Llm(#[from] LlmError),
    /// Anything else (bad prompt template, …).
    #[error("{0}")]
    Other(String),
}

/// What an agent's or simulator's turn yields once any model call it makes is answered: a
/// boxed future (so [`Agent`] and [`super::Simulator`] stay dyn-compatible) that is `Send`, so
/// an episode can await on the engine's multi-threaded runtime.
pub type AgentFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, AgentError>> + Send + 'a>>;

/// A turn decided without waiting (CPU-only agents and simulators).
pub fn ready<'a, T: Send + 'a>(result: Result<T, AgentError>) -> AgentFuture<'a, T> {
    Box::pin(std::future::ready(result))
}

/// An agent playing one episode.
pub trait Agent: Send {
    /// Pre-execution clarification (iPrefBench G.5): short questions about details that cannot
    /// be settled, asked before the first action. Empty when none; the default asks nothing.
    fn clarify<'a>(&'a mut self, _brief: &'a Brief<'a>) -> AgentFuture<'a, Turn<Vec<String>>> {
        ready(Ok(Turn::plain(Vec::new())))
    }

    /// Starts the episode, with the answers to any clarification questions. It only reads the
    /// brief (no model call), so it does not wait.
    fn start(&mut self, brief: &Brief<'_>, clarifications: &[AskRecord]) -> Result<(), AgentError>;

    /// The next action, given what the previous action returned (the first observation for
    /// the first step).
    fn next<'a>(&'a mut self, last: &'a Observation) -> AgentFuture<'a, Turn>;
}

/// Builds one agent per episode.
pub trait AgentFactory: Send + Sync {
    /// The name episodes record in the `agent` column (`oracle`, `llm:<model>`, …).
    fn name(&self) -> String;

    /// A fresh agent for `task`, seeded for this episode.
    fn make<'a>(&'a self, task: &'a TaskBundle, seed: u64) -> Box<dyn Agent + 'a>;

    /// How many episodes to play of `task` when the stage asks for `configured` epochs: the
    /// `authored` agent plays one per authored trajectory of the task (none without one).
    fn epochs(&self, _task: &TaskBundle, configured: u32) -> u32 {
        configured
    }

    /// A fresh agent for `task`'s `epoch`-th episode (agents whose episodes differ by epoch,
    /// such as `authored`, override it; the others are [`AgentFactory::make`]).
    fn make_epoch<'a>(
        &'a self,
        task: &'a TaskBundle,
        seed: u64,
        _epoch: u32,
    ) -> Box<dyn Agent + 'a> {
        self.make(task, seed)
    }
}

/// A borrowed factory is a factory: a stage instance's prepared one (the `authored` agent's
/// trajectories, read once) serves every item.
impl<F: AgentFactory + ?Sized> AgentFactory for &F {
    fn name(&self) -> String {
        (**self).name()
    }

    fn make<'a>(&'a self, task: &'a TaskBundle, seed: u64) -> Box<dyn Agent + 'a> {
        (**self).make(task, seed)
    }

    fn epochs(&self, task: &TaskBundle, configured: u32) -> u32 {
        (**self).epochs(task, configured)
    }

    fn make_epoch<'a>(
        &'a self,
        task: &'a TaskBundle,
        seed: u64,
        epoch: u32,
    ) -> Box<dyn Agent + 'a> {
        (**self).make_epoch(task, seed, epoch)
    }
}
