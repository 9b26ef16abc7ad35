//! The reader of KnowU logs (`user_logs/<persona>.json` clean, or `<persona>_noise_25pct.json`):
//! a JSON list of `{time, location, action, label, category}` entries becomes history events.
//!
//! Every problem names the entry by number and line, the field and the fix, and all of a
//! file's problems are reported at once; an empty log is an error (a persona without history
//! would silently make every personalized task unanswerable).

use std::path::Path;

use serde_json::{Map, Value};

use super::error::KnowuError;
use crate::world::clock::DateTime;
use crate::world::history::{HistoryEvent, Label};

/// What a log entry looks like, for messages.
const SHAPE: &str =
    "a KnowU log is a JSON list of {\"time\", \"location\", \"action\", \"label\", \"category\"} entries";
/// At most this many entry problems are spelled out; the rest are counted.
const SHOWN: usize = 10;

/// Reads and parses the log at `path` (named in errors as given).
pub fn load(path: &Path) -> Result<Vec<HistoryEvent>, KnowuError> {
    let path = &super::data::locate(path);
    let bytes = std::fs::read(path).map_err(|e| KnowuError::data(path, e))?;
    let text = String::from_utf8(bytes).map_err(|e| KnowuError::Content {
        path: path.to_path_buf(),
        message: format!(
            "not UTF-8 text (invalid byte at offset {}); {SHAPE}, saved as UTF-8",
            e.utf8_error().valid_up_to()
        ),
    })?;
    parse(&path.display().to_string(), &text)
}

/// Parses KnowU log JSON text (`file` labels errors): time (with its UTC offset kept),
/// location, text (`action`), label and category, in file order; ids are `ev_0001`…; `app` is
/// guessed from an "opened (the) X" phrase and empty when there is none.
pub fn parse(file: &str, text: &str) -> Result<Vec<HistoryEvent>, KnowuError> {
    let path = Path::new(file);
    let content = |message: String| KnowuError::Content {
        path: path.to_path_buf(),
        message,
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(content(format!("the file is empty; {SHAPE}")));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| KnowuError::json(path, &e))?;
    let Value::Array(items) = value else {
        return Err(KnowuError::shape(
            path,
            "(top level)",
            "a JSON list of log entries",
            &value,
        ));
    };
    if items.is_empty() {
        return Err(content(format!(
            "the log has no entries; a persona needs its history — point `log` at its user_logs/<persona>.json ({SHAPE})"
        )));
    }
    let lines = entry_lines(text);
    let width = items.len().to_string().len().max(4);
    let mut problems = Vec::new();
    let mut events = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = match lines.get(i) {
            Some(line) => format!("entry {} (line {line})", i + 1),
            None => format!("entry {}", i + 1),
        };
        match event(item, &format!("ev_{:0width$}", i + 1)) {
            Ok(e) => events.push(e),
            Err(p) => problems.extend(p.into_iter().map(|p| format!("{at}: {p}"))),
        }
    }
    if problems.is_empty() {
        return Ok(events);
    }
    let total = problems.len();
    let mut message = format!("{total} problem(s) in the log entries:");
    for p in problems.iter().take(SHOWN) {
        message.push_str(&format!("\n  {p}"));
    }
    if total > SHOWN {
        message.push_str(&format!("\n  … and {} more", total - SHOWN));
    }
    Err(content(message))
}

/// One entry as an event, or what is wrong with it (each: field, problem, fix).
fn event(item: &Value, event_id: &str) -> Result<HistoryEvent, Vec<String>> {
    let Value::Object(map) = item else {
        return Err(vec![format!(
            "must be an object with time, location, action, label, found {}; {SHAPE}",
            KnowuError::describe(item)
        )]);
    };
    let mut problems = Vec::new();
    let time = required_str(map, "time", &mut problems).and_then(|t| {
        let parsed = DateTime::parse_with_offset(t);
        if parsed.is_none() {
            problems.push(format!(
                "field `time` is {t:?}, not an ISO-8601 time; write YYYY-MM-DDTHH:MM[:SS][+HH:MM]"
            ));
        }
        parsed
    });
    let action = required_str(map, "action", &mut problems);
    let label = required_str(map, "label", &mut problems).and_then(|l| match l {
        "signal" => Some(Label::Signal),
        "noise" => Some(Label::Noise),
        other => {
            problems.push(format!(
                "field `label` is {other:?}; use \"signal\" or \"noise\""
            ));
            None
        }
    });
    let location = optional_str(map, "location", &mut problems);
    let category = optional_str(map, "category", &mut problems);
    match (time, action, label) {
        (Some((time, offset)), Some(action), Some(label)) if problems.is_empty() => {
            Ok(HistoryEvent {
                event_id: event_id.to_string(),
                time,
                utc_offset_minutes: offset,
                app: guess_app(action),
                location,
                text: action.to_string(),
                label,
                category,
                supports: Vec::new(),
                counters: Vec::new(),
            })
        }
        _ => Err(problems),
    }
}

fn required_str<'a>(
    map: &'a Map<String, Value>,
    field: &str,
    problems: &mut Vec<String>,
) -> Option<&'a str> {
    match map.get(field) {
        Some(Value::String(s)) => Some(s),
        None | Some(Value::Null) => {
            problems.push(format!("missing field `{field}`; {SHAPE}"));
            None
        }
        Some(other) => {
            problems.push(format!(
                "field `{field}` must be a string, found {}",
                KnowuError::describe(other)
            ));
            None
        }
    }
}

fn optional_str(map: &Map<String, Value>, field: &str, problems: &mut Vec<String>) -> String {
    match map.get(field) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            problems.push(format!(
                "field `{field}` must be a string, found {}",
                KnowuError::describe(other)
            ));
            String::new()
        }
    }
}

/// The 1-based line on which each element of the top-level JSON array starts. The text is
/// valid JSON here (it parsed), so a small scan over strings and brackets finds them.
fn entry_lines(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let (mut depth, mut line) = (0usize, 1usize);
    let (mut in_string, mut escaped, mut expecting) = (false, false, false);
    for c in text.chars() {
        if c == '\n' {
            line += 1;
        }
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        if c.is_whitespace() {
            continue;
        }
        if expecting && depth == 1 && c != ']' {
            out.push(line);
            expecting = false;
        }
        match c {
            '"' => in_string = true,
            '[' | '{' => {
                depth += 1;
                if depth == 1 {
                    expecting = true;
                }
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            ',' if depth == 1 => expecting = true,
            _ => {}
        }
    }
    out
}

/// The app named by "opened (the) X [Y] (app)", e.g. `Tuantuan`, `Google Maps`; empty if none.
fn guess_app(text: &str) -> String {
    let Some(pos) = text.find("opened ") else {
        return String::new();
    };
    let rest = &text[pos + "opened ".len()..];
    let rest = rest.strip_prefix("the ").unwrap_or(rest);
    let word = |s: &str| {
        s.split(|c: char| !(c.is_alphanumeric() || c == '-'))
            .next()
            .unwrap_or_default()
            .to_string()
    };
    let first = word(rest);
    if first.is_empty() || first == "a" || first == "an" {
        return String::new();
    }
    let after = rest[first.len()..].strip_prefix(' ').unwrap_or_default();
    let second = word(after);
    if second.chars().next().is_some_and(char::is_uppercase)
        && first.chars().next().is_some_and(char::is_uppercase)
    {
        format!("{first} {second}")
    } else {
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_logs_have_the_published_counts() {
        let Some(knowu) = crate::knowu::data::for_tests("real_logs") else {
            return;
        };
        let shared = |rel: &str| knowu.join(rel);
        for (name, clean, noisy) in [
            ("developer", 138, 184),
            ("student", 96, 128),
            ("user", 159, 212),
        ] {
            let c = load(&shared(&format!("user_logs/{name}.json"))).expect("clean");
            let n = load(&shared(&format!("user_logs/{name}_noise_25pct.json"))).expect("noisy");
            assert_eq!((c.len(), n.len()), (clean, noisy), "{name}");
            assert!(c.iter().all(|e| e.label == Label::Signal));
            let signal = n.iter().filter(|e| e.label == Label::Signal).count();
            assert_eq!(signal, clean, "{name}: noisy log keeps every signal entry");
            assert!(
                n.windows(2).all(|w| w[0].time <= w[1].time),
                "{name} in time order"
            );
        }
    }

    #[test]
    fn log_fields_are_kept() {
        let Some(knowu) = crate::knowu::data::for_tests("log_fields_are_kept") else {
            return;
        };
        let e = &load(&knowu.join("user_logs/developer.json")).expect("log")[0];
        assert_eq!(e.event_id, "ev_0001");
        assert_eq!(e.time.to_string(), "2026-01-01T13:05:10");
        assert_eq!(e.utc_offset_minutes, Some(480));
        assert_eq!(e.category, "preference_diet");
        assert_eq!(e.app, "Tuantuan");
        assert!(e.text.contains("Soylent") && e.location.contains("颐和山庄"));
    }

    fn err(text: &str) -> String {
        parse("logs/x.json", text).expect_err(text).to_string()
    }

    #[test]
    fn entry_problems_name_entry_line_field_and_fix() {
        let text = "[\n  {\"time\": \"2026-01-01T10:00:00\", \"action\": \"a\", \"label\": \"signal\"},\n  {\"time\": \"yesterday\",\n   \"action\": \"b\", \"label\": \"maybe\"},\n  {\"time\": \"2026-01-01T11:00\", \"label\": \"noise\", \"location\": 3},\n  \"oops\"\n]";
        let e = err(text);
        assert!(e.starts_with("logs/x.json: 5 problem(s)"), "{e}");
        assert!(e.contains("entry 2 (line 3): field `time` is \"yesterday\", not an ISO-8601 time; write YYYY-MM-DD"), "{e}");
        assert!(
            e.contains("entry 2 (line 3): field `label` is \"maybe\"; use \"signal\" or \"noise\""),
            "{e}"
        );
        assert!(
            e.contains("entry 3 (line 5): missing field `action`"),
            "{e}"
        );
        assert!(
            e.contains("entry 3 (line 5): field `location` must be a string, found the number 3"),
            "{e}"
        );
        assert!(e.contains("entry 4 (line 6): must be an object"), "{e}");
        assert!(!e.contains(":0:0"), "{e}");
    }

    #[test]
    fn whole_file_problems_say_what_a_log_is() {
        let e = err("{not json");
        assert!(e.starts_with("logs/x.json:1:2: invalid JSON"), "{e}");
        assert!(!e.contains("invalid type: map"), "{e}");
        let e = err("{\"time\": \"2026-01-01T10:00\"}");
        assert!(
            e.contains("x.json: the top level must be a JSON list of log entries, found an object"),
            "{e}"
        );
        let e = err("[]");
        assert!(e.contains("the log has no entries"), "{e}");
        let e = err("  \n");
        assert!(e.contains("the file is empty"), "{e}");
        let many: Vec<String> = (0..13)
            .map(|_| "{\"action\": \"a\", \"label\": \"signal\"}".to_string())
            .collect();
        let e = err(&format!("[{}]", many.join(",")));
        assert!(
            e.contains("13 problem(s)") && e.contains("… and 3 more"),
            "{e}"
        );
    }

    #[test]
    fn entry_lines_follow_strings_and_nesting() {
        let text = "[{\"a\": \"x],{\\\"\"},\n {\"b\": [1, {\"c\": 2}]},\n\n 3]";
        assert_eq!(entry_lines(text), [1, 2, 4]);
        assert_eq!(entry_lines("[]"), Vec::<usize>::new());
    }

    #[test]
    fn app_names_are_guessed_from_opened_phrases() {
        assert_eq!(
            guess_app("At 08:20, he opened the Alipay app, scanned"),
            "Alipay"
        );
        assert_eq!(guess_app("he opened Google Maps, searched"), "Google Maps");
        assert_eq!(guess_app("he opened the jingdian app"), "jingdian");
        assert_eq!(guess_app("a notification arrived"), "");
    }
}
