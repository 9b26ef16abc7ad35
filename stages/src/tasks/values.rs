//! Structured values in text, compared as values rather than as strings (issue 24, item 4):
//! clock times ("19:30", "7:30 pm", "noon"), dates ("2025-10-17", "Oct 17", "17 October",
//! "October 17th"), date ranges ("2025-10-17 to 2025-10-20", "Oct 17–20", "17 to 20 October"),
//! counts ("3", "three", "a couple") and money ("$20", "20 dollars"); and free text compared by
//! its key terms after normalisation — word order and inflection free, negation kept — so a
//! criterion asking for "2025-10-17 to 2025-10-20" inside a message passes "Oct 17–20", and one
//! asking for "wants reminders by text, not email" passes "She wants her reminders by text, not
//! by email" but not "by email, not text".

use super::language::{raw_words, tokens};
use crate::world::clock::MONTHS;

/// A calendar date.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Date {
    /// Year (the reference's year when the text names none).
    pub y: i32,
    /// Month, 1–12.
    pub m: u32,
    /// Day, 1–31.
    pub d: u32,
}

/// A value a criterion's text stands for.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Minutes after midnight.
    Time(u32),
    /// One day.
    Date(Date),
    /// First and last day.
    Range(Date, Date),
    /// A whole number.
    Count(i64),
    /// An amount of money, in cents.
    Money(i64),
}

fn month(word: &str) -> Option<u32> {
    let w = word.trim_end_matches('.');
    if w.len() < 3 {
        return None;
    }
    (0..12)
        .find(|&i| w == &MONTHS[i][..3] || w == MONTHS[i] || (w == "sept" && i == 8))
        .map(|i| i as u32 + 1)
}

const NUMBER_WORDS: [&str; 21] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
];

/// A whole number written as digits or a word ("three", "a couple", "a dozen").
pub fn number_word(word: &str) -> Option<i64> {
    if let Ok(n) = word.parse::<i64>() {
        return Some(n);
    }
    if let Some(i) = NUMBER_WORDS.iter().position(|w| *w == word) {
        return Some(i as i64);
    }
    match word {
        "couple" | "pair" | "both" | "twice" => Some(2),
        "dozen" => Some(12),
        "single" | "once" | "solo" => Some(1),
        _ => None,
    }
}

fn day_of(word: &str) -> Option<u32> {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    if !(suffix.is_empty() || ["st", "nd", "rd", "th"].contains(&suffix)) {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

/// Splits text into words keeping `-`, `–`, `/` and `$` as their own tokens.
fn value_tokens(text: &str) -> Vec<String> {
    let spaced: String = text
        .to_lowercase()
        .chars()
        .flat_map(|c| match c {
            '–' | '—' | '/' | '$' | ',' | '(' | ')' => {
                vec![' ', if c == '—' { '–' } else { c }, ' ']
            }
            '-' => vec![' ', '–', ' '],
            _ => vec![c],
        })
        .collect();
    spaced
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| ".!?;\"'".contains(c)).to_string())
        .filter(|w| !w.is_empty() && w != ",")
        .collect()
}

/// Clock times in text, as minutes after midnight.
pub fn times(text: &str) -> Vec<u32> {
    let toks = value_tokens(text);
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        let next = toks.get(i + 1).map(String::as_str).unwrap_or("");
        let (body, suffix) = split_meridiem(t);
        let meridiem = suffix.or_else(|| meridiem_word(next));
        let hm = if let Some((h, m)) = body.split_once(':') {
            match (h.parse::<u32>(), m.parse::<u32>()) {
                (Ok(h), Ok(m)) if m < 60 && h < 24 => Some((h, m)),
                _ => None,
            }
        } else if meridiem.is_some() {
            body.parse::<u32>()
                .ok()
                .filter(|h| (1..=12).contains(h))
                .map(|h| (h, 0))
        } else {
            None
        };
        if let Some((h, m)) = hm {
            let h = match meridiem {
                Some(true) if h < 12 => h + 12,
                Some(false) if h == 12 => 0,
                _ => h,
            };
            out.push(h * 60 + m);
        } else if t == "noon" || t == "midday" {
            out.push(12 * 60);
        } else if t == "midnight" {
            out.push(0);
        }
    }
    out
}

/// `7pm` → ("7", pm), `7:30am` → ("7:30", am).
fn split_meridiem(t: &str) -> (&str, Option<bool>) {
    for (s, pm) in [("pm", true), ("p.m", true), ("am", false), ("a.m", false)] {
        if let Some(b) = t.strip_suffix(s) {
            if !b.is_empty() && b.chars().all(|c| c.is_ascii_digit() || c == ':') {
                return (b, Some(pm));
            }
        }
    }
    (t, None)
}

fn meridiem_word(w: &str) -> Option<bool> {
    match w.trim_end_matches('.') {
        "pm" | "p.m" => Some(true),
        "am" | "a.m" => Some(false),
        _ => None,
    }
}

fn iso(t: &str) -> Option<Date> {
    let parts: Vec<&str> = t.split('-').collect();
    if parts.len() != 3 || parts[0].len() != 4 {
        return None;
    }
    let (y, m, d) = (
        parts[0].parse().ok()?,
        parts[1].parse().ok()?,
        parts[2].parse().ok()?,
    );
    ((1..=12).contains(&m) && (1..=31).contains(&d)).then_some(Date { y, m, d })
}

/// Dates and date ranges in text; `year` fills dates that name none.
pub fn dates(text: &str, year: i32) -> Vec<Value> {
    // ISO dates first (their `-` would read as a range sign below).
    let mut out = Vec::new();
    let mut rest = String::new();
    for w in text.split_whitespace() {
        let core = w.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '-');
        match iso(core) {
            Some(d) => {
                out.push(Value::Date(d));
                rest.push_str(" ISO ");
            }
            None => {
                rest.push_str(w);
                rest.push(' ');
            }
        }
    }
    // "2025-10-17 to 2025-10-20": two ISO dates joined by to/–/through/until.
    let toks = value_tokens(&rest);
    let mut iso_seen = 0;
    let mut ranges = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if t == "iso" {
            iso_seen += 1;
            let joined = toks.get(i + 1).is_some_and(|j| is_range_word(j));
            if joined && toks.get(i + 2).map(String::as_str) == Some("iso") {
                if let (Some(Value::Date(a)), Some(Value::Date(b))) =
                    (out.get(iso_seen - 1).cloned(), out.get(iso_seen).cloned())
                {
                    ranges.push(Value::Range(a, b));
                }
            }
            continue;
        }
        // Month-name dates: "oct 17", "october 17th", "17 october", with ranges
        // "oct 17–20", "17–20 october", "oct 17 to oct 20".
        if let Some(m) = month(t) {
            if let Some(d) = toks.get(i + 1).and_then(|x| day_of(x)) {
                let a = Date { y: year, m, d };
                out.push(Value::Date(a));
                if let Some(b) = range_end(&toks, i + 2, m, year) {
                    out.push(Value::Date(b));
                    ranges.push(Value::Range(a, b));
                }
            }
        } else if let Some(d) = day_of(t) {
            if let Some(m) = toks
                .get(i + 1)
                .and_then(|x| month(x.trim_start_matches("of")))
            {
                out.push(Value::Date(Date { y: year, m, d }));
            } else if toks.get(i + 1).is_some_and(|x| is_range_word(x)) {
                // "17 to 20 october" / "17–20 oct"
                if let (Some(d2), Some(m)) = (
                    toks.get(i + 2).and_then(|x| day_of(x)),
                    toks.get(i + 3).and_then(|x| month(x)),
                ) {
                    let (a, b) = (Date { y: year, m, d }, Date { y: year, m, d: d2 });
                    out.push(Value::Date(a));
                    out.push(Value::Date(b));
                    ranges.push(Value::Range(a, b));
                }
            }
        }
    }
    out.extend(ranges);
    out
}

fn is_range_word(w: &str) -> bool {
    matches!(
        w,
        "to" | "–" | "through" | "thru" | "until" | "till" | "and"
    )
}

/// After a first day of month `m`: "–20", "to 20th", "to oct 20".
fn range_end(toks: &[String], at: usize, m: u32, year: i32) -> Option<Date> {
    if !toks.get(at).is_some_and(|w| is_range_word(w)) {
        return None;
    }
    let next = toks.get(at + 1)?;
    if let Some(m2) = month(next) {
        let d = day_of(toks.get(at + 2)?)?;
        return Some(Date { y: year, m: m2, d });
    }
    day_of(next).map(|d| Date { y: year, m, d })
}

/// Whole numbers in text: digits standing alone and number words (not parts of times, dates or
/// money).
pub fn counts(text: &str) -> Vec<i64> {
    let toks = value_tokens(text);
    toks.iter()
        .enumerate()
        .filter(|(i, t)| {
            let money = *i > 0 && toks[i - 1] == "$";
            !(t.contains(':') || t.contains('-') || money)
        })
        .filter_map(|(_, t)| number_word(t))
        .collect()
}

/// Amounts of money in cents: "$20", "$20.50", "20 dollars", "20 usd".
pub fn money(text: &str) -> Vec<i64> {
    let toks = value_tokens(text);
    let cents = |t: &str| -> Option<i64> {
        let f: f64 = t.replace(',', "").parse().ok()?;
        Some((f * 100.0).round() as i64)
    };
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if t == "$" {
            if let Some(c) = toks.get(i + 1).and_then(|n| cents(n)) {
                out.push(c);
            }
        } else if let Some(c) = cents(t) {
            if toks
                .get(i + 1)
                .is_some_and(|u| matches!(u.as_str(), "dollars" | "dollar" | "usd" | "bucks"))
            {
                out.push(c);
            }
        }
    }
    out
}

/// The structured value a criterion's text stands for, when it is one: a date range, a date, a
/// clock time, money, or a bare count. `None` for free text.
pub fn parse(needle: &str) -> Option<Value> {
    let t = needle.trim();
    let year = 2025;
    let ds = dates(t, year);
    if let Some(r) = ds.iter().find(|v| matches!(v, Value::Range(..))) {
        return Some(r.clone());
    }
    let words = raw_words(t);
    if words.len() <= 3 {
        if let [Value::Date(d)] = ds.as_slice() {
            return Some(Value::Date(*d));
        }
        if let [m] = times(t).as_slice() {
            return Some(Value::Time(*m));
        }
        if let [c] = money(t).as_slice() {
            return Some(Value::Money(*c));
        }
    }
    if words.len() == 1 {
        if let Some(n) = words.first().and_then(|w| number_word(w)) {
            return Some(Value::Count(n));
        }
    }
    None
}

/// Clock times written without a.m./p.m. ("7:30", "at 8:00"), read the other way round too: a
/// 12-hour clock leaves the half of the day to the context ("7:30 was taken … tomorrow
/// evening"), so "7:30" states 19:30 as well as 07:30.
fn twelve_hour_readings(text: &str) -> Vec<u32> {
    let toks = value_tokens(text);
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        let next = toks.get(i + 1).map(String::as_str).unwrap_or("");
        if split_meridiem(t).1.is_some() || meridiem_word(next).is_some() {
            continue;
        }
        if let Some((h, m)) = t.split_once(':') {
            if let (Ok(h), Ok(m)) = (h.parse::<u32>(), m.parse::<u32>()) {
                if (1..12).contains(&h) && m < 60 && !t.starts_with('0') {
                    out.push((h + 12) * 60 + m);
                }
            }
        }
    }
    out
}

/// Whether `haystack` states `value`.
pub fn states(haystack: &str, value: &Value) -> bool {
    match value {
        Value::Time(m) => times(haystack).contains(m) || twelve_hour_readings(haystack).contains(m),
        Value::Money(c) => money(haystack).contains(c),
        Value::Count(n) => counts(haystack).contains(n),
        Value::Date(d) => dates(haystack, d.y).iter().any(|v| match v {
            Value::Date(x) => x == d,
            _ => false,
        }),
        Value::Range(a, b) => dates(haystack, a.y).iter().any(|v| match v {
            Value::Range(x, y) => x == a && y == b,
            _ => false,
        }),
    }
}

/// Negating words: the term after one is negated.
const NEGATORS: [&str; 6] = ["not", "no", "never", "without", "don't", "isn't"];

/// The key terms of a free text: content stems, each marked negated when a negator precedes it
/// within two words.
pub fn key_terms(text: &str) -> Vec<(String, bool)> {
    let toks = tokens(text);
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if t.stop && !t.word.chars().any(|c| c.is_ascii_digit()) {
            continue;
        }
        if NEGATORS.contains(&t.word.as_str()) {
            continue;
        }
        let negated = (i.saturating_sub(2)..i).any(|j| NEGATORS.contains(&toks[j].word.as_str()));
        out.push((t.stem.clone(), negated));
    }
    out
}

/// Whether `haystack` carries every key term of `needle` with the same polarity (free text:
/// order and inflection free). A needle of fewer than three key terms ("Lena: scarf", "black
/// sesame") is a label, not prose: it is never matched this way, only literally.
pub fn has_key_terms(haystack: &str, needle: &str) -> bool {
    let want = key_terms(needle);
    // "Lena: ceramics class" files something under a label: its form is the point.
    let labelled = needle.split(':').count() > 1 && times(needle).is_empty();
    if want.len() < 3 || labelled {
        return false;
    }
    let have = key_terms(haystack);
    want.iter().all(|w| have.contains(w))
}

/// Whether normalised `haystack` contains `needle`: literally, or as the same structured value
/// (dates, times, counts, money), or — for free text of three or more key terms — with every
/// key term present.
pub fn text_states(haystack: &str, needle: &str) -> bool {
    if crate::tasks::language::lexicon().says_unavailable(needle) {
        // "not available": any way of saying that the option cannot be had.
        return crate::tasks::language::lexicon().says_unavailable(haystack);
    }
    match parse(needle) {
        Some(v) => states(haystack, &v),
        None => has_key_terms(haystack, needle),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_times_counts_and_money_compare_as_values() {
        let range = parse("2025-10-17 to 2025-10-20").unwrap();
        for text in [
            "Could you feed Miso Oct 17–20?",
            "We're away October 17 to 20.",
            "from 17 to 20 October",
            "2025-10-17 to 2025-10-20, thanks",
            "Oct 17 - Oct 20",
        ] {
            assert!(states(text, &range), "{text}");
        }
        assert!(!states("Oct 17–21", &range));
        assert!(!states("Oct 17", &range));
        let day = parse("2025-11-12").unwrap();
        assert!(states("Save November 12th for dinner", &day));
        assert!(states("12 Nov", &day));
        assert!(!states("November 13", &day));
        let t = parse("19:30").unwrap();
        assert!(states("at 7:30 pm tonight", &t));
        assert!(states("19:30", &t));
        assert!(!states("7:30 am", &t));
        // Without a.m./p.m. the half of the day is the context's.
        assert!(states("7:30 was already taken tomorrow evening", &t));
        assert!(states("7:30", &parse("07:30").unwrap()));
        assert!(!states("07:30", &t));
        assert_eq!(parse("3"), Some(Value::Count(3)));
        assert!(states("three portions", &Value::Count(3)));
        assert!(!states("at 3:00", &Value::Count(3)));
        assert!(states("that's $20.00", &parse("$20").unwrap()));
    }

    #[test]
    fn free_text_matches_by_key_terms_with_negation_kept() {
        let want = "wants reminders by text, not email";
        assert!(text_states(
            "She wants her reminders by text messages, not by email.",
            want
        ));
        assert!(!text_states(
            "She wants reminders by email, not text.",
            want
        ));
        assert!(text_states(
            "I'm running about 15 minutes late",
            "running 15 min late"
        ));
        assert!(!text_states("I'm running late", "running 15 min late"));
        assert!(!text_states("Miso", "Kai"));
    }

    #[test]
    fn unavailability_is_recognised_however_it_is_said() {
        for said in [
            "7:30 was already taken at Lotus Thai, so I booked 8:00.",
            "Tiki Cat doesn't seem to be available on FreshCart right now.",
            "The Saturday class is full.",
            "That jacket is sold out in green.",
            "Sorry, there's no table at 7:30.",
        ] {
            assert!(text_states(said, "not available"), "{said}");
        }
        for said in [
            "Booked Lotus Thai for 7:30, it's available.",
            "I took care of it.",
            "The full order is in.",
        ] {
            assert!(!text_states(said, "unavailable"), "{said}");
        }
    }
}
