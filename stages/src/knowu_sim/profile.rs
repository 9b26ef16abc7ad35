//! A KnowU profile (`user_profile/*.yaml`, any file of that schema) kept as a tree, so templates
//! can ask for a section by dotted path (`preferences.diet.delivery_platform`) and proactive
//! tasks can ask whether a habit is present — the same rule KnowU's metrics use: a habit key
//! counts when it holds a non-empty mapping.

use serde_json::{Map, Value};

/// Why a profile could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// Not YAML.
    #[error("{file}: not valid YAML: {message}")]
    Yaml {
        /// The file as the pipeline named it.
        file: String,
        /// The parser's first line.
        message: String,
    },
    /// YAML without the `user_profile` mapping.
    #[error("{file}: no `user_profile` mapping; a KnowU profile has `user_profile:` with identity, habits, preferences, social_graph, …")]
    NoProfile {
        /// The file as the pipeline named it.
        file: String,
    },
}

/// One KnowU persona's profile.
#[derive(Debug, Clone)]
pub struct KnowuPersona {
    /// Persona id (the file stem, e.g. `developer`); task ids end in `@<id>`.
    pub id: String,
    /// `identity.full_name`, or the id when the profile has none.
    pub display_name: String,
    /// The `user_profile` mapping.
    pub profile: Map<String, Value>,
}

impl KnowuPersona {
    /// Parses profile YAML text; `file` names it in errors and gives the id (its stem).
    pub fn parse(file: &str, text: &str) -> Result<Self, ProfileError> {
        let root: Value =
            prefflow_engine::config::from_yaml(text).map_err(|e| ProfileError::Yaml {
                file: file.to_string(),
                message: e.to_string().lines().next().unwrap_or_default().to_string(),
            })?;
        let Some(profile) = root.get("user_profile").and_then(Value::as_object).cloned() else {
            return Err(ProfileError::NoProfile {
                file: file.to_string(),
            });
        };
        let id = std::path::Path::new(file)
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
        })
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

    /// The first of `paths` that is present, with its path.
    pub fn first<'a>(&self, paths: &'a [String]) -> Option<(&'a str, &Value)> {
        paths
            .iter()
            .find_map(|p| self.get(p).map(|v| (p.as_str(), v)))
    }

    /// The habit under `key` when it is a non-empty mapping (KnowU's "the user has it").
    pub fn habit(&self, key: &str) -> Option<&Map<String, Value>> {
        self.profile
            .get("habits")?
            .get(key)?
            .as_object()
            .filter(|m| !m.is_empty())
    }
}

fn split_index(part: &str) -> (&str, Option<usize>) {
    match part.strip_suffix(']').and_then(|p| p.split_once('[')) {
        Some((key, i)) => (key, i.parse().ok()),
        None => (part, None),
    }
}

fn is_empty(v: &Value) -> bool {
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

/// Words too common to judge a preference by.
const STOP: [&str; 24] = [
    "with",
    "that",
    "this",
    "from",
    "only",
    "when",
    "than",
    "over",
    "have",
    "will",
    "into",
    "your",
    "about",
    "they",
    "them",
    "their",
    "prefer",
    "preferred",
    "always",
    "never",
    "very",
    "more",
    "less",
    "just",
];

/// The key terms of a preference, what the offline preference judge looks for: each list item's
/// head (the text before a parenthesis or a colon-free dash); a long head gives its first
/// distinctive words instead. At most five, lower-cased, in order.
pub fn key_terms(value: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in text(value).split(';') {
        let head = item
            .split(['(', '（'])
            .next()
            .unwrap_or_default()
            .rsplit(": ")
            .next()
            .unwrap_or_default()
            .trim()
            .trim_end_matches(['.', ',', '!']);
        let words: Vec<&str> = head.split_whitespace().collect();
        let terms: Vec<String> = if (1..=3).contains(&words.len()) {
            vec![head.to_lowercase()]
        } else {
            words
                .iter()
                .map(|w| {
                    w.trim_matches(|c: char| !c.is_alphanumeric())
                        .to_lowercase()
                })
                .filter(|w| w.chars().count() >= 4 && !STOP.contains(&w.as_str()))
                .take(2)
                .collect()
        };
        for t in terms {
            if !t.is_empty() && !out.contains(&t) {
                out.push(t);
            }
        }
    }
    out.truncate(5);
    out
}
