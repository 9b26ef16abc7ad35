//! The scripted user (iPrefBench C.3, G.1, the way a keyword-matching simulator can follow
//! them): a question about one of the task's details — inferable (answered from the profile,
//! with the task's profile edits) or ask-only (from the hidden context) — is answered with that
//! detail; a question naming none of them gets "I don't know.". It answers only what was asked,
//! never volunteers, and never answers a question about one field with another slot's value:
//! a question is about a slot only when it names the slot's field or subject
//! ([`super::matcher`]), and when one question names several, each answer says which it is.
//! Asking about an inferable detail is thus answered, as the paper's simulator would, and
//! over-asking shows up in interaction precision rather than as silence.

use serde_json::Value;

use crate::world::phone::AskUser;
use crate::world::types::display;

use super::matcher::TaskMatcher;
use super::model::{Slot, TaskBundle};
use crate::world::app::Catalog;

/// What the user answers when a question names nothing they are asked about.
pub const DONT_KNOW: &str = "I don't know.";

/// Answers by slot lookup.
pub struct SlotUser<'a> {
    slots: &'a [Slot],
    matcher: TaskMatcher,
}

impl<'a> SlotUser<'a> {
    /// A user who knows these slots' values (inferable and ask-only), matching questions from
    /// the slots alone.
    pub fn new(slots: &'a [Slot]) -> Self {
        Self {
            slots,
            matcher: TaskMatcher::from_slots(slots),
        }
    }

    /// A user for a task, matching questions exactly as the interaction judge does (the slots'
    /// fields read from the catalog).
    pub fn for_task(bundle: &'a TaskBundle, catalog: &Catalog) -> Self {
        Self {
            slots: &bundle.slots,
            matcher: TaskMatcher::for_task(bundle, catalog),
        }
    }

    /// The slots a question is about, in the order asked.
    pub fn matched(&self, question: &str) -> Vec<&'a Slot> {
        self.matcher.slots_in(question, self.slots)
    }

    /// The reply to a question and the slots it disclosed.
    pub fn reply(&self, question: &str) -> (String, Vec<&'a Slot>) {
        let matched = self.matched(question);
        let text = match matched.as_slice() {
            [] => DONT_KNOW.to_string(),
            [one] => spoken(&one.value),
            many => many
                .iter()
                .map(|s| format!("{}: {}", subject(s), spoken(&s.value)))
                .collect::<Vec<_>>()
                .join("; "),
        };
        (text, matched)
    }
}

impl AskUser for SlotUser<'_> {
    fn ask(&mut self, question: &str) -> String {
        self.reply(question).0
    }
}

/// A value as the user says it: enum ids as words (`date_night` → "date night").
pub fn spoken(v: &Value) -> String {
    match v {
        Value::String(s) if is_identifier(s) => s.replace('_', " "),
        _ => display(v),
    }
}

/// `snake_case` ids (what enum options look like), not free text.
fn is_identifier(s: &str) -> bool {
    s.contains('_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// What a slot is, in a few words, to label one of several answers: its first keyword.
fn subject(s: &Slot) -> String {
    s.keywords
        .first()
        .cloned()
        .unwrap_or_else(|| s.slot_id.replace('_', " "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::Source;
    use serde_json::json;

    fn slot(id: &str, source: Source, value: Value, keywords: &[&str]) -> Slot {
        Slot {
            slot_id: id.into(),
            source,
            evidence: vec![],
            value,
            keywords: keywords.iter().map(|k| k.to_string()).collect(),
            app_default: None,
            profile_entry: None,
            about: String::new(),
        }
    }

    #[test]
    fn answers_inferable_and_ask_only_questions_and_never_crosses_fields() {
        let slots = [
            slot("passengers", Source::AskOnly, json!(2), &["passengers"]),
            slot(
                "bags",
                Source::Inferable,
                json!(0),
                &["bags", "checked bag"],
            ),
            slot(
                "occasion",
                Source::AskOnly,
                json!("date_night"),
                &["occasion"],
            ),
        ];
        let mut user = SlotUser::new(&slots);
        // An inferable detail is answered from the profile, not refused.
        assert_eq!(user.ask("How many bags will you check?"), "0");
        // The bag question is never answered with the passenger count.
        assert_eq!(user.ask("How many passengers?"), "2");
        assert_eq!(user.ask("How many?"), DONT_KNOW);
        assert_eq!(user.ask("Is it raining?"), DONT_KNOW);
        assert_eq!(user.ask("What's the occasion?"), "date night");
        assert_eq!(
            user.ask("How many passengers and bags?"),
            "passengers: 2; bags: 0"
        );
    }
}
