//! Question forms and the kinds of value they ask for: "how many" / "for how many" / "is it
//! just you and…" ask for a count, "how long" for a duration, "what time" for a time, "which
//! day" for a date, "when" for a time or a day, "what should it say" for a free-text message,
//! "what is it about" for a topic, "who" for people, "which"/"or" for a choice, "is X OK" for a
//! yes or no, and "another"/"instead"/"sold out" mark a question about an alternative. A slot's
//! own kinds come from its data (`super::profile`); a question fits a slot when it asks for a
//! kind the slot's value is.

use crate::tasks::values;

/// A kind of value a question asks for, or a slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// A whole number of things or people.
    Count,
    /// How long something lasts (minutes, nights).
    Duration,
    /// A clock time.
    Time,
    /// A day.
    Date,
    /// A span of days.
    Dates,
    /// A time or a day ("when").
    When,
    /// Free text to be written or said (a message, caption, note).
    Text,
    /// What something is about (a topic, a title).
    Topic,
    /// Who (people by name).
    Person,
    /// One of named options (a choice, a record).
    Choice,
    /// A place (a store, a pharmacy, a restaurant: "where").
    Place,
    /// Yes or no.
    YesNo,
}

/// What a piece of a message asks for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Form {
    /// Kinds its question words ask for ("how many", "which day").
    pub kinds: Vec<Kind>,
    /// Kinds of the values it mentions (a time, a date, a number, a part of the day): weaker
    /// evidence, since a question may mention a day it does not ask about.
    pub mentioned: Vec<Kind>,
    /// It is about an alternative to something unavailable ("another time", "instead").
    pub alternative: bool,
    /// Only its context (the statements before it) speaks of something unavailable.
    pub alternative_in_context: bool,
    /// The noun a count is of ("how many *stops*", "four *lattes*"), lower-cased: a count fits
    /// only a slot counting that thing (or people).
    pub counted: Option<String>,
    /// A closed question (no wh-word: "Is it a work dinner?", "Standard or XL?", "Four lattes
    /// like last time?"): what it asks about is the value it proposes, not the nouns around it.
    pub closed: bool,
    /// It names a definite value (a clock time, a day, a number, a part of the day), not only
    /// "earlier" or "later", and neither keeps what is there ("keep the appointment on the 21st
    /// as it is") nor tells of the past ("the draft you saved on Tuesday", "you were out sick on
    /// Monday"): a closed question naming one proposes it ("Would 4:15 suit you?").
    pub concrete: bool,
}

/// Whether `text` holds one of the phrases as whole words (a phrase's own leading or trailing
/// space or punctuation is its boundary).
fn has(text: &str, phrases: &[&str]) -> bool {
    phrases.iter().any(|p| {
        let starts_word = p.chars().next().is_some_and(char::is_alphanumeric);
        let ends_word = p.chars().next_back().is_some_and(char::is_alphanumeric);
        text.match_indices(p).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            let after = text[i + p.len()..].chars().next();
            let glued_before = starts_word && before.is_some_and(char::is_alphanumeric);
            let glued_after = ends_word && after.is_some_and(char::is_alphanumeric);
            !(glued_before || glued_after)
        })
    })
}

/// Words that name a day besides the weekdays (`world::clock::WEEKDAYS`).
const OTHER_DAYS: [&str; 5] = ["weekend", "tomorrow", "today", "next week", "this week"];

const PARTS_OF_DAY: [&str; 14] = [
    "earlier",
    "later",
    "morning",
    "afternoon",
    "evening",
    "night",
    "lunchtime",
    "after work",
    "before work",
    "early in the day",
    "later in the day",
    "later on",
    "in the day",
    "tonight",
];

/// Phrases asking how long.
const DURATION: &[&str] = &[
    "how long",
    "how many minutes",
    "how many hours",
    "how many nights",
    "how many days",
    "duration",
    "for how long",
    "how much time",
    "until when",
    "what length",
    "the length",
    "check-out",
    "check out",
    "checking out",
    "checkout",
    // "What was your time?" after a run or a race: how long it took.
    "was your time",
    "your race time",
    "your finishing time",
    "your finish time",
];

/// Phrases asking how many.
const COUNT: &[&str] = &[
    "how many",
    "how much",
    "number of",
    "party of",
    "headcount",
    "head count",
    "just you",
    "just for you",
    "just the two",
    "just us",
    "only you",
    "how big",
    "quantity",
    "qty",
    "# of",
    "for you and",
    "just you and",
    "how many of you",
    "how many people",
    "for a group",
    "more than one",
    "just the one",
    "just one",
    "what number",
    "which number",
    "the number",
    "amount",
];

/// Phrases asking for a clock time.
const TIME: &[&str] = &[
    "what time",
    "which time",
    "what hour",
    "how early",
    "how late",
    "o'clock",
    "what times",
    "which times",
    "time slot",
    "start time",
    "end time",
    "when in the day",
    "what part of the day",
    "the time",
    "eta",
];

/// Phrases asking for a day or days.
const DATE: &[&str] = &[
    "which day",
    "what day",
    "what date",
    "which date",
    "which dates",
    "what dates",
    "which days",
    "what days",
    "on what day",
    "the dates",
    "your dates",
    "date",
    "day 1",
    "first day",
    "arrival day",
    "which night",
    "what night",
    "which evening",
    "what evening",
    "which nights",
    "what nights",
    "which evenings",
];

/// Whether a (lower-cased) text names both ends of a stay ("check-in and check-out"): one
/// request for its dates, not how long it is nor two requests.
pub fn names_a_span(t: &str) -> bool {
    SPAN_ENDS.iter().all(|ends| has(t, ends))
}

/// Both ends of a stay: a question naming them asks its dates, not how long it is.
const SPAN_ENDS: [&[&str]; 2] = [
    &["check-in", "check in", "checking in", "arrive", "arriving"],
    &[
        "check-out",
        "check out",
        "checking out",
        "checkout",
        "leave",
        "leaving",
    ],
];

/// Phrases asking when (a time or a day).
const WHEN: &[&str] = &[
    "when",
    "when's",
    "from when",
    "until when",
    "by when",
    "what time or day",
];

/// Verbs of something ending: "when" with one asks how long it runs.
const ENDS: &[&str] = &[
    "stop", "end", "finish", "shut off", "turn off", "run out", "cut off", "wrap up",
];

/// Phrases asking for wording (a message, a caption, what to tell).
const TEXT: &[&str] = &[
    "what should it say",
    "what should i say",
    "what do you want to say",
    "what would you like to say",
    "what should i write",
    "what to say",
    "what to write",
    "wording",
    "what should the message",
    "what should the note",
    "what should the caption",
    "want it to say",
    "like it to say",
    "should it say",
    "what message",
    "what note",
    "what should i tell",
    "should i tell",
    "tell her",
    "tell him",
    "tell them",
    "want me to tell",
    "like me to tell",
    "to tell them",
    "to tell her",
    "to tell him",
    "what do you want to tell",
    "say in",
    "write in",
    "what caption",
    "the caption",
    "the message",
    "the note",
    "include in",
    "mention in",
    "put in the",
    "highlight",
    "what should i put",
    "how should i phrase",
    "what would you like me to say",
    "what do i say",
    "to say",
    "to read",
    "say?",
    "one-liner",
    "to put in",
    "what to put",
    // "How do you want to describe it in the post?": its wording.
    "want to describe",
    "like to describe",
    "should i describe",
    "how should i word",
    "how do you want to word",
];

/// Phrases asking what something is about or for.
const TOPIC: &[&str] = &[
    "about?",
    "about ?",
    "topic",
    "subject",
    "agenda",
    "what's it for",
    "what is it for",
    "what's the meeting for",
    "purpose",
    "what should i call",
    "what should the title",
    "the title",
    "headline",
    "name it",
    "call it",
    "title it",
    "what's it about",
    "what is it about",
    "regarding",
    "focus on",
    "cover",
    "main point",
    "takeaway",
];

/// Phrases asking who.
const PERSON: &[&str] = &["who", "whom", "anyone else", "who else", "whose"];

/// Phrases offering or asking for a choice.
const CHOICE: &[&str] = &[
    "which",
    "what kind",
    "what type",
    "what sort",
    "prefer",
    " or ",
    "options",
    "choose",
    "pick",
    "where",
    "what color",
    "what colour",
    "what size",
];

/// Spans of an hour, mentioned.
const HOUR_SPANS: &[&str] = &[
    "an hour",
    "half an hour",
    "a half hour",
    "an hour and a half",
];

/// Phrases asking where.
const PLACE: &[&str] = &[
    "where",
    "the place",
    "which place",
    "what place",
    "the spot",
    "the address",
    "location",
];

/// First words of a yes/no question.
const YES_NO_FIRST: &[&str] = &[
    "is", "are", "would", "should", "do", "does", "can", "could", "will", "shall", "ok", "okay",
    "did", "was", "were", "have", "has", "any",
];

/// Phrases asking for a yes or no.
const YES_NO: &[&str] = &[
    "ok?",
    "okay?",
    "alright?",
    "fine?",
    "work for you",
    "works for you",
    "sound good",
    "be ok",
    "be okay",
    "be fine",
    "acceptable",
    "go ahead",
];

/// Question words (a question with none is closed).
const WH: &[&str] = &[
    "what", "what's", "which", "who", "who's", "whom", "whose", "when", "when's", "where",
    "where's", "why", "how", "how's",
];

/// Words of a question about an alternative.
const ALTERNATIVE: &[&str] = &[
    "another",
    "other",
    "instead",
    "alternative",
    "else",
    "different",
    "substitute",
    "switch",
    "swap",
    "fallback",
    "backup",
    "second choice",
    "rather",
];

/// Phrases saying something is unavailable.
const GONE: &[&str] = &[
    "unavailable",
    "not available",
    "isn't available",
    "aren't available",
    "no longer",
    "sold out",
    "full",
    "gone",
    "taken",
    "booked up",
    "fully booked",
    "out of stock",
    "can't",
    "cannot",
    "no table",
    "isn't offered",
    "not offered",
    "none left",
    "no more",
    "don't have",
    "doesn't have",
    "do not have",
    "does not have",
    "out of",
];

/// Phrases asking the user to decide what to do ("What should I do if 7:30 is taken?"): beside
/// an unavailability, a choice of the alternative.
const WHAT_TO_DO: &[&str] = &[
    "what should i do",
    "what do you want me to do",
    "what would you like me to do",
    "what shall i do",
    "what do i do",
    "what if",
    "how should i handle",
];

/// The noun an including verb takes ("Want me to *add* a *note* with the $100?", "include a
/// short message for Lena" → `note`, `message`): the last word of its object's noun run.
pub(super) fn included_object(text: &str) -> Option<String> {
    const VERBS: [&str; 5] = [" include ", " add ", " attach ", " mention ", " put in "];
    const BEFORE_NOUN: [&str; 10] = [
        "a", "an", "the", "some", "any", "your", "personal", "short", "quick", "little",
    ];
    let lower = format!(" {} ", text.to_lowercase().replace('’', "'"));
    let after = VERBS
        .iter()
        .find_map(|v| lower.split_once(*v).map(|(_, a)| a))?;
    let lex = crate::tasks::language::lexicon();
    after
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .skip_while(|w| BEFORE_NOUN.contains(w))
        .take_while(|w| !lex.is_stop(w))
        .take(3)
        .last()
        .map(str::to_string)
}

/// "Want me to add a note?", "Should I include a message?": a proposal to include a message
/// asks for its wording.
fn proposes_a_message(text: &str) -> bool {
    let message = crate::tasks::language::text_concepts("message");
    included_object(text).is_some_and(|o| {
        crate::tasks::language::text_concepts(&o)
            .iter()
            .any(|c| c.starts_with('#') && message.contains(c))
    })
}

/// "no balcony left", "no tables left": something unavailable, said with "no … left".
fn none_left(t: &str) -> bool {
    let words: Vec<&str> = t.split_whitespace().collect();
    words.iter().enumerate().any(|(i, w)| {
        *w == "no"
            && words[i + 1..]
                .iter()
                .take(3)
                .any(|x| x.trim_end_matches(['?', ',', '.']) == "left")
    })
}

/// Kinds the question words of `t` (lower-cased, padded) ask for, given the noun a count is
/// of.
fn asked_kinds(t: &str, text: &str, counted: Option<&str>) -> Vec<Kind> {
    let lex = crate::tasks::language::lexicon();
    let mut kinds = Vec::new();
    // "What are your check-in and check-out dates?": both ends of a stay are its dates.
    let span = names_a_span(t);
    let duration = !span && (has(t, DURATION) || counted.is_some_and(|n| lex.is_time_unit(n)));
    if duration {
        push(&mut kinds, Kind::Duration);
    }
    if !duration && has(&suits_you_out(t), COUNT) {
        push(&mut kinds, Kind::Count);
    }
    if has(t, TIME) {
        push(&mut kinds, Kind::Time);
    }
    if has(t, DATE) || span {
        push(&mut kinds, Kind::Date);
        push(&mut kinds, Kind::Dates);
    }
    if has(t, WHEN) {
        push(&mut kinds, Kind::When);
        // "When should it stop playing?": when something ends is how long it runs.
        if has(t, ENDS) {
            push(&mut kinds, Kind::Duration);
        }
    }
    if has(t, TEXT) {
        push(&mut kinds, Kind::Text);
    }
    let bare = t.trim_end().trim_end_matches(['?', '.', '!']).trim_end();
    if has(t, TOPIC) || bare.ends_with(" about") {
        push(&mut kinds, Kind::Topic);
    }
    let specific = kinds.iter().any(|k| {
        matches!(
            k,
            Kind::Count | Kind::Duration | Kind::Time | Kind::Date | Kind::Dates
        )
    });
    // "What stood out most?", "What's the gist?", "Any words to go with it?": a question about
    // content asks for free text or a topic, whatever noun it names.
    if !specific && lex.names_content(text) {
        push(&mut kinds, Kind::Text);
        push(&mut kinds, Kind::Topic);
    }
    // "Let me know what the dinner's for": a purpose.
    if !specific && bare.ends_with(" for") && has(t, &["what", "what's"]) {
        push(&mut kinds, Kind::Topic);
    }
    if has(t, PERSON) {
        push(&mut kinds, Kind::Person);
    }
    if has(t, CHOICE) {
        push(&mut kinds, Kind::Choice);
    }
    kinds
}

/// A piece (lower-cased, padded) without "good for you and Tom": for whom a proposal suits asks
/// no count (unlike "a table for you and Sam?").
fn suits_you_out(t: &str) -> String {
    let mut out = t.to_string();
    for adj in [
        "good",
        "ok",
        "okay",
        "fine",
        "work",
        "works",
        "alright",
        "suit",
        "better",
        "best",
        "convenient",
    ] {
        out = out.replace(
            &format!(" {adj} for you and "),
            &format!(" {adj} for you, "),
        );
    }
    out
}

/// Kinds of the values `with_lead` mentions (a time, a day, a duration, else a count), and the
/// noun a mentioned count is of.
fn mentioned_kinds(with_lead: &str) -> (Vec<Kind>, Option<String>, bool) {
    let lex = crate::tasks::language::lexicon();
    let wl = format!(" {} ", with_lead.to_lowercase().replace('’', "'"));
    let mut mentioned = Vec::new();
    let vague = [
        "earlier",
        "later",
        "later on",
        "in the day",
        "later in the day",
        "early in the day",
    ];
    let mut concrete = !values::times(with_lead).is_empty()
        || says_clock(&wl)
        || PARTS_OF_DAY
            .iter()
            .any(|p| !vague.contains(p) && has(&wl, &[p]));
    if !values::times(with_lead).is_empty() || has(&wl, &PARTS_OF_DAY) || says_clock(&wl) {
        mentioned.push(Kind::Time);
    }
    if has(&wl, &crate::world::clock::WEEKDAYS)
        || has(&wl, &OTHER_DAYS)
        || !values::dates(with_lead, 2025).is_empty()
        || has_ordinal(&wl)
    {
        mentioned.push(Kind::Date);
        concrete = true;
    }
    if has(&wl, HOUR_SPANS) || clock_span(&wl) || ends_a_stay(&wl) || length_in_words(&wl) {
        mentioned.push(Kind::Duration);
    }
    let mut counted = None;
    if let (false, Some(noun)) = (mentioned.is_empty(), counted_with_of(&wl)) {
        // "Should I add one pack of tofu to Sunday's order?": beside a day, a count of things.
        mentioned.push(Kind::Count);
        counted = Some(noun);
    }
    if mentioned.is_empty() {
        match count_mention(with_lead) {
            Some(Some(noun)) if lex.is_time_unit(&noun) => mentioned.push(Kind::Duration),
            Some(noun) => {
                mentioned.push(Kind::Count);
                counted = noun;
            }
            None => {}
        }
        concrete = !mentioned.is_empty();
    }
    (mentioned, counted, concrete)
}

/// "A week?", "a couple of nights", "a long weekend": a length said in words (`wl`: lower-cased,
/// padded) — not a frequency ("twice a week", "once a week") nor a point in time ("in a week").
fn length_in_words(wl: &str) -> bool {
    const LENGTHS: [&str; 8] = [
        "a week",
        "a fortnight",
        "a weekend",
        "a long weekend",
        "a couple of nights",
        "a couple of days",
        "a few nights",
        "a few days",
    ];
    const NOT_LENGTH: [&str; 10] = [
        "once", "twice", "times", "per", "in", "every", "within", "than", "from", "next",
    ];
    LENGTHS.iter().any(|l| {
        wl.match_indices(l).any(|(i, _)| {
            let glued = wl[i + l.len()..]
                .chars()
                .next()
                .is_some_and(char::is_alphanumeric);
            let before = wl[..i]
                .split_whitespace()
                .next_back()
                .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()));
            let glued_before = wl[..i]
                .chars()
                .next_back()
                .is_some_and(char::is_alphanumeric);
            !glued && !glued_before && !before.is_some_and(|w| NOT_LENGTH.contains(&w))
        })
    })
}

/// "9 to 11", "8:30–11:00", "9 until noon": two clock times joined as the ends of one span
/// propose how long it lasts (`wl`: lower-cased).
fn clock_span(wl: &str) -> bool {
    let spaced = wl.replace(['–', '—'], " to ");
    let words: Vec<&str> = spaced
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| matches!(c, ',' | '?' | '.' | '!' | '(' | ')')))
        .collect();
    let clock = |w: &str| {
        let w = w.trim_end_matches("am").trim_end_matches("pm");
        matches!(w, "noon" | "midnight")
            || w.split_once(':').is_some_and(|(h, m)| {
                h.parse::<u32>().is_ok_and(|h| h <= 24) && m.len() == 2 && m.parse::<u32>().is_ok()
            })
            || w.parse::<u32>().is_ok_and(|h| (1..=12).contains(&h))
    };
    words
        .windows(3)
        .any(|w| clock(w[0]) && matches!(w[1], "to" | "until" | "till" | "through") && clock(w[2]))
        || words.iter().any(|w| {
            w.split_once('-')
                .is_some_and(|(a, b)| a.contains(':') && clock(a) && clock(b))
        })
}

/// "Should I book it through the 29th?", "checking out on the 10th?": the last day of a stay,
/// alone, proposes how long it lasts (`wl`: lower-cased, padded); "the 17th through the 20th"
/// names both ends — the dates.
fn ends_a_stay(wl: &str) -> bool {
    const UNTIL: [&str; 7] = [
        " through ",
        " until ",
        " till ",
        " checking out ",
        " check out ",
        " check-out ",
        " checkout ",
    ];
    UNTIL.iter().any(|u| {
        wl.find(u).is_some_and(|i| {
            let after = &wl[i + u.len()..];
            let next: String = after
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ");
            let day =
                |t: &str| has_ordinal(t) || has(&format!(" {t} "), &crate::world::clock::WEEKDAYS);
            let before: Vec<&str> = wl[..i].split_whitespace().rev().take(3).collect();
            day(&next) && !day(&before.join(" "))
        })
    })
}

/// "one pack of tofu", "two bags of rice": a number, a noun and "of" count things; the noun.
fn counted_with_of(wl: &str) -> Option<String> {
    let lex = crate::tasks::language::lexicon();
    let words: Vec<&str> = wl
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .collect();
    words
        .windows(3)
        .find(|w| {
            values::number_word(w[0]).is_some()
                && w[2] == "of"
                && !lex.is_stop(w[1])
                && !lex.is_time_unit(w[1])
        })
        .map(|w| w[1].to_string())
}

/// The form of a piece (`lead`: the words of its sentence before it; `context`: the
/// statements before it, read for alternatives only).
pub fn form(text: &str, lead: &str, context: &str) -> Form {
    RECENT_FORMS.with(|memo| {
        let same = |(t, l, c): &FormKey| t == text && l == lead && c == context;
        if let Some((_, f)) = memo.borrow().iter().find(|(k, _)| same(k)) {
            return f.clone();
        }
        let key = (text.to_string(), lead.to_string(), context.to_string());
        let f = form_of(text, lead, context);
        let mut memo = memo.borrow_mut();
        if memo.len() == RECENT_FORMS_KEPT {
            memo.pop_front();
        }
        memo.push_back((key, f.clone()));
        f
    })
}

/// How many recent forms each thread keeps: one message's pieces, each read with and without
/// its lead and context.
const RECENT_FORMS_KEPT: usize = 32;

thread_local! {
    /// The forms this thread read last. The matcher's rules ask for the same piece's form many
    /// times (once per rule and per slot); `form_of` is a pure function of its three texts, so
    /// remembering the last few answers changes no result and saves most of the matcher's time.
    static RECENT_FORMS: std::cell::RefCell<std::collections::VecDeque<(FormKey, Form)>> =
        const { std::cell::RefCell::new(std::collections::VecDeque::new()) };
}

/// A piece's text, lead and context: what a form is computed from.
type FormKey = (String, String, String);

/// [`form`], computed.
fn form_of(text: &str, lead: &str, context: &str) -> Form {
    let t = main_clause(&format!(" {} ", text.to_lowercase().replace('’', "'")));
    let ctx = context.to_lowercase().replace('’', "'");
    let asked_noun = counted_noun(&t);
    let mut kinds = asked_kinds(&t, text, asked_noun.as_deref());
    let with_lead = format!("{lead} {text}");
    let wl = format!(" {} ", with_lead.to_lowercase().replace('’', "'"));
    let (mentioned, mentioned_noun, concrete) = mentioned_kinds(&with_lead);
    let concrete = concrete && !keeps_or_tells_the_past(&t);
    let company = asks_company(&t);
    if company {
        // "Will anyone be joining you?", "Will it just be you and Sam?": how many come.
        push(&mut kinds, Kind::Count);
    }
    let counted = asked_noun
        .or(mentioned_noun)
        .or_else(|| company.then(|| "people".to_string()));
    if has(&t, PLACE) {
        push(&mut kinds, Kind::Place);
    }
    let first = t.split_whitespace().next().unwrap_or("");
    if YES_NO_FIRST.contains(&first) || has(&t, YES_NO) {
        push(&mut kinds, Kind::YesNo);
    }
    // "Is 1 p.m. okay, and what should the subject be?": the first of coordinated questions
    // has lost its question mark to the second.
    let closed = !has(&t, WH) && (text.trim_end().ends_with('?') || YES_NO_FIRST.contains(&first));
    if closed || matches!(first, "want" | "need" | "maybe" | "perhaps") {
        push(&mut kinds, Kind::YesNo);
    }
    if asks_the_time_of_a_settled_day(&t, &format!("{context} {lead}"), &kinds) {
        // "You said Wednesday. When that day?": the day is settled, the time is asked.
        kinds.retain(|k| *k != Kind::When);
        push(&mut kinds, Kind::Time);
    }
    let alternative =
        has(&open_end_out(&t), ALTERNATIVE) || has(&t, GONE) || has(&wl, GONE) || none_left(&t);
    if alternative && has(&t, WHAT_TO_DO) {
        push(&mut kinds, Kind::Choice);
    }
    if proposes_a_message(text) {
        push(&mut kinds, Kind::Text);
    }
    let alternative_in_context = !alternative && has(&ctx, GONE);
    Form {
        kinds,
        mentioned,
        alternative,
        alternative_in_context,
        counted,
        closed,
        concrete,
    }
}

/// "Is anyone else coming with you?", "Will anyone be flying with you?", "Is the whole team
/// coming?", "Will it just be you and Sam?": a question (`t`, lower-cased and padded) whether
/// others come along asks how many people come — not whether anyone needs or does something.
fn asks_company(t: &str) -> bool {
    const WHOM: [&str; 7] = [
        "anyone",
        "anybody",
        "someone",
        "somebody",
        "whole team",
        "whole family",
        "whole group",
    ];
    const JOIN: [&str; 13] = [
        "join",
        "joining",
        "coming",
        "come along",
        "going with",
        "flying with",
        "travelling with",
        "traveling with",
        "with you",
        "be there",
        "besides",
        "tagging along",
        "come with",
    ];
    const SOLO: [&str; 12] = [
        "just be you",
        "be just you",
        "only be you",
        "just you and",
        "just the two of you",
        // "Is it you and Sam on the flight?", "Is it you, Sam and the kids, or more?"
        "is it you and",
        "is it you,",
        "is it just you,",
        "will it be you and",
        "will it be you,",
        "it's you and",
        "is it the two of you",
    ];
    // "Who's going with you?", "Who else is coming?": who comes along tells how many.
    let who = ["who's ", "who is ", "who else "]
        .iter()
        .any(|w| t.trim_start().starts_with(w));
    has(t, &SOLO) || (has(t, &WHOM) || who) && has(t, &JOIN) || numbers_the_party(t)
}

/// "Is it four of you going?", "Will the three of us fit?", "For two, or more of you?": a number
/// (or "more") of you or us proposes how many people come.
fn numbers_the_party(t: &str) -> bool {
    let words: Vec<&str> = t
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .collect();
    words.windows(3).any(|w| {
        let number = w[0] == "more" || values::number_word(w[0]).is_some_and(|n| n >= 2);
        number && w[1] == "of" && matches!(w[2], "you" | "us")
    })
}

/// A yes/no question (`t`, lower-cased and padded) without its subordinate clause: "Do you want
/// the pharmacy to text you *when it's ready*?", "Should I remind Kai *where the key is*?" ask
/// yes or no, not when or where; "Can you tell me when…" embeds a question and keeps it.
pub fn main_clause(t: &str) -> String {
    const EMBEDS: [&str; 12] = [
        "know", "tell", "say", "decide", "sure", "idea", "mind", "remember", "confirm", "share",
        "ask", "let",
    ];
    let first = t.split_whitespace().next().unwrap_or("");
    if !YES_NO_FIRST.contains(&first) {
        return t.to_string();
    }
    let cut = [" when ", " where ", " while "]
        .iter()
        .filter_map(|w| t.find(w))
        .filter(|&i| {
            !t[..i]
                .split_whitespace()
                .any(|w| EMBEDS.contains(&w.trim_matches(|c: char| !c.is_alphanumeric())))
        })
        .min();
    match cut {
        Some(i) => format!("{}? ", t[..i].trim_end()),
        None => t.to_string(),
    }
}

/// Whether a text names a clock time ("5:30", "7 p.m.", "at 10", "noon", "11 Wednesday").
pub fn names_a_clock_time(text: &str) -> bool {
    let wl = format!(" {} ", text.to_lowercase().replace('’', "'"));
    !values::times(text).is_empty() || says_clock(&wl)
}

/// Whether a "when" question (`t`, lower-cased and padded) asks the time of a day already
/// settled: it says "that day" ("When that day?"), or it is a bare "When?" / "When exactly?"
/// after statements naming exactly one day.
fn asks_the_time_of_a_settled_day(t: &str, before: &str, kinds: &[Kind]) -> bool {
    if !kinds.contains(&Kind::When)
        || kinds
            .iter()
            .any(|k| matches!(k, Kind::Date | Kind::Dates | Kind::Time))
    {
        return false;
    }
    const THAT_DAY: [&str; 6] = [
        "that day",
        "on the day",
        "that night",
        "that evening",
        "that morning",
        "that afternoon",
    ];
    if has(t, &THAT_DAY) {
        return true;
    }
    let b = format!(" {} ", before.to_lowercase().replace('’', "'"));
    let days = crate::world::clock::WEEKDAYS
        .iter()
        .chain(OTHER_DAYS.iter())
        .filter(|d| has(&b, &[**d]))
        .count()
        + b.split(|c: char| !c.is_alphanumeric())
            .filter(|w| has_ordinal(w))
            .count();
    let days = if days == 0 {
        values::dates(before, 2025).len()
    } else {
        days
    };
    t.split_whitespace().count() <= 3 && days == 1
}

/// A piece (lower-cased, padded) without the words that say "else" without an alternative:
/// the open end of a choice ("Monday, or another day?", "A, B, or something else?") and more
/// of the same ("Who else is coming?", "anyone else"). Something unavailable still makes the
/// question one about an alternative ([`GONE`]).
fn open_end_out(t: &str) -> String {
    const MORE: [&str; 5] = [
        " who else ",
        " anyone else ",
        " anybody else ",
        " someone else ",
        " anything else ",
    ];
    let mut out = t.to_string();
    for m in MORE {
        out = out.replace(m, " ");
    }
    for end in [
        " or another ",
        " or something else",
        " or some other ",
        " or a different ",
        " or other ",
        " or anything else",
        " or somewhere else",
    ] {
        if let Some(i) = out.find(end) {
            out.truncate(i);
            out.push(' ');
        }
    }
    out
}

fn push(kinds: &mut Vec<Kind>, k: Kind) {
    if !kinds.contains(&k) {
        kinds.push(k);
    }
}

/// The noun a "how many" / "number of" question counts ("how many stops" → `stops`), when the
/// word after it names something (not "how many are coming", "how many of you").
fn counted_noun(t: &str) -> Option<String> {
    let lex = crate::tasks::language::lexicon();
    ["how many ", "number of ", "for how many "]
        .iter()
        .filter_map(|p| t.find(p).map(|i| &t[i + p.len()..]))
        .find_map(|rest| {
            // The noun phrase: the words up to the first that names nothing ("oat lattes").
            let run: Vec<&str> = rest
                .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '-'))
                .take_while(|w| {
                    !w.is_empty() && !lex.is_stop(w) && values::number_word(w).is_none()
                })
                .take(3)
                .collect();
            // "how many black ones": a pronoun stands for the task's own object.
            let pronoun = run.iter().any(|w| matches!(*w, "one" | "ones" | "of"));
            (!run.is_empty() && !pronoun).then(|| run.join(" "))
        })
}

/// A count the text mentions: `Some(None)` for a bare count ("for 4?", "just one?"),
/// `Some(Some(noun))` for a number before the noun it counts ("four lattes", "two hours"); not a
/// number naming something ("Box 114", "Flight 330").
fn count_mention(text: &str) -> Option<Option<String>> {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == '—' || c == '–')
        .filter(|w| !w.is_empty())
        .collect();
    if numbers_name_things(&words) {
        return None;
    }
    let lex = crate::tasks::language::lexicon();
    let words = units_apart(&words);
    let mut found = None;
    let mut span_end = 0;
    for (i, w) in words.iter().enumerate() {
        let core = core_of(w);
        if values::number_word(&core).is_none() || core.contains(':') || i < span_end {
            continue;
        }
        let next = words.get(i + 1).map(|n| core_of(n));
        if core == "both" && next.as_deref() != Some("of") {
            // "Green and Comfort are both open": no count proposed.
            continue;
        }
        let after = words.get(i + 2).map(|n| core_of(n));
        let between = i > 0 && core_of(words[i - 1]) == "between";
        let joins = next.as_deref() == Some("to") || between && next.as_deref() == Some("and");
        if joins && after.is_some_and(|a| values::number_word(&a).is_some()) {
            // "10 to 12", "between 10 and 12": a span (of hours), not a count.
            span_end = i + 3;
            continue;
        }
        let ends = w.ends_with(['?', '.', ',', '!']);
        let noun = next
            .filter(|n| !ends && !n.is_empty() && !lex.is_stop(n))
            .map(|n| head_of_run(&words, i + 1).unwrap_or(n));
        if core == "one" && noun.is_none() && one_is_a_pronoun(&words, i) {
            continue;
        }
        match noun {
            None => return Some(None),
            Some(n) if found.is_none() => found = Some(Some(n)),
            Some(_) => {}
        }
    }
    found
}

/// "Boxes 114 and 120", "Flight 330": a number after a capitalised noun names something.
fn numbers_name_things(words: &[&str]) -> bool {
    let lex = crate::tasks::language::lexicon();
    // "$50" is an amount, never a name.
    words.iter().enumerate().any(|(i, w)| {
        i > 0
            && !w.starts_with(['$', '£', '€'])
            && values::number_word(&core_of(w)).is_some()
            && words[i - 1].chars().next().is_some_and(char::is_uppercase)
            && !lex.is_stop(&core_of(words[i - 1]))
    })
}

/// "a 90-minute block": the number and its unit as two words.
fn units_apart<'a>(words: &[&'a str]) -> Vec<&'a str> {
    words
        .iter()
        .flat_map(|w| match w.split_once('-') {
            Some((n, unit))
                if n.chars().all(|c| c.is_ascii_digit())
                    && !n.is_empty()
                    && unit.chars().next().is_some_and(char::is_alphabetic) =>
            {
                vec![n, unit]
            }
            _ => vec![*w],
        })
        .collect()
}

/// Whether "one" at `i`, before no noun, stands for a thing: "the one you used", "which one
/// is", "a monthly one", "your personal one" — not "just one?", "only one".
fn one_is_a_pronoun(words: &[&str], i: usize) -> bool {
    if i + 1 < words.len() {
        return true;
    }
    let lex = crate::tasks::language::lexicon();
    let before = i.checked_sub(1).map(|j| core_of(words[j]));
    before.as_deref().is_some_and(|b| {
        matches!(
            b,
            "a" | "an" | "this" | "that" | "which" | "another" | "other" | "each"
        ) || !lex.is_stop(b) && values::number_word(b).is_none() && !matches!(b, "only" | "single")
    })
}

/// Whether a piece keeps what is there ("keep", "stick with", "as it is") or speaks of the past
/// ("were", "did", "you saved"): a value it names is no proposal.
fn keeps_or_tells_the_past(t: &str) -> bool {
    const KEEPS: [&str; 6] = [
        "keep",
        "stick with",
        "as it is",
        "as is",
        "leave it",
        "leave the",
    ];
    const PAST: [&str; 5] = ["were", "was", "did", "had", "went"];
    const PERSONS: [&str; 6] = ["you", "i", "we", "they", "he", "she"];
    let words: Vec<&str> = t.split_whitespace().collect();
    let past_verb = words.windows(2).any(|w| {
        PERSONS.contains(&w[0]) && w[1].len() > 3 && w[1].ends_with("ed") && w[1] != "need"
    });
    has(t, &KEEPS) || has(t, &PAST) || past_verb
}

/// Clock times said in words: "noon", "half past seven", "a quarter to six", "at 10",
/// "around 7" (an hour after a preposition of time, not before a unit: "by 2 weeks" is none).
fn says_clock(wl: &str) -> bool {
    const SAID: [&str; 7] = [
        "noon",
        "midday",
        "midnight",
        "half past",
        "quarter past",
        "quarter to",
        "quarter after",
    ];
    if has(wl, &SAID) {
        return true;
    }
    let lex = crate::tasks::language::lexicon();
    let words: Vec<String> = wl.split_whitespace().map(core_of).collect();
    words.windows(2).enumerate().any(|(i, w)| {
        let hour = values::number_word(&w[1]).is_some_and(|n| (1..=12).contains(&n));
        let next = words.get(i + 2).map(String::as_str);
        // "by 2 weeks", "around 5 people", "at 3 of them": no clock time.
        let noun_after = next.is_some_and(|n| {
            lex.is_time_unit(n) || matches!(n, "people" | "persons" | "guests" | "of" | "percent")
        });
        let at = matches!(w[0].as_str(), "at" | "around" | "by" | "till" | "until");
        hour && at && !noun_after || hour_before_a_day(&words, i)
    })
}

/// "Does 11 Wednesday work?", "Would 9 on Sunday be good?": an hour said right before a day.
fn hour_before_a_day(words: &[String], i: usize) -> bool {
    let Some(n) = values::number_word(&words[i]).filter(|n| (1..=12).contains(n)) else {
        return false;
    };
    let day = |w: Option<&String>| {
        w.is_some_and(|w| {
            crate::world::clock::WEEKDAYS.contains(&w.as_str())
                || matches!(w.as_str(), "tomorrow" | "tonight" | "today")
        })
    };
    // "A table for 4 on Friday?" is a count.
    let counts = i > 0 && matches!(words[i - 1].as_str(), "for" | "of" | "party" | "x");
    let next = words.get(i + 1);
    n > 0 && !counts && (day(next) || next.is_some_and(|w| w == "on") && day(words.get(i + 2)))
}

/// "two *balcony tickets*", "four oat *lattes*": the last word of the run of content words
/// from `from` (at most three), the thing counted.
fn head_of_run(words: &[&str], from: usize) -> Option<String> {
    let lex = crate::tasks::language::lexicon();
    let mut head = None;
    for w in words.iter().skip(from).take(3) {
        let core = core_of(w);
        // "one — size M": a letter or a short code is a value, not the thing counted.
        if core.len() < 3 || lex.is_stop(&core) || values::number_word(&core).is_some() {
            break;
        }
        head = Some(core);
        if w.ends_with(['?', '.', ',', '!', ';', ':']) {
            break;
        }
    }
    head
}

/// A word without its punctuation, lower-cased.
fn core_of(w: &str) -> String {
    w.trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase()
}

/// "the 14th", "on the 3rd": a day of the month.
fn has_ordinal(t: &str) -> bool {
    t.split(|c: char| !c.is_alphanumeric()).any(|w| {
        let digits = w.trim_end_matches(|c: char| c.is_ascii_alphabetic());
        let suffix = &w[digits.len()..];
        !digits.is_empty()
            && digits.len() <= 2
            && digits.chars().all(|c| c.is_ascii_digit())
            && ["st", "nd", "rd", "th"].contains(&suffix)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_of_you_or_us_counts_the_party_and_any_of_you_does_not() {
        assert!(numbers_the_party(" is it four of you going? "));
        assert!(numbers_the_party(" for two, or more of you? "));
        assert!(numbers_the_party(" will the three of us fit? "));
        assert!(!numbers_the_party(" do any of you have allergies? "));
        assert!(!numbers_the_party(" is one of you driving? "));
        assert!(!numbers_the_party(" a photo of you two? "));
        assert!(form("Who's going with you?", "", "")
            .kinds
            .contains(&Kind::Count));
        assert!(!form("Who's the reservation under?", "", "")
            .kinds
            .contains(&Kind::Count));
    }

    #[test]
    fn a_length_in_words_is_a_duration_but_a_frequency_or_a_point_in_time_is_not() {
        assert!(length_in_words(" a week? "));
        assert!(length_in_words(" maybe a couple of nights? "));
        assert!(length_in_words(" just a long weekend "));
        assert!(!length_in_words(" twice a week "));
        assert!(!length_in_words(" in a week "));
        assert!(!length_in_words(" a weekday "));
        assert!(form("What was your time?", "", "")
            .kinds
            .contains(&Kind::Duration));
        assert!(form("How would you like to describe it?", "", "")
            .kinds
            .contains(&Kind::Text));
    }

    #[test]
    fn forms_map_to_kinds() {
        assert!(form("How many people am I ordering for?", "", "")
            .kinds
            .contains(&Kind::Count));
        assert!(form("Is it just you and Sam?", "", "")
            .kinds
            .contains(&Kind::Count));
        assert!(form("When does your Portland trip start?", "", "")
            .kinds
            .contains(&Kind::When));
        assert!(form("What's the meeting about?", "", "")
            .kinds
            .contains(&Kind::Topic));
        // A coordinated question cut before its "?" ("What's it about, and when?").
        assert!(form("What's the meeting with Jordan about", "", "")
            .kinds
            .contains(&Kind::Topic));
        assert!(form("What should the note say?", "", "")
            .kinds
            .contains(&Kind::Text));
        assert!(form("How long should it be?", "", "")
            .kinds
            .contains(&Kind::Duration));
        let f = form("Would Comfort be OK?", "", "Shared rides aren't available.");
        assert!(f.alternative_in_context && f.kinds.contains(&Kind::YesNo));
        assert!(form("Is 8:30 OK?", "", "").mentioned.contains(&Kind::Time));
        assert!(form(
            "Should the text say how many minutes until it arrives?",
            "",
            ""
        )
        .kinds
        .contains(&Kind::Duration));
        assert!(!form("Should the text say how many minutes?", "", "")
            .kinds
            .contains(&Kind::Count));
    }
}
