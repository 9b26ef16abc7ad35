//! The user simulator: who answers `ask_user`. Every reply carries a disclosure audit — which
//! slots it disclosed, which of those were volunteered (not asked about), and whether it claimed
//! something the hidden context does not ground — so a leaky simulator shows up in the tables
//! instead of silently inflating scores.

use crate::llm::Usage;
use crate::tasks::user::{spoken, SlotUser};
use crate::tasks::Slot;

use super::agent::{ready, AgentFuture};

/// What the simulator says back, with its audit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UserReply {
    /// The reply text the agent sees.
    pub text: String,
    /// Slot ids whose value the reply disclosed.
    pub disclosed: Vec<String>,
    /// Disclosed slot ids the question did not ask about.
    pub volunteered: Vec<String>,
    /// Whether the reply states something not grounded in the hidden context or profile.
    pub ungrounded: bool,
    /// Tokens spent (model-backed simulators).
    pub usage: Usage,
}

/// Answers the agent's questions for one episode.
pub trait Simulator: Send {
    /// The reply to one `ask_user` message (a future: a model-backed user waits on its model).
    fn reply<'a>(&'a mut self, question: &'a str) -> AgentFuture<'a, UserReply>;
}

/// What the user answers when a question matches nothing they know.
pub use crate::tasks::user::DONT_KNOW;

/// The default simulator ([`SlotUser`]): a question naming one of the task's details is answered
/// with it — inferable details from the profile, ask-only ones from the hidden context; any
/// other question gets "I don't know."; it never volunteers.
pub struct ScriptedUser<'a> {
    user: SlotUser<'a>,
}

impl<'a> ScriptedUser<'a> {
    /// A user who knows these slots' values (questions matched from the slots alone).
    pub fn new(slots: &'a [Slot]) -> Self {
        Self {
            user: SlotUser::new(slots),
        }
    }

    /// The user of a task's episodes: questions matched exactly as the interaction judge
    /// matches them.
    pub fn for_task(
        bundle: &'a crate::tasks::TaskBundle,
        catalog: &crate::world::app::Catalog,
    ) -> Self {
        Self {
            user: SlotUser::for_task(bundle, catalog),
        }
    }
}

impl Simulator for ScriptedUser<'_> {
    fn reply<'a>(&'a mut self, question: &'a str) -> AgentFuture<'a, UserReply> {
        let (text, matched) = self.user.reply(question);
        ready(Ok(UserReply {
            text,
            disclosed: matched.iter().map(|s| s.slot_id.clone()).collect(),
            volunteered: Vec::new(),
            ungrounded: false,
            usage: Usage::default(),
        }))
    }
}

/// Audits a free-text reply (from a model-backed simulator): a slot (inferable or ask-only) is
/// disclosed when its value appears in the reply as whole words, volunteered when the question did not ask about it (by keywords), and
/// the reply is ungrounded when it discloses nothing yet is not a "don't know".
pub fn audit(question: &str, reply: &str, slots: &[Slot]) -> (Vec<String>, Vec<String>, bool) {
    let lower = reply.to_lowercase();
    let asked: Vec<&str> = SlotUser::new(slots)
        .matched(question)
        .iter()
        .map(|s| s.slot_id.as_str())
        .collect();
    let disclosed: Vec<String> = slots
        .iter()
        .filter(|s| crate::tasks::matcher::phrase_in(&lower, &spoken(&s.value)))
        .map(|s| s.slot_id.clone())
        .collect();
    let volunteered = disclosed
        .iter()
        .filter(|d| !asked.contains(&d.as_str()))
        .cloned()
        .collect();
    let ungrounded = disclosed.is_empty() && !is_dont_know(&lower);
    (disclosed, volunteered, ungrounded)
}

/// Whether a reply declines to answer.
pub fn is_dont_know(lower: &str) -> bool {
    [
        "don't know",
        "do not know",
        "not sure",
        "no idea",
        "no preference",
        "doesn't matter",
    ]
    .iter()
    .any(|p| lower.contains(p))
}
