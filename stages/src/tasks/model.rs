//! The task model (design §1): a task is an underspecified instruction plus everything needed to
//! judge it — its slots (user-dependent details the instruction omits), its criteria (rubric
//! lines with machine-checkable predicates), per-task overrides, hidden context and a reference
//! solution. A [`TaskBundle`] holds one task with its slots and criteria; it is the unit that
//! flows through generation, review and validation, one row per task.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::predicate::Predicate;
use crate::tables::row::{Json, Spelled};
use crate::tables::tasks::TASKS;
use crate::world::phone::Overrides;

/// Where the value of a slot comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The history evidences it; the agent should infer it.
    Inferable,
    /// Only the user knows it; the agent must ask (value in the hidden context).
    AskOnly,
}

impl Source {
    /// The table spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Inferable => "inferable",
            Source::AskOnly => "ask_only",
        }
    }

    /// Parses the table spelling.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "inferable" => Some(Source::Inferable),
            "ask_only" => Some(Source::AskOnly),
            _ => None,
        }
    }
}

/// What a criterion judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CriterionKind {
    /// Was the operation done (what the instruction states).
    Action,
    /// Was a user-dependent choice right (linked to a slot).
    Personalization,
}

impl CriterionKind {
    /// The table spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            CriterionKind::Action => "action",
            CriterionKind::Personalization => "personalization",
        }
    }
}

/// The perturbation a task tests (iPrefBench §3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Perturbation {
    /// A plain underspecified personalized task.
    #[default]
    None,
    /// The instruction explicitly overrides what history suggests.
    InstructionOverride,
    /// History shows the preference changed; the current value is right.
    PreferenceShift,
    /// The preferred option is missing: surface it, then take the fallback or stop.
    UnavailableOption,
}

impl Perturbation {
    /// Every perturbation, in table order.
    pub const ALL: [Perturbation; 4] = [
        Perturbation::None,
        Perturbation::InstructionOverride,
        Perturbation::PreferenceShift,
        Perturbation::UnavailableOption,
    ];

    /// The table spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Perturbation::None => "none",
            Perturbation::InstructionOverride => "instruction_override",
            Perturbation::PreferenceShift => "preference_shift",
            Perturbation::UnavailableOption => "unavailable_option",
        }
    }
}

/// Whether the task changes app state or asks for an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskType {
    /// Do something in the apps.
    #[default]
    Operation,
    /// Answer a question (judged on the final answer).
    Qa,
}

impl TaskType {
    /// The table spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskType::Operation => "operation",
            TaskType::Qa => "qa",
        }
    }
}

/// An option an override made unavailable, so validation can check the reference avoids it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unavailable {
    /// `app.operation` whose argument it concerns.
    pub tool: String,
    /// The argument.
    pub arg: String,
    /// The value that can no longer be chosen.
    pub value: Value,
}

/// What the user simulator and judges know beyond the profile: ask-only values, situational
/// facts, and what was made unavailable.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HiddenContext {
    /// Ask-only slot values, by slot id (kept in step with the slots).
    pub ask_only: IndexMap<String, Value>,
    /// Situational facts in the user's words (e.g. what to do if an option is gone).
    pub facts: Vec<String>,
    /// Options the task's overrides made unavailable.
    pub unavailable: Vec<Unavailable>,
}

crate::tables::row::row! {
    /// One task, and the `tasks` table's row itself: its fields are that table's columns in
    /// order (checked when the crate compiles), the typed ones held as the table spells them —
    /// enums as their word, nested values as JSON text — so the task, its bundle's JSON and its
    /// table row cannot disagree, and no hand-written conversion stands between them.
    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Task is TASKS {
        /// Stable id: `<template>-<variant>`.
        pub task_id: String,
        /// The persona it is grounded in.
        pub persona: String,
        /// The template it was instantiated from.
        pub template: String,
        /// What the user says: natural and underspecified.
        pub instruction: String,
        /// Apps the reference solution uses, in first-use order.
        pub apps: Vec<String>,
        /// Functional category of the first app (Figure D.1 grouping).
        pub category: String,
        /// Operation or question.
        pub task_type: TaskType => Spelled,
        /// The perturbation tested.
        pub perturbation: Perturbation => Spelled,
        /// Whether an inferable slot's evidence lies only in apps other than the task's.
        pub cross_app: bool,
        /// The template's domain group (travel, food, …; empty when the templates declare none).
        #[serde(default)]
        pub domain: String,
        /// The apps whose tools an episode with a capped tool list offers: the domain group's, the
        /// same for every task of the domain whatever its solution (empty: every app).
        #[serde(default)]
        pub offered_apps: Vec<String>,
        /// Per-task environment changes.
        pub overrides: Overrides => Json,
        /// Ask-only values and situational facts.
        pub hidden_context: HiddenContext => Json,
        /// Phone actions that complete the task for this user. Arguments may be `{"$slot": id}` or
        /// `{"$fmt": "… {slot.id} …"}`, resolved from the slots when run, so a fixed slot value fixes
        /// the solution too.
        pub reference_solution: Vec<Value> => Json,
        /// What an agent that never personalizes does: the same operations with only required
        /// fields (choices a form forces taken plainly), never asking.
        pub defaults_solution: Vec<Value> => Json,
    }
    beside {
        /// λ of the hybrid judge score S = λ·S_rule + (1−λ)·S_llm for this task; the `judge` stage's
        /// `lambda` applies when absent. Not a column of `tasks` (the bundle carries it), so a
        /// task read back from that table has none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub lambda: Option<f64>,
    }
}

/// One user-dependent detail the instruction omits (the `slots` table row).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slot {
    /// Unique within the task.
    pub slot_id: String,
    /// Inferable or ask-only.
    pub source: Source,
    /// History event ids that evidence the value (inferable slots).
    pub evidence: Vec<String>,
    /// The ground-truth value.
    pub value: Value,
    /// Words a question about this slot contains (for the simulator and interaction judge).
    pub keywords: Vec<String>,
    /// The app default the slot competes with, if the form has one.
    pub app_default: Option<Value>,
    /// The profile entry (or situational fact) the value comes from, if any.
    pub profile_entry: Option<String>,
    /// One sentence saying what the slot is, in the user's terms ("How many people are coming
    /// to Friday's dinner"): what a user simulator is asked about, and what an LLM judge reads.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub about: String,
}

/// One rubric line (the `criteria` table row).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Criterion {
    /// Unique within the task.
    pub criterion_id: String,
    /// Action or personalization.
    pub kind: CriterionKind,
    /// The slot a personalization criterion judges.
    pub slot_id: Option<String>,
    /// The machine check.
    pub predicate: Predicate,
    /// The line an LLM judge reads.
    pub rubric: String,
    /// The criterion checks free text the user dictated (a message, a caption, a headline): the
    /// rule predicate demands her words, and under the hybrid judge a configured judge model may
    /// accept a faithful paraphrase.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub free_text: bool,
}

/// A task with its slots and criteria: one row of the `bundles` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskBundle {
    /// The task.
    pub task: Task,
    /// Its slots.
    pub slots: Vec<Slot>,
    /// Its criteria.
    pub criteria: Vec<Criterion>,
}

impl TaskBundle {
    /// A slot by id.
    pub fn slot(&self, id: &str) -> Option<&Slot> {
        self.slots.iter().find(|s| s.slot_id == id)
    }

    /// A mutable slot by id.
    pub fn slot_mut(&mut self, id: &str) -> Option<&mut Slot> {
        self.slots.iter_mut().find(|s| s.slot_id == id)
    }

    /// Where each slot is used: the `(tool, argument)` of the first reference-solution call that
    /// takes its value.
    pub fn slot_bindings(&self) -> std::collections::HashMap<String, (String, String)> {
        let mut out = std::collections::HashMap::new();
        for step in &self.task.reference_solution {
            let (Some(tool), Some(args)) = (
                step.get("tool").and_then(Value::as_str),
                step.get("args").and_then(Value::as_object),
            ) else {
                continue;
            };
            for (arg, v) in args {
                let mut refs = Vec::new();
                super::predicate::slot_refs_in(v, &mut refs);
                for r in refs {
                    out.entry(r).or_insert((tool.to_string(), arg.clone()));
                }
            }
        }
        out
    }

    /// Recomputes `hidden_context.ask_only` from the slots, so the two never disagree.
    pub fn sync_hidden_context(&mut self) {
        self.task.hidden_context.ask_only = self
            .slots
            .iter()
            .filter(|s| s.source == Source::AskOnly)
            .map(|s| (s.slot_id.clone(), s.value.clone()))
            .collect();
    }
}
