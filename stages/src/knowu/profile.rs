//! The one reader of KnowU profile files (`user_profile/<persona>.yaml`, or any file of that
//! schema: `user_profile:` with identity, locations, habits, preferences, social_graph, …).
//!
//! A profile is kept as a tree, so each user reads what it needs:
//! - the metrics ask which habits are *active* — a habit key counts when it holds a non-empty
//!   mapping, KnowU's own rule;
//! - task generation looks sections up by dotted path (`preferences.diet`) and matches keys by
//!   meaning ([`crate::knowu::sim::matching`]);
//! - `import_persona` flattens it into profile entries ([`KnowuProfile::entries`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::error::KnowuError;
use crate::world::persona::{ProfileEntry, Source};
use crate::world::types::display;

/// One KnowU persona's profile.
#[derive(Debug, Clone)]
pub struct KnowuProfile {
    /// Persona id: the file stem (e.g. `developer`); task ids end in `@<id>`.
    pub id: String,
    /// `identity.full_name`, or the id when the profile has none.
    pub display_name: String,
    /// The `user_profile` mapping.
    pub profile: Map<String, Value>,
    /// The `environment_init_state` mapping — the phone's app state KnowU sets up for the
    /// persona (contacts, messages, mail, files, …); KnowU's files have it beside
    /// `user_profile`, some inside it. Empty when absent.
    pub environment: Map<String, Value>,
}

impl KnowuProfile {
    /// Reads and parses the profile at `path` (named in errors as given).
    pub fn load(path: &Path) -> Result<Self, KnowuError> {
        let path = &super::data::locate(path);
        let text = std::fs::read_to_string(path).map_err(|e| KnowuError::data(path, e))?;
        Self::parse(&path.display().to_string(), &text)
    }

    /// Parses profile YAML text; `file` names it in errors and gives the id (its stem).
    pub fn parse(file: &str, text: &str) -> Result<Self, KnowuError> {
        let root: Value = prefflow_engine::config::from_yaml(text)
            .map_err(|e| KnowuError::yaml(Path::new(file), &e))?;
        let profile = match root.get("user_profile") {
            Some(Value::Object(m)) => m.clone(),
            found => {
                let what = found.map_or("nothing".to_string(), KnowuError::describe);
                return Err(KnowuError::Content {
                    path: PathBuf::from(file),
                    message: format!(
                        "`user_profile` must be a mapping, found {what}; a KnowU profile starts with `user_profile:` holding identity, habits, preferences, social_graph, … (see user_profile/template.yaml)"
                    ),
                });
            }
        };
        let environment = [
            root.get("environment_init_state"),
            profile.get("environment_init_state"),
        ]
        .into_iter()
        .flatten()
        .find_map(Value::as_object)
        .cloned()
        .unwrap_or_default();
        let id = Path::new(file)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let display_name = profile
            .get("identity")
            .and_then(|i| i.get("full_name"))
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .map_or_else(|| id.clone(), str::to_string);
        Ok(Self {
            id,
            display_name,
            profile,
            environment,
        })
    }

    /// `identity.full_name` when the profile gives one.
    pub fn full_name(&self) -> Option<&str> {
        self.get("identity.full_name")
            .and_then(Value::as_str)
            .map(str::trim)
    }

    /// The value at a dotted path below `user_profile` (`social_graph.high_priority[0].name`),
    /// when present and not empty.
    pub fn get(&self, path: &str) -> Option<&Value> {
        let mut cur: Option<&Value> = None;
        for part in path.split('.') {
            let (key, index) = split_index(part);
            let map = match cur {
                None => Some(&self.profile),
                Some(v) => v.as_object(),
            }?;
            let mut v = map.get(key)?;
            if let Some(i) = index {
                v = v.as_array()?.get(i)?;
            }
            cur = Some(v);
        }
        cur.filter(|v| !is_empty(v))
    }

    /// The `habits` mapping (empty when absent or not a mapping, as KnowU reads it).
    pub fn habits(&self) -> Option<&Map<String, Value>> {
        self.profile.get("habits")?.as_object()
    }

    /// The habit under `key` when it is a non-empty mapping (KnowU's "the user has it").
    pub fn habit(&self, key: &str) -> Option<&Map<String, Value>> {
        self.habits()?
            .get(key)?
            .as_object()
            .filter(|m| !m.is_empty())
    }

    /// Keys of `habits` holding a non-empty mapping.
    pub fn active_habits(&self) -> BTreeSet<String> {
        self.habits()
            .map(|h| {
                h.keys()
                    .filter(|k| self.habit(k).is_some())
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// One profile entry per non-empty leaf: id = dotted path
    /// (`preferences.diet.cuisine_preference`); dimension = the preferences sub-section (`diet`,
    /// `shopping`, …), `habits`, or the top-level section (`identity`, `locations`, …); key =
    /// the path below the dimension. KnowU does not say which entries history evidences, so
    /// `source` is [`Source::Unspecified`]. `environment_init_state` is app state, not profile.
    pub fn entries(&self) -> Vec<ProfileEntry> {
        let mut out = Vec::new();
        for (section, v) in &self.profile {
            match (section.as_str(), v) {
                ("environment_init_state", _) => {}
                ("preferences", Value::Object(subs)) => {
                    for (sub, v) in subs {
                        flatten(&format!("preferences.{sub}"), sub, "", v, &mut out);
                    }
                }
                (s, v) => flatten(s, s, "", v, &mut out),
            }
        }
        out
    }
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
            counter: Vec::new(),
            decoys: Vec::new(),
            others: Vec::new(),
        }),
    }
}

fn split_index(part: &str) -> (&str, Option<usize>) {
    match part.strip_suffix(']').and_then(|p| p.split_once('[')) {
        Some((key, i)) => (key, i.parse().ok()),
        None => (part, None),
    }
}

/// Null, blank strings, and empty lists or mappings: "the profile does not say".
pub fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

/// A profile value as the text a user would say: strings as written, lists joined with `; `,
/// mappings as `key: value` parts.
pub fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.trim().to_string(),
        Value::Array(items) => items.iter().map(text).collect::<Vec<_>>().join("; "),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k}: {}", text(v)))
            .collect::<Vec<_>>()
            .join("; "),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The active habits of one persona, as the metrics need them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Habits {
    /// False when the persona has no profile file.
    pub found: bool,
    /// Keys of `user_profile.habits` holding a non-empty mapping.
    pub active: BTreeSet<String>,
}

impl Habits {
    /// The habits in the profile at `path`; a missing file gives `found: false` and no habits
    /// (KnowU's script reads it so; `knowu_metrics` refuses it unless told otherwise).
    pub fn load(path: &Path) -> Result<Self, KnowuError> {
        if !path.is_file() {
            return Ok(Self::default());
        }
        Ok(Self {
            found: true,
            active: KnowuProfile::load(path)?.active_habits(),
        })
    }

    /// True when `key` is a non-empty mapping in the persona's habits.
    pub fn has(&self, key: &str) -> bool {
        self.active.contains(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_profiles_list_their_habits() {
        let Some(knowu) = crate::knowu::data::for_tests("shipped_profiles") else {
            return;
        };
        let shipped = |name: &str| knowu.join("user_profile").join(format!("{name}.yaml"));
        let student = Habits::load(&shipped("student")).expect("student.yaml");
        assert!(student.found);
        assert!(student.has("weekend_sleeper") && student.has("bluetooth_cleanup"));
        assert!(!student.has("low_battery_saver"));
        let developer = Habits::load(&shipped("developer")).expect("developer.yaml");
        assert_eq!(developer.active.len(), 5);
        assert!(!developer.has("weekend_sleeper"));
        // The blank template's habits are all empty mappings: none counts.
        let template = Habits::load(&shipped("template")).expect("template");
        assert!(template.found && template.active.is_empty());
        // No file: not found, no habits.
        assert_eq!(
            Habits::load(&shipped("no-such-persona")).expect("missing"),
            Habits::default()
        );
    }

    #[test]
    fn only_non_empty_mappings_count_and_bad_yaml_is_located() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("p.yaml");
        let text = "user_profile:\n  habits:\n    a: {x: 1}\n    b: {}\n    c: [1]\n    d: yes\n";
        std::fs::write(&p, text).expect("write");
        let h = Habits::load(&p).expect("valid");
        assert_eq!(
            h.active.iter().map(String::as_str).collect::<Vec<_>>(),
            ["a"]
        );
        std::fs::write(&p, "user_profile:\n  habits: {a: [1, 2}\n").expect("write");
        let err = Habits::load(&p).expect_err("broken").to_string();
        assert!(err.contains("p.yaml:2:"), "{err}");
        assert!(err.contains("invalid YAML"), "{err}");
    }

    #[test]
    fn a_profile_needs_a_user_profile_mapping() {
        for (text, found) in [
            ("version: 1\n", "nothing"),
            ("user_profile: [1, 2]\n", "an array of 2 element(s)"),
            ("{not json", ""),
        ] {
            let err = KnowuProfile::parse("dir/p.yaml", text)
                .expect_err(text)
                .to_string();
            assert!(err.starts_with("dir/p.yaml"), "{err}");
            if found.is_empty() {
                assert!(err.contains("invalid YAML"), "{err}");
            } else {
                assert!(err.contains("`user_profile` must be a mapping"), "{err}");
                assert!(err.contains(found), "{err}");
            }
        }
    }

    #[test]
    fn real_profiles_flatten_into_dimensions() {
        let Some(knowu) = crate::knowu::data::for_tests("real_profiles_flatten") else {
            return;
        };
        let shipped = |name: &str| knowu.join("user_profile").join(format!("{name}.yaml"));
        for name in ["developer", "student", "user"] {
            let p = KnowuProfile::load(&shipped(name)).expect(name);
            let entries = p.entries();
            assert!(entries.len() >= 40, "{name}: {}", entries.len());
            let dims: BTreeSet<&str> = entries.iter().map(|e| e.dimension.as_str()).collect();
            for d in ["identity", "habits", "shopping", "travel"] {
                assert!(dims.contains(d), "{name} lacks {d}: {dims:?}");
            }
            let ids: BTreeSet<&str> = entries.iter().map(|e| e.id.as_str()).collect();
            assert_eq!(ids.len(), entries.len(), "{name}: ids unique");
        }
        let dev = KnowuProfile::load(&shipped("developer")).expect("developer");
        assert_eq!(dev.full_name(), Some("Kenji Sato"));
        let entries = dev.entries();
        let e = entries
            .iter()
            .find(|e| e.id == "preferences.diet.cuisine_preference")
            .expect("cuisine");
        assert_eq!(
            (e.dimension.as_str(), e.key.as_str()),
            ("diet", "cuisine_preference")
        );
        assert!(e.value.as_array().is_some_and(|a| a.len() == 4));
        assert!(entries
            .iter()
            .any(|e| e.id == "social_graph.high_priority[0].name" && e.value == "OpsBot"));
        assert!(entries
            .iter()
            .all(|e| !e.id.starts_with("environment_init_state")));
        let blank = KnowuProfile::load(&shipped("template")).expect("template");
        assert!(blank.entries().iter().all(|e| !e.mention.is_empty()));
        assert_eq!(blank.full_name(), None);
    }

    #[test]
    fn dotted_paths_and_habits() {
        let p = KnowuProfile::parse(
            "x/kim.yaml",
            "user_profile:\n  identity: {full_name: Kim}\n  habits: {a: {d: 1}, b: {}}\n  social_graph: {family: [{name: Mom}]}\n  preferences: {diet: {coffee: '  '}}\n",
        )
        .expect("valid");
        assert_eq!((p.id.as_str(), p.display_name.as_str()), ("kim", "Kim"));
        assert_eq!(
            p.get("social_graph.family[0].name"),
            Some(&Value::from("Mom"))
        );
        assert_eq!(p.get("preferences.diet.coffee"), None, "blank is absent");
        assert!(p.habit("a").is_some() && p.habit("b").is_none());
        assert_eq!(p.active_habits().into_iter().collect::<Vec<_>>(), ["a"]);
    }
}
