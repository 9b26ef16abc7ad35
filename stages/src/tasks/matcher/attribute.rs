//! A question about an attribute asks the attribute's noun, not whatever the slot's `about`
//! sentence shares with the one it belongs to:
//!
//! - **a named one's attribute** — "What's Lena's phone number?", "What's Dr. Garcia's first
//!   name, for the booking?", "What's Neon Coast's set length?": beside a count of the people at
//!   *Lena's* birthday dinner or the day of the check-up with *Dr. Garcia*, the name is shared
//!   and the question still asks a number, a name, a length the slot does not hold. It is
//!   about a slot only when the possessed noun is one of the slot's own words ("What's Jordan's
//!   meeting about?" beside the meeting's topic) or the kind of value it holds ("arrival time").
//! - **a re-confirmation of what is the user's** — "Is Sunset Yoga still your studio?", "Is
//!   boutique still your style?": a yes/no question whether a thing is the user's *noun* is
//!   about the slot that noun names, never one that merely lists the thing among its options.
//! - **an amount of another thing of the task** — "How much lemongrass do you need?", "How many
//!   stalks of lemongrass?" beside a count of the coconut milk cans: the instruction names
//!   both things, the slot counts one.
//!
//! A miss is better than the wrong slot: each rule applies only to its own phrasing and keeps a
//! slot whose own words the asked noun is.

use std::collections::HashSet;

use super::forms::Kind;
use super::profile::SlotProfile;
use super::slot_subject::{raw, stems_of};
use crate::tasks::language::lexicon;

/// Words that may follow the user's noun at the end of a re-confirmation ("your studio *these
/// days*?").
const TAIL: [&str; 10] = [
    "now", "these", "days", "again", "too", "still", "lately", "right", "though", "then",
];

/// Prepositions before "your" that make the noun phrase a modifier ("okay *for your* trip").
const PREPOSITIONS: [&str; 12] = [
    "for", "as", "to", "with", "on", "in", "at", "of", "from", "about", "by", "into",
];

/// Whether one of `p`'s own words (a stem) is one of `nouns`, or one names a kind of value `p`
/// holds ("arrival *time*", "which *day*").
fn names_the_slot(p: &SlotProfile, nouns: &[String]) -> bool {
    let holds = |kinds: &[Kind]| p.kinds.iter().any(|(k, w)| kinds.contains(k) && *w > 0.0);
    nouns.iter().any(|noun| {
        stems_of(noun).iter().any(|s| p.terms.contains(s))
            || matches!(noun.as_str(), "time" | "hour") && holds(&[Kind::Time, Kind::When])
            || matches!(noun.as_str(), "day" | "date" | "night")
                && holds(&[Kind::Date, Kind::Dates, Kind::When])
    })
}

/// The noun run starting at `words[0]`: the first word always, then words up to a stop word,
/// a verb form ending in "-ing" or punctuation (at most three).
fn noun_run(words: &[&str]) -> Vec<String> {
    let lex = lexicon();
    let mut run = Vec::new();
    for (i, w) in words.iter().take(3).enumerate() {
        let clean: String = raw(w).join(" ");
        if clean.is_empty() || i > 0 && (lex.is_stop(&clean) || clean.ends_with("ing")) {
            break;
        }
        run.push(clean);
        if w.ends_with([',', '?', '.', '!', ';', ':']) {
            break;
        }
    }
    run
}

/// The possessed nouns of "What's <Name>'s <noun phrase>" (the possessor capitalised, at most
/// four words: "Dr. Garcia's", "La Palma Taqueria's").
fn possessed_noun(text: &str) -> Option<Vec<String>> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let first = words.first()?.to_lowercase().replace('’', "'");
    let start = match first.as_str() {
        "what's" | "whats" => 1,
        "what" if words.get(1).is_some_and(|w| w.eq_ignore_ascii_case("is")) => 2,
        _ => return None,
    };
    for (k, w) in words.iter().enumerate().skip(start).take(4) {
        if !w.chars().next().is_some_and(char::is_uppercase) {
            return None;
        }
        let w = w.replace('’', "'");
        if w.ends_with("'s") || w.ends_with("s'") {
            let run = noun_run(&words[k + 1..]);
            return (!run.is_empty()).then_some(run);
        }
    }
    None
}

/// The user's nouns of "Is <thing> (still) your <noun> (now)?"; `None` for any other phrasing
/// ("Is 8:30 okay for your appointment?" names the noun in a modifier).
fn reconfirmed_noun(text: &str) -> Option<Vec<String>> {
    let words = raw(text);
    if !matches!(words.first()?.as_str(), "is" | "are" | "was") {
        return None;
    }
    let at = words.iter().position(|w| w == "your")?;
    if at < 2 || PREPOSITIONS.contains(&words[at - 1].as_str()) {
        return None;
    }
    let rest: Vec<&str> = words[at + 1..].iter().map(String::as_str).collect();
    let lex = lexicon();
    let run = rest
        .iter()
        .take_while(|w| !lex.is_stop(w) && !TAIL.contains(w))
        .count()
        .min(3);
    let tail_only = rest[run..].iter().all(|w| TAIL.contains(w));
    (run > 0 && tail_only).then(|| rest[..run].iter().map(|w| w.to_string()).collect())
}

/// The noun run of "how much <thing>" or "how many <unit> of <thing>" ("how many packs of
/// Miso's food" → `miso's food`).
fn amount_of(words: &[String]) -> Option<Vec<String>> {
    let lex = lexicon();
    let start = match words
        .windows(2)
        .position(|w| w[0] == "how" && w[1] == "much")
    {
        Some(at) => at + 2,
        None => {
            let at = words
                .windows(2)
                .position(|w| w[0] == "how" && w[1] == "many")?;
            if words.get(at + 3).map(String::as_str) != Some("of") {
                return None;
            }
            at + 4
        }
    };
    let run: Vec<String> = words
        .iter()
        .skip(start)
        .take_while(|w| !lex.is_stop(w))
        .take(3)
        .cloned()
        .collect();
    (!run.is_empty()).then_some(run)
}

/// Whether a piece asking an attribute (module doc) rules slot `p` out; `instruction` holds the
/// stems of the task's instruction.
pub(super) fn attribute_rules_out(
    p: &SlotProfile,
    text: &str,
    instruction: &HashSet<String>,
) -> bool {
    if let Some(nouns) = possessed_noun(text).or_else(|| reconfirmed_noun(text)) {
        if !names_the_slot(p, &nouns) {
            return true;
        }
    }
    amount_of(&raw(text)).is_some_and(|thing| {
        let named = thing
            .iter()
            .flat_map(|w| stems_of(w))
            .any(|s| instruction.contains(&s));
        named && !names_the_slot(p, &thing)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_possessed_noun_is_read_after_a_capitalised_possessor() {
        let n = |t: &str| possessed_noun(t).map(|r| r.join(" "));
        assert_eq!(
            n("What's Lena's phone number?").as_deref(),
            Some("phone number")
        );
        let garcia = n("What's Dr. Garcia's first name, for the booking?");
        assert_eq!(garcia.as_deref(), Some("first name"));
        let palma = n("What is La Palma Taqueria's phone number?");
        assert_eq!(palma.as_deref(), Some("phone number"));
        let jordan = n("What's Jordan's meeting going to be about?");
        assert_eq!(jordan.as_deref(), Some("meeting"));
        assert_eq!(n("What's the headcount for Lena's dinner?"), None);
        assert_eq!(n("What's your backup time?"), None);
    }

    #[test]
    fn a_reconfirmed_noun_ends_the_question() {
        let n = |t: &str| reconfirmed_noun(t).map(|r| r.join(" "));
        assert_eq!(
            n("Is Sunset Yoga still your studio?").as_deref(),
            Some("studio")
        );
        assert_eq!(
            n("Is boutique your style these days?").as_deref(),
            Some("style")
        );
        assert_eq!(n("Is 8:30 okay for your appointment?"), None);
        assert_eq!(
            n("Is Walgreens on Irving your pharmacy for this one?"),
            None
        );
        assert_eq!(n("Will it just be you and Sam?"), None);
    }

    #[test]
    fn an_amount_names_its_thing() {
        let a = |t: &str| amount_of(&raw(t)).map(|r| r.join(" "));
        assert_eq!(
            a("How much lemongrass do you need?").as_deref(),
            Some("lemongrass")
        );
        assert_eq!(
            a("How many stalks of lemongrass?").as_deref(),
            Some("lemongrass")
        );
        let miso = a("How many packs of Miso's food?");
        assert_eq!(miso.as_deref(), Some("miso's food"));
        assert_eq!(a("How much should I get?"), None);
        assert_eq!(a("How many tickets?"), None);
    }
}
