//! `import_persona` through the CLI: the shipped KnowU-Bench personas via
//! `pipelines/knowu-personas.yaml`, a fabricated persona of the same schema, and bad files.

use std::path::Path;
use std::process::Command;

use polars::prelude::*;
use serde_json::Value;

use crate::common::{bin, Workspace};

fn strs(df: &DataFrame, col: &str) -> Vec<String> {
    df.column(col)
        .expect("column")
        .str()
        .expect("str column")
        .iter()
        .map(|s| s.unwrap_or_default().to_string())
        .collect()
}

#[test]
fn knowu_personas_pipeline_imports_the_published_counts() {
    let test = "knowu_personas_pipeline_imports_the_published_counts";
    let Some(knowu) = prefflow_stages::knowu::data::for_tests(test) else {
        return;
    };
    let knowu = knowu.canonicalize().expect("the KnowU data folder");
    let knowu_dir = || knowu.clone();
    let ws = Workspace::new();
    let file = "pipelines/knowu-personas.yaml";
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file))
        .expect("repo pipeline");
    ws.write(&format!("repo/{file}"), &text);
    let out = Command::new(bin())
        .current_dir(ws.path().join("repo"))
        .arg("--store")
        .arg(ws.store())
        .args(["run", file, "--progress", "none"])
        // The setting as a user outside this workspace gives it: the environment variable.
        .env(prefflow_stages::knowu::data::ENV, &knowu)
        .output()
        .expect("spawn prefflow");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (name, clean, noisy) in [
        ("developer", 138, 184),
        ("student", 96, 128),
        ("user", 159, 212),
    ] {
        let c = ws.table(&format!("{name}.history_events"), None);
        let n = ws.table(&format!("{name}_noisy.history_events"), None);
        assert_eq!((c.height(), n.height()), (clean, noisy), "{name}");
        assert!(strs(&c, "label").iter().all(|l| l == "signal"), "{name}");
        let signal = strs(&n, "label").iter().filter(|l| *l == "signal").count();
        assert_eq!(
            signal, clean,
            "{name}: the noisy log keeps every signal entry"
        );
        assert!(strs(&n, "persona").iter().all(|p| p == name));
        same_as_log(
            &n,
            &knowu_dir().join(format!("user_logs/{name}_noise_25pct.json")),
        );
        let p = ws.table(&format!("{name}.profile_entries"), None);
        assert!(p.height() >= 40, "{name}: {} entries", p.height());
        let dims = strs(&p, "dimension");
        for d in ["identity", "habits", "shopping", "travel"] {
            assert!(dims.iter().any(|x| x == d), "{name} lacks dimension {d}");
        }
    }
}

/// Every row keeps its log entry's time, location, text and category, in file order.
fn same_as_log(df: &DataFrame, log: &Path) {
    let raw: Vec<Value> =
        serde_json::from_slice(&std::fs::read(log).expect("log file")).expect("log json");
    assert_eq!(raw.len(), df.height());
    let (time, location) = (strs(df, "time"), strs(df, "location"));
    let (text, category) = (strs(df, "text"), strs(df, "category"));
    for (i, r) in raw.iter().enumerate() {
        let t = r["time"].as_str().expect("time");
        assert!(t.starts_with(&time[i]), "row {i}: {t} vs {}", time[i]);
        assert_eq!(
            r["location"].as_str(),
            Some(location[i].as_str()),
            "row {i}"
        );
        assert_eq!(r["action"].as_str(), Some(text[i].as_str()), "row {i}");
        assert_eq!(
            r["category"].as_str(),
            Some(category[i].as_str()),
            "row {i}"
        );
    }
}

const PROFILE: &str = "user_profile:
  identity: { full_name: Ada Quill, age: 41 }
  locations: { home: { city: Lisbon } }
  habits: [swims at dawn, reads before bed]
  preferences:
    music: { genre: fado, volume: low }
    diet: { avoid: [peanuts, shellfish] }
";

const LOG: &str = r#"[
  {"time": "2026-02-01T06:10:00+00:00", "location": "Lisbon, pool", "action": "Ada opened Fitbit and logged a swim", "label": "signal", "category": "habit_sport"},
  {"time": "2026-02-01T09:00:00+00:00", "location": "Lisbon, home", "action": "A promo notification arrived", "label": "noise", "category": "notification_spam"},
  {"time": "2026-02-02T21:30:00+00:00", "location": "Lisbon, home", "action": "Ada opened Spotify and played a fado playlist quietly", "label": "signal", "category": "preference_music"}
]"#;

fn fabricated(ws: &Workspace, log: &str, log_text: &str) {
    ws.write("ada/profile.yaml", PROFILE);
    ws.write(log, log_text);
    ws.write(
        "ada.yaml",
        &format!("pipeline: ada\nstages:\n  ada:\n    kind: import_persona\n    params: {{ profile: ada/profile.yaml, log: {log}, persona: ada }}\n"),
    );
}

#[test]
fn any_persona_file_of_the_schema_imports() {
    let ws = Workspace::new();
    fabricated(&ws, "ada/log.json", LOG);
    ws.run_ok("ada.yaml", &[]);
    let h = ws.table("ada.history_events", None);
    assert_eq!(strs(&h, "label"), ["signal", "noise", "signal"]);
    assert_eq!(strs(&h, "app"), ["Fitbit", "", "Spotify"]);
    assert_eq!(strs(&h, "time")[2], "2026-02-02T21:30:00");
    assert_eq!(strs(&h, "location")[0], "Lisbon, pool");
    assert_eq!(strs(&h, "category")[2], "preference_music");
    assert!(strs(&h, "persona").iter().all(|p| p == "ada"));
    let p = ws.table("ada.profile_entries", None);
    let (id, dim, key, value) = (
        strs(&p, "id"),
        strs(&p, "dimension"),
        strs(&p, "key"),
        strs(&p, "value"),
    );
    let row = id
        .iter()
        .position(|i| i == "preferences.music.genre")
        .expect("music genre entry");
    assert_eq!((dim[row].as_str(), key[row].as_str()), ("music", "genre"));
    assert_eq!(value[row], "fado");
    assert!(id.iter().any(|i| i == "locations.home.city"));
    assert!(dim.iter().any(|d| d == "habits"));
    assert!(value.iter().any(|v| v.contains("peanuts")));
}

#[test]
fn bad_persona_files_are_input_errors_naming_the_place() {
    let ws = Workspace::new();
    let bad = LOG.replace("2026-02-02T21:30:00+00:00", "last tuesday");
    fabricated(&ws, "ada/bad.json", &bad);
    let run = ws
        .cli(&["run", "ada.yaml", "--progress", "none"])
        .expect_code(2);
    assert!(
        run.stderr.contains("ada/bad.json")
            && run.stderr.contains("entry 3 (line 4)")
            && run.stderr.contains("last tuesday"),
        "{}",
        run.stderr
    );
    ws.write("ada/profile.yaml", "user_profile: [unclosed\n");
    let run = ws
        .cli(&["run", "ada.yaml", "--progress", "none"])
        .expect_code(2);
    assert!(run.stderr.contains("ada/profile.yaml:"), "{}", run.stderr);
    std::fs::remove_file(ws.path().join("ada/profile.yaml")).expect("rm");
    let run = ws
        .cli(&["run", "ada.yaml", "--progress", "none"])
        .expect_code(2);
    assert!(run.stderr.contains("ada/profile.yaml"), "{}", run.stderr);
}
