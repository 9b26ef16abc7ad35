//! Core texts: what an event tells without the phrases that vary between tellings (when it
//! happened, who came along, asides, "this time"). History synthesis uses them to tell a one-off
//! act once, the world audit to measure how varied the history is at its core; both read the
//! persona's decorations from here, so neither depends on the other.

use std::cmp::Reverse;

use super::app::Catalog;
use super::clock::{Date, WEEKDAYS};
use super::persona::Persona;

/// Vocabulary lists whose phrases decorate an event without changing what happened (when it
/// happened, who came along, asides): [`core_text`] strips them.
pub const DECORATION_LISTS: [&str; 3] = ["when", "with", "aside"];

/// Words that retell an event rather than change it ("this time", "again").
const RETELLING: [&str; 6] = [
    "this time too",
    "this time",
    "once again",
    "for once",
    "again",
    "too",
];

const DAYPARTS: [&str; 4] = ["morning", "afternoon", "evening", "night"];

/// What varies between tellings of one event, lower-cased and longest first: every phrase of
/// the persona's [`DECORATION_LISTS`], rendered for each weekday and part of the day.
pub fn decorations(cat: &Catalog, persona: &Persona) -> Vec<String> {
    use super::clock::{DateTime, Time};
    use super::persona::{render, Fill};
    let mut out: Vec<String> = Vec::new();
    let lists: Vec<usize> = persona
        .vocab_names
        .iter()
        .enumerate()
        .filter(|(_, n)| DECORATION_LISTS.contains(&n.as_str()))
        .map(|(i, _)| i)
        .collect();
    let monday = Date::parse("2025-03-03").unwrap_or(persona.start);
    for day in 0..7 {
        for hour in [9u32, 14, 19, 23] {
            let when = DateTime {
                date: monday.add_days(day),
                time: Time::from_seconds(hour * 3600),
            };
            for &l in &lists {
                for phrase in &persona.vocab[l] {
                    let fill = Fill {
                        chosen: &[],
                        value: &serde_json::Value::Null,
                        mention: "",
                        when,
                        vocab: &persona.vocab,
                        picks: &[],
                        event: "",
                        tail: "",
                    };
                    let text = render(cat, phrase, &[], &fill).to_lowercase();
                    let text = text.trim_matches(|c: char| c == ',' || c.is_whitespace());
                    if text.chars().any(char::is_alphanumeric) && !out.iter().any(|o| o == text) {
                        out.push(text.to_string());
                    }
                }
            }
        }
    }
    out.sort_by_key(|p| Reverse(p.len()));
    out
}

/// An event's core: what happened, without the phrases that vary between tellings — the
/// persona's decorations (`decorations`), companions (" with Priya", " with Aisha and Marco"),
/// weekdays and parts of the day, "this time", "again" — lower-cased, words only. Two events
/// with one core tell the same thing.
pub fn core_text(text: &str, decorations: &[String]) -> String {
    // Companions: " with " followed by capitalised names joined by "and".
    let mut kept = String::with_capacity(text.len());
    let words: Vec<&str> = text.split(' ').collect();
    let mut i = 0;
    while i < words.len() {
        let capital = |w: &str| w.chars().next().is_some_and(char::is_uppercase);
        if words[i] == "with" && words.get(i + 1).is_some_and(|w| capital(w)) {
            i += 2;
            while words.get(i) == Some(&"and") && words.get(i + 1).is_some_and(|w| capital(w)) {
                i += 2;
            }
            continue;
        }
        if !kept.is_empty() {
            kept.push(' ');
        }
        kept.push_str(words[i]);
        i += 1;
    }
    let mut lower = format!(" {} ", kept.to_lowercase());
    for d in decorations {
        lower = remove_whole(&lower, d);
    }
    for r in RETELLING {
        lower = remove_whole(&lower, r);
    }
    let cleaned: String = lower
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '%' || c == '$' {
                c
            } else {
                ' '
            }
        })
        .collect();
    cleaned
        .split_whitespace()
        .filter(|w| !WEEKDAYS.contains(w) && !DAYPARTS.contains(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `text` without the whole-word occurrences of `phrase`.
fn remove_whole(text: &str, phrase: &str) -> String {
    if phrase.is_empty() || !text.contains(phrase) {
        return text.to_string();
    }
    let edge = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    for (i, m) in text.match_indices(phrase) {
        if i < from {
            continue;
        }
        let whole = edge(text[..i].chars().next_back()) && edge(text[i + m.len()..].chars().next());
        if whole {
            out.push_str(&text[from..i]);
            out.push(' ');
            from = i + m.len();
        }
    }
    out.push_str(&text[from..]);
    out
}
