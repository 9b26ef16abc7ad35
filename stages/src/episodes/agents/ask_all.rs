//! `ask_all`: the asking extreme of the honest baselines. It asks the user about every open
//! field of its plan (one question each, naming the field, its description and its options),
//! then acts on the answers: an option or record the reply names, a number, a time; "I don't
//! know." keeps the app default. Expected profile (iPrefBench §5): high recall on ask-only
//! details, low precision (most questions are about things the user cannot or need not say),
//! and no use of history at all.

use serde_json::Value;

use crate::tasks::TaskBundle;
use crate::world::phone::ParamSpec;

use super::super::agent::{Agent, AgentFactory, Brief};
use super::driver::{Decision, FieldKey, PlanAgent, Policy};
use super::plan::{OpCall, Plan};

/// Asks about every open field.
pub struct AskAllPolicy;

impl Policy for AskAllPolicy {
    fn prepare(&mut self, _brief: &Brief<'_>, _plan: &Plan) {}

    fn decide(&self, _: &FieldKey, _: &OpCall, _: &ParamSpec, _: Option<&[Value]>) -> Decision {
        Decision::Ask
    }
}

/// The `ask_all` factory. Reads only the task's defaults-only plan (see [`super::plan`]).
pub struct AskAll;

impl AgentFactory for AskAll {
    fn name(&self) -> String {
        "ask_all".into()
    }

    fn make<'a>(&'a self, task: &'a TaskBundle, _seed: u64) -> Box<dyn Agent + 'a> {
        Box::new(PlanAgent::new(&task.task.defaults_solution, AskAllPolicy))
    }
}
