//! Finding what a template needs in a persona's profile by meaning, not by one persona's key
//! paths: KnowU personas word the same fact differently (`delivery_general_remark`,
//! `general_take_out_remark`; `commute_optimization.primary_mode`, `primary_transport`), and a
//! persona no one here has seen will word it differently again.
//!
//! - A **preference** is the first node, in the template's sections, whose key path says what the
//!   template is `about`: each phrase (most specific first) is a few words that must all occur
//!   in the path below the section, at least one of them in the node's own key. Keys that say
//!   the opposite (`avoid_…`, `disliked_…`, `no_buy_…`) never match. An `entry` filter keeps
//!   nodes inside a mapping one of whose values names the entry (a social-graph contact "Mom").
//! - A **habit** is the first of the template's keys the persona holds (KnowU's own rule); else
//!   a habit under another key whose key and text mention every group of the template's
//!   `habit_means` (e.g. `alarm` and `disable|sleep in`), provided no other template's key
//!   claims it.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::phone_data::{saved_places, Place};
use super::template::PlaceRule;
use crate::knowu::profile::{is_empty, text, KnowuProfile};

/// Key words that turn a key into its opposite; such keys never hold the preference.
const NEGATIONS: [&str; 10] = [
    "avoid",
    "avoids",
    "dislike",
    "disliked",
    "dislikes",
    "blacklist",
    "blacklisted",
    "forbidden",
    "never",
    "no",
];

/// What a template looks for: sections, phrases in priority order, an optional entry filter.
#[derive(Debug, Clone, Copy)]
pub struct Wanted<'a> {
    /// Dotted sections below `user_profile`, searched in order.
    pub sections: &'a [String],
    /// Phrases, most specific first.
    pub about: &'a [String],
    /// Words one of which a value of an enclosing mapping must contain (empty: no filter).
    pub entry: &'a [String],
}

/// A profile node that matched.
#[derive(Debug, Clone, PartialEq)]
pub struct Found<'p> {
    /// Its dotted path below `user_profile` (`preferences.diet.delivery_general_remark`).
    pub path: String,
    /// Its value.
    pub value: &'p Value,
}

/// The preference `wanted` describes, if the persona has one.
pub fn preference<'p>(p: &'p KnowuProfile, wanted: &Wanted<'_>) -> Option<Found<'p>> {
    let phrases: Vec<Vec<String>> = wanted.about.iter().map(|a| words(a)).collect();
    for phrase in &phrases {
        for section in wanted.sections {
            let Some(root) = p.get(section) else { continue };
            let mut nodes = Vec::new();
            walk(root, section, &[], 0, false, wanted.entry, &mut nodes);
            // The shallowest match, then the first in file order: a section's own `clothes`
            // key wins over `price_sensitivity.clothes_threshold` written before it.
            let best = nodes
                .into_iter()
                .enumerate()
                .filter(|(_, n)| n.matches(phrase))
                .min_by_key(|(i, n)| (n.depth, *i));
            if let Some((_, n)) = best {
                return Some(Found {
                    path: n.path,
                    value: n.value,
                });
            }
        }
    }
    None
}

/// A node below a section: its path, the words of its path below the section, of its own key,
/// and whether an enclosing mapping names the wanted entry.
struct Node<'p> {
    path: String,
    path_words: Vec<String>,
    key_words: Vec<String>,
    value: &'p Value,
    in_entry: bool,
    depth: usize,
}

impl Node<'_> {
    fn matches(&self, phrase: &[String]) -> bool {
        let negated = self
            .key_words
            .iter()
            .any(|w| NEGATIONS.contains(&w.as_str()));
        self.in_entry
            && !negated
            && !is_empty(self.value)
            && phrase
                .iter()
                .all(|w| self.path_words.iter().any(|t| same_word(t, w)))
            && phrase
                .iter()
                .any(|w| self.key_words.iter().any(|t| same_word(t, w)))
    }
}

/// Every node below `value`, pre-order (a mapping before its children), with its depth, so a
/// whole sub-section wins over its parts when its own key says what is wanted.
fn walk<'p>(
    value: &'p Value,
    path: &str,
    above: &[String],
    depth: usize,
    in_entry: bool,
    entry: &[String],
    out: &mut Vec<Node<'p>>,
) {
    let in_entry = in_entry || entry.is_empty() || names_entry(value, entry);
    let children: Vec<(String, String, &Value)> = match value {
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| (format!("{path}.{k}"), k.clone(), v))
            .collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("{path}[{i}]"), String::new(), v))
            .collect(),
        _ => Vec::new(),
    };
    for (child_path, key, child) in children {
        let key_words = words(&key);
        let mut path_words = above.to_vec();
        path_words.extend(key_words.iter().cloned());
        let child_in_entry = in_entry || names_entry(child, entry);
        out.push(Node {
            path: child_path.clone(),
            path_words: path_words.clone(),
            key_words,
            value: child,
            in_entry: child_in_entry,
            depth,
        });
        walk(
            child,
            &child_path,
            &path_words,
            depth + 1,
            child_in_entry,
            entry,
            out,
        );
    }
}

/// Whether a mapping has a string value that names one of `entry` as a word.
fn names_entry(value: &Value, entry: &[String]) -> bool {
    let Value::Object(m) = value else {
        return false;
    };
    m.values().filter_map(Value::as_str).any(|s| {
        let ws = words(s);
        entry
            .iter()
            .any(|e| ws.iter().any(|w| w == &e.to_lowercase()))
    })
}

/// How a proactive template's habit was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HabitMatch {
    /// Under one of the template's own keys (KnowU's rule).
    Key,
    /// Under another key, by what it says.
    Meaning,
}

impl HabitMatch {
    /// The `knowu_tasks.habit_match` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            HabitMatch::Key => "key",
            HabitMatch::Meaning => "meaning",
        }
    }

    /// The match of a `knowu_tasks.habit_match` spelling.
    pub fn parse(s: &str) -> Option<Self> {
        [HabitMatch::Key, HabitMatch::Meaning]
            .into_iter()
            .find(|m| m.as_str() == s)
    }
}

/// The persona's habit for a template: under one of `keys`, else by `means` among the habits no
/// template's key claims (`claimed`) and no earlier template took (`taken`).
pub fn habit<'p>(
    p: &'p KnowuProfile,
    keys: &[String],
    means: &[String],
    claimed: &BTreeSet<String>,
    taken: &BTreeSet<String>,
) -> Option<(String, &'p Map<String, Value>, HabitMatch)> {
    if let Some((k, h)) = keys.iter().find_map(|k| p.habit(k).map(|h| (k, h))) {
        return Some((k.clone(), h, HabitMatch::Key));
    }
    if means.is_empty() {
        return None;
    }
    let habits = p.habits()?;
    habits.keys().find_map(|k| {
        let h = p.habit(k)?;
        let free = !claimed.contains(k) && !taken.contains(k);
        (free && says(k, h, means)).then(|| (k.clone(), h, HabitMatch::Meaning))
    })
}

/// Whether a habit's key and text mention every group of `means` (a group is alternatives
/// separated by `|`; an alternative of several words must occur as a phrase, a single word as a
/// word, `disable` also matching `disables`).
fn says(key: &str, habit: &Map<String, Value>, means: &[String]) -> bool {
    let mut all = words(key);
    all.extend(words(&text(&Value::Object(habit.clone()))));
    let padded = format!(" {} ", all.join(" "));
    means.iter().all(|group| {
        group.split('|').any(|alt| match words(alt).as_slice() {
            [] => false,
            [one] => all.iter().any(|w| same_word(w, one)),
            phrase => padded.contains(&format!(" {} ", phrase.join(" "))),
        })
    })
}

/// The first text under `at` (below `user_profile`) that says one of `says` (whole words),
/// among the texts under keys containing one of `key` (all texts when `key` is empty): its
/// dotted path and the text. How a template's persona-fit rule finds what rules it out.
pub fn says_any(
    p: &KnowuProfile,
    at: &str,
    key: &[String],
    says: &[String],
) -> Option<(String, String)> {
    let mut leaves = Vec::new();
    leaf_texts(at, p.get(at)?, &mut leaves);
    let says: Vec<String> = says.iter().map(|s| words(s).join(" ")).collect();
    leaves.into_iter().find(|(path, t)| {
        let keyed = key.is_empty() || {
            let below = path.get(at.len()..).unwrap_or_default();
            words(below)
                .iter()
                .any(|w| key.iter().any(|k| same_word(w, k)))
        };
        let padded = format!(" {} ", words(t).join(" "));
        keyed
            && says
                .iter()
                .any(|s| !s.is_empty() && padded.contains(&format!(" {s} ")))
    })
}

/// The place `rules` choose among the persona's own `locations` ([`PlaceRule`]): the first
/// rule that applies to her decides, and its first `near` word found in a location's key or
/// label (whole words) names the place. `Err` says what was looked for, for the `skipped`
/// table; a rule that applies but finds nothing never falls through to the next (a retiree
/// with no market is not sent to a default "Work").
pub fn place(p: &KnowuProfile, rules: &[PlaceRule]) -> Result<Place, String> {
    let applies = |r: &PlaceRule| match &r.at {
        None => true,
        Some(at) => says_any(p, at, &[], &r.says).is_some(),
    };
    let Some(rule) = rules.iter().find(|r| applies(r)) else {
        return Err("rule for her: no place rule applies to the profile".into());
    };
    let places = saved_places(p);
    let named = |pl: &Place, w: &str| {
        words(&pl.key)
            .iter()
            .chain(&words(&pl.label))
            .any(|t| t == w)
    };
    rule.near
        .iter()
        .find_map(|w| places.iter().find(|pl| named(pl, &w.to_lowercase())))
        .cloned()
        .ok_or_else(|| {
            let why = match &rule.at {
                Some(at) => format!(" (as `{at}` says {})", rule.says.join(" | ")),
                None => String::new(),
            };
            format!(
                "place among `locations` named {}{why}",
                rule.near.join(" | ")
            )
        })
}

/// Every text under `v` with its dotted path (list items as `path.N`).
fn leaf_texts(path: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => m
            .iter()
            .for_each(|(k, v)| leaf_texts(&format!("{path}.{k}"), v, out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, v)| leaf_texts(&format!("{path}.{i}"), v, out)),
        Value::Null => {}
        other => out.push((path.to_string(), text(other))),
    }
}

/// Lower-case words of a key or a text: split at anything not alphanumeric and at camelCase
/// humps.
pub fn words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in s.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower && !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            cur.extend(c.to_lowercase());
        } else {
            prev_lower = false;
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Two words are the same when equal, or when one of at least four letters begins the other
/// (`remark` / `remarks`, `prefer` / `preference`, `note` / `notes`).
fn same_word(token: &str, word: &str) -> bool {
    token == word
        || (word.len() >= 4 && token.starts_with(word))
        || (token.len() >= 4 && word.starts_with(token))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn persona(yaml: &str) -> KnowuProfile {
        KnowuProfile::parse("t.yaml", yaml).expect("profile")
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn find(p: &KnowuProfile, sections: &[&str], about: &[&str], entry: &[&str]) -> Option<String> {
        let (sections, about, entry) = (strings(sections), strings(about), strings(entry));
        let w = Wanted {
            sections: &sections,
            about: &about,
            entry: &entry,
        };
        preference(p, &w).map(|f| f.path)
    }

    #[test]
    fn words_split_keys_and_camel_case() {
        assert_eq!(
            words("general_take_out_remark"),
            ["general", "take", "out", "remark"]
        );
        assert_eq!(words("preferredChannel[0]"), ["preferred", "channel", "0"]);
        assert_eq!(
            words("Didi Premier (礼橙专车)"),
            ["didi", "premier", "礼橙专车"]
        );
    }

    #[test]
    fn phrases_match_key_paths_most_specific_first() {
        let p = persona(
            "user_profile:\n  preferences:\n    diet:\n      avoid_remark: none\n      general_take_out_remark: Less oil\n      special_notes: Allergic to shrimp\n    travel:\n      commute_optimization: {primary_mode: Subway, weather_fallback: Taxi}\n      avoid_transport: [Bus]\n      primary_transport: Bike\n",
        );
        let diet = ["preferences.diet"];
        assert_eq!(
            find(
                &p,
                &diet,
                &["delivery remark", "take out remark", "special notes"],
                &[]
            )
            .as_deref(),
            Some("preferences.diet.general_take_out_remark")
        );
        // Only notes: the later phrase; a key saying the opposite never matches.
        assert_eq!(
            find(&p, &diet, &["special note"], &[]).as_deref(),
            Some("preferences.diet.special_notes")
        );
        let travel = ["preferences.travel"];
        // The parent key does not say "primary mode"; its child does.
        assert_eq!(
            find(&p, &travel, &["primary mode", "primary transport"], &[]).as_deref(),
            Some("preferences.travel.commute_optimization.primary_mode")
        );
        assert_eq!(
            find(&p, &travel, &["transport"], &[]).as_deref(),
            Some("preferences.travel.primary_transport"),
            "avoid_transport says the opposite"
        );
        assert_eq!(find(&p, &travel, &["seat"], &[]), None);
        let shop = persona(
            "user_profile:\n  preferences:\n    shopping:\n      price_sensitivity: {clothes_threshold: 100 yuan}\n      clothes: No black clothes\n",
        );
        assert_eq!(
            find(&shop, &["preferences.shopping"], &["clothes"], &[]).as_deref(),
            Some("preferences.shopping.clothes"),
            "the shallower key wins over one written earlier but deeper"
        );
        assert_eq!(find(&p, &["preferences.shopping"], &["shoe"], &[]), None);
    }

    #[test]
    fn an_entry_filter_finds_the_contact() {
        let p = persona(
            "user_profile:\n  social_graph:\n    family:\n      - {name: Dad, interaction: Formal}\n      - {name: Mom, interaction: Sweet and short}\n",
        );
        assert_eq!(
            find(&p, &["social_graph"], &["interaction"], &["mom", "mother"]).as_deref(),
            Some("social_graph.family[1].interaction")
        );
        assert_eq!(
            find(&p, &["social_graph"], &["interaction"], &["aunt"]),
            None
        );
    }

    #[test]
    fn habits_match_by_key_then_by_meaning_unless_claimed() {
        let p = persona(
            "user_profile:\n  habits:\n    weekend_alarm: {wakeup_time: 6:00am}\n    lazy_saturdays: {description: 'Turns off the 07:30 alarm on Friday night to sleep in.'}\n    power_mode: {trigger: 'Battery under 20%', action: 'enable power saving'}\n",
        );
        let none = BTreeSet::new();
        let means = strings(&["alarm", "disable|turn off|turns off|sleep in"]);
        let keys = strings(&["weekend_sleeper"]);
        let (k, _, how) = habit(&p, &keys, &means, &none, &none).expect("by meaning");
        assert_eq!((k.as_str(), how), ("lazy_saturdays", HabitMatch::Meaning));
        // weekend_alarm mentions an alarm but not switching it off: not the sleeper habit.
        let claimed: BTreeSet<String> = ["lazy_saturdays".to_string()].into();
        assert!(habit(&p, &keys, &means, &claimed, &none).is_none());
        let battery = strings(&["battery", "saver|saving"]);
        let (k, _, how) =
            habit(&p, &strings(&["power_mode"]), &battery, &none, &none).expect("key");
        assert_eq!((k.as_str(), how), ("power_mode", HabitMatch::Key));
        assert!(habit(
            &p,
            &strings(&["x"]),
            &battery,
            &none,
            &["power_mode".into()].into()
        )
        .is_none());
    }
}
