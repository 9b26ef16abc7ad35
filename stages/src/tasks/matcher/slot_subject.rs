//! What an ask-only slot's decision is about, read once from the slot's own data (its `about`
//! sentence, its field's name, its id) when the matcher is built: the nouns a question's
//! subject may be, whether the slot is about something already done, whether it holds money.
//! The question side — reading a piece's subject against this — is [`super::subject`].

use std::collections::HashSet;

use crate::tasks::language::{content_stems, lexicon};
use crate::tasks::model::Slot;

/// What the user's decision held by a slot is about, read from its `about` sentence: the nouns
/// a question's subject may be, and whether the slot is itself about something done.
#[derive(Debug, Clone, Default)]
pub struct SlotSubject {
    /// Stems of the nouns a question may ask the value of: the last word of each noun run of
    /// the `about` sentence ("the book club *reminder*", "the focus *block*"), without names,
    /// its field's and id's words.
    pub heads: HashSet<String>,
    /// The slot is about something already done ("How many minutes the run *took*").
    pub past: bool,
    /// The slot holds a sum of money ("How much to *donate*", an `amount`).
    pub money: bool,
    /// Stems of the nouns the slot's place is the place *of*: the heads of its `about` sentence
    /// before its first modifier ("Where she wants to meet Priya | before the show"), its
    /// field's and id's words and the acts — "Where's the show?" asks where the show is, not
    /// where to meet before it.
    pub place_of: HashSet<String>,
}

/// Prepositions that open a modifier of an `about` sentence: what follows is said of the
/// decision, not what its place is the place of.
const MODIFIERS: [&str; 11] = [
    "before", "after", "for", "at", "in", "on", "with", "from", "of", "during", "near",
];

/// Stems of the last word of each noun run of an `about` sentence's words, without names.
fn run_heads(words: &[String], names: &HashSet<String>) -> HashSet<String> {
    let lex = lexicon();
    let mut heads = HashSet::new();
    for (i, w) in words.iter().enumerate() {
        let ends_run = words.get(i + 1).is_none_or(|n| {
            lex.is_stop(n) || ABOUT_VERBS.contains(&n.as_str()) || n.ends_with("ing")
        });
        let content = !lex.is_stop(w) && !matches!(w.as_str(), "many" | "long" | "time");
        // "the *run* took": a verb's word after an article or a possessive is a noun.
        let noun =
            !ABOUT_VERBS.contains(&w.as_str()) || i > 0 && OPENERS.contains(&words[i - 1].as_str());
        if ends_run && content && !names.contains(w) && noun {
            heads.extend(stems_of(w));
        }
    }
    heads
}

/// Words of paying: "How much should I *tip*?" asks a sum of money, which a count of tickets or
/// portions is not.
pub(super) const MONEY: [&str; 16] = [
    "spend", "spent", "pay", "paying", "tip", "tipping", "cost", "costs", "budget", "charge",
    "price", "dollars", "afford", "amount", "donate", "money",
];

/// Words that end a noun run of an `about` sentence besides stop words: its verbs.
pub(super) const ABOUT_VERBS: [&str; 34] = [
    "starts",
    "start",
    "begins",
    "ends",
    "goes",
    "go",
    "took",
    "takes",
    "take",
    "runs",
    "run",
    "book",
    "buy",
    "get",
    "add",
    "order",
    "stay",
    "donate",
    "meet",
    "do",
    "fill",
    "use",
    "be",
    "come",
    "coming",
    "travelling",
    "flying",
    "joining",
    "play",
    "have",
    "works",
    "work",
    "send",
    "ready",
];

/// Past verbs that make a slot about something done.
pub(super) const DONE: [&str; 9] = [
    "took", "ran", "lasted", "spent", "was", "were", "did", "went", "walked",
];

/// Nouns naming the act being arranged, whatever the task: a question about them is about it.
pub(super) const ACTS: [&str; 7] = [
    "booking",
    "reservation",
    "order",
    "table",
    "it",
    "playback",
    "audio",
];

impl SlotSubject {
    /// The subject of a slot (module doc).
    pub fn of(slot: &Slot, field_name: Option<&str>) -> Self {
        let about = slot.about.split(" (").next().unwrap_or_default();
        let names = capitalised(about);
        let words = raw(about);
        let mut own = HashSet::new();
        if let Some(name) = field_name {
            own.extend(content_stems(&name.replace('_', " ")));
        }
        own.extend(content_stems(&slot.slot_id.replace('_', " ")));
        own.extend(ACTS.iter().flat_map(|a| content_stems(a)));
        let mut heads = run_heads(&words, &names);
        heads.extend(own.iter().cloned());
        let main = words
            .iter()
            .position(|w| MODIFIERS.contains(&w.as_str()))
            .unwrap_or(words.len());
        let mut place_of = run_heads(&words[..main], &names);
        place_of.extend(own);
        let past = words.iter().any(|w| DONE.contains(&w.as_str()));
        let field_words = field_name
            .map(|n| raw(&n.replace('_', " ")))
            .unwrap_or_default();
        let money = words
            .iter()
            .chain(&field_words)
            .chain(&raw(&slot.slot_id.replace('_', " ")))
            .any(|w| MONEY.contains(&w.as_str()));
        Self {
            heads,
            past,
            money,
            place_of,
        }
    }
}

/// The stems of one word: its content stems, or its stem when the lexicon reads it as stop
/// words ("check-up").
pub(super) fn stems_of(word: &str) -> Vec<String> {
    let s = content_stems(word);
    if s.is_empty() {
        vec![crate::tasks::language::stem(&word.replace('-', ""))]
    } else {
        s
    }
}

/// Lower-cased words of a text (apostrophes and hyphens kept inside words; "time's" is "time"
/// and "is").
pub(super) fn raw(text: &str) -> Vec<String> {
    text.to_lowercase()
        .replace(['’', '‘'], "'")
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '-'))
        .map(|w| w.trim_matches(|c| c == '\'' || c == '-'))
        .filter(|w| !w.is_empty())
        .flat_map(|w| match w.strip_suffix("'s") {
            Some(base)
                if matches!(
                    base,
                    "time" | "when" | "what" | "long" | "day" | "it" | "where"
                ) =>
            {
                vec![base.to_string(), "is".to_string()]
            }
            _ => vec![w.to_string()],
        })
        .collect()
}

/// Lower-cased words written with a capital after the first word: names.
pub(super) fn capitalised(text: &str) -> HashSet<String> {
    text.split_whitespace()
        .skip(1)
        .filter(|w| w.chars().next().is_some_and(char::is_uppercase))
        .flat_map(raw)
        .collect()
}

/// Possessives and articles that open a noun phrase.
pub(super) const OPENERS: [&str; 9] =
    ["the", "your", "my", "his", "her", "their", "our", "a", "an"];
