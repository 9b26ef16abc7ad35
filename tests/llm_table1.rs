//! A model's Table 1 column through the shipped pipeline (`pipelines/iprefbench.yaml`) and the
//! real CLI, against a scripted OpenAI-compatible server on 127.0.0.1 that plays each task's
//! reference solution through the `llm` agent's tool calls: its column must equal the oracle's,
//! metric by metric, on the whole released set (130 tasks). A wrong tool name, argument
//! encoding, tool set, observation or judging path of model episodes shows up as a difference.
//!
//! The server knows the tasks the way a test can: it reads the released bundles from the store
//! after a first run, and finds the task of each request from its sampling seed, checked against
//! the instruction in its first user message; the number of assistant turns so far says which
//! reference step to play next (one call per turn, then `finish`, as the oracle does). The user simulator is the scripted one
//! the oracle plays with (`--set episodes_llm.simulator=scripted`).
//!
//! The whole released set is cheap enough in a debug build: 395 requests, about 35 s on 2 cores
//! (the test prints its time), so no subset is needed.

use std::collections::HashMap;
use std::process::Output;

use polars::prelude::*;
use prefflow_stages::episodes::seed::episode_seed;
use prefflow_stages::llm::mock::{tool_call_completion, Behavior, ScriptedServer};
use prefflow_stages::tasks::eval::resolve_json;
use prefflow_stages::tasks::frames::bundles_from_table;
use prefflow_stages::tasks::TaskBundle;
use prefflow_stages::world::phone::Action;
use serde_json::{json, Value};

use crate::common::*;

/// The shipped pipeline's endpoint variable.
const URL_VAR: &str = "PREFFLOW_LLM_BASE_URL";
const ORACLE: &str = "agent=oracle,history=all";
const LLM: &str = "agent=llm,model=default,history=all";
/// The shipped pipeline's root seed (`params.seed`).
const ROOT_SEED: u64 = 7;

/// `prefflow run iprefbench.yaml` with the endpoint variable set to `url` (or unset).
fn run(ws: &Workspace, url: Option<&str>, extra: &[&str]) -> Output {
    let mut args = vec!["run", "iprefbench.yaml", "--progress", "none"];
    args.extend_from_slice(extra);
    let mut cmd = ws.command(&args);
    match url {
        Some(u) => cmd.env(URL_VAR, u),
        None => cmd.env_remove(URL_VAR),
    };
    let out = cmd.output().expect("spawn prefflow");
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// One tool call as a model sends it: function name and arguments (JSON text).
type Call = (String, String);

/// The reference solution of `bundle` as the tool calls a model would make, ending in `finish`.
fn reference_calls(bundle: &TaskBundle) -> Vec<Call> {
    let mut calls: Vec<Call> = bundle
        .task
        .reference_solution
        .iter()
        .map(|raw| {
            let resolved = resolve_json(raw, &bundle.slots).expect("reference resolves");
            let action: Action = serde_json::from_value(resolved).expect("a phone action");
            match action {
                Action::Call { tool, args } => (tool.replace('.', "__"), Value::Object(args)),
                Action::AskUser { text } => ("ask_user".into(), json!({ "text": text })),
                Action::Answer { text } => ("answer".into(), json!({ "text": text })),
                Action::Finish => ("finish".into(), json!({})),
                gui => panic!(
                    "task `{}`: a tools-space reference plays {gui:?}",
                    bundle.task.task_id
                ),
            }
        })
        .map(|(name, args)| (name, args.to_string()))
        .collect();
    if calls.last().map(|c| c.0.as_str()) != Some("finish") {
        calls.push(("finish".into(), "{}".into()));
    }
    calls
}

/// The instruction a request's first user message carries (`Request: …`, datasets/prompts).
fn instruction_of(body: &str) -> Option<String> {
    let v: Value = serde_json::from_str(body).ok()?;
    let first_user = v["messages"]
        .as_array()?
        .iter()
        .find(|m| m["role"] == "user")?;
    let text = first_user["content"].as_str()?;
    text.lines()
        .find_map(|l| l.strip_prefix("Request: "))
        .map(str::to_string)
}

/// Assistant turns so far in a request: the index of the reference step to play now.
fn turns(body: &str) -> usize {
    let v: Value = serde_json::from_str(body).unwrap_or_default();
    v["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "assistant").count())
        .unwrap_or(0)
}

/// A server playing each task's reference, one call per turn. Released tasks can share an
/// instruction (a perturbation of the same request), so the server finds the task by the
/// request's sampling `seed` — the runner sends each episode's own, hash(root seed, task,
/// variant, epoch) (`episodes::seed`) — and checks the instruction against it. A request it
/// cannot place gets a call to a function no task offers, so the test fails visibly.
fn reference_server(bundles: &[TaskBundle]) -> ScriptedServer {
    let by_seed: HashMap<u64, (String, Vec<Call>)> = bundles
        .iter()
        .map(|b| {
            let seed = episode_seed(ROOT_SEED, &b.task.task_id, LLM, 0) & 0x7fff_ffff;
            (seed, (b.task.instruction.clone(), reference_calls(b)))
        })
        .collect();
    assert_eq!(by_seed.len(), bundles.len(), "episode seeds are distinct");
    ScriptedServer::start(
        vec![],
        Behavior::respond(move |body| {
            let request: Value = serde_json::from_str(body).unwrap_or_default();
            let task = request["seed"]
                .as_u64()
                .and_then(|s| by_seed.get(&s))
                .filter(|(instruction, _)| instruction_of(body).as_ref() == Some(instruction));
            let (name, args) = match task {
                Some((_, calls)) => calls
                    .get(turns(body))
                    .cloned()
                    .unwrap_or_else(|| ("finish".into(), "{}".into())),
                None => ("no_such_task".into(), "{}".into()),
            };
            tool_call_completion(None, &[(name.as_str(), args.as_str())], 100, 10)
        }),
    )
}

fn strs(df: &DataFrame, col: &str) -> Vec<String> {
    df.column(col)
        .expect("column")
        .cast(&DataType::String)
        .expect("as text")
        .str()
        .expect("strings")
        .iter()
        .map(|s| s.unwrap_or("null").to_string())
        .collect()
}

/// Table 1's rows of `variant`, by metric: value, n and templates as text. The intervals are
/// left out: each variant's bootstrap draws its own stream (seeded by the statistic's key,
/// which names the variant), so equal per-task values give equal estimates but not equal CIs.
fn column_of(table1: &DataFrame, variant: &str) -> Vec<(String, String, String, String)> {
    let variants = strs(table1, "variant");
    let [metric, value, n, templates] =
        ["metric", "value", "n", "templates"].map(|c| strs(table1, c));
    let mut rows: Vec<(String, String, String, String)> = (0..table1.height())
        .filter(|&i| variants[i] == variant)
        .map(|i| {
            (
                metric[i].clone(),
                value[i].clone(),
                n[i].clone(),
                templates[i].clone(),
            )
        })
        .collect();
    rows.sort();
    rows
}

/// Per task: success and score of each episode in a judge's `scores`.
fn per_task(scores: &DataFrame) -> Vec<(String, String, String)> {
    let [task, success, score] = ["task_id", "success", "score"].map(|c| strs(scores, c));
    let mut rows: Vec<(String, String, String)> = (0..scores.height())
        .map(|i| (task[i].clone(), success[i].clone(), score[i].clone()))
        .collect();
    rows.sort();
    rows
}

#[test]
fn a_model_playing_the_reference_solutions_gets_the_oracles_table1_column() {
    let started = std::time::Instant::now();
    let ws = Workspace::new();
    link_repo(&ws, "datasets");
    ws.write(
        "iprefbench.yaml",
        &shipped_iprefbench("{ agent: [oracle, defaults], history: [all] }"),
    );
    // The released set, built offline (the model's stages are disabled without the variable).
    run(&ws, None, &["--only", "validated"]);
    let bundles = bundles_from_table(&ws.table("validated.bundles", None)).expect("bundles");
    assert_eq!(bundles.len(), 130, "the released set");
    let server = reference_server(&bundles);

    run(
        &ws,
        Some(&server.url),
        &[
            "--only",
            "iprefbench",
            "--set",
            "episodes_llm.simulator=scripted",
        ],
    );
    let requests = server.requests();
    let played: usize = bundles.iter().map(|b| reference_calls(b).len()).sum();
    assert_eq!(requests.len(), played, "one request per reference step");

    let oracle_tasks = per_task(&ws.table("judged.scores", Some(ORACLE)));
    let model_tasks = per_task(&ws.table("judged_llm.scores", None));
    let differing: Vec<_> = oracle_tasks
        .iter()
        .zip(&model_tasks)
        .filter(|(o, m)| o != m)
        .collect();
    assert!(differing.is_empty(), "oracle vs model: {differing:?}");
    assert_eq!(model_tasks.len(), 130);

    let table1 = ws.table("iprefbench.table1", None);
    let oracle = column_of(&table1, ORACLE);
    let model = column_of(&table1, LLM);
    assert!(oracle.len() >= 9, "{table1}");
    assert_eq!(model, oracle, "the model's column equals the oracle's");
    assert!(
        oracle
            .iter()
            .any(|(m, v, n, _)| (m.as_str(), v.as_str(), n.as_str()) == ("success", "1.0", "130")),
        "the oracle succeeds on all 130 tasks: {oracle:?}"
    );
    eprintln!(
        "llm_table1: {} requests, {} tasks, {:.0?}",
        requests.len(),
        bundles.len(),
        started.elapsed()
    );
}
