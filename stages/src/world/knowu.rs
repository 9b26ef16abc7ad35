//! Import of KnowU-Bench personas: a profile YAML (`user_profile/*.yaml`, any file of that
//! schema) flattened into profile entries, and a log JSON (clean or `_noise_25pct`) turned into
//! history events. `environment_init_state` is app state, not profile, and is not imported.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::clock::DateTime;
use super::error::{Loc, Problem, ProblemKind, Problems, Result, WorldError};
use super::history::{HistoryEvent, Label};
use super::persona::{ProfileEntry, Source};
use super::types::display;
use super::yaml;

/// A flattened KnowU profile.
#[derive(Debug, Clone)]
pub struct KnowuProfile {
    /// The file stem (e.g. `developer`).
    pub persona: String,
    /// `identity.full_name`, when present.
    pub name: Option<String>,
    /// One entry per leaf: id = dotted path (`preferences.diet.cuisine_preference`); dimension =
    /// the preferences sub-section (`diet`, `shopping`, …), `habits`, or the top-level section
    /// (`identity`, `locations`, …); key = the path below the dimension. KnowU does not say
    /// which entries history evidences, so `source` is [`Source::Unspecified`].
    pub entries: Vec<ProfileEntry>,
}

/// Loads a KnowU profile YAML.
pub fn load_profile(path: &Path) -> Result<KnowuProfile> {
    profile_from_str(&file_name(path), &yaml::read(path)?)
}

/// Parses KnowU profile YAML text (`file` labels errors and gives the persona id).
pub fn profile_from_str(file: &str, text: &str) -> Result<KnowuProfile> {
    let root: Value = yaml::parse(file, text)?;
    let Some(profile) = root.get("user_profile").and_then(Value::as_object) else {
        let p = Problem::new(
            ProblemKind::MissingValue,
            Loc::file(file),
            "no `user_profile` mapping",
            "a KnowU profile has `user_profile:` with identity, habits, preferences, …",
        );
        return Err(WorldError::Invalid(Problems(vec![p])));
    };
    let mut entries = Vec::new();
    for (section, v) in profile {
        match (section.as_str(), v) {
            ("preferences", Value::Object(subs)) => {
                for (sub, v) in subs {
                    flatten(&format!("preferences.{sub}"), sub, "", v, &mut entries);
                }
            }
            ("habits", v) => flatten("habits", "habits", "", v, &mut entries),
            (s, v) => flatten(s, s, "", v, &mut entries),
        }
    }
    let name = profile
        .get("identity")
        .and_then(|i| i.get("full_name"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let persona = Path::new(file)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(KnowuProfile {
        persona,
        name,
        entries,
    })
}

/// Adds one entry per non-empty leaf under `v`. `prefix` is the id so far, `key` the path below
/// the dimension.
fn flatten(prefix: &str, dimension: &str, key: &str, v: &Value, out: &mut Vec<ProfileEntry>) {
    let join = |k: &str| {
        if key.is_empty() {
            k.to_string()
        } else {
            format!("{key}.{k}")
        }
    };
    match v {
        Value::Null => {}
        Value::String(s) if s.trim().is_empty() => {}
        Value::Object(m) => {
            for (k, child) in m {
                flatten(&format!("{prefix}.{k}"), dimension, &join(k), child, out);
            }
        }
        Value::Array(items) if items.iter().any(|i| i.is_object() || i.is_array()) => {
            for (i, child) in items.iter().enumerate() {
                flatten(
                    &format!("{prefix}[{i}]"),
                    dimension,
                    &format!("{key}[{i}]"),
                    child,
                    out,
                );
            }
        }
        Value::Array(items) if items.is_empty() => {}
        leaf => out.push(ProfileEntry {
            id: prefix.to_string(),
            dimension: dimension.to_string(),
            key: if key.is_empty() {
                dimension.to_string()
            } else {
                key.to_string()
            },
            value: leaf.clone(),
            mention: display(leaf),
            source: Source::Unspecified,
            shift: None,
            weight: 1.0,
            note: String::new(),
            evidence: Vec::new(),
        }),
    }
}

/// One raw log entry.
#[derive(Debug, Deserialize)]
struct RawLogEntry {
    time: String,
    #[serde(default)]
    location: String,
    action: String,
    label: String,
    #[serde(default)]
    category: String,
}

/// Loads a KnowU log JSON.
pub fn load_log(path: &Path) -> Result<Vec<HistoryEvent>> {
    log_from_str(&file_name(path), &yaml::read(path)?)
}

/// Parses KnowU log JSON text: time (with its UTC offset kept), location, text (`action`),
/// label and category, in file order; ids are `ev_0001`…; `app` is guessed from an
/// "opened (the) X" phrase and empty when there is none.
pub fn log_from_str(file: &str, text: &str) -> Result<Vec<HistoryEvent>> {
    let raw: Vec<RawLogEntry> = serde_json::from_str(text).map_err(|e| WorldError::Syntax {
        at: Loc {
            file: file.to_string(),
            line: e.line() as u32,
            column: e.column() as u32,
        },
        message: e.to_string(),
    })?;
    let width = raw.len().to_string().len().max(4);
    let mut problems = Vec::new();
    let mut events = Vec::with_capacity(raw.len());
    for (i, r) in raw.into_iter().enumerate() {
        let at = Loc {
            file: format!("{file} entry #{}", i + 1),
            line: 0,
            column: 0,
        };
        let Some((time, offset)) = DateTime::parse_with_offset(&r.time) else {
            problems.push(Problem::new(
                ProblemKind::ValueTypeMismatch,
                at,
                format!("time \"{}\" is not ISO-8601", r.time),
                "write YYYY-MM-DDTHH:MM:SS[+HH:MM]",
            ));
            continue;
        };
        let label = match r.label.as_str() {
            "signal" => Label::Signal,
            "noise" => Label::Noise,
            other => {
                problems.push(Problem::new(
                    ProblemKind::DefaultNotInOptions,
                    at,
                    format!("label \"{other}\" is neither signal nor noise"),
                    "use signal or noise",
                ));
                continue;
            }
        };
        let app = guess_app(&r.action);
        events.push(HistoryEvent {
            event_id: format!("ev_{:0width$}", i + 1),
            time,
            utc_offset_minutes: offset,
            app,
            location: r.location,
            text: r.action,
            label,
            category: r.category,
            supports: Vec::new(),
        });
    }
    if problems.is_empty() {
        Ok(events)
    } else {
        Err(WorldError::Invalid(Problems(problems)))
    }
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

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn shared(rel: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/knowu-bench")
            .join(rel)
    }

    #[test]
    fn real_logs_have_the_published_counts() {
        for (name, clean, noisy) in [
            ("developer", 138, 184),
            ("student", 96, 128),
            ("user", 159, 212),
        ] {
            let c = load_log(&shared(&format!("user_logs/{name}.json"))).unwrap();
            let n = load_log(&shared(&format!("user_logs/{name}_noise_25pct.json"))).unwrap();
            assert_eq!((c.len(), n.len()), (clean, noisy), "{name}");
            assert!(c.iter().all(|e| e.label == Label::Signal));
            let signal = n.iter().filter(|e| e.label == Label::Signal).count();
            assert_eq!(signal, clean, "{name}: noisy log keeps every signal entry");
            assert_eq!(n.len() - signal, noisy - clean);
            assert!(
                n.windows(2).all(|w| w[0].time <= w[1].time),
                "{name} in time order"
            );
        }
    }

    #[test]
    fn log_fields_are_kept() {
        let e = &load_log(&shared("user_logs/developer.json")).unwrap()[0];
        assert_eq!(e.event_id, "ev_0001");
        assert_eq!(e.time.to_string(), "2026-01-01T13:05:10");
        assert_eq!(e.utc_offset_minutes, Some(480));
        assert_eq!(e.category, "preference_diet");
        assert_eq!(e.app, "Tuantuan");
        assert!(e.text.contains("Soylent") && e.location.contains("颐和山庄"));
    }

    #[test]
    fn real_profiles_flatten_into_dimensions() {
        for name in ["developer", "student", "user"] {
            let p = load_profile(&shared(&format!("user_profile/{name}.yaml"))).unwrap();
            assert!(p.entries.len() >= 40, "{name}: {}", p.entries.len());
            let dims: std::collections::BTreeSet<&str> =
                p.entries.iter().map(|e| e.dimension.as_str()).collect();
            for d in ["identity", "habits", "shopping", "travel"] {
                assert!(dims.contains(d), "{name} lacks {d}: {dims:?}");
            }
            let ids: std::collections::BTreeSet<&str> =
                p.entries.iter().map(|e| e.id.as_str()).collect();
            assert_eq!(ids.len(), p.entries.len(), "{name}: ids unique");
        }
        let dev = load_profile(&shared("user_profile/developer.yaml")).unwrap();
        assert_eq!(dev.name.as_deref(), Some("Kenji Sato"));
        let e = dev
            .entries
            .iter()
            .find(|e| e.id == "preferences.diet.cuisine_preference")
            .unwrap();
        assert_eq!(
            (e.dimension.as_str(), e.key.as_str()),
            ("diet", "cuisine_preference")
        );
        assert!(e.value.as_array().is_some_and(|a| a.len() == 4));
        assert!(dev
            .entries
            .iter()
            .any(|e| e.id == "social_graph.high_priority[0].name" && e.value == "OpsBot"));
        assert!(dev
            .entries
            .iter()
            .all(|e| !e.id.starts_with("environment_init_state")));
    }

    #[test]
    fn the_blank_template_imports_to_nothing_much() {
        let p = load_profile(&shared("user_profile/template.yaml")).unwrap();
        assert!(p.entries.iter().all(|e| !e.mention.is_empty()));
        assert!(p.name.is_none());
    }

    #[test]
    fn bad_inputs_are_located_errors() {
        let err = log_from_str(
            "x.json",
            "[{\"time\": \"yesterday\", \"action\": \"a\", \"label\": \"signal\"}]",
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("x.json entry #1") && err.to_string().contains("yesterday"),
            "{err}"
        );
        let err = log_from_str(
            "x.json",
            "[{\"time\": \"2026-01-01T10:00:00\", \"action\": \"a\", \"label\": \"maybe\"}]",
        )
        .unwrap_err();
        assert!(err.to_string().contains("maybe"), "{err}");
        let err = log_from_str("x.json", "[{\"time\": 1}\n").unwrap_err();
        assert!(
            matches!(err, WorldError::Syntax { ref at, .. } if at.line == 1),
            "{err}"
        );
        let err = profile_from_str("p.yaml", "version: 1\n").unwrap_err();
        assert!(err.to_string().contains("user_profile"), "{err}");
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
