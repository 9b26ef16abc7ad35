//! The loop both honest baselines share: follow the [`Plan`], decide each open field through a
//! [`Policy`] (ask, infer, or leave the app default), call the operation, and when a call fails
//! because a chosen value is not available, surface it to the user and follow the reply — take
//! the alternative they name, or stop and say so — instead of silently substituting.
//!
//! The agent acts only through the environment: it reads a ref field's table with
//! `app.list_<table>` before deciding it, and it learns whether a call worked from the
//! observation the call returns.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::episodes::simulator::is_dont_know;
use crate::world::phone::{Action, AskRecord, Observation, ParamSpec, Status, ToolSpec};
use crate::world::types::display;

use super::super::agent::{ready, Agent, AgentError, AgentFuture, Brief, Turn};
use super::plan::{question, words, OpCall, Plan, PlanStep};
use super::values::{from_reply, mentions};

/// An open field: the plan step it belongs to and the parameter name.
pub type FieldKey = (usize, String);

/// What to do about one open field.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Use this value.
    Set(Value),
    /// Ask the user.
    Ask,
    /// Keep the app default.
    Leave,
    /// Cannot say before the ref field's table has been read.
    NeedRecords,
}

/// How a baseline settles open fields; the rest of the episode is the shared [`PlanAgent`].
pub trait Policy: Send {
    /// Called once with the brief and the plan, before any decision (e.g. to retrieve evidence).
    fn prepare(&mut self, brief: &Brief<'_>, plan: &Plan);

    /// The decision for one open field. `records` are the referenced table's records for a
    /// ref field once read (`None` before, e.g. in the clarification phase).
    fn decide(
        &self,
        key: &FieldKey,
        op: &OpCall,
        p: &ParamSpec,
        records: Option<&[Value]>,
    ) -> Decision;
}

/// How many times one call may be retried after surfacing an unavailable value.
const MAX_SURFACING: u32 = 2;

/// What the last action was, so its observation can be read.
#[derive(Debug, Clone)]
enum Pending {
    Nothing,
    Listing(String),
    Asking(FieldKey),
    Calling(usize),
    Surfacing { key: FieldKey, value: Value },
}

/// A plan-following agent whose field decisions come from a [`Policy`].
pub struct PlanAgent<'a, P> {
    solution: &'a [Value],
    policy: P,
    plan: Option<Plan>,
    tools: std::sync::Arc<[ToolSpec]>,
    records: HashMap<String, Vec<Value>>,
    answers: HashMap<FieldKey, String>,
    asked: HashSet<FieldKey>,
    decided: HashMap<FieldKey, Option<Value>>,
    surfaced: HashMap<usize, u32>,
    step: usize,
    pending: Pending,
    stopped: bool,
}

impl<'a, P: Policy> PlanAgent<'a, P> {
    /// An agent following the plan in `defaults_solution` (see [`Plan`]).
    pub fn new(defaults_solution: &'a [Value], policy: P) -> Self {
        Self {
            solution: defaults_solution,
            policy,
            plan: None,
            tools: std::sync::Arc::new([]),
            records: HashMap::new(),
            answers: HashMap::new(),
            asked: HashSet::new(),
            decided: HashMap::new(),
            surfaced: HashMap::new(),
            step: 0,
            pending: Pending::Nothing,
            stopped: false,
        }
    }

    fn ensure_plan(&mut self, brief: &Brief<'_>) {
        if self.plan.is_none() {
            let plan = Plan::new(self.solution, brief.tools);
            self.policy.prepare(brief, &plan);
            self.tools = brief.tools.clone();
            self.plan = Some(plan);
        }
    }

    fn op(&self, step: usize) -> Option<&OpCall> {
        match self.plan.as_ref()?.steps.get(step)? {
            PlanStep::Op(op) => Some(op),
            PlanStep::Act(_) => None,
        }
    }

    fn spec(&self, tool: &str, name: &str) -> Option<&ParamSpec> {
        let t = self.tools.iter().find(|t| t.name == tool)?;
        t.params.iter().find(|p| p.name == name)
    }

    /// Reads the observation of the previous action.
    fn absorb(&mut self, last: &Observation) -> Option<Action> {
        match std::mem::replace(&mut self.pending, Pending::Nothing) {
            Pending::Nothing => None,
            Pending::Listing(table) => {
                let records = serde_json::from_str::<Value>(&last.text)
                    .ok()
                    .and_then(|v| v.get("records")?.as_array().cloned())
                    .unwrap_or_default();
                self.records.insert(table, records);
                None
            }
            Pending::Asking(key) => {
                self.answers.insert(key, last.text.clone());
                None
            }
            Pending::Calling(step) if last.status == Status::Error => self.surface(step, last),
            Pending::Calling(_) => {
                self.step += 1;
                None
            }
            Pending::Surfacing { key, value } => Some(self.follow(key, value, &last.text)),
        }
    }

    /// A call failed: if the error names a value the call passed, ask about it; otherwise give
    /// the step up.
    fn surface(&mut self, step: usize, last: &Observation) -> Option<Action> {
        let culprit = self
            .call_args(step)
            .and_then(|args| culprit(&args, &last.text));
        let tries = self.surfaced.entry(step).or_default();
        match culprit {
            Some((name, value)) if *tries < MAX_SURFACING => {
                *tries += 1;
                let op = self.op(step)?;
                let field = words(&name);
                let text = format!(
                    "{}. The {field} {} is not available for \"{}\". Is another {field} okay instead, and which one?",
                    last.text.trim().trim_end_matches('.'),
                    display(&value),
                    op.title
                );
                self.pending = Pending::Surfacing {
                    key: (step, name),
                    value,
                };
                Some(Action::AskUser { text })
            }
            _ => {
                self.step += 1;
                None
            }
        }
    }

    /// The user answered a surfaced unavailability: retry with their alternative, or stop.
    fn follow(&mut self, key: FieldKey, old: Value, reply: &str) -> Action {
        let (step, name) = &key;
        let op = self.op(*step).cloned();
        let spec = op
            .as_ref()
            .and_then(|op| self.spec(&op.tool, name))
            .cloned();
        let records = spec
            .as_ref()
            .and_then(|p| p.refers_to.as_ref())
            .and_then(|t| self.records.get(t))
            .map(Vec::as_slice);
        let alt = spec
            .as_ref()
            .and_then(|p| from_reply(p, reply, records))
            .filter(|v| *v != old);
        // No preference about an optional field the agent chose itself: drop the choice and let
        // the app default apply. A refusal ("no other time") or a required field stops.
        let open = op
            .as_ref()
            .is_some_and(|o| o.open.iter().any(|p| &p.name == name));
        let fallback = match alt {
            Some(v) => Some(Some(v)),
            None if open && is_dont_know(&reply.to_lowercase()) => Some(None),
            None => None,
        };
        match (fallback, op) {
            (Some(v), Some(op)) => {
                self.decided.insert(key.clone(), v);
                let args = self.call_args(*step).unwrap_or_default();
                self.pending = Pending::Calling(*step);
                Action::Call {
                    tool: op.tool,
                    args,
                }
            }
            (_, op) => {
                self.stopped = true;
                let title = op.map_or_else(String::new, |o| o.title.to_lowercase());
                Action::Answer {
                    text: format!(
                        "The {} {} is not available, so I didn't {title} — nothing was done.",
                        words(name),
                        display(&old)
                    ),
                }
            }
        }
    }

    /// The arguments of a step's call with every decision made so far.
    fn call_args(&self, step: usize) -> Option<Map<String, Value>> {
        let op = self.op(step)?;
        let mut args = op.args.clone();
        for p in &op.open {
            if let Some(Some(v)) = self.decided.get(&(step, p.name.clone())) {
                args.insert(p.name.clone(), v.clone());
            }
        }
        Some(args)
    }

    /// The next action for the current step, deciding fields as far as possible.
    fn advance(&mut self) -> Action {
        loop {
            if self.stopped {
                return Action::Finish;
            }
            let Some(step) = self
                .plan
                .as_ref()
                .and_then(|p| p.steps.get(self.step))
                .cloned()
            else {
                return Action::Finish;
            };
            match step {
                PlanStep::Act(a) => {
                    self.step += 1;
                    return a;
                }
                PlanStep::Op(op) => match self.next_for_op(&op) {
                    Some(a) => return a,
                    None => continue,
                },
            }
        }
    }

    /// Reads a table, asks a question, or calls the operation.
    fn next_for_op(&mut self, op: &OpCall) -> Option<Action> {
        let step = self.step;
        for p in &op.open {
            if let Some(table) = &p.refers_to {
                if !self.records.contains_key(table) {
                    self.pending = Pending::Listing(table.clone());
                    return Some(list_call(table));
                }
            }
        }
        for p in &op.open {
            let key = (step, p.name.clone());
            if self.decided.contains_key(&key) {
                continue;
            }
            let records = p
                .refers_to
                .as_ref()
                .and_then(|t| self.records.get(t))
                .map(Vec::as_slice);
            let decision = match self.answers.get(&key) {
                Some(reply) => from_reply(p, reply, records).map_or(Decision::Leave, Decision::Set),
                None if self.asked.contains(&key) => Decision::Leave,
                None => self.policy.decide(&key, op, p, records),
            };
            match decision {
                Decision::Set(v) => {
                    self.decided.insert(key, Some(v));
                }
                Decision::Leave | Decision::NeedRecords => {
                    self.decided.insert(key, None);
                }
                Decision::Ask => {
                    self.asked.insert(key.clone());
                    self.pending = Pending::Asking(key);
                    return Some(Action::AskUser {
                        text: question(op, p),
                    });
                }
            }
        }
        let args = self.call_args(step)?;
        self.pending = Pending::Calling(step);
        Some(Action::Call {
            tool: op.tool.clone(),
            args,
        })
    }
}

/// `app.table` → the `app.list_table` call that reads up to 100 of its records.
fn list_call(table: &str) -> Action {
    let tool = match table.split_once('.') {
        Some((app, t)) => format!("{app}.list_{t}"),
        None => format!("list_{table}"),
    };
    let mut args = Map::new();
    args.insert("limit".into(), Value::from(100));
    Action::Call { tool, args }
}

/// The argument whose value an error message names (the longest such value, so `19:30` wins
/// over `2`); values shorter than three characters are too ambiguous to blame.
fn culprit(args: &Map<String, Value>, error: &str) -> Option<(String, Value)> {
    let lower = error.to_lowercase();
    args.iter()
        .map(|(k, v)| (k, v, display(v).to_lowercase()))
        .filter(|(_, _, d)| d.chars().count() >= 3 && mentions(&lower, d))
        .max_by_key(|(_, _, d)| d.len())
        .map(|(k, v, _)| (k.clone(), v.clone()))
}

impl<P: Policy> Agent for PlanAgent<'_, P> {
    fn clarify<'a>(&'a mut self, brief: &'a Brief<'a>) -> AgentFuture<'a, Turn<Vec<String>>> {
        self.ensure_plan(brief);
        let Some(plan) = &self.plan else {
            return ready(Ok(Turn::plain(Vec::new())));
        };
        let mut questions = Vec::new();
        for (step, op, p) in plan.open_fields() {
            let key = (step, p.name.clone());
            if self.policy.decide(&key, op, p, None) == Decision::Ask {
                questions.push(question(op, p));
                self.asked.insert(key);
            }
        }
        ready(Ok(Turn::plain(questions)))
    }

    fn start(&mut self, brief: &Brief<'_>, clarifications: &[AskRecord]) -> Result<(), AgentError> {
        self.ensure_plan(brief);
        let Some(plan) = &self.plan else {
            return Ok(());
        };
        for (step, op, p) in plan.open_fields() {
            let q = question(op, p);
            if let Some(rec) = clarifications.iter().find(|r| r.question == q) {
                self.answers
                    .insert((step, p.name.clone()), rec.reply.clone());
            }
        }
        Ok(())
    }

    fn next<'a>(&'a mut self, last: &'a Observation) -> AgentFuture<'a, Turn> {
        let action = match self.absorb(last) {
            Some(a) => a,
            None => self.advance(),
        };
        ready(Ok(Turn::plain(action)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_culprit_is_the_longest_argument_value_the_error_names() {
        let args = json!({"restaurant": "baan-thai", "time": "19:30", "party_size": 2})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let c = culprit(&args, "Baan Thai has no table at 19:30 on 2025-10-02");
        assert_eq!(c, Some(("time".to_string(), json!("19:30"))));
        let gone = culprit(&args, "dinespot.restaurants has no record \"baan-thai\"");
        assert_eq!(gone.map(|c| c.0), Some("restaurant".to_string()));
        assert_eq!(culprit(&args, "quantity must be at least 1"), None);
    }
}
