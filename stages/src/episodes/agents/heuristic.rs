//! `heuristic`: a real non-LLM baseline. For each open field of its plan it retrieves the
//! history events most relevant to the field (BM25 over the events the variant exposed, query =
//! field name, description, options, operation and instruction), keeps the best [`TOP_K`] that
//! mention some value of the field — an enum option, a record of a ref field's table by name, a
//! clock time for time fields, a number in an event about the field for int fields, the field
//! itself for flags — and counts how many of them mention each value:
//!
//! - the instruction names exactly one candidate → use it (the user said so);
//! - one value has at least two agreeing events and twice the runner-up's → infer it;
//! - no evidence at all → ask the user (as `ask_all` would);
//! - evidence that disagrees → keep the app default (a guess would be as likely wrong, and a
//!   question about a detail the history already covers is one the user should not need).
//!
//! With `history: none` it has no evidence and asks about everything; with more exposure it finds
//! more evidence and infers more — the inferable-slot score rises with exposure. Unavailable
//! options are surfaced by the shared driver (see [`super::driver`]).

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::episodes::retrieval::Bm25;
use crate::tasks::TaskBundle;
use crate::world::phone::ParamSpec;

use super::super::agent::{Agent, AgentFactory, Brief};
use super::driver::{Decision, FieldKey, PlanAgent, Policy};
use super::plan::{words, OpCall, Plan};
use super::values::{candidates, mentioned, mentions, numbers, times, Candidate};

/// Events retrieved per field. The history *exposure* (what the ablation sweeps) bounds what
/// these come from.
pub const TOP_K: usize = 10;

/// How many ranked events per evidence slot are kept to find the `k` that carry a value.
const RANKED_PER_K: usize = 20;

/// Events that must agree before a value is inferred: one mention is an anecdote.
const MIN_VOTES: usize = 2;

/// Infers from retrieved evidence; asks when there is none.
pub struct HeuristicPolicy {
    k: usize,
    instruction: String,
    /// Lower-cased text of the events retrieved for each open field, best first.
    evidence: HashMap<FieldKey, Vec<String>>,
}

impl HeuristicPolicy {
    /// A policy retrieving `k` events per field.
    pub fn new(k: usize) -> Self {
        Self {
            k,
            instruction: String::new(),
            evidence: HashMap::new(),
        }
    }
}

/// The retrieval query for a field.
fn query(op: &OpCall, p: &ParamSpec, instruction: &str) -> String {
    let app = op.tool.split('.').next().unwrap_or_default();
    let options = p.options.as_deref().unwrap_or_default().join(" ");
    format!(
        "{} {} {options} {app} {} {instruction}",
        words(&p.name),
        p.description,
        op.title
    )
}

/// The values one event mentions for the field (each once).
fn values_in(text: &str, p: &ParamSpec, field: &str, cands: &[Candidate]) -> Vec<Value> {
    let about_field = || {
        field
            .split(' ')
            .filter(|w| w.len() >= 3)
            .any(|w| text.contains(w))
    };
    let mut out: Vec<Value> = match p.type_name {
        "time" => times(text).into_iter().map(Value::String).collect(),
        "int" if about_field() => numbers(text).into_iter().map(|n| json!(n)).collect(),
        "int" => Vec::new(),
        "bool" if mentions(text, field) => {
            let negated = ["no ", "without ", "skip ", "skipped "]
                .iter()
                .any(|neg| text.contains(&format!("{neg}{field}")));
            vec![json!(!negated)]
        }
        "bool" => Vec::new(),
        _ => mentioned(text, cands)
            .into_iter()
            .map(|c| c.value.clone())
            .collect(),
    };
    out.dedup();
    out
}

/// Votes per value over the `k` best-ranked events that mention any value of the field (an
/// event about the restaurant but not the time is no evidence about the time): each counts once
/// for every value it mentions.
fn votes(ranked: &[String], k: usize, p: &ParamSpec, cands: &[Candidate]) -> Vec<(Value, usize)> {
    let field = words(&p.name);
    let mut tally: Vec<(Value, usize)> = Vec::new();
    let evidence = ranked
        .iter()
        .map(|text| values_in(text, p, &field, cands))
        .filter(|vals| !vals.is_empty())
        .take(k);
    for v in evidence.flatten() {
        match tally.iter_mut().find(|(x, _)| *x == v) {
            Some((_, n)) => *n += 1,
            None => tally.push((v, 1)),
        }
    }
    tally.sort_by_key(|t| std::cmp::Reverse(t.1));
    tally
}

/// The value the votes agree on: the leader has at least twice the runner-up's votes.
fn agreed(tally: &[(Value, usize)]) -> Option<Value> {
    let (best, n) = tally.first()?;
    let second = tally.get(1).map_or(0, |t| t.1);
    (*n >= MIN_VOTES && *n >= 2 * second).then(|| best.clone())
}

impl Policy for HeuristicPolicy {
    fn prepare(&mut self, brief: &Brief<'_>, plan: &Plan) {
        self.instruction = brief.instruction.to_lowercase();
        let index = Bm25::cached(brief.history, brief.indexes);
        for (step, op, p) in plan.open_fields() {
            let texts = index
                .top_k(&query(op, p, brief.instruction), self.k * RANKED_PER_K)
                .iter()
                .map(|e| e.text.to_lowercase())
                .collect();
            self.evidence.insert((step, p.name.clone()), texts);
        }
    }

    fn decide(
        &self,
        key: &FieldKey,
        _op: &OpCall,
        p: &ParamSpec,
        records: Option<&[Value]>,
    ) -> Decision {
        if p.type_name == "ref" && records.is_none() {
            return Decision::NeedRecords;
        }
        let cands = candidates(p, records);
        if let [said] = mentioned(&self.instruction, &cands)[..] {
            return Decision::Set(said.value.clone());
        }
        let texts = self
            .evidence
            .get(key)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let tally = votes(texts, self.k, p, &cands);
        if tally.is_empty() {
            return Decision::Ask;
        }
        agreed(&tally).map_or(Decision::Leave, Decision::Set)
    }
}

/// The `heuristic` factory. Reads only the task's defaults-only plan (see [`super::plan`]).
pub struct Heuristic;

impl AgentFactory for Heuristic {
    fn name(&self) -> String {
        "heuristic".into()
    }

    fn make<'a>(&'a self, task: &'a TaskBundle, _seed: u64) -> Box<dyn Agent + 'a> {
        Box::new(PlanAgent::new(
            &task.task.defaults_solution,
            HeuristicPolicy::new(TOP_K),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_k_best_events_that_carry_a_value_vote() {
        let time = ParamSpec {
            name: "time".into(),
            type_name: "time",
            required: false,
            default: None,
            options: None,
            range: None,
            refers_to: None,
            choices: None,
            description: String::new(),
        };
        let ranked: Vec<String> = [
            "booked a table at baan thai",
            "texted sam: \"baan thai at 19:30?\"",
            "booked a table at baan thai",
            "reserved baan thai for 19:30",
            "dentist at 08:00",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(votes(&ranked, 2, &time, &[]), [(json!("19:30"), 2)]);
        let three = votes(&ranked, 3, &time, &[]);
        assert_eq!(three, [(json!("19:30"), 2), (json!("08:00"), 1)]);
        assert_eq!(agreed(&three), Some(json!("19:30")));
    }

    #[test]
    fn evidence_agrees_only_when_the_leader_doubles_the_runner_up() {
        assert_eq!(
            agreed(&[(json!("patio"), 3), (json!("indoor"), 1)]),
            Some(json!("patio"))
        );
        assert_eq!(agreed(&[(json!("patio"), 2)]), Some(json!("patio")));
        assert_eq!(
            agreed(&[(json!("patio"), 1)]),
            None,
            "one event is not agreement"
        );
        assert_eq!(agreed(&[(json!("patio"), 3), (json!("indoor"), 2)]), None);
        assert_eq!(agreed(&[]), None);
    }
}
