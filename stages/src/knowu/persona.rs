//! Persona profiles (`user_profile/<persona>.yaml`): only `user_profile.habits` matters to the
//! metrics — a proactive task wants the agent to act when one of its habit keys is a non-empty
//! mapping there. Any file of KnowU's profile schema works; other sections are not read.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::error::KnowuError;

/// The habit keys of one persona whose value is a non-empty mapping.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Habits {
    /// False when the persona has no profile file (then it has no habits, as in KnowU's script).
    pub found: bool,
    /// Keys of `user_profile.habits` holding a non-empty mapping.
    pub active: BTreeSet<String>,
}

impl Habits {
    /// True when `key` is a non-empty mapping in the persona's habits.
    pub fn has(&self, key: &str) -> bool {
        self.active.contains(key)
    }
}

#[derive(Deserialize)]
struct ProfileFile {
    #[serde(default)]
    user_profile: Option<ProfileSection>,
}

#[derive(Deserialize)]
struct ProfileSection {
    #[serde(default)]
    habits: Option<Value>,
}

/// Loads the habits of each persona in `names` from `<dir>/<name>.yaml`, each file once.
pub fn load_all<'a>(
    dir: &Path,
    names: impl IntoIterator<Item = &'a str>,
) -> Result<HashMap<String, Habits>, KnowuError> {
    let mut out = HashMap::new();
    for name in names {
        if !out.contains_key(name) {
            out.insert(name.to_string(), load(&dir.join(format!("{name}.yaml")))?);
        }
    }
    Ok(out)
}

/// The habits in the profile at `path`; a missing file means no habits.
pub fn load(path: &Path) -> Result<Habits, KnowuError> {
    if !path.is_file() {
        return Ok(Habits::default());
    }
    let text = std::fs::read_to_string(path).map_err(|e| KnowuError::read(path, e))?;
    let file: ProfileFile = prefflow_engine::config::from_yaml(&text).map_err(|e| {
        let location = e
            .location()
            .map(|l| prefflow_engine::config::location(path, &l))
            .map_or_else(|| path.display().to_string(), |l| l.to_string());
        yaml_error(location, &e.to_string())
    })?;
    let habits = file.user_profile.and_then(|p| p.habits);
    let active = match habits {
        Some(Value::Object(map)) => map
            .into_iter()
            .filter(|(_, v)| v.as_object().is_some_and(|m| !m.is_empty()))
            .map(|(k, _)| k)
            .collect(),
        _ => BTreeSet::new(),
    };
    Ok(Habits {
        found: true,
        active,
    })
}

/// A located YAML error; serde-saphyr renders a source snippet after the first line, dropped here.
fn yaml_error(location: String, rendered: &str) -> KnowuError {
    let message = rendered
        .lines()
        .next()
        .unwrap_or("invalid YAML")
        .trim()
        .to_string();
    KnowuError::Yaml { location, message }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/knowu-bench/user_profile")
            .join(format!("{name}.yaml"))
    }

    #[test]
    fn shipped_profiles_list_their_habits() {
        let student = load(&shipped("student")).expect("student.yaml");
        assert!(student.found);
        assert!(student.has("weekend_sleeper") && student.has("bluetooth_cleanup"));
        assert!(!student.has("low_battery_saver"));
        let developer = load(&shipped("developer")).expect("developer.yaml");
        assert_eq!(developer.active.len(), 5);
        assert!(!developer.has("weekend_sleeper"));
        // The blank template's habits are all empty mappings: none counts.
        assert!(load(&shipped("template"))
            .expect("template")
            .active
            .is_empty());
        assert_eq!(
            load(&shipped("grandma")).expect("missing"),
            Habits::default()
        );
    }

    #[test]
    fn only_non_empty_mappings_count_and_bad_yaml_is_located() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("p.yaml");
        let text = "user_profile:\n  habits:\n    a: {x: 1}\n    b: {}\n    c: [1]\n    d: yes\n";
        std::fs::write(&p, text).expect("write");
        let h = load(&p).expect("valid");
        assert_eq!(
            h.active.iter().map(String::as_str).collect::<Vec<_>>(),
            ["a"]
        );
        std::fs::write(&p, "user_profile:\n  habits: {a: [1, 2}\n").expect("write");
        let err = load(&p).expect_err("broken").to_string();
        assert!(err.contains("p.yaml:2:"), "{err}");
        assert!(err.contains("invalid YAML"), "{err}");
    }
}
