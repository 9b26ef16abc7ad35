//! The consistency rules a history must keep with the profile and the app data, in one home:
//! history synthesis draws within them (`history/`) and the world audit checks them
//! (`audit.rs`), so the two can never disagree about what a contradiction is.

use super::app::{Catalog, Effect, Record};
use super::clock::Date;
use super::persona::text::mentions_lowered;
use super::persona::{ProfileEntry, Want};
use super::types::{FieldKind, TableId};

/// A record dated further than this many days after an event that names it did not exist yet
/// when the event happened (shows, flights and calendar entries are listed a few weeks ahead).
pub const LISTING_DAYS: i64 = 60;

pub use super::persona::text::ONE_OFF_MARKERS;

/// A table and field an entry's value is a value of (from its `$value` bindings).
pub type Attribute = (TableId, usize);

/// The single-valued fields an entry's value is a value of: a product offered in several
/// colours says nothing about the colour chosen.
pub fn attributes(cat: &Catalog, p: &ProfileEntry) -> Vec<Attribute> {
    let mut out: Vec<Attribute> = Vec::new();
    for t in &p.evidence {
        for b in &t.binds {
            for (field, want) in &b.filters {
                if let (Some(f), Want::Value) = (field, want) {
                    let single = cat.table(b.table).fields.get(*f).is_some_and(|d| !d.many);
                    if single && !out.contains(&(b.table, *f)) {
                        out.push((b.table, *f));
                    }
                }
            }
        }
    }
    out
}

/// Whether an entry is an avoid-list (its key names a dislike).
pub fn is_avoid(p: &ProfileEntry) -> bool {
    let k = p.key.to_lowercase();
    k.contains("disliked") || k.contains("avoid")
}

/// Tables whose records one buys or books: the entity of an irreversible operation that inserts
/// a record (a show's tickets, a flight's booking), as opposed to records of what already happened
/// (payments) or standing entries (a recurring standup).
pub fn purchasable(cat: &Catalog) -> Vec<TableId> {
    let mut out: Vec<TableId> = Vec::new();
    for op in cat.apps.iter().flat_map(|a| &a.operations) {
        let inserts = op
            .effects
            .iter()
            .any(|e| matches!(e, Effect::Insert { .. }));
        if let (true, true, Some(t)) = (op.irreversible, inserts, op.entity) {
            if !out.contains(&t) {
                out.push(t);
            }
        }
    }
    out.sort();
    out
}

/// Tables holding the user's own choices: those an irreversible operation inserts into (a
/// reservation, an order, a booking). Public records (others' reviews, trending dishes) and the
/// user's own opinions (a two-star review of a place she avoids) are not choices.
pub fn choice_tables(cat: &Catalog) -> Vec<TableId> {
    let mut out: Vec<TableId> = Vec::new();
    for op in cat
        .apps
        .iter()
        .flat_map(|a| &a.operations)
        .filter(|o| o.irreversible)
    {
        for e in &op.effects {
            if let Effect::Insert { table, .. } = e {
                if !out.contains(table) {
                    out.push(*table);
                }
            }
        }
    }
    out.sort();
    out
}

/// The date of a record: its first single `date` (or datetime) field.
pub fn record_date(cat: &Catalog, table: TableId, r: &Record) -> Option<Date> {
    let t = cat.table(table);
    let i = t
        .fields
        .iter()
        .position(|f| matches!(f.kind, FieldKind::Date | FieldKind::DateTime) && !f.many)?;
    let s = r.values.get(i)?.as_str()?;
    Date::parse(s.get(..10)?)
}

/// The days on which an event may name a dated purchasable record of `date`: from
/// [`LISTING_DAYS`] before it up to the day itself.
pub fn listing_window(date: Date) -> (Date, Date) {
    (date.add_days(-(LISTING_DAYS as i32)), date)
}

/// The one-off occasion a lower-cased event text records, if any: a marker with the word before
/// it (`sam's birthday`). One app recording the same occasion twice repeats a one-off.
pub fn occasion(text: &str) -> Option<String> {
    ONE_OFF_MARKERS.iter().find_map(|m| {
        let at = text.find(m)?;
        let before = text[..at].trim_end();
        let owner = before.rsplit(' ').next().unwrap_or_default();
        Some(format!("{owner} {m}").trim().to_string())
    })
}

/// What an event says the user did with a record it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// She bought or booked it ("Booked AS 1211", "Bought tickets for Hamilton").
    Purchase,
    /// She used it: the flight was flown, the show seen ("Flew AS 1211", "Saw Hamilton").
    Completed,
    /// Anything else: browsing, saving, comparing, someone else's purchase, a purchase she did
    /// not make ("Almost booked …").
    Other,
}

/// Verbs of buying or booking a record, as an event's words say them.
pub const PURCHASE_VERBS: &[&str] = &[
    "booked",
    "bought",
    "purchased",
    "reserved",
    "ordered",
    "got tickets",
    "grabbed tickets",
    "paid for",
    "chose",
];

/// Verbs of having used a record (flown, seen).
pub const COMPLETED_VERBS: &[&str] = &[
    "flew", "saw", "attended", "watched", "went to", "landed", "caught", "loved",
];

/// Words that undo an act the same sentence names ("Almost booked …", "…, then cancelled").
pub const NOT_DONE: &[&str] = &[
    "almost",
    "nearly",
    "didn't",
    "did not",
    "never",
    "cancelled",
    "canceled",
    "considered",
    "thinking of",
    "wanted to",
    "meant to",
];

/// A completed act (flown, seen) is told on the record's day or at most this many days after (a
/// red-eye lands the next morning): an event's time is when it happened, so "Flew AS 1205" a
/// week after AS 1205 departed is a second flight the phone never had.
pub const COMPLETED_DAYS: i64 = 1;

/// What `text` says the user did with the record whose lower-cased label is `label`: the last
/// purchase or completion verb in the clause before the label's first mention, if the clause's
/// subject is the user (it opens with a verb, or with a construction such as "For Marco:") and
/// nothing in the text undoes it.
pub fn act_on(text: &str, label: &str) -> Act {
    let lower = text.to_lowercase();
    let Some(at) = find_whole(&lower, label) else {
        return Act::Other;
    };
    if NOT_DONE.iter().any(|w| mentions_lowered(&lower, w)) {
        return Act::Other;
    }
    // The clause the label is in: after the last colon, semicolon, dash or sentence end.
    let before = &text[..at];
    let start = before.rfind([':', ';', '.', '—', '(', '"']).map_or(0, |i| {
        i + before[i..].chars().next().map_or(1, char::len_utf8)
    });
    let clause = before[start..].trim_start();
    let lc = clause.to_lowercase();
    // Hers when the clause, or a part of it after a comma ("This time, booked …"), opens with a
    // verb; "Priya booked …" is someone else's.
    let opens_with_verb = clause.split(", ").any(|part| {
        let first = part.split_whitespace().next().unwrap_or_default();
        first.chars().next().is_some_and(|c| c.is_lowercase()) || verb_like(&first.to_lowercase())
    });
    if !opens_with_verb {
        // "Priya booked …", "Tom saw …": someone else's act.
        return Act::Other;
    }
    let mut last: Option<(usize, Act)> = None;
    for (verbs, act) in [
        (PURCHASE_VERBS, Act::Purchase),
        (COMPLETED_VERBS, Act::Completed),
    ] {
        for v in verbs {
            if let Some(i) = rfind_whole(&lc, v) {
                if last.is_none_or(|(j, _)| i > j) {
                    last = Some((i, act));
                }
            }
        }
    }
    last.map_or(Act::Other, |(_, a)| a)
}

/// Whether a lower-cased word reads as a past-tense verb opening a clause ("booked", "flew",
/// "took"): a listed verb, an `-ed` form, or a common irregular past.
pub fn verb_like(word: &str) -> bool {
    const IRREGULAR: &[&str] = &[
        "flew", "saw", "went", "took", "got", "bought", "made", "sent", "set", "put", "paid",
        "left", "gave", "caught", "rode", "ran", "found", "kept", "chose", "wrote", "read", "met",
        "told", "spent", "split", "let", "heard", "sat", "ate",
    ];
    word.ends_with("ed")
        || IRREGULAR.contains(&word)
        || PURCHASE_VERBS
            .iter()
            .chain(COMPLETED_VERBS)
            .any(|v| v.split(' ').next() == Some(word))
}

/// Phrases that say the act happens late in the day, whatever words surround them.
const LATE: [&str; 9] = [
    "after a long day",
    "after a busy day",
    "at the end of the day",
    "after work",
    "on the way home from work",
    "while cooking dinner",
    "after getting home late",
    "after a late dinner",
    "after a late meeting",
];

/// Whether what a text says about the time of day agrees with the hour it happened: no "after a
/// long day" at 09:00, no "at the end of the day on Sunday morning". A part of the day counts
/// where it tells the moment ("this evening", "a quiet afternoon", "on a foggy morning"), not a
/// name or a plan ("the Sunday Morning playlist", "her Tuesday morning block", "before a busy
/// morning").
pub fn fits_clock(text: &str, hour: u32) -> bool {
    let lc = text.to_lowercase().replace("before a busy morning", "");
    let words: Vec<&str> = lc
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    const MOMENT: [&str; 9] = [
        "this", "a", "quiet", "rainy", "foggy", "clear", "warm", "slow", "busy",
    ];
    let told = |parts: &[&str]| {
        words
            .windows(2)
            .any(|w| parts.contains(&w[1]) && MOMENT.contains(&w[0]))
    };
    let (morning, afternoon) = (told(&["morning"]), told(&["afternoon"]));
    let evening = told(&["evening", "night"])
        || words.contains(&"tonight")
        || LATE.iter().any(|p| find_whole(&lc, p).is_some());
    [morning, afternoon, evening].iter().filter(|b| **b).count() <= 1
        && (!morning || hour < 12)
        && (!afternoon || (12..18).contains(&hour))
        && (!evening || !(5..17).contains(&hour))
}

/// The byte offset of the first whole-word occurrence of `phrase` in `text` (both lower-case).
fn find_whole(text: &str, phrase: &str) -> Option<usize> {
    whole_matches(text, phrase).next()
}

/// The byte offset of the last whole-word occurrence.
fn rfind_whole(text: &str, phrase: &str) -> Option<usize> {
    whole_matches(text, phrase).last()
}

fn whole_matches<'a>(text: &'a str, phrase: &'a str) -> impl Iterator<Item = usize> + 'a {
    let edge = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
    text.match_indices(phrase)
        .filter(move |(i, m)| {
            !phrase.is_empty()
                && edge(text[..*i].chars().next_back())
                && edge(text[i + m.len()..].chars().next())
        })
        .map(|(i, _)| i)
}

/// The days on which an event may tell `act` about a record dated `date`: a purchase from its
/// listing up to the day before it, any other mention up to the day itself, a completion from
/// its day to [`COMPLETED_DAYS`] after.
pub fn act_window(act: Act, date: Date) -> (Date, Date) {
    match act {
        Act::Completed => (date, date.add_days(COMPLETED_DAYS as i32)),
        Act::Purchase => (date.add_days(-(LISTING_DAYS as i32)), date.add_days(-1)),
        Act::Other => listing_window(date),
    }
}

/// The table of the user's orders of a purchasable table's records, and the field that refers to
/// the record: what an irreversible operation on that entity inserts (`skyway.bookings.flight`
/// for `skyway.flights`).
pub fn order_table(cat: &Catalog, table: TableId) -> Option<(TableId, usize)> {
    for op in cat.apps.iter().flat_map(|a| &a.operations) {
        if !op.irreversible || op.entity != Some(table) {
            continue;
        }
        for e in &op.effects {
            if let Effect::Insert { table: into, .. } = e {
                let t = cat.table(*into);
                if let Some(f) = t
                    .fields
                    .iter()
                    .position(|f| f.kind == FieldKind::Ref(table) && !f.many)
                {
                    return Some((*into, f));
                }
            }
        }
    }
    None
}

/// Whether the user holds an order of record `id` of `table` in the app data.
pub fn owned(cat: &Catalog, table: TableId, id: &str) -> bool {
    order_table(cat, table).is_some_and(|(orders, f)| {
        cat.table(orders)
            .records
            .iter()
            .any(|r| r.values.get(f).and_then(|v| v.as_str()) == Some(id))
    })
}

/// Whether an event tells a one-off act, given its lower-cased core text (`audit::core_text`)
/// and lower-cased text: rating or reviewing one place ("Rated Baan Thai 5 stars", "Reviewed
/// Kettle & Crumb: \"…\""), starting a list, signing up for a named thing. Making another note
/// or another sync is not one.
pub fn one_off_act(core: &str, text: &str) -> bool {
    one_off_opener(core, text).is_some()
}

/// The opener of a one-off act ([`one_off_act`]), if the event tells one.
fn one_off_opener(core: &str, text: &str) -> Option<&'static str> {
    let opens =
        |w: &str| core.starts_with(w) && core[w.len()..].chars().next().is_none_or(|c| c == ' ');
    let words: Vec<&str> = core.split(' ').collect();
    if (opens("rated") || opens("gave")) && words.contains(&"stars") {
        return Some("rated");
    }
    if opens("reviewed") && text.contains('"') {
        return Some("reviewed");
    }
    for w in [
        "wrote a review",
        "left a review",
        "signed up for the",
        "adopted",
    ] {
        if opens(w) {
            return Some(w);
        }
    }
    let list = words.iter().take(6).any(|w| *w == "list");
    for w in ["started", "created", "set up", "made"] {
        if opens(w) && list {
            return Some("started a list");
        }
    }
    None
}

/// What a one-off act is about, so that telling it twice is caught however it is worded around
/// (a circumstance, a companion): its opener and the first of `labels` (lower-cased record
/// names) the text names, else the first words of its core. `None` when the event tells no one-off act.
pub fn one_off_key(core: &str, text: &str, labels: &[String]) -> Option<String> {
    let opener = one_off_opener(core, text)?;
    let named = labels
        .iter()
        .filter_map(|l| whole_matches(text, l).next().map(|i| (i, l)))
        .min_by_key(|(i, l)| (*i, std::cmp::Reverse(l.len())));
    Some(match named {
        Some((_, l)) => format!("{opener} {l}"),
        // Without a record: the act's own words, up to the list it starts or six words, so a
        // circumstance added after them does not make it a new act.
        None => {
            let words: Vec<&str> = core.split(' ').collect();
            let end = words
                .iter()
                .position(|w| *w == "list")
                .map_or(words.len().min(6), |i| i + 1);
            words[..end].join(" ")
        }
    })
}

/// Verbs whose infinitive after "to" says why she did something ("to save money", "to visit
/// Aisha in Seattle", "to celebrate …"), as opposed to where something went ("moved to a window").
pub const PURPOSE_VERBS: &str =
    "visit see celebrate try save avoid meet catch pick drop protect keep make plan check \
     compare cut focus loosen shake skip replace organise organize thank cheer welcome \
     surprise treat share help cover stock restock prep prepare host mark impress warm \
     settle fix return";

/// Nouns of an occasion or a meal that "for" makes a purpose when they follow within four words
/// ("for a work trip", "for Dev's conference talk", "for Sunday brunch").
pub const PURPOSE_NOUNS: &str =
    "brunch lunch dinner breakfast drinks trip trips weekend getaway vacation visit \
     conference talk party potluck celebration birthday anniversary workshop holiday \
     holidays wedding reunion catch-up farewell send-off offsite picnic hike hikes event";

/// Two-word occasions that "for" makes a purpose ("for a night out").
const PURPOSE_PAIRS: &[&str] = &["night out", "date night", "movie night", "game night"];

/// Words after which an infinitive is what was asked or set, not why ("asked Priya to check on
/// the cat", "a reminder to take loratadine").
const REPORTED: &str = "asked reminder remind reminded told alarm note options";

/// Words that make "for …" someone or something the act serves ("for the cat", "for a refund",
/// "for Dev's …"), unless a duration follows ([`DURATIONS`]: "for a few minutes").
const FOR_DETERMINERS: &str = "a an the her his their my our";

/// Words after "for a/the" that make it a duration, not a purpose.
const DURATIONS: &str = "few while bit moment minute minutes hour hours second couple";

/// How many times `text` says why she did it: an infinitive of purpose ([`PURPOSE_VERBS`]),
/// "for" an occasion ([`PURPOSE_NOUNS`], "for visiting …") or someone or something the act
/// serves ("for the cat", "for a refund", "for Dev's …"), "so that", "a gift for". Two is a
/// purpose after a purpose ("Saved a cabin in Tahoe for a maybe-someday trip for Dev's
/// conference talk"): history synthesis refuses it and the audit's `purpose_twice` rule counts
/// it.
pub fn purposes(text: &str) -> usize {
    let words = word_tokens(text);
    let at = |i: usize| words.get(i).map_or("", String::as_str);
    let is_word = |w: &str| w.chars().next().is_some_and(char::is_alphanumeric);
    let mut n = 0;
    let mut i = 0;
    while i < words.len() {
        let reported = words[i.saturating_sub(3)..i]
            .iter()
            .any(|p| has(REPORTED, p));
        let hit = match at(i) {
            "to" => has(PURPOSE_VERBS, at(i + 1)) && !reported,
            "for" => {
                let span: Vec<&str> = (i + 1..i + 6).map(at).take_while(|w| is_word(w)).collect();
                let served = span.len() >= 2
                    && (has(FOR_DETERMINERS, span[0]) || span[0].ends_with("'s"))
                    && !has(DURATIONS, span[1]);
                served
                    || span.first() == Some(&"visiting")
                    || span.iter().take(4).any(|w| has(PURPOSE_NOUNS, w))
                    || span
                        .windows(2)
                        .take(4)
                        .any(|p| PURPOSE_PAIRS.contains(&format!("{} {}", p[0], p[1]).as_str()))
            }
            "so" => at(i + 1) == "that",
            "gift" => at(i + 1) == "for",
            _ => false,
        };
        if hit {
            n += 1;
            i += 2;
        } else {
            i += 1;
        }
    }
    n
}

/// Whether `word` is one of the space-separated `words`.
fn has(words: &str, word: &str) -> bool {
    words.split_whitespace().any(|w| w == word)
}

/// Lower-cased words (letters, digits, apostrophes, hyphens) and single punctuation marks.
fn word_tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() || c == '\'' || c == '-' {
            word.extend(c.to_lowercase());
            continue;
        }
        if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        if !c.is_whitespace() {
            out.push(c.to_string());
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// The towns away from home a text names ([`super::persona::Persona`]'s `towns`: each a list of
/// its names, "Portland", "PDX"), as indices, case-sensitive and whole-word; a town named after
/// "via" is a stop on the way, not a place the event is about ("via Denver").
pub fn towns_named(text: &str, towns: &[Vec<String>]) -> Vec<usize> {
    let mut out = Vec::new();
    for (i, names) in towns.iter().enumerate() {
        let named = names
            .iter()
            .any(|n| whole_matches(text, n).any(|at| !text[..at].trim_end().ends_with(" via")));
        if named {
            out.push(i);
        }
    }
    out
}

/// The towns a record is in or goes to: its text and enum values that are a town's name (a
/// flight's destination `PDX`, a hotel's city `Portland`).
pub fn record_towns(r: &Record, towns: &[Vec<String>]) -> Vec<usize> {
    let mut out = Vec::new();
    for v in r.values.iter().filter_map(|v| v.as_str()) {
        if let Some(i) = towns.iter().position(|names| names.iter().any(|n| n == v)) {
            if !out.contains(&i) {
                out.push(i);
            }
        }
    }
    out
}
