//! `run_episodes` with the `llm` agent and the `llm` user simulator through the real CLI,
//! against a scripted OpenAI-compatible server on 127.0.0.1: disabled (`when:`) until the
//! endpoint variable is set (and not stuck disabled after), both action spaces, record/replay (an engine
//! re-run and a model-cache re-run send nothing), `--offline` replay giving the same tables, an
//! unrecorded episode failing offline with exit 2, and provider faults failing their item (an
//! errors-table row, played again by the next run) while useless answers stay in the episode.

use std::process::Output;
use std::time::Duration;

use polars::prelude::*;
use prefflow_stages::llm::mock::{completion, tool_call_completion, Behavior, ScriptedServer};

use crate::common::*;

/// The variable the test pipelines read their endpoint from.
const URL_VAR: &str = "PREFFLOW_TEST_EPISODES_URL";

/// The world, `count` candidate tasks, and `play`: the llm agent on each task.
fn pipeline(count: usize, play: &str) -> String {
    let head = world_and_candidates(
        "llm_episodes",
        "resources: { llm_main: 1 }\n",
        &repo("datasets/tasks"),
        count,
        3,
    );
    format!(
        "{head}  play:
    kind: run_episodes
    inputs: [candidates.bundles, world.sources, world.history_events]
    per_item: task_id
    concurrency: 1
    resources: [llm_main]
{play}"
    )
}

fn llm_block(timeout_s: f64) -> String {
    format!("{{ base_url_env: {URL_VAR}, model: tiny, temperature: 0, max_retries: 3, backoff_ms: 1, timeout_s: {timeout_s} }}")
}

/// `prefflow run` with the endpoint variable set to `url` (or unset).
fn run(ws: &Workspace, url: Option<&str>, extra: &[&str]) -> Output {
    let mut args = vec!["run", "p.yaml", "--progress", "none"];
    args.extend_from_slice(extra);
    let mut cmd = ws.command(&args);
    match url {
        Some(u) => cmd.env(URL_VAR, u),
        None => cmd.env_remove(URL_VAR),
    };
    cmd.output().expect("spawn prefflow")
}

fn ok(out: Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    stderr
}

fn strs(df: &DataFrame, col: &str) -> Vec<String> {
    df.column(col)
        .expect("column")
        .str()
        .expect("strings")
        .iter()
        .map(|s| s.unwrap_or_default().to_string())
        .collect()
}

fn u64s(df: &DataFrame, col: &str) -> Vec<u64> {
    df.column(col)
        .expect("column")
        .cast(&DataType::UInt64)
        .expect("cast")
        .u64()
        .expect("u64")
        .iter()
        .map(|v| v.unwrap_or_default())
        .collect()
}

/// Every table of `play` for both variants, whole: episode tables hold no wall-clock time, so a
/// replay reproduces every byte.
fn tables(ws: &Workspace) -> Vec<DataFrame> {
    let mut out = Vec::new();
    for variant in ["space=gui", "space=tools"] {
        for table in ["episodes", "steps", "diffs"] {
            out.push(ws.table(&format!("play.{table}"), Some(variant)));
        }
    }
    out
}

/// What the last run spent, per role: (role, requests, replayed, prompt tokens), from
/// `prefflow show runs`.
fn spent(ws: &Workspace) -> Vec<(String, u64, u64, u64)> {
    let out = ws.cli(&["show", "runs", "--format", "json"]).expect_code(0);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&out.stdout).expect("json rows");
    let n = |r: &serde_json::Value, k: &str| r[k].as_u64().unwrap_or_default();
    let mut spent: Vec<(String, u64, u64, u64)> = rows
        .iter()
        .filter(|r| r["scope"] == "spent")
        .map(|r| {
            let role = r["role"].as_str().unwrap_or_default().to_string();
            (
                role,
                n(r, "requests"),
                n(r, "replayed"),
                n(r, "prompt_tokens"),
            )
        })
        .collect();
    spent.sort();
    spent
}

/// Forgets `play`'s cached results so the next run plays every episode again.
fn clear_engine_cache(ws: &Workspace) {
    forget_stage(ws, "play");
}

/// Both spaces, with the llm simulator: the agent asks every turn (a reply carrying the
/// question both as JSON content and as a tool call), so every episode uses both models.
const PLAY: &str = "    when: { env: PREFFLOW_TEST_EPISODES_URL }
    sweep: { space: [gui, tools] }
    params:
      agent: llm
      simulator: llm
      history: \"top_k:5\"
      max_steps: 3
      prompts: 'PROMPTS'
      llm: LLM
";

#[test]
fn llm_episodes_are_skipped_recorded_replayed_and_replayed_offline() {
    let ask = tool_call_completion(
        Some("{\"action\": \"ask_user\", \"text\": \"Which one do you prefer?\"}"),
        &[("ask_user", "{\"text\": \"Which one do you prefer?\"}")],
        40,
        9,
    );
    let server = ScriptedServer::start(vec![], Behavior::ok(ask));
    let ws = Workspace::new();
    let play = PLAY
        .replace("PROMPTS", &repo("datasets/prompts"))
        .replace("LLM", &llm_block(5.0));
    ws.write("p.yaml", &pipeline(3, &play));

    // Without the endpoint variable: disabled (no tables, no error), and the summary says why.
    let out = run(&ws, None, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    ok(out);
    assert!(
        stdout.contains("disabled") && stdout.contains(&format!("{URL_VAR} is not set")),
        "{stdout}"
    );
    let record = ws.last_run("llm_episodes");
    assert_eq!(statuses(&record)["play[space=gui]"], "disabled");
    assert!(server.requests().is_empty());

    // With it, the stage runs: 3 tasks × 2 spaces × (3 agent + 3 user) calls, each counted in
    // the run's usage by role (what `prefflow show runs` sums).
    ok(run(&ws, Some(&server.url), &[]));
    assert_eq!(server.requests().len(), 36);
    assert_eq!(
        spent(&ws),
        [("agent".into(), 18, 0, 720), ("user".into(), 18, 0, 720)],
        "role, requests, replayed, prompt tokens"
    );
    let first = tables(&ws);
    for variant in ["space=gui", "space=tools"] {
        let episodes = ws.table("play.episodes", Some(variant));
        assert_eq!(episodes.height(), 3, "{variant}");
        assert!(strs(&episodes, "status").iter().all(|s| s == "max_steps"));
        assert!(strs(&episodes, "agent").iter().all(|s| s == "llm:tiny"));
        assert_eq!(u64s(&episodes, "ask_user_calls"), [3, 3, 3]);
        let steps = ws.table("play.steps", Some(variant));
        assert!(strs(&steps, "action_type").iter().all(|a| a == "ask_user"));
        assert!(strs(&steps, "user_reply").iter().all(|r| !r.is_empty()));
        for col in episodes.get_column_names() {
            // Cached prompt tokens stay 0: the scripted server reports none.
            if col.contains("tokens") && !col.ends_with("judge") && !col.starts_with("cached") {
                assert!(u64s(&episodes, col).iter().all(|t| *t > 0), "{col}");
            }
        }
    }

    // An unchanged re-run is an engine cache hit; without the engine cache the model calls
    // replay from the record cache. Either way the server hears nothing.
    ok(run(&ws, Some(&server.url), &[]));
    clear_engine_cache(&ws);
    ok(run(&ws, Some(&server.url), &[]));
    assert_executed(&ws, "llm_episodes", "play");
    assert_eq!(server.requests().len(), 36);
    assert_eq!(tables(&ws), first);

    // Offline, with the server gone: the same tables, every call replayed and none sent.
    let url = server.url.clone();
    drop(server);
    clear_engine_cache(&ws);
    ok(run(&ws, Some(&url), &["--offline"]));
    assert_executed(&ws, "llm_episodes", "play");
    assert_eq!(tables(&ws), first);
    assert_eq!(
        spent(&ws),
        [("agent".into(), 0, 18, 0), ("user".into(), 0, 18, 0)]
    );

    // A task never recorded cannot be played offline: exit 2, naming the episode.
    ws.write("p.yaml", &pipeline(4, &play));
    let out = run(&ws, Some(&url), &["--offline"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot be replayed offline") && stderr.contains("without --offline"),
        "{stderr}"
    );
}

#[test]
fn provider_faults_fail_their_item_while_useless_answers_stay_in_the_episode() {
    let retry_after = Behavior::Reply {
        status: 429,
        headers: vec![("Retry-After".into(), "0".into())],
        body: "{\"error\": \"slow down\"}".into(),
    };
    let finish = completion("{\"action\": \"finish\"}", 30, 4);
    let script = vec![
        // Episode 1: rate limited (waited out, not a fault), then server error, a hang past
        // the timeout, server error twice more: four faults with `max_retries: 3`, so the
        // client gives up after five attempts and the item fails.
        retry_after,
        Behavior::status(500),
        Behavior::Hang(Duration::from_secs(3)),
        Behavior::status(500),
        Behavior::status(500),
        // Episode 2: a truncated body is a provider fault too: retried, then answered.
        Behavior::ok(&finish[..finish.len() / 2]),
        Behavior::ok(finish.clone()),
        // Episode 3: a well-formed but useless answer is the model's error: an `unknown` step.
        Behavior::ok(completion("{\"action\": \"fly\"}", 30, 4)),
    ];
    let server = ScriptedServer::start(script, Behavior::ok(finish));
    let ws = Workspace::new();
    let play = format!(
        "    params:
      agent: llm
      space: gui
      history: none
      max_steps: 2
      prompts: '{}'
      llm: {}
",
        repo("datasets/prompts"),
        llm_block(1.0)
    );
    ws.write("p.yaml", &pipeline(3, &play));
    let out = run(&ws, Some(&server.url), &[]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(server.requests().len(), 9);
    let errors = ws.last_run("llm_episodes")["errors"].clone();
    let errors = errors.as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{errors:?}");
    let message = errors[0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("gave up after 5 attempts") && message.contains("HTTP 500"),
        "{message}"
    );
    assert_eq!(errors[0]["kind"], "transient");

    // The next run plays only the failed item; no episode records a provider fault.
    ok(run(&ws, Some(&server.url), &[]));
    assert_eq!(server.requests().len(), 10);
    let episodes = ws.table("play.episodes", None);
    assert_eq!(strs(&episodes, "status"), ["ok", "ok", "ok"]);
    assert!(episodes
        .column("error")
        .expect("error")
        .str()
        .expect("str")
        .iter()
        .all(|e| e.is_none()));
    let steps = ws.table("play.steps", None);
    let unknown: Vec<String> = strs(&steps, "action_type")
        .into_iter()
        .zip(strs(&steps, "observation"))
        .filter(|(a, _)| a == "unknown")
        .map(|(_, o)| o)
        .collect();
    assert_eq!(unknown.len(), 1, "{steps}");
    assert!(unknown[0].contains("could not parse"), "{unknown:?}");
}
