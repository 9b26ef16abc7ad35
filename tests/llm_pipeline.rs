//! `llm_complete` through the real CLI: a resource pool, engine caching, record/replay of model
//! calls, `--offline` replay and error rows, against a scripted server on 127.0.0.1.

use std::time::Duration;

use prefflow_stages::llm::mock::{Behavior, ScriptedServer};

use crate::common::*;

const PIPE: &str = r#"
pipeline: llm
params: { base_url: "http://127.0.0.1:9/v1" }
resources: { llm_main: 2 }
stages:
  questions:
    kind: read_table
    params: { path: data/questions.csv }
  answers:
    kind: llm_complete
    inputs: [questions]
    per_item: id
    concurrency: 8
    resources: [llm_main]
    params:
      llm: { base_url: "${params.base_url}", model: tiny, temperature: 0, max_retries: 1, backoff_ms: 1, timeout_s: 5 }
      system: "Answer briefly."
      prompt: "Q{{ id }}: {{ text }}"
"#;

fn questions(n: usize) -> String {
    let mut s = String::from("id,text\n");
    for i in 0..n {
        s.push_str(&format!("{i},what is {i} squared\n"));
    }
    s
}

/// `prefflow show runs --format json`, without the run ids.
fn show_runs(ws: &Workspace) -> Vec<serde_json::Value> {
    let out = ws.cli(&["show", "runs", "--format", "json"]).expect_code(0);
    let mut rows: Vec<serde_json::Value> = serde_json::from_str(&out.stdout).expect("json rows");
    for row in &mut rows {
        row.as_object_mut().expect("row").remove("run");
    }
    rows
}

#[test]
fn model_calls_are_pooled_recorded_and_replayed_offline() {
    let server = ScriptedServer::start(vec![], Behavior::Echo(Duration::from_millis(20)));
    let ws = Workspace::new();
    ws.write("data/questions.csv", &questions(6));
    ws.write("llm.yaml", PIPE);
    let url = format!("base_url={}", server.url);
    ws.run_ok("llm.yaml", &["--set", &url]);
    assert_eq!(server.requests().len(), 6);
    let df = ws.table("answers", None);
    let replies: Vec<String> = df
        .column("reply")
        .expect("reply")
        .str()
        .expect("str")
        .iter()
        .flatten()
        .map(str::to_string)
        .collect();
    assert!(
        replies.contains(&"echo: Q3: what is 3 squared".to_string()),
        "{replies:?}"
    );
    let first: serde_json::Value = serde_json::from_str(&server.requests()[0].body).expect("body");
    assert_eq!(first["messages"][0]["content"], "Answer briefly.");

    let usage = show_runs(&ws);
    let expected = |scope: &str, requests: u64, replayed: u64, tokens: (u64, u64)| {
        serde_json::json!({
            "pipeline": "llm", "scope": scope, "role": "completion", "model": "tiny",
            "requests": requests, "replayed": replayed,
            "prompt_tokens": tokens.0, "completion_tokens": tokens.1, "cached_prompt_tokens": 0,
            "cost": 0.0,
        })
    };
    assert_eq!(
        usage,
        [
            expected("spent", 6, 0, (60, 30)),
            expected("results", 6, 0, (60, 30))
        ],
        "six live calls of 10 + 5 tokens, recorded in the items' manifests and summed"
    );

    // An unchanged re-run is served by the engine cache: no requests.
    ws.run_ok("llm.yaml", &["--set", &url]);
    assert_eq!(server.requests().len(), 6);
    assert_eq!(
        show_runs(&ws),
        [expected("results", 6, 0, (60, 30))],
        "the cached run spent nothing; its results cost what they cost"
    );

    // Without the engine cache and without the server, --offline replays the recorded calls.
    drop(server);
    for dir in ["recipes", "items", "blobs"] {
        std::fs::remove_dir_all(ws.store().join(dir)).expect("clear engine cache");
    }
    ws.run_ok("llm.yaml", &["--set", &url, "--offline"]);
    let replayed = ws.table("answers", None);
    assert!(replayed
        .column("from_cache")
        .expect("from_cache")
        .bool()
        .expect("bool")
        .all());
    assert!(replayed
        .column("reply")
        .expect("reply")
        .equals(df.column("reply").expect("reply")));
    assert_eq!(
        show_runs(&ws),
        [
            expected("spent", 0, 6, (0, 0)),
            expected("results", 0, 6, (0, 0))
        ],
        "replayed calls are counted as such, at no cost"
    );

    // A new question cannot be answered offline: a located error row, exit 2.
    ws.write("data/questions.csv", &questions(7));
    let out = ws
        .cli(&[
            "run",
            "llm.yaml",
            "--progress",
            "none",
            "--set",
            &url,
            "--offline",
        ])
        .expect_code(2);
    assert!(
        out.stderr.contains("item `6`") && out.stderr.contains("without --offline"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_failing_endpoint_yields_error_rows_not_a_crash() {
    let server = ScriptedServer::start(
        vec![Behavior::ok(prefflow_stages::llm::mock::completion(
            "fine", 1, 1,
        ))],
        Behavior::status(503),
    );
    let ws = Workspace::new();
    ws.write("data/questions.csv", &questions(3));
    ws.write(
        "llm.yaml",
        &PIPE.replace("concurrency: 8", "concurrency: 1"),
    );
    let url = format!("base_url={}", server.url);
    ws.cli(&["run", "llm.yaml", "--progress", "none", "--set", &url])
        .expect_code(1);
    let rec = ws.last_run("llm");
    let errors = rec["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors
        .iter()
        .all(|e| e["kind"] == "transient"
            && e["message"].as_str().unwrap_or_default().contains("503")));
    assert_eq!(
        server.requests().len(),
        1 + 2 * 2,
        "one success, then two attempts per failing item"
    );
}

/// Provider faults of every cause on the way to 4 answers: 503 twice, 500, a 429, a body that
/// is not an answer, and a request that times out — 6 retries in all.
fn faulty_then_echo() -> ScriptedServer {
    ScriptedServer::start(
        vec![
            Behavior::status(503),
            Behavior::status(503),
            Behavior::status(500),
            Behavior::Reply {
                status: 429,
                headers: vec![("Retry-After".into(), "1".into())],
                body: "{}".into(),
            },
            Behavior::ok("not an answer"),
            Behavior::Hang(Duration::from_secs(3)),
        ],
        Behavior::Echo(Duration::from_millis(1)),
    )
}

/// The lines of `stderr` that say a model request is retried.
fn retry_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains("model request") && l.contains("retrying"))
        .collect()
}

/// The stage's one summary line of retried calls.
fn summary_lines<'a>(stderr: &'a str, stage: &str) -> Vec<&'a str> {
    stderr
        .lines()
        .filter(|l| l.contains(&format!("{stage}: ")) && l.contains("call(s) retried"))
        .collect()
}

/// Model-call retries are said at debug one per retry with its cause, and once per stage at
/// info with counts by cause; without debug only the summary shows.
#[test]
fn model_call_retries_are_logged_at_debug_and_summed_per_stage_at_info() {
    let pipe = PIPE.replace(
        "max_retries: 1, backoff_ms: 1, timeout_s: 5",
        "max_retries: 8, backoff_ms: 1, timeout_s: 1",
    );
    for debug in [true, false] {
        let server = faulty_then_echo();
        let ws = Workspace::new();
        ws.write("data/questions.csv", &questions(4));
        ws.write("llm.yaml", &pipe);
        let url = format!("base_url={}", server.url);
        let mut cmd = ws.command(&["run", "llm.yaml", "--progress", "none", "--set", &url]);
        if debug {
            cmd.env("PREFFLOW_LOG", "debug");
        } else {
            cmd.env_remove("PREFFLOW_LOG");
        }
        let run = Run::from(cmd.output().expect("spawn prefflow")).expect_code(0);
        assert_eq!(server.requests().len(), 4 + 6);
        let retries = retry_lines(&run.stderr);
        let summary = summary_lines(&run.stderr, "answers");
        assert_eq!(summary.len(), 1, "{}", run.stderr);
        let line = summary[0];
        assert!(line.contains("INFO"), "{line}");
        for said in [
            "6 call(s) retried",
            "HTTP 503 ×2",
            "HTTP 500 ×1",
            "rate-limited (HTTP 429) ×1",
            "unusable answer ×1",
            "timeout ×1",
        ] {
            assert!(line.contains(said), "{said} in {line}");
        }
        if debug {
            assert_eq!(retries.len(), 6, "{}", run.stderr);
            assert!(retries.iter().all(|l| l.contains("DEBUG")), "{retries:?}");
            assert_eq!(retries.iter().filter(|l| l.contains("HTTP 503")).count(), 2);
            assert!(
                retries.iter().any(|l| l.contains("timed out")),
                "{retries:?}"
            );
        } else {
            assert!(retries.is_empty(), "{retries:?}");
        }
    }
}
