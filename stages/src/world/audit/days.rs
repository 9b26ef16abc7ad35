//! The audit's calendar rules, read off the text, the place and the date of each event
//! independently of how synthesis placed it: work told on a day off, and a weekday phrase that
//! is not the event's own day.

use super::finding::{Contradiction, Rule};
use crate::world::clock::Date;
use crate::world::history::HistoryEvent;
use crate::world::persona::Persona;

/// Phrases that put an event in a working day: at or on the way to the office, in a meeting, on
/// a lunch break, approving work expenses. The audit's own reading, not synthesis's data.
pub const WORK_PHRASES: [&str; 24] = [
    " to work",
    " the office",
    "standup",
    "commute",
    "between meetings",
    "between two interviews",
    "meeting ran long",
    "a long meeting",
    "a late meeting",
    "lunch break",
    "approved expenses",
    "readout",
    "all-hands",
    "leaving work",
    " after work",
    "home from work",
    "at the desk",
    "team lunch",
    "offsite",
    "workshop",
    "research session",
    "study participant",
    "busy work week",
    "weekly review",
];

/// Where a phrase of [`WORK_PHRASES`] is no work act: "… after a long week at work" on a
/// Saturday, shopping "for the office", an old meeting note.
const NOT_WORK: [&str; 3] = ["for the office", "week at work", "office day"];

/// The words after a weekday that make it a part of that day ("on Sunday morning").
const DAYPARTS: [&str; 4] = ["morning", "afternoon", "evening", "night"];

/// Decorations that may follow a trailing "on Sunday".
const TRAILERS: [&str; 4] = [
    ", quickly",
    " from her phone",
    " on the way out",
    ", this time",
];

/// Whether `day` is a day off: a weekend or one of `holidays`.
pub fn day_off(day: Date, holidays: &[Date]) -> bool {
    day.weekday() >= 5 || holidays.contains(&day)
}

/// Whether an event is a work act by where it happened (the persona's `work` and `commute`
/// places) or by what its text says ([`WORK_PHRASES`]).
pub fn work_context(persona: &Persona, e: &HistoryEvent) -> bool {
    let at_work = ["work", "commute"]
        .iter()
        .filter_map(|k| persona.places.get(*k))
        .any(|label| *label == e.location);
    let lower = e.text.to_lowercase();
    let cleaned = NOT_WORK.iter().fold(lower, |t, n| t.replace(n, " "));
    at_work || WORK_PHRASES.iter().any(|p| cleaned.contains(p))
}

/// The weekday a text says the event happened on, when it says one for itself: "(Sunday
/// morning)", "on Sunday morning", or a trailing "on Sunday" (not after a clock time: "the
/// groceries arrive 10:00-12:00 on Sunday" tells of another day).
pub fn said_weekday(text: &str) -> Option<usize> {
    let mut tail = text;
    while let Some(t) = TRAILERS.iter().find_map(|s| tail.strip_suffix(s)) {
        tail = t;
    }
    for (i, name) in WEEKDAY_NAMES.iter().enumerate() {
        for (at, _) in text.match_indices(name) {
            let before = &text[..at];
            let after = &text[at + name.len()..];
            let next = after
                .split(|c: char| !c.is_alphabetic())
                .nth(1)
                .unwrap_or("");
            let part = after.starts_with(' ') && DAYPARTS.contains(&next);
            if before.ends_with('(') && part {
                return Some(i);
            }
            if before.ends_with(" on ") {
                let timed = before
                    .trim_end_matches(" on ")
                    .ends_with(|c: char| c.is_ascii_digit());
                if part || (at + name.len() == tail.len() && !timed) {
                    return Some(i);
                }
            }
        }
    }
    None
}

/// English weekday names, Monday first (as [`Date::weekday`] counts).
const WEEKDAY_NAMES: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// Work acts on a weekend or holiday, and weekday phrases that are not the event's own day.
pub fn calendar_findings(persona: &Persona, history: &[HistoryEvent]) -> Vec<Contradiction> {
    let mut out = Vec::new();
    for e in history {
        let day = e.time.date;
        if day_off(day, &persona.holidays) && work_context(persona, e) {
            out.push(Contradiction {
                rule: Rule::WorkOnDayOff,
                event_id: e.event_id.clone(),
                detail: format!(
                    "{} is a {}{}, but \"{}\" at {} is work",
                    day,
                    day.weekday_name(),
                    if persona.holidays.contains(&day) {
                        " (a holiday)"
                    } else {
                        ""
                    },
                    e.text,
                    e.location
                ),
            });
        }
        if let Some(w) = said_weekday(&e.text).filter(|w| *w != day.weekday() as usize) {
            out.push(Contradiction {
                rule: Rule::WeekdayMismatch,
                event_id: e.event_id.clone(),
                detail: format!(
                    "{} is a {}, but \"{}\" says {}",
                    day,
                    day.weekday_name(),
                    e.text,
                    WEEKDAY_NAMES[w]
                ),
            });
        }
    }
    out
}
