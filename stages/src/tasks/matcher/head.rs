//! The head of a question — what it asks for — rules slots out whatever nouns stand beside it.
//!
//! A piece's subject words and its form may point at a slot while its head is about something
//! else: "Should the follow-up be in person or on Zoom?" names the follow-up whose *start time*
//! is a slot, but offers a choice between two things the task does not leave open; "What should
//! the description say?" asks for wording, and the task's topic slot is the title; "The usual
//! seats, right?" re-confirms something settled. Three heads are read here:
//!
//! - **a choice** ("A or B?", "… — which one?" after a list): it is about a slot only when one
//!   of its alternatives names a value of the slot — an option, a value of the kind the slot
//!   holds (a time, a day, a count, a duration), or the thing a count slot counts — or it is a
//!   question about an alternative and the slot is one. Free-text slots are not read this way
//!   (their values are not recognisable words).
//! - **wording** ("what should … say", "what to put in …", "should I mention …"): it is about a
//!   slot only when the message it names, if any, is the slot's own ("the caption", "the note"
//!   for a note's body; not "the group chat" for a photo's caption), and never about a slot
//!   holding a time, a day or a count unless it names such a value ("Should I tell Dana you'll
//!   be in by 10:30?").
//! - **a re-confirmation** ("Thai again?", "Still at 1.5x?", "The usual seats, right?", "… as
//!   always?"): what was settled before is an inferable detail or nothing — never an ask-only
//!   slot, unless the piece proposes a value of that slot ("$50, like last time?").
//!
//! A slot ruled out is never matched; a miss is better than the wrong slot.

use super::forms::{form, Form, Kind};
use super::profile::{SlotProfile, TaskMatcher};
use crate::tasks::model::Source;

/// Kinds whose values a question can name recognisably (a number, a time, a day).
const TYPED: [Kind; 5] = [
    Kind::Count,
    Kind::Duration,
    Kind::Time,
    Kind::Date,
    Kind::Dates,
];

/// Words that mark a re-confirmation of something settled before ("still" only before what
/// is settled: "Still at 1.5x?", not "Should calls still come through?").
const SETTLED: [&str; 26] = [
    " again",
    " still at ",
    " still the ",
    " still your ",
    " still using ",
    " still on the ",
    " still with ",
    " still in the ",
    " still want ",
    " still prefer ",
    "as usual",
    "like usual",
    "as always",
    "like always",
    "the usual",
    "your usual",
    "same as",
    "like last time",
    "as last time",
    "as before",
    "like before",
    "you usually",
    "your regular",
    "like your other",
    "as you always",
    "same one",
];

/// Verbs proposing to include something in a message.
const INCLUDE: [&str; 8] = [
    " mention",
    " include",
    " add ",
    " bring up",
    " leave out",
    " leave that out",
    " put in",
    " talk about",
];

/// Nouns of messages and the like a question may ask the wording of.
const MESSAGES: [&str; 22] = [
    "message",
    "text",
    "note",
    "email",
    "mail",
    "caption",
    "post",
    "invite",
    "invitation",
    "description",
    "subject",
    "title",
    "headline",
    "reminder",
    "card",
    "chat",
    "review",
    "reply",
    "dm",
    "event",
    "body",
    "notes",
];

fn holds(p: &SlotProfile, k: Kind, at_least: f64) -> bool {
    p.kinds.iter().any(|(x, w)| *x == k && *w >= at_least)
}

fn free_text(p: &SlotProfile) -> bool {
    holds(p, Kind::Text, 0.8) || holds(p, Kind::Topic, 0.8)
}

fn typed(p: &SlotProfile) -> bool {
    !free_text(p) && TYPED.iter().any(|k| holds(p, *k, 0.8))
}

/// The alternatives a choice offers: the parts of the piece joined by "or" (or, for a bare
/// "which one?", of the fragment before it that lists them).
fn alternatives(text: &str, lead: &str) -> Option<Vec<String>> {
    let lower = text.to_lowercase();
    let source = if lower.contains(" or ") {
        lower
    } else if lower.split_whitespace().count() <= 4
        && lower.starts_with("which")
        && lead.to_lowercase().contains(" or ")
    {
        lead.to_lowercase()
    } else {
        return None;
    };
    let parts: Vec<String> = source
        .split(" or ")
        .flat_map(|p| p.split(", "))
        .map(|p| p.trim().trim_end_matches(['?', '.', '!']).to_string())
        .filter(|p| !p.is_empty())
        .collect();
    (parts.len() >= 2).then_some(parts)
}

/// Kinds of value a text names or asks for, besides yes/no and choice.
fn value_kinds(text: &str) -> Vec<Kind> {
    let f = form(text, "", "");
    f.kinds
        .into_iter()
        .chain(f.mentioned)
        .filter(|k| TYPED.contains(k) || *k == Kind::When)
        .collect()
}

impl TaskMatcher {
    /// Whether the head of a piece rules slot `i` out (module doc).
    pub(super) fn head_rules_out(
        &self,
        i: usize,
        text: &str,
        lead: &str,
        context: &str,
        f: &Form,
    ) -> bool {
        let p = &self.profiles[i];
        self.foreign_choice(p, text, lead, context, f)
            || self.foreign_wording(p, text, f)
            || self.foreign_inclusion(p, text, f)
            || p.source == Source::AskOnly && self.settled_elsewhere(p, text, f)
            || self.not_about_an_alternative(p, text, lead, context, f)
    }

    /// "Should I keep the seat you picked?", "Should I also look at a later flight?": a closed
    /// question beside a fallback slot `p` that says nothing of an alternative (no "instead",
    /// "other", nothing unavailable, before or in it) and names no value of `p` is not about
    /// what to do if the first choice is gone.
    fn not_about_an_alternative(
        &self,
        p: &SlotProfile,
        text: &str,
        lead: &str,
        context: &str,
        f: &Form,
    ) -> bool {
        let lex = crate::tasks::language::lexicon();
        p.alternative
            && f.closed
            && !f.alternative
            && !f.alternative_in_context
            && !lex.says_unavailable(lead)
            && !lex.says_unavailable(context)
            && !self.names_value(p, text)
    }

    /// Whether `text` names a value of slot `p`: an option (or its other names), a value of a
    /// kind it holds, or — for a count — what it counts.
    fn names_value(&self, p: &SlotProfile, text: &str) -> bool {
        let stems: Vec<String> = crate::tasks::language::tokens(text)
            .into_iter()
            .map(|t| t.stem)
            .collect();
        // An alternative of a choice, or a value proposed, is offered.
        let f = Form {
            closed: true,
            ..form(text, "", "")
        };
        let own = !p.own_value.is_empty()
            && stems
                .windows(p.own_value.len())
                .any(|w| w == p.own_value.as_slice());
        if own || Self::named(p, text, &stems, &f) > 0.0 {
            return true;
        }
        let held = value_kinds(text)
            .iter()
            .any(|k| p.kinds.iter().any(|(x, w)| x == k && *w > 0.0));
        let counted = !p.counted.is_empty()
            && crate::tasks::language::text_concepts(text)
                .iter()
                .any(|c| p.counted.contains(c));
        held || counted
    }

    /// How strongly `text` names `p`'s subject, leaving out the names in its `about` sentence
    /// and the nouns of messages (which say whose or where, not what value).
    fn bare_subject(&self, p: &SlotProfile, text: &str) -> f64 {
        let toks = crate::tasks::language::tokens(text);
        let words: Vec<_> = crate::tasks::language::word_concepts(text)
            .into_iter()
            .zip(&toks)
            .map(|(mut c, t)| {
                if MESSAGES.contains(&t.word.as_str()) {
                    c.clear();
                }
                c.retain(|x| !p.names.contains(x));
                c
            })
            .collect();
        self.subject(p, &words)
    }

    /// A choice none of whose alternatives names a value of `p` (module doc); for a free-text
    /// slot, none names its subject or asks about content.
    fn foreign_choice(
        &self,
        p: &SlotProfile,
        text: &str,
        lead: &str,
        context: &str,
        f: &Form,
    ) -> bool {
        let lex = crate::tasks::language::lexicon();
        // "Lotus Thai has nothing at 7:30 … Should I grab one of those, or leave it?": a
        // choice after something unavailable is about the alternative.
        let gone = f.alternative
            || f.alternative_in_context
            || lex.says_unavailable(lead)
            || lex.says_unavailable(context);
        if gone && p.alternative {
            return false;
        }
        let Some(alts) = alternatives(text, lead) else {
            return false;
        };
        let recognisable = typed(p) || !p.values.is_empty() || !p.counted.is_empty();
        // "Which size, S or M?": the question word's own noun names the slot.
        let wh = |a: &str| {
            let w = format!(" {a} ");
            [" which ", " what ", " what's ", " how "]
                .iter()
                .any(|x| w.contains(x))
        };
        !alts.iter().any(|a| {
            self.names_value(p, a)
                || wh(a) && self.bare_subject(p, a) > 0.0
                || !recognisable && self.bare_subject(p, a) > 0.0
                || free_text(p) && lex.names_content(a)
        })
    }

    /// "Should I mention the pancakes?": a proposal to include something in a message is about
    /// free-text slot `p` only when `p` is itself about what to mention (its subject is the
    /// verb's: "the point she wants to highlight") or the proposal names the head of its
    /// `about` sentence ("the cake *flavour*").
    fn foreign_inclusion(&self, p: &SlotProfile, text: &str, f: &Form) -> bool {
        let lower = format!(" {} ", text.to_lowercase().replace('’', "'"));
        let Some(verb) = INCLUDE.iter().find(|v| lower.contains(*v)) else {
            return false;
        };
        if !f.closed || !free_text(p) {
            return false;
        }
        let verb_is_its_subject = crate::tasks::language::text_concepts(verb)
            .iter()
            .any(|c| p.terms.contains(c));
        let names_head = crate::tasks::language::tokens(text)
            .iter()
            .any(|t| !t.stop && p.head.contains(&t.stem) && !p.names.contains(&t.stem));
        !(verb_is_its_subject || names_head)
    }

    /// Whether a piece re-confirms something settled (module doc).
    pub(super) fn settles(text: &str) -> bool {
        let lower = format!(" {} ", text.to_lowercase().replace('’', "'"));
        lower.trim_start().starts_with("still ") || SETTLED.iter().any(|m| lower.contains(m))
    }

    /// A re-confirmation of something settled that proposes no value of ask-only slot `p`.
    fn settled_elsewhere(&self, p: &SlotProfile, text: &str, f: &Form) -> bool {
        let wh = f
            .kinds
            .iter()
            .any(|k| !matches!(k, Kind::YesNo | Kind::Choice));
        // Free text proposed again ("Is it the Q4 review again?") is still its content.
        !wh && !free_text(p) && Self::settles(text) && !self.names_value(p, text)
    }
}

impl TaskMatcher {
    /// A wording question about a message that is not `p`'s, or whose words name no value
    /// (nor, for a slot without typed values, the subject) of a slot that is no free text
    /// (module doc).
    fn foreign_wording(&self, p: &SlotProfile, text: &str, f: &Form) -> bool {
        let wording = f.kinds.contains(&Kind::Text)
            && !f
                .kinds
                .iter()
                .any(|k| TYPED.contains(k) || matches!(k, Kind::When | Kind::Person | Kind::Place));
        if !wording {
            return false;
        }
        // "The main message" is content, not a message named.
        let toks = crate::tasks::language::tokens(text);
        // The first message named is the one asked about ("the body of the review").
        let named = toks.iter().enumerate().find(|(i, t)| {
            MESSAGES.contains(&t.word.as_str())
                && !(*i > 0
                    && ["main", "key", "whole", "overall"].contains(&toks[i - 1].word.as_str()))
        });
        if named.is_some_and(|(_, t)| !p.own_stems.contains(&t.stem)) {
            return true;
        }
        if free_text(p) {
            return false;
        }
        let evidence = self.names_value(p, text) || !typed(p) && self.bare_subject(p, text) > 0.0;
        !evidence
    }
}
