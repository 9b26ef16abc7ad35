//! The user simulator as its own model (`user_model`, issue 24 item 5), through the real CLI
//! against two scripted OpenAI-compatible servers on 127.0.0.1 — the agent's and the user's:
//!
//! - without the user endpoint variable the scripted user answers (offline, nothing sent to
//!   the user server), and the `user` column says `scripted`;
//! - with it, every episode's questions — the built-in `ask_all` agent's and the `llm` agent's —
//!   go to the user endpoint and never to the agent's; they are metered under role `user` and
//!   priced at the user model's prices; the `user` column names the user model;
//! - each simulator prompt carries exactly the profile entries relevant to its task
//!   (`episodes::simulators::relevance`), far fewer than the whole profile, and the task's
//!   ask-only values;
//! - `--offline`, with the user server gone, replays the same tables.

use std::collections::BTreeSet;
use std::process::Output;

use polars::prelude::*;
use prefflow_stages::episodes::simulators::relevance::relevant_entries;
use prefflow_stages::llm::mock::{completion, tool_call_completion, Behavior, ScriptedServer};
use prefflow_stages::tasks::frames::bundles_from_table;
use prefflow_stages::tasks::user::spoken;
use prefflow_stages::tasks::Source;
use prefflow_stages::world::from_tables::world_from_tables;
use serde_json::Value;

use crate::common::*;

const AGENT_VAR: &str = "PREFFLOW_TEST_USER_MODEL_AGENT_URL";
const USER_VAR: &str = "PREFFLOW_TEST_USER_MODEL_USER_URL";
/// The line the simulator prompt opens its profile part with (datasets/prompts/user_system.j2).
const PROFILE_HEAD: &str = "What you know about yourself that bears on this request:";

fn pipeline() -> String {
    let head = world_and_candidates("user_model", "", &repo("datasets/tasks"), 4, 3);
    format!(
        "{head}  play:
    kind: run_episodes
    inputs: [candidates.bundles, world.sources, world.history_events]
    per_item: task_id
    concurrency: 1
    sweep: {{ agent: [ask_all, llm] }}
    params:
      agent: ask_all
      history: none
      max_steps: 3
      prompts: '{}'
      llm: {{ base_url_env: {AGENT_VAR}, model: agent-1, temperature: 0, max_retries: 1, backoff_ms: 1, timeout_s: 10 }}
      user_model: {{ base_url_env: {USER_VAR}, model: user-1, temperature: 0, max_retries: 1, backoff_ms: 1, timeout_s: 10, prices: {{ prompt_per_mtok: 2.0, completion_per_mtok: 8.0 }} }}
",
        repo("datasets/prompts")
    )
}

fn run(ws: &Workspace, agent: &str, user: Option<&str>, extra: &[&str]) -> Output {
    let mut args = vec!["run", "p.yaml", "--progress", "none"];
    args.extend_from_slice(extra);
    let mut cmd = ws.command(&args);
    cmd.env(AGENT_VAR, agent);
    match user {
        Some(u) => cmd.env(USER_VAR, u),
        None => cmd.env_remove(USER_VAR),
    };
    let out = cmd.output().expect("spawn prefflow");
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn strs(df: &DataFrame, col: &str) -> Vec<String> {
    column_texts(df, col)
        .into_iter()
        .map(|s| s.unwrap_or_default())
        .collect()
}

/// Both variants' tables, whole.
fn tables(ws: &Workspace) -> Vec<DataFrame> {
    let mut out = Vec::new();
    for variant in ["agent=ask_all", "agent=llm"] {
        for table in ["episodes", "steps"] {
            out.push(ws.table(&format!("play.{table}"), Some(variant)));
        }
    }
    out
}

/// (requests, replayed) of `role` in the last run (`prefflow show runs`).
fn spent(ws: &Workspace, role: &str) -> (u64, u64) {
    let out = ws.cli(&["show", "runs", "--format", "json"]).expect_code(0);
    let rows: Vec<Value> = serde_json::from_str(&out.stdout).expect("json rows");
    rows.iter()
        .filter(|r| r["scope"] == "spent" && r["role"] == role)
        .map(|r| {
            (
                r["requests"].as_u64().unwrap_or(0),
                r["replayed"].as_u64().unwrap_or(0),
            )
        })
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

fn system_prompt(body: &str) -> String {
    let v: Value = serde_json::from_str(body).expect("request JSON");
    v["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The profile keys a simulator prompt lists.
fn profile_keys(system: &str) -> BTreeSet<String> {
    system
        .split(PROFILE_HEAD)
        .nth(1)
        .unwrap_or_else(|| panic!("no profile part in\n{system}"))
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("- "))
        .filter_map(|l| l[2..].split_once(": ").map(|(k, _)| k.to_string()))
        .collect()
}

#[test]
fn a_user_model_answers_every_agents_questions_from_the_relevant_profile_only() {
    let question = "How many people is this for, and which day?";
    let agent = ScriptedServer::start(
        vec![],
        Behavior::ok(tool_call_completion(
            None,
            &[("ask_user", &format!("{{\"text\": \"{question}\"}}"))],
            40,
            9,
        )),
    );
    let user = ScriptedServer::start(vec![], Behavior::ok(completion("I don't know.", 30, 4)));
    let ws = Workspace::new();
    ws.write("p.yaml", &pipeline());

    // No user endpoint: the scripted user answers, the user server hears nothing.
    run(&ws, &agent.url, None, &[]);
    assert!(user.requests().is_empty());
    for variant in ["agent=ask_all", "agent=llm"] {
        let episodes = ws.table("play.episodes", Some(variant));
        assert!(
            strs(&episodes, "user").iter().all(|u| u == "scripted"),
            "{variant}"
        );
    }
    let agent_before = agent.requests().len();
    assert!(agent_before > 0);

    // With it, every question goes to the user model, built-in agents' included.
    run(&ws, &agent.url, Some(&user.url), &[]);
    let asked = user.requests();
    let mut asks = 0u64;
    for variant in ["agent=ask_all", "agent=llm"] {
        let episodes = ws.table("play.episodes", Some(variant));
        assert!(
            strs(&episodes, "user").iter().all(|u| u == "llm:user-1"),
            "{variant}: {episodes}"
        );
        let n: u64 = strs(&episodes, "ask_user_calls")
            .iter()
            .map(|n| n.parse::<u64>().expect("count"))
            .sum();
        assert!(n > 0, "{variant} asked something");
        asks += n;
        let cost: f64 = episodes
            .column("cost_user")
            .expect("cost_user")
            .f64()
            .expect("f64")
            .sum()
            .unwrap_or(0.0);
        let tokens: f64 = strs(&episodes, "prompt_tokens_user")
            .iter()
            .map(|t| t.parse::<f64>().expect("tokens"))
            .sum();
        assert!(
            tokens > 0.0 && (cost - tokens * 2e-6 - n as f64 * 4.0 * 8e-6).abs() < 1e-9,
            "{variant}: the user's tokens at the user model's prices ({tokens}, {cost})"
        );
    }
    assert_eq!(asked.len() as u64, asks, "one user request per question");
    assert_eq!(spent(&ws, "user"), (asks, 0), "metered under role `user`");
    let to_agent = &agent.requests()[agent_before..];
    assert!(
        to_agent
            .iter()
            .all(|r| !system_prompt(&r.body).contains(PROFILE_HEAD)),
        "no simulator request reached the agent's endpoint"
    );

    // Each simulator prompt: exactly the task's relevant entries and its ask-only values.
    let world = world_from_tables(
        &ws.table("world.sources", None),
        &ws.table("world.history_events", None),
    )
    .expect("world");
    let bundles = bundles_from_table(&ws.table("candidates.bundles", None)).expect("bundles");
    let all = world.persona.profile.len();
    for request in &asked {
        let system = system_prompt(&request.body);
        let bundle = bundles
            .iter()
            .find(|b| system.contains(&format!("\"{}\"", b.task.instruction)))
            .unwrap_or_else(|| panic!("no task for\n{system}"));
        let expected: BTreeSet<String> = relevant_entries(&world, bundle)
            .iter()
            .map(|e| e.key.clone())
            .collect();
        let keys = profile_keys(&system);
        assert_eq!(keys, expected, "{}", bundle.task.task_id);
        assert!(keys.len() * 4 < all, "{} of {all} entries", keys.len());
        for slot in bundle.slots.iter().filter(|s| s.source == Source::AskOnly) {
            assert!(
                system
                    .lines()
                    .any(|l| l.ends_with(&format!(": {}", spoken(&slot.value)))),
                "{}: ask-only {} missing in\n{system}",
                bundle.task.task_id,
                slot.slot_id
            );
        }
    }

    // Offline, the user server gone: the same tables from the record.
    let first = tables(&ws);
    let url = user.url.clone();
    drop(user);
    forget_stage(&ws, "play");
    run(&ws, &agent.url, Some(&url), &["--offline"]);
    assert_executed(&ws, "user_model", "play");
    assert_eq!(tables(&ws), first);
    assert_eq!(spent(&ws, "user"), (0, asks), "every user call replayed");
}
