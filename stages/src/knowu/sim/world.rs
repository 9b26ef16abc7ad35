//! A KnowU persona as a world the phone runs: the app files (ours plus the KnowU-flavoured ones
//! in `datasets/knowu/apps/`), a persona stub in our schema (identity, places, clock; KnowU
//! preferences stay in the KnowU profile, which task generation reads), and the KnowU log as the
//! history. The `sources` table carries the KnowU profile text as a `knowu_profile` row, so the
//! world and the tasks are rebuilt from tables alone.

use std::path::Path;

use serde_json::{json, Value};

use crate::knowu::profile::{text, KnowuProfile};
use crate::world::clock::Date;
use crate::world::history::HistoryEvent;

/// The `sources` kind of the row holding the KnowU profile YAML.
pub const PROFILE_KIND: &str = "knowu_profile";

/// The persona stub (JSON, which is YAML) our world model needs: name, age, city, occupation,
/// the history window and clock taken from the log, and the home / work places.
pub fn persona_stub(p: &KnowuProfile, log: &[HistoryEvent]) -> String {
    let identity = p.profile.get("identity");
    let field = |k: &str| identity.and_then(|i| i.get(k));
    let fallback = Date::from_ymd(2026, 1, 1);
    let start = log.first().map(|e| e.time.date).or(fallback);
    let last = log.last().map(|e| e.time.date).or(fallback);
    let now = log
        .last()
        .map_or_else(|| "2026-01-01T00:00".to_string(), |e| e.time.to_string());
    // Our persona schema needs a window of at least a day.
    let end = last
        .zip(start)
        .map(|(l, s)| if l <= s { s.add_days(1) } else { l });
    let day = |d: Option<Date>| d.map(|d| d.to_string()).unwrap_or_default();
    let mut places = serde_json::Map::new();
    if let Some(Value::Object(locs)) = p.profile.get("locations") {
        for (k, v) in locs {
            let label = v
                .get("address")
                .or_else(|| v.get("label"))
                .map(text)
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| k.clone());
            places.insert(k.clone(), json!({ "label": label }));
        }
    }
    if places.is_empty() {
        places.insert("home".into(), json!({ "label": "Home" }));
    }
    let city = places
        .values()
        .next()
        .and_then(|v| v["label"].as_str())
        .unwrap_or("Home")
        .to_string();
    json!({
        "persona": p.id,
        "name": p.display_name,
        "age": field("age").and_then(Value::as_u64).unwrap_or(30),
        "city": city,
        "occupation": field("occupation").map(text).unwrap_or_default(),
        "summary": "Imported from a KnowU-Bench profile; preferences and habits live in the knowu_profile source.",
        "history": { "start": day(start), "end": day(end) },
        "now": now.get(..16).unwrap_or(&now),
        "places": places,
        "profile": [],
    })
    .to_string()
}

/// The phone's apps for persona `p`: the `.yaml` files of `dirs` ([`app_sources`]) with the
/// persona's own records filled in ([`super::phone_data::fill_apps`]).
pub fn persona_apps(dirs: &[&Path], p: &KnowuProfile) -> Result<Vec<(String, String)>, String> {
    let apps = app_sources(dirs).map_err(|e| format!("cannot read the app files: {e}"))?;
    super::phone_data::fill_apps(apps, p)
}

/// The `.yaml` files of each directory, sorted by name within a directory, as (file name, text).
/// A later directory's file replaces an earlier one of the same name.
pub fn app_sources(dirs: &[&Path]) -> std::io::Result<Vec<(String, String)>> {
    let mut out: Vec<(String, String)> = Vec::new();
    for dir in dirs {
        let files = crate::files::sorted_files(dir, &["yaml"])?;
        for f in files {
            let name = f
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let body = std::fs::read_to_string(&f)?;
            out.retain(|(n, _)| n != &name);
            out.push((name, body));
        }
    }
    Ok(out)
}
