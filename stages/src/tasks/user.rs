//! The scripted user validation runs with: it answers a question with the ask-only values whose
//! keywords the question contains, and says "I don't know." otherwise — never volunteering.

use crate::world::phone::AskUser;
use crate::world::types::display;

use super::model::{Slot, Source};

/// Answers by ask-only slot lookup.
pub struct SlotUser<'a> {
    slots: &'a [Slot],
}

impl<'a> SlotUser<'a> {
    /// A user who knows these slots' ask-only values.
    pub fn new(slots: &'a [Slot]) -> Self {
        Self { slots }
    }

    /// The ask-only slots a question is about.
    pub fn matched(&self, question: &str) -> Vec<&'a Slot> {
        let q = question.to_lowercase();
        self.slots
            .iter()
            .filter(|s| s.source == Source::AskOnly)
            .filter(|s| s.keywords.iter().any(|k| q.contains(&k.to_lowercase())))
            .collect()
    }
}

impl AskUser for SlotUser<'_> {
    fn ask(&mut self, question: &str) -> String {
        let answers: Vec<String> = self
            .matched(question)
            .iter()
            .map(|s| display(&s.value))
            .collect();
        if answers.is_empty() {
            "I don't know.".to_string()
        } else {
            answers.join("; ")
        }
    }
}
