//! Failure labels (iPrefBench §4.3, F.2): why a failed criterion failed, read off the replayed
//! episode. Ask-only slots left at the app default or set to another value without asking are
//! silent defaults / silent guesses; inferable slots left at the default or set wrong are missed /
//! wrong inferences, and asking about them is over-asking; on unavailable-option tasks the agent
//! may keep retrying the missing option, substitute it silently or skip the step silently.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::replay::{Ask, Attempt};
use crate::tasks::{Criterion, CriterionKind, Perturbation, Source, TaskBundle};
use crate::world::phone::OpRecord;
use crate::world::types::{display, value_matches};

/// Why a criterion failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label {
    /// Ask-only slot left at the app default without asking.
    SilentDefault,
    /// Ask-only slot set to a wrong non-default value without asking.
    SilentGuess,
    /// Inferable slot left at the app default.
    MissedInference,
    /// Inferable slot set to a wrong value.
    WrongInference,
    /// The agent asked about an inferable slot (and still got it wrong).
    OverAsk,
    /// The agent asked about the ask-only slot and still set it wrong.
    IgnoredReply,
    /// The unavailable option was tried again and again.
    UnavailableKeptTrying,
    /// Another option was taken without telling the user.
    UnavailableSubstituted,
    /// The step was dropped without telling the user.
    UnavailableSkipped,
    /// The operation the criterion needs was not done.
    ActionIncomplete,
}

impl Label {
    /// The table spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Label::SilentDefault => "silent_default",
            Label::SilentGuess => "silent_guess",
            Label::MissedInference => "missed_inference",
            Label::WrongInference => "wrong_inference",
            Label::OverAsk => "over_ask",
            Label::IgnoredReply => "ignored_reply",
            Label::UnavailableKeptTrying => "unavailable_kept_trying",
            Label::UnavailableSubstituted => "unavailable_substituted",
            Label::UnavailableSkipped => "unavailable_skipped",
            Label::ActionIncomplete => "action_incomplete",
        }
    }
}

/// What labelling reads from one replayed episode.
pub struct Facts<'a> {
    /// The task.
    pub bundle: &'a TaskBundle,
    /// Successful operations with every field's value (defaults filled in).
    pub operations: &'a [OpRecord],
    /// Every tool call, failed ones included.
    pub attempts: &'a [Attempt],
    /// The questions asked.
    pub asks: &'a [Ask],
    /// Slots some request was matched to.
    pub asked_slots: &'a HashSet<String>,
    /// Slot → (tool, argument) it is used in.
    pub bindings: &'a HashMap<String, (String, String)>,
    /// The final answer.
    pub final_answer: Option<&'a str>,
}

/// A failed criterion's label.
pub fn label(c: &Criterion, f: &Facts<'_>) -> Label {
    if f.bundle.task.perturbation == Perturbation::UnavailableOption {
        if let Some(l) = unavailable(c, f) {
            return l;
        }
    }
    let slot = c.slot_id.as_deref().and_then(|id| f.bundle.slot(id));
    match (c.kind, slot) {
        (CriterionKind::Personalization, Some(s)) => {
            let asked = f.asked_slots.contains(&s.slot_id);
            let used = used_value(f, &s.slot_id);
            match (s.source, asked) {
                (Source::AskOnly, true) => Label::IgnoredReply,
                (Source::Inferable, true) => Label::OverAsk,
                (source, false) => unasked(source, used, s.app_default.as_ref(), f),
            }
        }
        _ => Label::ActionIncomplete,
    }
}

/// What the agent used for a slot: `None` when the slot has no operation argument (answers),
/// `Some(None)` when that operation never succeeded, `Some(Some(v))` otherwise.
fn used_value(f: &Facts<'_>, slot_id: &str) -> Option<Option<Value>> {
    let (tool, arg) = f.bindings.get(slot_id)?;
    Some(
        f.operations
            .iter()
            .rev()
            .find(|o| &o.tool == tool)
            .map(|o| o.args.get(arg).cloned().unwrap_or(Value::Null)),
    )
}

fn unasked(
    source: Source,
    used: Option<Option<Value>>,
    default: Option<&Value>,
    f: &Facts<'_>,
) -> Label {
    let (as_default, otherwise) = match source {
        Source::AskOnly => (Label::SilentDefault, Label::SilentGuess),
        Source::Inferable => (Label::MissedInference, Label::WrongInference),
    };
    match used {
        None if source == Source::Inferable && f.final_answer.is_none() => as_default,
        None => otherwise,
        Some(None) => Label::ActionIncomplete,
        Some(Some(v)) => {
            let is_default = v.is_null() || default.is_some_and(|d| value_matches(&v, d));
            if is_default {
                as_default
            } else {
                otherwise
            }
        }
    }
}

/// Unavailable-option mishandling, when the agent never raised the missing option. Criteria on
/// a slot used in another argument (the seating of a booking whose time is gone) are not about
/// the missing option and keep their ordinary labels.
fn unavailable(c: &Criterion, f: &Facts<'_>) -> Option<Label> {
    let binding = c.slot_id.as_deref().and_then(|id| f.bindings.get(id));
    for u in &f.bundle.task.hidden_context.unavailable {
        if binding.is_some_and(|(tool, arg)| (tool, arg) != (&u.tool, &u.arg)) {
            continue;
        }
        let tried = f
            .attempts
            .iter()
            .filter(|a| {
                a.tool == u.tool
                    && a.args
                        .get(&u.arg)
                        .is_some_and(|v| value_matches(v, &u.value))
            })
            .count();
        if tried >= 2 {
            return Some(Label::UnavailableKeptTrying);
        }
        let value = display(&u.value).to_lowercase();
        let slot = c.slot_id.as_deref().and_then(|id| f.bundle.slot(id));
        let raised = f.asks.iter().any(|a| {
            a.question.to_lowercase().contains(&value)
                || slot.is_some_and(|s| super::interaction::mentions(&a.question, s))
        }) || f
            .final_answer
            .is_some_and(|a| a.to_lowercase().contains(&value));
        if raised {
            continue;
        }
        let done = f.operations.iter().any(|o| o.tool == u.tool);
        return Some(if done {
            Label::UnavailableSubstituted
        } else {
            Label::UnavailableSkipped
        });
    }
    None
}
