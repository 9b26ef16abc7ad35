//! `prefflow plan` estimates the model work of a run before it spends anything: per stage, role
//! and model the episodes, requests, prompt and completion tokens and money (ranges), what is
//! already recorded, and — for a model whose `max_context` a request would exceed — an error
//! naming the fix. The first-request tokens are the real rendered prompt: the scripted server on
//! 127.0.0.1 receives exactly the requests the estimate counted.

use prefflow_stages::llm::mock::{tool_call_completion, Behavior, ScriptedServer};
use prefflow_stages::llm::tokens::prompt_tokens;
use prefflow_stages::llm::ChatRequest;

use crate::common::*;

const URL_VAR: &str = "PREFFLOW_TEST_ESTIMATE_URL";
const JUDGE_VAR: &str = "PREFFLOW_TEST_ESTIMATE_JUDGE";

/// World, 6 validated tasks, two models (one with prices) played with the `llm` user, judged
/// by a judge model.
fn pipeline(max_context: Option<u64>) -> String {
    let head = world_and_candidates("estimate", "", &repo("datasets/tasks"), 6, 5);
    let window = max_context
        .map(|m| format!(", max_context: {m}"))
        .unwrap_or_default();
    format!(
        "{head}  validated:
    kind: validate_tasks
    inputs: [candidates.bundles, world.sources, world.history_events]
    per_item: task_id
  episodes_llm:
    kind: run_episodes
    inputs: [validated.bundles, world.sources, world.history_events]
    per_item: task_id
    when: {{ env: {URL_VAR} }}
    sweep: {{ model: [cheap, plain] }}
    params:
      agent: llm
      simulator: llm
      history: all
      max_steps: 10
      max_tools: 120
      prompts: '{prompts}'
      llm: {{ base_url_env: {URL_VAR}, model: unused, temperature: 0, max_retries: 0, timeout_s: 10, max_tokens: 256 }}
      models:
        - {{ name: cheap, model: provider/cheap-1, prices: {{ prompt_per_mtok: 0.15, completion_per_mtok: 0.6, cached_prompt_per_mtok: 0.075 }}{window} }}
        - {{ name: plain, model: provider/plain-2 }}
      model: cheap
  judged_llm:
    kind: judge
    inputs: [episodes_llm.episodes, episodes_llm.steps, validated.bundles, world.sources, world.history_events]
    per_item: episode_id
    params: {{ judge_model: {{ base_url_env: {JUDGE_VAR}, model: judge-1, prices: {{ prompt_per_mtok: 1.0, completion_per_mtok: 2.0 }} }}, prompts: '{prompts}' }}
",
        prompts = repo("datasets/prompts"),
    )
}

fn plan(ws: &Workspace, url: &str) -> Run {
    ws.command(&["plan", "p.yaml"])
        .env(URL_VAR, url)
        .env(JUDGE_VAR, url)
        .output()
        .map(run_of)
        .expect("spawn prefflow")
}

fn run_of(out: std::process::Output) -> Run {
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The estimate row of `stage`/`role`, split into its columns.
fn row<'a>(out: &'a str, stage: &str, role: &str) -> Vec<&'a str> {
    out.lines()
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect::<Vec<_>>()
        })
        .find(|cells| cells.first() == Some(&stage) && cells.get(1) == Some(&role))
        .unwrap_or_else(|| panic!("no {stage}/{role} row in\n{out}"))
}

/// `a–b` or `a` as numbers (k/M suffixes, commas, `$`).
fn range(cell: &str) -> (f64, f64) {
    let num = |s: &str| -> f64 {
        let s = s.trim().trim_start_matches('$').replace(',', "");
        let (n, k) = match s.chars().last() {
            Some('k') => (&s[..s.len() - 1], 1e3),
            Some('M') => (&s[..s.len() - 1], 1e6),
            Some('G') => (&s[..s.len() - 1], 1e9),
            _ => (&s[..], 1.0),
        };
        n.parse::<f64>()
            .unwrap_or_else(|_| panic!("not a number: {s}"))
            * k
    };
    match cell.split_once('–') {
        Some((a, b)) => (num(a), num(b)),
        None => (num(cell), num(cell)),
    }
}

#[test]
fn plan_estimates_each_model_and_role_before_anything_is_sent() {
    let server = ScriptedServer::start(
        vec![],
        Behavior::ok(tool_call_completion(None, &[("finish", "{}")], 30, 2)),
    );
    let ws = Workspace::new();
    ws.write("p.yaml", &pipeline(None));
    ws.run_ok("p.yaml", &["--only", "validated"]);
    let tasks = ws.table("validated.tasks", None).height();

    let out = plan(&ws, &server.url).expect_code(0);
    assert!(server.requests().is_empty(), "plan sends nothing");
    let text = &out.stdout;
    let cheap = row(text, "episodes_llm[model=cheap]", "agent");
    assert_eq!(cheap[2], "cheap (provider/cheap-1)", "{text}");
    assert_eq!(cheap[3], format!("{tasks} episodes"));
    let (low, high) = range(cheap[4]);
    assert!(
        low >= tasks as f64 && high == (tasks * 10) as f64,
        "{cheap:?}"
    );
    let (p_low, p_high) = range(cheap[5]);
    assert!(
        p_low > 20_000.0 * tasks as f64 && p_high > p_low,
        "history: all is large: {cheap:?}"
    );
    let (c_low, c_high) = range(cheap[7]);
    // At the entry's prices; at best the stable prefix of every request but the first is
    // served from the provider's cache at half the price, at worst none is.
    let priced = p_low * 0.15e-6;
    assert!(
        c_low >= priced * 0.5 && c_low < priced * 0.95 && c_high >= p_high * 0.15e-6 * 0.99,
        "money at the entry's prices: {cheap:?}"
    );
    assert_eq!(cheap[8], format!("0 of {tasks}"), "nothing recorded yet");
    let plain = row(text, "episodes_llm[model=plain]", "agent");
    assert_eq!(plain[7], "no prices", "{plain:?}");
    row(text, "episodes_llm[model=cheap]", "user");
    let judge = row(text, "judged_llm[model=cheap]", "judge");
    assert_eq!(judge[2], "judge-1");
    assert!(range(judge[4]).1 > 0.0, "{judge:?}");
    assert!(text.contains("chars/4"), "the method is said: {text}");

    // The run sends what the estimate counted: each episode's first request is the largest
    // first request the estimate reports (the same prompt for every task under `history: all`,
    // up to the task message).
    let noted_max: u64 = text
        .lines()
        .find_map(|l| l.split("prompt tokens on average, ").nth(1))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no first-request note in {text}"));
    ws.command(&["run", "p.yaml", "--progress", "none"])
        .env(URL_VAR, &server.url)
        .env(JUDGE_VAR, &server.url)
        .output()
        .map(run_of)
        .expect("run")
        .expect_code(0);
    let sent: Vec<u64> = server
        .requests()
        .iter()
        .filter_map(|r| serde_json::from_str::<ChatRequest>(&r.body).ok())
        .filter(|r| r.messages.len() == 2 && r.messages[0].role == "system" && !r.tools.is_empty())
        .map(|r| prompt_tokens(&r))
        .collect();
    assert_eq!(
        sent.len(),
        2 * tasks,
        "one first request per episode: {sent:?}"
    );
    assert_eq!(sent.iter().max().copied(), Some(noted_max), "{sent:?}");

    // With the engine's results forgotten but the requests recorded, every episode is free.
    forget_stage(&ws, "episodes_llm");
    forget_stage(&ws, "judged_llm");
    let out = plan(&ws, &server.url).expect_code(0);
    let cheap = row(&out.stdout, "episodes_llm[model=cheap]", "agent");
    assert_eq!(cheap[8], format!("{tasks} of {tasks}"), "{}", out.stdout);
    assert_eq!(
        cheap[7], "$0.00",
        "recorded episodes cost nothing: {cheap:?}"
    );
    let (p_again, _) = range(cheap[5]);
    assert_eq!(p_again, p_low, "the tokens are still shown");
}

#[test]
fn a_request_over_the_context_window_is_a_plan_error_naming_the_fix() {
    let ws = Workspace::new();
    ws.write("p.yaml", &pipeline(Some(30_000)));
    ws.run_ok("p.yaml", &["--only", "validated"]);
    let out = plan(&ws, "http://127.0.0.1:9/v1");
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    let err = &out.stderr;
    assert!(err.contains("max_context 30000"), "{err}");
    assert!(err.contains("history: top_k:"), "{err}");
    assert!(err.contains("max_tools: "), "{err}");
    assert!(err.contains("episodes_llm"), "{err}");
}

/// A server whose context is too small answers HTTP 400: the run stops with exit 2 (every task
/// would fail alike) and says how large the request was and what shrinks it.
#[test]
fn a_context_too_small_stops_the_run_with_the_measured_size_and_the_fix() {
    let server = ScriptedServer::start(
        vec![],
        Behavior::Reply {
            status: 400,
            headers: vec![],
            body:
                r#"{"error": "the request exceeds the available context size, try increasing it"}"#
                    .into(),
        },
    );
    let ws = Workspace::new();
    ws.write("p.yaml", &pipeline(None));
    let out = ws
        .command(&[
            "run",
            "p.yaml",
            "--progress",
            "none",
            "--only",
            "episodes_llm",
        ])
        .env(URL_VAR, &server.url)
        .env_remove(JUDGE_VAR)
        .output()
        .map(run_of)
        .expect("run");
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    for needle in [
        "prompt tokens (chars/4)",
        "exceeds the available context size",
        "history: top_k:N",
        "max_tools: N",
    ] {
        assert!(out.stderr.contains(needle), "{needle}: {}", out.stderr);
    }
}
