//! What a proactive template takes from the persona's habit, as KnowU's routine tasks take it:
//! the habit's own values (`{habit:action.recipient|default}`: the report's recipient, the scam
//! sender, the person to call) and the moment the situation happens (KnowU's
//! `resolve_routine_datetime`: the trigger's weekday and time).

use serde_json::{Map, Value};

use crate::knowu::profile::text;
use crate::world::clock::{DateTime, Time};

/// Replaces each `{habit:path|default}` in `s` with the habit's value at `path` (as text), and
/// each `{habit_<form>:path|default}` with that value in another form (see [`Form`]: the digits
/// of a phone number, as KnowU compares them; a channel's name as Mattermost stores it; the
/// time of day of a date-time). `path` is dotted (`action.recipient.phone`,
/// `trigger.time_range.0`); several paths separated by `;` are tried in order. `default` stands
/// in when the persona has no such habit or value.
pub fn fill_habit(s: &str, habit: Option<&Map<String, Value>>) -> String {
    fill_from(s, "habit", habit)
}

/// How a fill writes the value it found (`{what_<form>:…}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// As the profile holds it.
    Plain,
    /// Its ASCII digits only (`_digits`).
    Digits,
    /// Lower case, trimmed, spaces as `-` (`_slug`): KnowU's `_normalize_channel`.
    Slug,
    /// Its first `HH:MM` (`_hhmm`), KnowU's time pattern; the value itself without one.
    Hhmm,
}

impl Form {
    const ALL: [(Form, &'static str); 4] = [
        (Form::Plain, ":"),
        (Form::Digits, "_digits:"),
        (Form::Slug, "_slug:"),
        (Form::Hhmm, "_hhmm:"),
    ];

    fn write(self, value: &str, out: &mut String) {
        match self {
            Form::Plain => out.push_str(value),
            Form::Digits => out.extend(value.chars().filter(char::is_ascii_digit)),
            Form::Slug => out.push_str(&value.trim().to_lowercase().replace(' ', "-")),
            Form::Hhmm => match time_like(&Value::String(value.to_string())) {
                Some(t) => out.push_str(&t.hhmm()),
                None => out.push_str(value),
            },
        }
    }
}

/// [`fill_habit`] for another source: `{<what>:path|default}` and `{<what>_digits:…}` read
/// `values` (a personalized template's `{entry:phone|…}`: the social-graph entry its
/// preference sits in).
pub fn fill_from(s: &str, what: &str, values: Option<&Map<String, Value>>) -> String {
    let openers: Vec<(Form, String)> = Form::ALL
        .iter()
        .map(|(f, tail)| (*f, format!("{{{what}{tail}")))
        .collect();
    let mut out = String::new();
    let mut rest = s;
    while let Some((start, form, open)) = next_fill(rest, &openers) {
        let Some(len) = rest[start..].find('}') else {
            break;
        };
        let inner = &rest[start + open..start + len];
        let (paths, default) = inner.split_once('|').unwrap_or((inner, ""));
        let value = paths
            .split(';')
            .find_map(|p| values.and_then(|h| at_path(h, p.trim())))
            .map(text)
            .filter(|v| !v.is_empty());
        let value = value.as_deref().unwrap_or(default);
        out.push_str(&rest[..start]);
        form.write(value, &mut out);
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    out
}

/// The next fill in `s` (opened by one of `openers`): its start, its form, and the length of
/// its opener.
fn next_fill(s: &str, openers: &[(Form, String)]) -> Option<(usize, Form, usize)> {
    openers
        .iter()
        .filter_map(|(form, o)| s.find(o.as_str()).map(|i| (i, *form, o.len())))
        .min_by_key(|(i, _, _)| *i)
}

/// The value at a dotted path of a mapping; a numeric part indexes a list.
fn at_path<'a>(habit: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    let mut keys = path.split('.');
    let first = habit.get(keys.next()?)?;
    keys.try_fold(first, |v, k| match v {
        Value::Array(a) => a.get(k.parse::<usize>().ok()?),
        _ => v.get(k),
    })
}

/// KnowU's `resolve_routine_datetime` on a habit's `trigger`: the time is the trigger's
/// `simulation_datetime` (its time of day only), else `time`, else the start of `time_range`,
/// else `base`'s; the day is the first one from `base`'s on that is one of `day_of_week` /
/// `days` (a name or a list of names), else `base`'s.
pub fn routine_clock(base: DateTime, trigger: Option<&Value>) -> DateTime {
    let Some(t) = trigger else {
        return base;
    };
    let time = ["simulation_datetime", "datetime", "time"]
        .into_iter()
        .find_map(|k| t.get(k).and_then(time_like))
        .or_else(|| {
            t.get("time_range")
                .and_then(|r| r.get(0))
                .and_then(time_like)
        })
        .unwrap_or(base.time);
    let days = weekdays(t.get("day_of_week").or_else(|| t.get("days")));
    let date = (0..7)
        .map(|n| base.date.add_days(n))
        .find(|d| days.contains(&d.weekday()))
        .unwrap_or(base.date);
    DateTime { date, time }
}

/// Weekday numbers (0 = Monday) of a name or list of names (`Friday`, `fri`, `Sat`).
fn weekdays(v: Option<&Value>) -> Vec<u32> {
    const NAMES: [&[&str]; 7] = [
        &["mon", "monday"],
        &["tue", "tues", "tuesday"],
        &["wed", "wednesday"],
        &["thu", "thur", "thurs", "thursday"],
        &["fri", "friday"],
        &["sat", "saturday"],
        &["sun", "sunday"],
    ];
    let items: Vec<String> = match v {
        Some(Value::Array(a)) => a.iter().map(text).collect(),
        Some(other) => vec![text(other)],
        None => Vec::new(),
    };
    items
        .iter()
        .filter_map(|s| {
            let s = s.trim().to_lowercase();
            NAMES.iter().position(|n| n.contains(&s.as_str()))
        })
        .map(|i| i as u32)
        .collect()
}

/// The first `H:MM` / `HH:MM[:SS]` in a value not followed by a letter or digit (KnowU's
/// `\b(\d{1,2}):(\d{2})(?::(\d{2}))?\b`), as a time of day.
fn time_like(v: &Value) -> Option<Time> {
    let s = text(v);
    let b = s.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    let word = |i: usize| {
        b.get(i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
    };
    (0..b.len()).find_map(|colon| {
        if b[colon] != b':' || !digit(colon + 1) || !digit(colon + 2) {
            return None;
        }
        let start = if colon >= 2 && digit(colon - 2) {
            colon - 2
        } else {
            colon.checked_sub(1)?
        };
        if !digit(start) || (start > 0 && word(start - 1)) {
            return None;
        }
        let (h, m) = (
            s[start..colon].parse().ok()?,
            s[colon + 1..colon + 3].parse().ok()?,
        );
        let (sec, end) = if b.get(colon + 3) == Some(&b':') && digit(colon + 4) && digit(colon + 5)
        {
            (s[colon + 4..colon + 6].parse().ok()?, colon + 6)
        } else {
            (0, colon + 3)
        };
        if word(end) {
            return None;
        }
        Time::from_hms(h, m, sec)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn habit_values_fill_in_with_alternatives_digits_and_defaults() {
        let habit = json!({
            "action": { "recipient": { "name": "Mom", "phone": "+86 138-0000-1111" } },
            "trigger": { "time_range": ["16:55", "17:05"] }
        });
        let h = habit.as_object();
        let f = |s: &str| fill_habit(s, h);
        assert_eq!(f("{habit:action.recipient.name|Friend}"), "Mom");
        assert_eq!(
            f("{habit_digits:action.recipient.phone|0}"),
            "8613800001111"
        );
        assert_eq!(
            f("{habit:action.recipient_name;action.recipient.name|x}"),
            "Mom"
        );
        assert_eq!(f("at {habit:trigger.time_range.1|17:00}"), "at 17:05");
        assert_eq!(f("{habit:action.missing|the default}"), "the default");
        assert_eq!(
            fill_habit("{habit:a|none} {habit_digits:b|+1 2}", None),
            "none 12"
        );
        let chat = json!({ "action": { "channel": "AI Research" }, "trigger": { "meeting_start": "2026-05-20 18:25:00" } });
        let f = |s: &str| fill_habit(s, chat.as_object());
        assert_eq!(
            f("#{habit_slug:action.channel|town-square}"),
            "#ai-research"
        );
        assert_eq!(f("{habit_slug:trigger.channel|Town Square}"), "town-square");
        assert_eq!(
            f("at {habit_hhmm:trigger.meeting_start|09:54:47}"),
            "at 18:25"
        );
        assert_eq!(f("{habit_hhmm:trigger.none|2026-05-20 09:54:47}"), "09:54");
    }

    #[test]
    fn the_routine_clock_follows_the_trigger_as_knowu_resolves_it() {
        let base = DateTime::parse("2026-02-10T07:00").unwrap(); // a Tuesday
        let at = |t: Value| {
            let c = routine_clock(base, Some(&t));
            format!("{}T{}", c.date, c.time.hhmm())
        };
        // Saturday evening, the time from simulation_datetime (its date ignored).
        let call = json!({ "day_of_week": "Saturday", "time_range": ["19:30", "20:00"], "simulation_datetime": "2026-02-10 19:35:00" });
        assert_eq!(at(call), "2026-02-14T19:35");
        // Friday, the start of the time range.
        assert_eq!(
            at(json!({ "day_of_week": "Friday", "time_range": ["16:55", "17:05"] })),
            "2026-02-13T16:55"
        );
        // The base day when it is one of the days; the base time without one.
        assert_eq!(at(json!({ "days": ["tue", "thu"] })), "2026-02-10T07:00");
        // "6:00am" is no time in KnowU's pattern; "at 9:15 sharp" is.
        assert_eq!(at(json!({ "time": "6:00am" })), "2026-02-10T07:00");
        assert_eq!(at(json!({ "time": "at 9:15 sharp" })), "2026-02-10T09:15");
        assert_eq!(routine_clock(base, None), base);
    }
}
