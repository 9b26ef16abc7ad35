//! Agents that play a fixed action list: `oracle` plays the task's reference solution (its
//! sanity bound: it should pass every criterion), `defaults` plays the defaults-only solution
//! (completes the operation, never personalizes, never asks). Both read the task bundle, which
//! is why they are bounds and not baselines.

use std::collections::VecDeque;

use serde_json::Value;

use crate::tasks::eval::resolve_json;
use crate::tasks::TaskBundle;
use crate::world::phone::{Action, AskRecord, Observation};

use super::super::agent::{ready, Agent, AgentError, AgentFactory, AgentFuture, Brief, Turn};

/// Plays actions in order, then finishes.
pub struct ScriptedAgent {
    actions: VecDeque<Result<Action, String>>,
}

impl ScriptedAgent {
    /// An agent that plays `steps` (phone actions as JSON, `$slot` references resolved from the
    /// bundle's slots) and then finishes.
    pub fn from_solution(steps: &[Value], task: &TaskBundle) -> Self {
        let actions = steps
            .iter()
            .map(|raw| {
                let resolved = resolve_json(raw, &task.slots)?;
                serde_json::from_value::<Action>(resolved).map_err(|e| e.to_string())
            })
            .collect();
        Self { actions }
    }

    /// An agent that plays exactly these actions and then finishes.
    pub fn new(actions: Vec<Action>) -> Self {
        Self {
            actions: actions.into_iter().map(Ok).collect(),
        }
    }
}

impl Agent for ScriptedAgent {
    fn start(&mut self, _: &Brief<'_>, _: &[AskRecord]) -> Result<(), AgentError> {
        Ok(())
    }

    fn next<'a>(&'a mut self, _last: &'a Observation) -> AgentFuture<'a, Turn> {
        ready(Ok(match self.actions.pop_front() {
            Some(Ok(a)) => Turn::plain(a),
            Some(Err(e)) => Turn {
                decision: Err(e),
                raw: None,
                usage: Default::default(),
            },
            None => Turn::plain(Action::Finish),
        }))
    }
}

/// `oracle`: the reference solution.
pub struct Oracle;

impl AgentFactory for Oracle {
    fn name(&self) -> String {
        "oracle".into()
    }

    fn make<'a>(&'a self, task: &'a TaskBundle, _seed: u64) -> Box<dyn Agent + 'a> {
        Box::new(ScriptedAgent::from_solution(
            &task.task.reference_solution,
            task,
        ))
    }
}

/// `defaults`: the defaults-only solution.
pub struct Defaults;

impl AgentFactory for Defaults {
    fn name(&self) -> String {
        "defaults".into()
    }

    fn make<'a>(&'a self, task: &'a TaskBundle, _seed: u64) -> Box<dyn Agent + 'a> {
        Box::new(ScriptedAgent::from_solution(
            &task.task.defaults_solution,
            task,
        ))
    }
}
