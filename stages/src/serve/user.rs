//! A scripted user for served episodes: a client that has no simulator of its own can give
//! canned replies when it creates an episode, so `ask_user` is answerable over HTTP.

use serde::Deserialize;

use crate::world::phone::AskUser;

/// One canned reply: used when the question contains `when` (ignoring case).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedAnswer {
    /// A phrase the question must contain.
    pub when: String,
    /// What the user says.
    pub reply: String,
}

/// Answers from a list of [`ScriptedAnswer`]s (first match wins), else honestly "I don't know."
#[derive(Debug, Clone, Default)]
pub struct ScriptedUser {
    answers: Vec<ScriptedAnswer>,
}

impl ScriptedUser {
    /// A user who replies from `answers`.
    pub fn new(answers: Vec<ScriptedAnswer>) -> Self {
        Self { answers }
    }
}

impl AskUser for ScriptedUser {
    fn ask(&mut self, question: &str) -> String {
        let q = question.to_lowercase();
        self.answers
            .iter()
            .find(|a| q.contains(&a.when.to_lowercase()))
            .map_or_else(|| "I don't know.".to_string(), |a| a.reply.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_matching_phrase_answers_and_anything_else_is_unknown() {
        let mut u = ScriptedUser::new(vec![
            ScriptedAnswer {
                when: "how many".into(),
                reply: "6".into(),
            },
            ScriptedAnswer {
                when: "many".into(),
                reply: "never used".into(),
            },
        ]);
        assert_eq!(u.ask("How many people are coming?"), "6");
        assert_eq!(u.ask("What time?"), "I don't know.");
    }
}
