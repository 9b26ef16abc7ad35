//! The scripted matcher: which slots a question is about. One home for the rule the scripted
//! user, the interaction judge and `asked:` predicates share, so the three never disagree.
//!
//! A question is about a slot when it *names* the slot's field or subject: one of the slot's
//! keywords occurs in it as whole words (a trailing plural `s`/`es` allowed: `bag` matches
//! "bags"). Keywords that name nothing — `how many`, `which`, `say`, `instead` — would pair a
//! question with whichever slot happens to list them ("How many bags?" answered with the
//! passenger count), so templates may not use them ([`generic_keyword`]).

use super::model::Slot;

/// Words that, alone, name no field or subject: a keyword made only of these is rejected at
/// generation, and they never count as the naming part of a keyword.
pub(crate) const GENERIC: &[&str] = &[
    "a",
    "about",
    "again",
    "an",
    "and",
    "another",
    "any",
    "anything",
    "are",
    "available",
    "be",
    "by",
    "can",
    "change",
    "choose",
    "do",
    "does",
    "else",
    "for",
    "from",
    "get",
    "give",
    "go",
    "had",
    "have",
    "her",
    "him",
    "how",
    "i",
    "in",
    "instead",
    "is",
    "it",
    "kind",
    "many",
    "me",
    "much",
    "my",
    "of",
    "on",
    "one",
    "or",
    "other",
    "pick",
    "put",
    "say",
    "send",
    "set",
    "should",
    "so",
    "some",
    "tell",
    "that",
    "the",
    "them",
    "there",
    "this",
    "to",
    "type",
    "use",
    "want",
    "we",
    "what",
    "when",
    "where",
    "which",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "write",
    "you",
    "your",
];

/// Lower-cased words of a text (letters, digits, `:` inside times, apostrophes inside words).
pub fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .replace(['’', '‘'], "'")
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == ':' || c == '%'))
        .map(|w| w.trim_matches(|c| c == '\'' || c == ':'))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// Whether a keyword names nothing: all its words are generic.
pub fn generic_keyword(keyword: &str) -> bool {
    let ws = words(keyword);
    ws.iter().all(|w| GENERIC.contains(&w.as_str()))
}

/// `word` equals `key`, or is `key` with a plural ending.
fn same_word(word: &str, key: &str) -> bool {
    word == key
        || word
            .strip_prefix(key)
            .is_some_and(|rest| rest == "s" || rest == "es")
        || key
            .strip_prefix(word)
            .is_some_and(|rest| rest == "s" || rest == "es")
}

/// Whether `keyword`'s words occur in `text_words` consecutively (plurals tolerated).
fn contains_phrase(text_words: &[String], keyword: &str) -> bool {
    let key = words(keyword);
    if key.is_empty() || key.len() > text_words.len() {
        return false;
    }
    text_words
        .windows(key.len())
        .any(|w| w.iter().zip(&key).all(|(a, b)| same_word(a, b)))
}

/// Whether `phrase` occurs in `text` as whole words (plurals tolerated).
pub fn phrase_in(text: &str, phrase: &str) -> bool {
    contains_phrase(&words(text), phrase)
}

/// Whether a text names the slot: one of its keywords occurs as whole words.
pub fn names_slot(text: &str, slot: &Slot) -> bool {
    let ws = words(text);
    slot.keywords.iter().any(|k| contains_phrase(&ws, k))
}

/// The slots a question names, in slot order.
pub fn slots_named<'a>(question: &str, slots: &'a [Slot]) -> Vec<&'a Slot> {
    let ws = words(question);
    slots
        .iter()
        .filter(|s| s.keywords.iter().any(|k| contains_phrase(&ws, k)))
        .collect()
}

/// The sentences of a message that ask something: those ending in `?`, or the whole message
/// when none does ("Tell me the party size.").
pub fn questions(message: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let chars: Vec<char> = message.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        current.push(c);
        let boundary = matches!(c, '.' | '?' | '!' | '\n')
            && chars.get(i + 1).is_none_or(|n| n.is_whitespace());
        if boundary {
            out.push(std::mem::take(&mut current).trim().to_string());
        }
    }
    out.push(current.trim().to_string());
    out.retain(|s| !s.is_empty());
    let asking: Vec<String> = out.iter().filter(|s| s.ends_with('?')).cloned().collect();
    if asking.is_empty() {
        vec![message.trim().to_string()]
    } else {
        asking
    }
}

/// One information request of a message: its asking sentence and the slot it names (`None`:
/// it names no slot of the task).
#[derive(Debug, Clone, PartialEq)]
pub struct Piece {
    /// The request's text.
    pub text: String,
    /// The slot it asks for, if any.
    pub slot_id: Option<String>,
}

/// The scripted decomposition of a message: each asking sentence is one request per slot it
/// names (so "How many people, and what time?" is two), or one unmatched request.
pub fn scripted_pieces(message: &str, slots: &[Slot]) -> Vec<Piece> {
    let mut out = Vec::new();
    for q in questions(message) {
        let matched = slots_named(&q, slots);
        if matched.is_empty() {
            out.push(Piece {
                text: q.clone(),
                slot_id: None,
            });
        }
        for s in matched {
            out.push(Piece {
                text: q.clone(),
                slot_id: Some(s.slot_id.clone()),
            });
        }
    }
    out
}

/// Slot ids the scripted matcher finds in a sequence of `ask_user` messages.
pub fn asked_slots<'q>(
    messages: impl IntoIterator<Item = &'q str>,
    slots: &[Slot],
) -> std::collections::HashSet<String> {
    messages
        .into_iter()
        .flat_map(|m| scripted_pieces(m, slots))
        .filter_map(|p| p.slot_id)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::Source;
    use serde_json::json;

    fn slot(id: &str, keywords: &[&str]) -> Slot {
        Slot {
            slot_id: id.into(),
            source: Source::AskOnly,
            evidence: vec![],
            value: json!(1),
            keywords: keywords.iter().map(|k| k.to_string()).collect(),
            app_default: None,
            profile_entry: None,
            about: String::new(),
        }
    }

    #[test]
    fn a_question_names_a_slot_only_by_its_field_or_subject() {
        let slots = [
            slot("passengers", &["passengers", "travelling"]),
            slot("bags", &["bags", "checked bag", "luggage"]),
            slot("seating", &["seating", "patio"]),
        ];
        let ids = |q: &str| -> Vec<String> {
            slots_named(q, &slots)
                .iter()
                .map(|s| s.slot_id.clone())
                .collect()
        };
        assert_eq!(ids("How many bags?"), ["bags"]);
        assert_eq!(
            ids("How many passengers, and any checked bag?"),
            ["passengers", "bags"]
        );
        assert!(ids("How many?").is_empty());
        // Whole words: "sit" would have matched "visit"; "patio" matches "patios".
        assert!(ids("Should I visit the site?").is_empty());
        assert_eq!(ids("Any of the patios?"), ["seating"]);
    }

    #[test]
    fn generic_keywords_are_recognised() {
        for k in [
            "how many",
            "which",
            "say",
            "what should I say",
            "instead",
            "another one",
        ] {
            assert!(generic_keyword(k), "{k}");
        }
        for k in ["party size", "which restaurant", "bags", "19:30", "emoji"] {
            assert!(!generic_keyword(k), "{k}");
        }
    }
}
