//! The subject of a question rules ask-only slots out: a question whose *form* asks the kind of
//! value a slot holds (a time, a count, an amount, a duration, a day) is about the slot only when
//! what it asks that value *of* is the user's decision the slot holds.
//!
//! "What time does the bakery open?", "How long is the episode?", "How many bags will you
//! check?", "How much did you tip last time?", "Should I ask Dana what time suits her?" all ask a
//! slot's kind of value, but of a third party's fact, an item's property, another countable
//! noun, the past, or a question to put to someone else. Read from the task's own data (the
//! slot's `about` sentence, its field's name, what a count slot counts):
//!
//! - **a third party or an item as the subject** — "what time / when / how long / how many X"
//!   followed by an auxiliary and a noun phrase ("does *the post office* open", "is *the latest
//!   episode*"): the phrase must be the user ("you", "we", "I"), the act ("it"), or a noun the
//!   slot is about (the head nouns of its `about` sentence — "the *reminder*", "the *block*" —
//!   its field, what it counts, or a booking, reservation or order); after a decision modal
//!   ("should", "shall") a person may be asked of ("What time should Dana expect you?"), a thing
//!   not ("How many stars should the place have?"). "How many grams is *a* block?" asks an
//!   item's measure; a time said after the subject ("the market *this Saturday*") is none of it.
//! - **the past** — "did you…", "was your last…", "have you ordered…" (not "did you want / have
//!   in mind", "were you thinking"), unless the slot is itself about the past ("How many minutes
//!   the run took"), and then not of another occasion ("last Sunday").
//! - **another countable noun** — "how many *cats*" beside a slot counting packs: the count's
//!   noun must be what the slot counts, people, or a unit the lexicon groups with them; a time
//!   unit ("how many minutes until…") asks a duration, which a slot holding none is not.
//! - **a kind the slot does not hold** — an open question asking only for a time, a day or a
//!   count is about no slot holding none of them ("What time does the Walgreens close?" names a
//!   pharmacy, and asks an hour).
//! - **a question to put to someone else** — "Should I ask the restaurant how many…", "Want me
//!   to check with Dana…".
//! - **a sum of money of a slot holding none** — "How much should I tip?", "How much are you
//!   willing to spend per ticket?" beside a count of portions or tickets.
//! - **a property of a named thing** — "Do you know if the CVS on 9th has a drive-through?": a
//!   closed question whether a thing has, offers or sells something is no choice of it.
//!
//! A miss is better than the wrong slot; every rule keeps "How many of you are going?", "What
//! time works for you?", "How long should the block be?", "For how many?".

use std::collections::HashSet;

use super::forms::{Form, Kind};
use super::profile::{SlotProfile, TaskMatcher};
use super::slot_subject::{capitalised, raw, stems_of, SlotSubject, MONEY, OPENERS};
use crate::tasks::language::{lexicon, text_concepts};
use crate::tasks::model::Source;

/// Whether a "how much" question asks a sum of money.
fn asks_money(words: &[String]) -> bool {
    let how_much = words.windows(2).any(|w| w[0] == "how" && w[1] == "much");
    how_much && words.iter().any(|w| MONEY.contains(&w.as_str()))
}

/// The phrases asking a kind of value whose subject follows them.
const ASKS: [&str; 19] = [
    "what time",
    "which time",
    "what hour",
    "when",
    "how long",
    "how many",
    "how much",
    "how late",
    "how early",
    "which day",
    "which days",
    "what day",
    "what days",
    "which night",
    "what night",
    "what date",
    "what dates",
    "which date",
    "which dates",
];

/// Auxiliaries after which a question names its subject.
const AUX: [&str; 20] = [
    "do", "does", "did", "is", "are", "was", "were", "am", "has", "have", "had", "will", "would",
    "can", "could", "should", "shall", "might", "must", "may",
];

/// Words that end a subject's noun phrase: prepositions, particles, adverbs and common verbs.
const NP_ENDS: &[&str] = &[
    "before",
    "after",
    "for",
    "of",
    "from",
    "with",
    "to",
    "at",
    "on",
    "in",
    "into",
    "by",
    "about",
    "out",
    "back",
    "off",
    "up",
    "over",
    "until",
    "till",
    "usually",
    "normally",
    "typically",
    "actually",
    "generally",
    "still",
    "always",
    "ever",
    "eat",
    "drink",
    "say",
    "open",
    "close",
    "closes",
    "set",
    "rise",
    "land",
    "board",
    "leave",
    "start",
    "end",
    "begin",
    "finish",
    "run",
    "take",
    "hold",
    "have",
    "play",
    "get",
    "come",
    "go",
    "need",
    "want",
    "seat",
    "cost",
    "raise",
    "put",
    "be",
    "been",
    "happen",
    "like",
    "expect",
    "arrive",
    "stop",
    "make",
    "serve",
    "include",
];

/// Pronouns that are the user or the act being arranged.
const OURS: [&str; 10] = [
    "you", "we", "i", "us", "it", "this", "that", "everyone", "y'all", "there",
];

/// Weather after "it": a fact of the world, not the act ("When does it start raining?").
const WEATHER: [&str; 8] = [
    "rain", "raining", "snow", "snowing", "dark", "light", "sunny", "cold",
];

/// The subject of a question asking a kind of value: the auxiliary after the asking phrase
/// (and a count's noun) and the words of the noun phrase after it; in an embedded question
/// ("…know when *the post office* closes"), the noun phrase right after the asking phrase
/// and the auxiliary after it (none: an empty one).
fn subject_phrase(words: &[String], names: &HashSet<String>) -> Option<(String, Vec<String>)> {
    subject_after(words, &ASKS, names)
}

/// Words after which a "when" opens an embedded question ("Do you *know* when Baan Thai
/// closes?", "…*and* when should it ping you?") rather than a clause of time.
const EMBEDDERS: [&str; 16] = [
    "know",
    "tell",
    "ask",
    "check",
    "sure",
    "idea",
    "remember",
    "wonder",
    "wondering",
    "out",
    "see",
    "whether",
    "and",
    "so",
    "then",
    "but",
];

/// "Want it to turn off *when the episode ends*?": a "when" inside a question, after neither a
/// verb of knowing nor a conjunction, opens a clause of time, no question about its subject.
fn subordinate_when(words: &[String], at: usize) -> bool {
    at > 0 && words[at] == "when" && !EMBEDDERS.contains(&words[at - 1].as_str())
}

/// The words of the noun phrase starting at `from`: up to a preposition, particle, adverb or
/// verb (its base or, after the phrase's first word, its third person), an auxiliary, or an
/// "-ing" word opening it.
fn noun_phrase(words: &[String], from: usize) -> Vec<String> {
    words[from.min(words.len())..]
        .iter()
        .enumerate()
        .take_while(|(j, w)| {
            // "yesterday's *run*", "the *run*": after a possessive or an article a verb's
            // word is a noun of the phrase.
            let after_opener = *j > 0 && {
                let prev = &words[from + j - 1];
                prev.ends_with("'s") || OPENERS.contains(&prev.as_str())
            };
            (after_opener || !ends_a_phrase(w, *j > 0))
                && !AUX.contains(&w.as_str())
                && (*j != 0 || !w.ends_with("ing"))
        })
        .map(|(_, w)| w.clone())
        .collect()
}

/// Whether a word ends a noun phrase: one of [`NP_ENDS`], or — inside the phrase — a verb's
/// third person ("…when the restaurant *starts* serving").
fn ends_a_phrase(w: &str, inside: bool) -> bool {
    NP_ENDS.contains(&w) || inside && w.strip_suffix('s').is_some_and(|v| NP_ENDS.contains(&v))
}

/// The first auxiliary within five words from `from`, with its position.
fn aux_after(words: &[String], from: usize) -> Option<(usize, String)> {
    words
        .iter()
        .enumerate()
        .skip(from)
        .take(5)
        .find(|(_, w)| AUX.contains(&w.as_str()))
        .map(|(i, w)| (i, w.clone()))
}

/// A participle of a passive after "are"/"is" ("needed", "required", "expected").
fn passive_participle(w: &str) -> bool {
    w.len() > 4 && w.ends_with("ed") && !NP_ENDS.contains(&w)
}

/// [`subject_phrase`] after the first of `asks`; a name right after it ("…know when *Baan
/// Thai* closes") opens an embedded question as an article does.
fn subject_after(
    words: &[String],
    asks: &[&str],
    names: &HashSet<String>,
) -> Option<(String, Vec<String>)> {
    let (at, len) = (0..words.len()).find_map(|i| {
        asks.iter().find_map(|a| {
            let a: Vec<&str> = a.split(' ').collect();
            let hit = words.len() >= i + a.len()
                && words[i..i + a.len()].iter().zip(&a).all(|(w, x)| w == x);
            hit.then_some((i, a.len()))
        })
    })?;
    if subordinate_when(words, at) {
        return None;
    }
    let mut next = at + len;
    if words[at].starts_with("how") && matches!(words[at + 1].as_str(), "many" | "much") {
        // The count's noun ("how many *tables* does…").
        while words.get(next).is_some_and(|w| !lexicon().is_stop(w)) && next < at + len + 3 {
            next += 1;
        }
    }
    if words
        .get(next)
        .is_some_and(|w| NP_ENDS.contains(&w.as_str()))
    {
        // "How many dishes on the menu are mild?": the count's noun is the subject, described
        // by what follows the auxiliary; "How many from the design team?" names none.
        let (aux_at, aux) = aux_after(words, next)?;
        return Some((aux, noun_phrase(words, aux_at + 1)));
    }
    let w = words.get(next)?;
    if OPENERS[..7].contains(&w.as_str()) || names.contains(w) {
        // An embedded question: the subject comes first.
        let np = noun_phrase(words, next);
        let aux = words
            .get(next + np.len())
            .filter(|a| AUX.contains(&a.as_str()))
            .cloned()
            .unwrap_or_default();
        return Some((aux, np));
    }
    let Some((aux_at, aux)) = aux_after(words, next) else {
        // "…know when *check-in* opens": a noun phrase ended by a verb's third person is an
        // embedded question's subject.
        let np = noun_phrase(words, next);
        let third_person = words
            .get(next + np.len())
            .and_then(|v| v.strip_suffix('s'))
            .is_some_and(|v| NP_ENDS.contains(&v));
        return (third_person && !np.is_empty()).then_some((String::new(), np));
    };
    // "…know which date *you* would prefer": an embedded question puts its subject before the
    // auxiliary.
    if aux_at > next && matches!(words[aux_at - 1].as_str(), "you" | "we" | "i") {
        return Some((aux, vec![words[aux_at - 1].clone()]));
    }
    let after = &words[aux_at + 1..];
    // "How many lattes are needed for the session?": a passive says what the counted things
    // undergo; they are the subject.
    if after.first().is_some_and(|w| passive_participle(w)) {
        return None;
    }
    if after.len() >= 2
        && matches!(after[0].as_str(), "in" | "per")
        && matches!(after[1].as_str(), "a" | "an" | "one" | "each" | "every")
    {
        // "How many cans are in one pack?": a measure of one item.
        return Some((aux, vec!["one".to_string()]));
    }
    Some((aux, noun_phrase(words, aux_at + 1)))
}

/// Whether the subject a question asks a value of is not the user, the act or the slot's
/// thing (module doc); with the noun phrase when it names a thing.
fn third_party(s: &SlotSubject, words: &[String], names: &HashSet<String>) -> (bool, bool) {
    let Some((aux, np)) = subject_phrase(words, names) else {
        return (false, false);
    };
    let Some(first) = np.first() else {
        return (false, false);
    };
    if OURS.contains(&first.as_str()) {
        // "When does it start raining?": the weather, not the act.
        let weather = first == "it" && words.iter().any(|w| WEATHER.contains(&w.as_str()));
        return (weather, false);
    }
    if matches!(
        first.as_str(),
        "a" | "an" | "one" | "each" | "every" | "per"
    ) {
        // "How many grams is a block of tofu?": a measure of one item.
        return (true, true);
    }
    // "the farmers market *this Saturday*": a time said after the subject is none of it;
    // "What time the evening before should…" names no subject.
    let skip = [
        "itself",
        "themselves",
        "exactly",
        "really",
        "the",
        "your",
        "my",
        "this",
        "next",
        "a",
        "an",
        "today",
    ];
    let Some(last) = np.iter().rev().find(|w| {
        !skip.contains(&w.as_str())
            && !TIME_WORDS.contains(&w.trim_end_matches("'s"))
            && *w != "last"
            && !crate::world::clock::WEEKDAYS.contains(&w.trim_end_matches('s'))
    }) else {
        return (false, false);
    };
    // "When should *the reminder* ping you?": a phrase running on past its verb to an object
    // pronoun ends before the verb.
    let last = np
        .iter()
        .position(|w| OBJECTS.contains(&w.as_str()))
        .filter(|k| *k >= 2)
        .and_then(|k| np[..k - 1].last())
        .unwrap_or(last);
    let own = stems_of(last).iter().any(|x| s.heads.contains(x));
    // "What time should Dana expect you?": a person after a decision modal may be asked of.
    let person = np.iter().any(|w| names.contains(w));
    if matches!(aux.as_str(), "should" | "shall") && person {
        return (false, false);
    }
    // "How many colors does the tee come in?": a count of the slot's own thing's property.
    (!own, own && matches!(aux.as_str(), "do" | "does"))
}

/// Object pronouns: the phrase before the verb they follow is the subject.
const OBJECTS: [&str; 6] = ["you", "me", "us", "him", "her", "them"];

/// Words of a time said where a subject could stand.
const TIME_WORDS: [&str; 9] = [
    "morning",
    "afternoon",
    "evening",
    "night",
    "day",
    "week",
    "weekend",
    "tomorrow",
    "tonight",
];

/// Phrases of a question about the user's choice said in the past tense.
const DECIDING: [&str; 17] = [
    "did you want",
    "did you need",
    "did you have in mind",
    "did you say",
    "did you mean",
    "did you decide",
    "did you choose",
    "did you plan",
    "did you settle",
    "were you thinking",
    "were you planning",
    "were you hoping",
    "were you looking",
    "were you wanting",
    "were you going",
    "was it you wanted",
    "have you decided",
];

/// Irregular past verbs ("How many guests *came* last year?").
const IRREGULAR_PAST: [&str; 14] = [
    "came", "went", "took", "paid", "spent", "gave", "bought", "ate", "ran", "left", "sent",
    "drank", "saw", "met",
];

/// Whether a question asks what was done before ("did you…", "was your last…", "have you
/// ordered…"), not the choice being made.
fn past(words: &[String]) -> bool {
    let joined = format!(" {} ", words.join(" "));
    if DECIDING.iter().any(|d| joined.contains(&format!(" {d} "))) {
        return false;
    }
    let modal = words.iter().any(|w| {
        matches!(
            w.as_str(),
            "should"
                | "will"
                | "would"
                | "want"
                | "shall"
                | "going"
                | "you'll"
                | "you'd"
                | "can"
                | "could"
                | "may"
                | "might"
        )
    });
    let simple = words
        .iter()
        .any(|w| matches!(w.as_str(), "did" | "was" | "were" | "had"))
        || words.iter().any(|w| IRREGULAR_PAST.contains(&w.as_str()));
    // "have you ordered", "has the food bank raised": a perfect.
    let perfect = words.iter().enumerate().any(|(i, w)| {
        matches!(w.as_str(), "have" | "has")
            && words[i + 1..].iter().take(4).any(|v| {
                v.len() > 3 && v.ends_with("ed")
                    || matches!(v.as_str(), "been" | "done" | "had" | "gone" | "tried")
                    || matches!(v.as_str(), "bought" | "made" | "taken" | "seen" | "put")
            })
    });
    (simple || perfect) && !modal
}

/// "Should I ask the restaurant how many…", "Want me to check with Dana…": a question the
/// agent offers to put to someone else.
fn asks_someone_else(words: &[String]) -> bool {
    let offered = |i: usize| {
        let before = &words[i.saturating_sub(3)..i];
        before
            .iter()
            .any(|w| matches!(w.as_str(), "i" | "me" | "we" | "i'll" | "we'll"))
    };
    words.iter().enumerate().any(|(i, w)| {
        let target = match w.as_str() {
            "ask" => words.get(i + 1),
            "check" if words.get(i + 1).is_some_and(|n| n == "with") => words.get(i + 2),
            _ => None,
        };
        let other = target.is_some_and(|t| {
            !matches!(
                t.as_str(),
                "you" | "for" | "about" | "if" | "whether" | "how" | "what" | "when" | "which"
            )
        });
        other && offered(i)
    })
}

/// Verbs of a thing's property: a closed question whether a thing has one is no choice of it.
const PROPERTIES: [&str; 14] = [
    "has",
    "have",
    "offer",
    "offers",
    "sell",
    "sells",
    "carry",
    "carries",
    "accept",
    "accepts",
    "stock",
    "stocks",
    "validate",
    "validates",
];

/// "Do you know if the CVS on 9th has a drive-through?", "Does Whole Foods have parking?".
fn property_of_a_thing(words: &[String], f: &Form) -> bool {
    let asks_whether = words.windows(2).any(|w| {
        w[0] == "know" && matches!(w[1].as_str(), "if" | "whether")
            || w[0] == "wondering" && matches!(w[1].as_str(), "if" | "whether")
    });
    let first = words.first().map(String::as_str);
    let closed = f.closed || asks_whether;
    // "Do you have a headline in mind?" asks the user, not a thing.
    let of_the_user = words
        .get(1)
        .is_some_and(|w| matches!(w.as_str(), "you" | "we" | "i"));
    let opens_on_a_thing =
        matches!(first, Some("does" | "do" | "is" | "are")) && !of_the_user || asks_whether;
    let choosing = words.iter().any(|w| {
        matches!(
            w.as_str(),
            "want" | "prefer" | "ok" | "okay" | "work" | "instead" | "should" | "rather" | "fine"
        )
    });
    // "Is it the usual six of you, or has the group changed?": after "or" a new question opens;
    // its "has" is no property of the thing asked about first.
    let first_clause = words.iter().take_while(|w| w.as_str() != "or");
    closed
        && opens_on_a_thing
        && !choosing
        && first_clause
            .skip(2)
            .any(|w| PROPERTIES.contains(&w.as_str()))
}

/// Kinds of value a question may ask whose subject is read here.
const TYPED: [Kind; 6] = [
    Kind::Count,
    Kind::Duration,
    Kind::Time,
    Kind::Date,
    Kind::Dates,
    Kind::When,
];

fn holds(p: &SlotProfile, k: Kind) -> bool {
    p.kinds.iter().any(|(x, w)| *x == k && *w > 0.0)
}

/// Whether a count's noun ("how many *bags*", "how many *cats*", "how many *colors* does the
/// tee come in") is another thing than ask-only slot `i` counts: a time unit when it holds no
/// duration; another slot's word; a word of its own `about` that is no head of it (the *cat* of
/// cat food); or, asked of the slot's own thing, anything but what it counts, people or a unit.
fn other_count_noun(
    m: &TaskMatcher,
    i: usize,
    f: &Form,
    words: &[String],
    of_its_thing: bool,
) -> bool {
    let p = &m.profiles[i];
    let Some(noun) = f.counted.as_deref() else {
        return false;
    };
    let last = noun.split_whitespace().last().unwrap_or(noun);
    if lexicon().is_time_unit(last) {
        return !holds(p, Kind::Duration);
    }
    if !f.kinds.contains(&Kind::Count) {
        return false;
    }
    if inside_its_unit(p, words) {
        return true;
    }
    let stems = stems_of(last);
    let c = text_concepts(noun);
    if c.iter().any(|x| p.counted.contains(x)) {
        return false;
    }
    if foreign_unit(p, last, &c) {
        return true;
    }
    let own = stems.iter().any(|x| p.terms.contains(x));
    let elsewhere = m
        .profiles
        .iter()
        .enumerate()
        .any(|(j, q)| j != i && stems.iter().any(|x| q.subject.heads.contains(x)));
    if elsewhere && !own {
        // "How many bags?" beside a bag count: another slot's noun.
        return true;
    }
    let generic = text_concepts("people passengers tickets cartons");
    let unit = c.iter().any(|x| x.starts_with('#') && generic.contains(x));
    if unit || stems.iter().any(|x| p.subject.heads.contains(x)) {
        return false;
    }
    own && !p.counted.is_empty() || of_its_thing
}

/// "How many *bags* are you bringing?" beside a count of nights, "How many *miles*?" beside one
/// of minutes, "How many *boxes*?" beside one of people: a slot counting time (it holds a
/// duration) counts only time's words (nights, evenings), and one counting people no unit
/// things come in — whatever unit the lexicon knows the noun as.
fn foreign_unit(p: &SlotProfile, last: &str, c: &HashSet<String>) -> bool {
    let word = last.trim_end_matches('s');
    let counts_time = p
        .kinds
        .iter()
        .any(|(k, w)| *k == Kind::Duration && *w >= 0.8);
    if counts_time {
        return !TIME_WORDS.contains(&word) && !lexicon().is_time_unit(last);
    }
    let people = text_concepts("people");
    let counts_people = p.counted.iter().any(|x| people.contains(x))
        || p.counted.is_empty() && p.kinds.iter().any(|(k, w)| *k == Kind::Person && *w >= 0.8);
    let containers = text_concepts("cartons");
    counts_people
        && c.iter()
            .any(|x| x.starts_with('#') && containers.contains(x))
}

/// "How many shots go in the latte?", "How many cans are in one pack?": a count of what is
/// inside one of the things the slot counts.
fn inside_its_unit(p: &SlotProfile, words: &[String]) -> bool {
    !p.counted.is_empty()
        && words.iter().enumerate().any(|(i, w)| {
            matches!(w.as_str(), "in" | "per")
                && words[i + 1..].iter().take(3).any(|u| {
                    text_concepts(u)
                        .iter()
                        .any(|c| !c.starts_with('#') && p.counted.contains(c))
                })
        })
}

/// "Where's the show?", "Do you know where the venue is?", "Where is the birthday dinner?": an
/// open "where" question is about no slot holding no place; of a slot holding one, a question
/// where a thing *is* is about it only when the thing is what the slot's place is the place of
/// ([`SlotSubject::place_of`]) — the user ("Where are you now?") or the act ("Where's the
/// pickup?") — not a thing its `about` names beside it ("before the show").
fn where_rules_out(p: &SlotProfile, words: &[String], f: &Form, names: &HashSet<String>) -> bool {
    if f.closed || !f.kinds.contains(&Kind::Place) {
        return false;
    }
    if !holds(p, Kind::Place) {
        return f
            .kinds
            .iter()
            .all(|k| matches!(k, Kind::Place | Kind::YesNo | Kind::Choice));
    }
    let Some((aux, np)) = subject_after(words, &["where"], names) else {
        return false;
    };
    let copula = matches!(aux.as_str(), "is" | "are" | "was" | "were" | "");
    let Some(first) = np.first() else {
        return false;
    };
    if !copula || OURS.contains(&first.as_str()) || matches!(first.as_str(), "she" | "he") {
        return false;
    }
    !np.iter()
        .any(|w| stems_of(w).iter().any(|x| p.subject.place_of.contains(x)))
}

/// "What's the address of the client's office?" beside where the user is now: the address or
/// location *of* a thing asks where the thing is — about the slot only when the thing is the
/// user or what the slot's place is the place of ([`SlotSubject::place_of`]), as for "where".
fn address_of_rules_out(p: &SlotProfile, words: &[String]) -> bool {
    let Some(at) = words
        .windows(2)
        .position(|w| matches!(w[0].as_str(), "address" | "location") && w[1] == "of")
    else {
        return false;
    };
    let np = noun_phrase(words, at + 2);
    let Some(first) = np.first() else {
        return false;
    };
    if OURS.contains(&first.as_str()) || !holds(p, Kind::Place) {
        return false;
    }
    !np.iter()
        .any(|w| stems_of(w).iter().any(|x| p.subject.place_of.contains(x)))
}

/// The capitalised words of a question that may name a third party: not a day or a month ("What
/// time Tuesday works?" asks the user's time on a day, not Tuesday's).
fn names_in(text: &str) -> HashSet<String> {
    use crate::world::clock::{MONTHS, WEEKDAYS};
    let mut names = capitalised(text);
    names.retain(|w| !WEEKDAYS.contains(&w.as_str()) && !MONTHS.contains(&w.as_str()));
    names
}

impl TaskMatcher {
    /// Whether the subject of a piece rules ask-only slot `i` out (module doc).
    pub(super) fn subject_rules_out(&self, i: usize, text: &str, f: &Form) -> bool {
        let p = &self.profiles[i];
        if p.source != Source::AskOnly {
            return false;
        }
        let words = raw(text);
        if asks_someone_else(&words) || property_of_a_thing(&words, f) {
            return true;
        }
        if asks_money(&words) && !p.subject.money
            || where_rules_out(p, &words, f, &names_in(text))
            || address_of_rules_out(p, &words)
        {
            return true;
        }
        let asked: Vec<Kind> = f
            .kinds
            .iter()
            .copied()
            .filter(|k| TYPED.contains(k))
            .collect();
        if asked.is_empty() {
            return false;
        }
        let s = &p.subject;
        let joined = format!(" {} ", words.join(" "));
        // "last Sunday", "a week ago" — not "last night's run", the one to log.
        let other_occasion = [
            " last week",
            " last month",
            " last year",
            " last time",
            " last weekend",
            " ago ",
            " previous ",
        ]
        .iter()
        .any(|w| joined.contains(w))
            || crate::world::clock::WEEKDAYS
                .iter()
                .any(|d| joined.contains(&format!(" last {d}")));
        let open_typed_only = !f.closed
            && f.kinds
                .iter()
                .all(|k| TYPED.contains(k) || *k == Kind::YesNo)
            && !asked.iter().any(|k| holds(p, *k));
        let (foreign, of_its_thing) = third_party(s, &words, &names_in(text));
        joined.contains(" time zone ")
            || open_typed_only
            || foreign
            || other_count_noun(self, i, f, &words, of_its_thing)
            || (if s.past { other_occasion } else { past(&words) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(text: &str) -> Vec<String> {
        raw(text)
    }

    #[test]
    fn the_past_is_told_from_a_choice_said_politely() {
        assert!(past(&w("How much did you give last time?")));
        assert!(past(&w("How many times have you ordered Thai this month?")));
        assert!(past(&w("How many guests came to Lena's party last year?")));
        assert!(!past(&w("What time did you have in mind?")));
        assert!(!past(&w("How many people were you thinking of?")));
        assert!(!past(&w("When can you have the plan done?")));
        assert!(!past(&w("What time should the reminder go off?")));
    }

    #[test]
    fn a_question_for_someone_else_is_told_from_one_for_the_user() {
        assert!(asks_someone_else(&w(
            "Should I ask Sam how many tickets he needs?"
        )));
        assert!(asks_someone_else(&w("Want me to check with Dana first?")));
        assert!(!asks_someone_else(&w(
            "Can I ask how many people are coming?"
        )));
        assert!(!asks_someone_else(&w("Should I ask for a table for four?")));
    }

    #[test]
    fn the_subject_follows_the_auxiliary_or_opens_an_embedded_question() {
        let np = |t: &str| subject_phrase(&w(t), &capitalised(t)).map(|(a, np)| (a, np.join(" ")));
        assert_eq!(
            np("What time does the post office open on Saturday?"),
            Some(("does".to_string(), "the post office".to_string()))
        );
        assert_eq!(
            np("Do you know when the post office closes?"),
            Some((String::new(), "the post office".to_string()))
        );
        assert_eq!(
            np("What time's your flight?"),
            Some(("is".to_string(), "your flight".to_string()))
        );
        assert_eq!(
            np("How many people are coming?"),
            Some(("are".to_string(), String::new()))
        );
        assert_eq!(np("How many from the design team?"), None);
        assert_eq!(np("What time works for you?"), None);
        assert_eq!(
            np("Do you know when check-in opens for Alaska?"),
            Some((String::new(), "check-in".to_string()))
        );
    }
}
