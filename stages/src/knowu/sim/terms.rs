//! The key terms of a preference: what the offline, deterministic stand-in for KnowU's
//! LLM-judged preference part looks for in the record the agent wrote.

use serde_json::Value;

use crate::knowu::profile::text;

/// Words too common to judge a preference by.
const STOP: [&str; 24] = [
    "with",
    "that",
    "this",
    "from",
    "only",
    "when",
    "than",
    "over",
    "have",
    "will",
    "into",
    "your",
    "about",
    "they",
    "them",
    "their",
    "prefer",
    "preferred",
    "always",
    "never",
    "very",
    "more",
    "less",
    "just",
];

/// The key terms of a preference, what the offline preference judge looks for: each list item's
/// head (the text before a parenthesis or a colon-free dash); a long head gives its first
/// distinctive words instead. At most five, lower-cased, in order.
pub fn key_terms(value: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in text(value).split(';') {
        let head = item
            .split(['(', '（'])
            .next()
            .unwrap_or_default()
            .rsplit(": ")
            .next()
            .unwrap_or_default()
            .trim()
            .trim_end_matches(['.', ',', '!']);
        let words: Vec<&str> = head.split_whitespace().collect();
        let terms: Vec<String> = if (1..=3).contains(&words.len()) {
            vec![head.to_lowercase()]
        } else {
            words
                .iter()
                .map(|w| {
                    w.trim_matches(|c: char| !c.is_alphanumeric())
                        .to_lowercase()
                })
                .filter(|w| w.chars().count() >= 4 && !STOP.contains(&w.as_str()))
                .take(2)
                .collect()
        };
        for t in terms {
            if !t.is_empty() && !out.contains(&t) {
                out.push(t);
            }
        }
    }
    out.truncate(5);
    out
}
