//! Reading field values out of text: which options (or records) a history event or a user's
//! reply mentions, and numbers, times and dates in replies. Shared by the honest baselines, so
//! `ask_all` and `heuristic` understand a reply the same way.

use serde_json::{json, Value};

use crate::episodes::simulator::is_dont_know;
use crate::world::phone::ParamSpec;

/// A value a field can take, with the lower-cased phrases that mention it in text.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The argument value (an option, or a record id).
    pub value: Value,
    /// Phrases naming it (`date_night` → `date night`; a record's name and id).
    pub phrases: Vec<String>,
}

/// The enumerable values of a field: an enum's options, or the records of a ref's table (when
/// the agent has read them). Other types have no finite list.
pub fn candidates(p: &ParamSpec, records: Option<&[Value]>) -> Vec<Candidate> {
    if let Some(options) = &p.options {
        return options
            .iter()
            .map(|o| {
                let lower = o.to_lowercase();
                let mut phrases = vec![lower.replace('_', " ")];
                if lower.contains('_') {
                    phrases.push(lower);
                }
                Candidate {
                    value: json!(o),
                    phrases,
                }
            })
            .collect();
    }
    if p.type_name != "ref" {
        return Vec::new();
    }
    let mut cands: Vec<Candidate> = records
        .unwrap_or_default()
        .iter()
        .filter_map(|r| {
            let id = r.get("id")?.as_str()?;
            let mut phrases = vec![id.to_lowercase()];
            for key in ["name", "title"] {
                if let Some(n) = r.get(key).and_then(Value::as_str) {
                    phrases.push(n.to_lowercase());
                }
            }
            Some(Candidate {
                value: json!(id),
                phrases,
            })
        })
        .collect();
    add_distinctive_words(&mut cands);
    cands
}

/// People name records by part of their name ("the Sapphire card" for "Chase Sapphire
/// Preferred"): every word of four or more letters that names exactly one candidate becomes a
/// phrase of it too.
fn add_distinctive_words(cands: &mut [Candidate]) {
    let words_of = |c: &Candidate| -> Vec<String> {
        let mut w: Vec<String> = c
            .phrases
            .iter()
            .flat_map(|ph| ph.split(|ch: char| !ch.is_alphanumeric()))
            .filter(|w| w.len() >= 4 && w.chars().all(char::is_alphabetic))
            .map(str::to_string)
            .collect();
        w.sort();
        w.dedup();
        w
    };
    let all: Vec<Vec<String>> = cands.iter().map(words_of).collect();
    for (i, c) in cands.iter_mut().enumerate() {
        for w in &all[i] {
            let unique = all
                .iter()
                .enumerate()
                .all(|(j, o)| j == i || !o.contains(w));
            if unique && !c.phrases.contains(w) {
                c.phrases.push(w.clone());
            }
        }
    }
}

/// Whole numbers written as a word of their own (`20`, `20%`, `3x`), not parts of times or
/// dates.
pub fn numbers(text: &str) -> Vec<i64> {
    text.split_whitespace()
        .map(|w| w.trim_matches(|c: char| ",.;:!?()\"'".contains(c)))
        .filter_map(|w| w.trim_end_matches(['%', 'x']).parse().ok())
        .collect()
}

/// Whether `phrase` occurs in `lower` as whole words (not inside a longer word or number).
pub fn mentions(lower: &str, phrase: &str) -> bool {
    if phrase.is_empty() {
        return false;
    }
    lower.match_indices(phrase).any(|(i, _)| {
        let before = lower[..i].chars().next_back();
        let after = lower[i + phrase.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// The candidates `lower` mentions; a phrase inside a longer mentioned phrase does not count
/// (a reply "oat milk" does not also mention "milk").
pub fn mentioned<'c>(lower: &str, cands: &'c [Candidate]) -> Vec<&'c Candidate> {
    let hits: Vec<(&Candidate, &str)> = cands
        .iter()
        .filter_map(|c| {
            c.phrases
                .iter()
                .filter(|ph| mentions(lower, ph))
                .max_by_key(|ph| ph.len())
                .map(|ph| (c, ph.as_str()))
        })
        .collect();
    hits.iter()
        .filter(|(c, ph)| {
            !hits
                .iter()
                .any(|(o, oph)| o.value != c.value && oph.len() > ph.len() && oph.contains(ph))
        })
        .map(|(c, _)| *c)
        .collect()
}

/// Clock times (`19:30`, `7:05` → `07:05`) in text, in order.
pub fn times(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    for (i, _) in text.match_indices(':') {
        let h_start = (i.saturating_sub(2)..i)
            .find(|&s| b[s..i].iter().all(u8::is_ascii_digit))
            .unwrap_or(i);
        let hours = &text[h_start..i];
        let minutes = text.get(i + 1..i + 3).unwrap_or("");
        let bounded = b.get(i + 3).is_none_or(|c| !c.is_ascii_digit())
            && (h_start == 0 || !b[h_start - 1].is_ascii_digit());
        if hours.is_empty() || minutes.len() != 2 || !bounded {
            continue;
        }
        let (Ok(h), Ok(m)) = (hours.parse::<u32>(), minutes.parse::<u32>()) else {
            continue;
        };
        if h < 24 && m < 60 {
            out.push(format!("{h:02}:{m:02}"));
        }
    }
    out
}

/// The first `YYYY-MM-DD` in text.
fn date(text: &str) -> Option<String> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .find(|w| {
            let p: Vec<&str> = w.split('-').collect();
            p.len() == 3 && p[0].len() == 4 && p[1].len() == 2 && p[2].len() == 2
        })
        .map(str::to_string)
}

/// The first number in text.
fn number(text: &str) -> Option<f64> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter(|w| !w.is_empty())
        .find_map(|w| w.trim_matches('.').parse().ok())
}

/// The value a user's reply gives a field, or `None` when it gives none ("I don't know.", a
/// refusal, or nothing of the field's type).
pub fn from_reply(p: &ParamSpec, reply: &str, records: Option<&[Value]>) -> Option<Value> {
    let lower = reply.trim().to_lowercase();
    if lower.is_empty() || is_dont_know(&lower) {
        return None;
    }
    if p.options.is_some() || p.type_name == "ref" {
        let cands = candidates(p, records);
        let hits = mentioned(&lower, &cands);
        return (hits.len() == 1).then(|| hits[0].value.clone());
    }
    match p.type_name {
        "bool" => yes_no(&lower).map(Value::Bool),
        "int" => number(&lower)
            .filter(|n| n.fract() == 0.0 && in_range(p, *n))
            .map(|n| json!(n as i64)),
        "float" => number(&lower).filter(|n| in_range(p, *n)).map(|n| json!(n)),
        "time" => times(&lower).into_iter().next().map(Value::String),
        "date" => date(&lower).map(Value::String),
        "text" => Some(Value::String(reply.trim().to_string())),
        _ => None,
    }
}

fn in_range(p: &ParamSpec, n: f64) -> bool {
    p.range.is_none_or(|(lo, hi)| (lo..=hi).contains(&n))
}

fn yes_no(lower: &str) -> Option<bool> {
    let yes = ["yes", "true", "sure", "please do", "on"]
        .iter()
        .any(|w| mentions(lower, w));
    let no = ["no", "false", "don't", "off"]
        .iter()
        .any(|w| mentions(lower, w));
    match (yes, no) {
        (true, false) => Some(true),
        (false, true) => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(ty: &'static str, options: Option<&[&str]>) -> ParamSpec {
        ParamSpec {
            name: "f".into(),
            type_name: ty,
            required: false,
            default: None,
            options: options.map(|o| o.iter().map(|s| s.to_string()).collect()),
            range: Some((1.0, 20.0)),
            refers_to: None,
            choices: None,
            description: String::new(),
        }
    }

    #[test]
    fn replies_map_to_values_of_the_fields_type() {
        let occ = spec("enum", Some(&["none", "birthday", "date_night"]));
        assert_eq!(
            from_reply(&occ, "date_night", None),
            Some(json!("date_night"))
        );
        assert_eq!(
            from_reply(&occ, "A date night, please", None),
            Some(json!("date_night"))
        );
        assert_eq!(from_reply(&occ, "I don't know.", None), None);
        assert_eq!(from_reply(&spec("int", None), "4", None), Some(json!(4)));
        assert_eq!(
            from_reply(&spec("int", None), "40 people", None),
            None,
            "out of range"
        );
        assert_eq!(
            from_reply(&spec("time", None), "20:30", None),
            Some(json!("20:30"))
        );
        assert_eq!(from_reply(&spec("time", None), "no other time", None), None);
        let store = ParamSpec {
            type_name: "ref",
            ..spec("ref", None)
        };
        let recs = [
            json!({"id": "store-wf", "name": "Whole Foods Stanyan"}),
            json!({"id": "store-rainbow", "name": "Rainbow Grocery"}),
        ];
        assert_eq!(
            from_reply(&store, "Whole Foods Stanyan", Some(&recs)),
            Some(json!("store-wf"))
        );
    }

    #[test]
    fn mentions_are_whole_words_and_the_longer_phrase_wins() {
        assert!(mentions("asked for patio seating", "patio"));
        assert!(!mentions("patios", "patio"));
        let milk = [
            Candidate {
                value: json!("milk"),
                phrases: vec!["milk".into()],
            },
            Candidate {
                value: json!("oat"),
                phrases: vec!["oat milk".into()],
            },
        ];
        let hits: Vec<&Value> = mentioned("bought oat milk", &milk)
            .iter()
            .map(|c| &c.value)
            .collect();
        assert_eq!(hits, [&json!("oat")]);
        assert_eq!(
            times("at 19:30, or 7:05; not 123:456 nor 10:00-12:00"),
            ["19:30", "07:05", "10:00", "12:00"]
        );
    }
}
