//! `run_remote_episodes` through the real CLI against fake devices: in-process env servers on
//! 127.0.0.1 that follow docs/remote-device.md (no emulator exists on these machines).

use std::time::Duration;

use polars::prelude::*;
use prefflow_stages::episodes::remote::fake::{FakeConfig, FakeDevice, FakeTask};
use serde_json::{json, Value};

use crate::common::Workspace;

/// Task `i`: open an app and type a word; task 0 also asks the user first.
fn task(i: usize) -> (FakeTask, Value) {
    let name = format!("Task{i}@student");
    let app = format!("App{i}");
    let word = format!("word{i}");
    let mut expected = vec![
        json!({"action_type": "open_app", "app_name": app}),
        json!({"action_type": "click", "x": 200, "y": 130}),
        json!({"action_type": "input_text", "text": word}),
    ];
    let mut actions = vec![
        json!({"action": "open_app", "app": app}),
        json!({"action": "type", "element": 1, "text": word}),
        json!({"action": "finish"}),
    ];
    if i == 0 {
        expected.insert(0, json!({"action_type": "ask_user", "text": "Which word?"}));
        actions.insert(0, json!({"action": "ask_user", "text": "Which word?"}));
    }
    let fake = FakeTask {
        name: name.clone(),
        goal: format!("Type the usual word in {app}."),
        expected,
        reply: "word0, as always".into(),
    };
    let row = json!({"task_id": name, "actions": Value::Array(actions).to_string()});
    (fake, row)
}

fn tasks(n: usize) -> (Vec<FakeTask>, String) {
    let (fakes, rows): (Vec<_>, Vec<_>) = (0..n).map(task).unzip();
    let jsonl = rows
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    (fakes, jsonl)
}

fn device(tasks: &[FakeTask], tweak: impl FnOnce(&mut FakeConfig)) -> FakeDevice {
    let mut config = FakeConfig {
        tasks: tasks.to_vec(),
        step_delay: Duration::from_millis(20),
        ..FakeConfig::default()
    };
    tweak(&mut config);
    FakeDevice::start(config).expect("fake device")
}

fn pipeline(devices: &[&FakeDevice]) -> String {
    let urls: Vec<String> = devices.iter().map(|d| format!("\"{}\"", d.url())).collect();
    format!(
        r#"pipeline: remote
resources: {{ devices: {n} }}
stages:
  tasks:
    kind: read_table
    params: {{ path: tasks.jsonl }}
  play:
    kind: run_remote_episodes
    inputs: [tasks]
    per_item: task_id
    concurrency: 4
    resources: [devices]
    params:
      devices: [{urls}]
      agent: replay
      suite: {{ target_family: knowu_bench, user_log_mode: all, user_log_source: clean }}
      retry_backoff_ms: 10
      health_polls: 3
"#,
        n = devices.len(),
        urls = urls.join(", ")
    )
}

fn strs(df: &DataFrame, col: &str) -> Vec<String> {
    df.column(col)
        .and_then(|c| c.str().cloned())
        .map(|c| {
            c.iter()
                .map(|v| v.unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_else(|e| panic!("column {col}: {e}"))
}

#[test]
fn two_devices_play_four_tasks_never_two_at_once_and_score_them() {
    let (fakes, jsonl) = tasks(4);
    let a = device(&fakes, |_| {});
    let b = device(&fakes, |_| {});
    let ws = Workspace::new();
    ws.write("tasks.jsonl", &jsonl);
    ws.write("remote.yaml", &pipeline(&[&a, &b]));
    ws.run_ok("remote.yaml", &[]);

    let episodes = ws.table("play.episodes", None);
    assert_eq!(episodes.height(), 4);
    assert!(strs(&episodes, "status").iter().all(|s| s == "ok"));
    let scores = episodes.column("score").unwrap().f64().unwrap().clone();
    assert!(scores.iter().all(|s| s == Some(1.0)), "{episodes}");
    let mut served = strs(&episodes, "device");
    served.sort();
    served.dedup();
    assert_eq!(served.len(), 2, "every device served episodes: {served:?}");

    let suite: std::collections::BTreeMap<String, String> = [
        ("target_family", "knowu_bench"),
        ("user_log_mode", "all"),
        ("user_log_source", "clean"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let mut completed = 0;
    for d in [&a, &b] {
        let s = d.stats();
        assert!(!s.completed.is_empty(), "{} served nothing", d.url());
        assert_eq!(s.overlaps, 0, "{} ran two episodes at once", d.url());
        assert_eq!(s.max_in_flight, 1, "{} had concurrent requests", d.url());
        assert_eq!(s.suites, vec![suite.clone()], "one switch per device");
        completed += s.completed.len();
    }
    assert_eq!(completed, 4);

    // ask_user went to the device, whose user answered; the reply rides on the asking step.
    let asked: Vec<String> = [&a, &b].iter().flat_map(|d| d.stats().questions).collect();
    assert_eq!(asked, vec!["Which word?".to_string()]);
    let steps = ws.table("play.steps", None);
    let types = strs(&steps, "action_type");
    let replies = steps.column("user_reply").unwrap().str().unwrap().clone();
    let i = types
        .iter()
        .position(|t| t == "ask_user")
        .expect("an ask_user step");
    assert_eq!(replies.get(i), Some("word0, as always"));

    // Finished tasks are cached items: a second run touches no device.
    let inits = a.stats().inits.len() + b.stats().inits.len();
    ws.run_ok("remote.yaml", &[]);
    assert_eq!(a.stats().inits.len() + b.stats().inits.len(), inits);
}

#[test]
fn an_unhealthy_device_is_waited_for_and_the_episode_replayed() {
    let (fakes, jsonl) = tasks(2);
    let d = device(&fakes, |c| c.unhealthy_once = Some("Task1@student".into()));
    let ws = Workspace::new();
    ws.write("tasks.jsonl", &jsonl);
    ws.write("remote.yaml", &pipeline(&[&d]));
    ws.run_ok("remote.yaml", &[]);

    let episodes = ws.table("play.episodes", None);
    let ids = strs(&episodes, "task_id");
    let attempts = episodes
        .column("device_attempts")
        .unwrap()
        .u32()
        .unwrap()
        .clone();
    let scores = episodes.column("score").unwrap().f64().unwrap().clone();
    for (i, id) in ids.iter().enumerate() {
        let want = if id == "Task1@student" { 2 } else { 1 };
        assert_eq!(attempts.get(i), Some(want), "{id}");
        assert_eq!(scores.get(i), Some(1.0), "{id}");
    }
    let inits = d.stats().inits;
    assert_eq!(
        inits.iter().filter(|t| *t == "Task1@student").count(),
        2,
        "{inits:?}"
    );
}

#[test]
fn a_device_down_for_one_task_fails_that_item_while_its_sibling_completes() {
    let (fakes, jsonl) = tasks(2);
    let d = device(&fakes, |c| c.down_for = Some("Task0@student".into()));
    let ws = Workspace::new();
    ws.write("tasks.jsonl", &jsonl);
    ws.write("remote.yaml", &pipeline(&[&d]));
    let out = ws
        .cli(&["run", "remote.yaml", "--progress", "none"])
        .expect_code(1);
    assert!(out.stderr.contains("Task0@student"), "{}", out.stderr);

    let rec = ws.last_run("remote");
    let errors = rec["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["item"], "Task0@student");
    assert_eq!(errors[0]["kind"], "transient", "a device may recover");
    let message = errors[0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("POST /task/init answered 503"),
        "{message}"
    );
    assert!(message.contains(d.url()), "{message}");
    let stats = d.stats();
    assert_eq!(stats.completed, vec!["Task1@student".to_string()]);
    assert_eq!(
        stats.inits.iter().filter(|t| *t == "Task0@student").count(),
        3
    );
}

#[test]
fn an_unreachable_device_fails_the_item_with_the_transport_cause() {
    let (fakes, jsonl) = tasks(1);
    let gone = device(&fakes, |_| {});
    let ws = Workspace::new();
    ws.write("tasks.jsonl", &jsonl);
    ws.write("remote.yaml", &pipeline(&[&gone]));
    let url = gone.url().to_string();
    drop(gone); // nothing listens on its port any more
    ws.cli(&["run", "remote.yaml", "--progress", "none"])
        .expect_code(1);
    let rec = ws.last_run("remote");
    let message = rec["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("GET /health got no answer"), "{message}");
    assert!(message.contains(&url), "{message}");
}
