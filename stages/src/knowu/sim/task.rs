//! A KnowU task as the simulated phone runs it: its split and difficulty, what the agent is
//! expected to do, the situation a proactive episode starts in, and the KnowU facts that travel
//! beside the generic task in `knowu_tasks`.

use serde::{Deserialize, Serialize};

use super::matching;
use super::template::{Difficulty, Split};
use crate::knowu::interop::rules::Decision;

/// What the persona wants on a proactive task, which decides the right behaviour and its bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    /// The persona has the habit: do it (KnowU bucket Act).
    Act,
    /// The persona lacks the habit: leave the phone alone (bucket Silent).
    Silent,
    /// The persona lacks the habit and the action needs consent: asking is fine, but after the
    /// reject nothing may change (bucket Stop).
    Stop,
}

impl Expect {
    /// The `knowu_tasks.expect` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Expect::Act => "act",
            Expect::Silent => "silent",
            Expect::Stop => "stop",
        }
    }

    /// The expectation of a `knowu_tasks.expect` spelling.
    pub fn parse(s: &str) -> Option<Self> {
        [Expect::Act, Expect::Silent, Expect::Stop]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

/// The situation a proactive episode starts in (the app-data part lives in the task overrides).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Situation {
    /// The phone clock (`YYYY-MM-DDTHH:MM`); the persona's `now` when absent.
    #[serde(default)]
    pub clock: Option<String>,
    /// What the phone shows (notification, warning, incoming message), also in the instruction.
    pub notification: String,
}

/// The KnowU facts of one generated task (a row of `knowu_tasks`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnowuTaskInfo {
    /// KnowU's class name (the task id is `<class>@<persona>`).
    pub class_name: String,
    /// general | personalized | proactive.
    pub split: Split,
    /// easy | hard.
    pub difficulty: Difficulty,
    /// Hybrid weight of the rule part (personalized): S = λ·S_rule + (1−λ)·S_pref.
    #[serde(default)]
    pub lambda: Option<f64>,
    /// Proactive: the habit keys that decide whether the persona wants the action.
    #[serde(default)]
    pub habit_keys: Vec<String>,
    /// Proactive: the right behaviour.
    #[serde(default)]
    pub expect: Option<Expect>,
    /// Proactive: what the user answers a consent question.
    #[serde(default)]
    pub decision: Option<Decision>,
    /// Proactive: the user's reason (the habit's description, or why not).
    #[serde(default)]
    pub reason: String,
    /// Proactive: the situation.
    #[serde(default)]
    pub situation: Option<Situation>,
    /// Whether the class is one of KnowU-Bench's (else prefflow-only, named `Prefflow…`).
    pub in_knowu: bool,
    /// Proactive: the persona's habit that decided `expect`, when it has one.
    #[serde(default)]
    pub habit: Option<HabitFound>,
    /// General / personalized: the preference value as the profile holds it (checked with
    /// [`super::prefs::check`] against the judged field).
    #[serde(default)]
    pub preference: Option<serde_json::Value>,
    /// The judged field: `inserted:app.table.field` (or `updated:…`).
    #[serde(default)]
    pub judged: Option<String>,
}

/// The habit a proactive task found in the persona's profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HabitFound {
    /// Its key in `habits`.
    pub key: String,
    /// Found under one of the template's keys, or by what it says.
    pub how: matching::HabitMatch,
}

impl KnowuTaskInfo {
    /// The clock a proactive task pins the phone to (its situation's), if any.
    pub fn clock(&self) -> Option<crate::world::clock::DateTime> {
        let clock = self.situation.as_ref()?.clock.as_deref()?;
        crate::world::clock::DateTime::parse(clock)
    }
}

/// A generated task with its KnowU facts.
#[derive(Debug, Clone, PartialEq)]
pub struct KnowuTask {
    /// The generic task, slots and criteria.
    pub bundle: crate::tasks::TaskBundle,
    /// Its KnowU facts.
    pub info: KnowuTaskInfo,
}
