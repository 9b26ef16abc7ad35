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
//! Then a judge model is configured (`judge_model`, `PREFFLOW_JUDGE_BASE_URL`) against a second
//! scripted server: every column is judged again by it — the built-in agents' too, never mixed
//! — while no episode re-runs; free-text criteria get the judge's verdict, questions go through
//! the LLM matcher, every criterion prompt carries what the paper's rubric judge reads, every
//! table says which judge produced it, paired differences stand (one judge), the judge is
//! measured on the labelled set beside the offline judge (`judge_validation`), and `--offline`
//! replays the judge's calls with 0 requests, bit-identically.
//!
//! The whole released set is cheap enough in a debug build: 395 agent requests and ~110 judge
//! requests, about 60 s on 2 cores for both phases (the test prints its time), so no subset is
//! needed.

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

/// The shipped pipeline's endpoint variables: the agent's and the judge's.
const URL_VAR: &str = "PREFFLOW_LLM_BASE_URL";
const JUDGE_VAR: &str = "PREFFLOW_JUDGE_BASE_URL";
pub(crate) const ORACLE: &str = "agent=oracle,history=all";
pub(crate) const LLM: &str = "agent=llm,model=default,history=all";
/// The shipped pipeline's root seed (`params.seed`).
pub(crate) const ROOT_SEED: u64 = 7;

/// `prefflow run iprefbench.yaml` with the agent's endpoint variable set to `url` (or unset)
/// and the judge's to `judge` (or unset), expecting success.
pub(crate) fn run(
    ws: &Workspace,
    url: Option<&str>,
    judge: Option<&str>,
    extra: &[&str],
) -> Output {
    let mut args = vec!["run", "iprefbench.yaml", "--progress", "none"];
    args.extend_from_slice(extra);
    let mut cmd = ws.command(&args);
    for (var, value) in [(URL_VAR, url), (JUDGE_VAR, judge)] {
        match value {
            Some(u) => cmd.env(var, u),
            None => cmd.env_remove(var),
        };
    }
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
pub(crate) type Call = (String, String);

/// The reference solution of `bundle` as the tool calls a model would make, ending in `finish`.
pub(crate) fn reference_calls(bundle: &TaskBundle) -> Vec<Call> {
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
    calls_server(by_seed)
}

/// A server answering each episode's turn `n` with the `n`-th call scripted for it: the
/// episode is found by the request's sampling `seed` and its instruction checked; past the
/// script it finishes, and a request it cannot place gets a call to no task's function.
pub(crate) fn calls_server(by_seed: HashMap<u64, (String, Vec<Call>)>) -> ScriptedServer {
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

/// The requests a provider's prefix cache can serve: every request opens with the same system
/// prompt (instructions and the whole history), byte for byte, across tasks and turns; the
/// tool list is one per domain; and each turn's request extends the previous turn's messages.
fn stable_prefix(requests: &[prefflow_stages::llm::mock::Seen]) {
    let bodies: Vec<Value> = requests
        .iter()
        .map(|r| serde_json::from_str(&r.body).expect("a JSON request"))
        .collect();
    let systems: std::collections::HashSet<String> = bodies
        .iter()
        .map(|b| b["messages"][0].to_string())
        .collect();
    assert_eq!(systems.len(), 1, "one system prompt across tasks and turns");
    assert!(
        systems.iter().all(|s| s.len() > 100_000),
        "it holds the history"
    );
    let tool_lists: std::collections::HashSet<String> =
        bodies.iter().map(|b| b["tools"].to_string()).collect();
    assert!(tool_lists.len() < 20, "{} tool lists", tool_lists.len());
    let mut by_episode: HashMap<u64, Vec<&Value>> = HashMap::new();
    for b in &bodies {
        by_episode
            .entry(b["seed"].as_u64().expect("seed"))
            .or_default()
            .push(b);
    }
    let mut extended = 0;
    for turns in by_episode.values_mut() {
        turns.sort_by_key(|b| b["messages"].as_array().map_or(0, Vec::len));
        for pair in turns.windows(2) {
            let (before, after) = (
                pair[0]["messages"].as_array().expect("messages"),
                pair[1]["messages"].as_array().expect("messages"),
            );
            assert_eq!(
                &after[..before.len()],
                &before[..],
                "a turn extends the last"
            );
            assert_eq!(pair[0]["tools"], pair[1]["tools"]);
            extended += 1;
        }
    }
    assert!(extended > 100, "{extended} later turns checked");
}

pub(crate) fn strs(df: &DataFrame, col: &str) -> Vec<String> {
    column_texts(df, col)
        .into_iter()
        .map(|s| s.unwrap_or_else(|| "null".into()))
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
fn a_model_playing_the_references_gets_the_oracles_column_then_a_judge_model_rejudges_it() {
    let started = std::time::Instant::now();
    let ws = Workspace::new();
    link_repo(&ws, "datasets");
    ws.write(
        "iprefbench.yaml",
        &shipped_iprefbench("{ agent: [oracle, defaults], history: [all] }"),
    );
    // The released set, built offline (the model's stages are disabled without the variable).
    run(&ws, None, None, &["--only", "validated"]);
    let bundles = bundles_from_table(&ws.table("validated.bundles", None)).expect("bundles");
    assert_eq!(bundles.len(), 130, "the released set");
    let server = reference_server(&bundles);

    let only = [
        "--only",
        "iprefbench",
        "--set",
        "episodes_llm.simulator=scripted",
    ];
    run(&ws, Some(&server.url), None, &only);
    let requests = server.requests();
    let played: usize = bundles.iter().map(|b| reference_calls(b).len()).sum();
    assert_eq!(requests.len(), played, "one request per reference step");
    // The records of one model-epoch (issue 26: ≤ 20 MB; ~170 MB when every request was
    // stored whole): the history and the tools are stored once (stages/src/llm/record.rs).
    let sent: usize = requests.iter().map(|r| r.body.len()).sum();
    let kept = dir_bytes(&ws.store().join("llm"));
    eprintln!(
        "llm_table1: records {:.2} MB ({} files) for {} requests of {:.1} MB",
        kept as f64 / 1e6,
        count_files(&ws.store().join("llm")),
        requests.len(),
        sent as f64 / 1e6
    );
    assert!(
        kept < 20_000_000,
        "records of one model-epoch: {kept} bytes"
    );
    stable_prefix(&requests);

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
    let judges = distinct(&ws.table("iprefbench.table1", None), "judge");
    assert_eq!(
        judges,
        ["rule+scripted (offline)"],
        "no judge model configured: the offline judge judges every column, and says so"
    );
    eprintln!(
        "llm_table1: {} requests, {} tasks, {:.0?}",
        requests.len(),
        bundles.len(),
        started.elapsed()
    );

    judged_by_a_judge_model(&ws, &server, &bundles, &only, oracle);
}

/// The judge model (`judge_model`, `PREFFLOW_JUDGE_BASE_URL`) on the same episodes: a scripted
/// judge that fails every free-text criterion and splits each question exactly as the scripted
/// matcher did. Every judge stage re-runs — the built-in agents' `judged` too — and no episode
/// (no agent request); free-text criteria get an LLM verdict and nothing else does; questions go
/// through the LLM matcher; Table 1 (one judge for every column), the scores and the report
/// name the judge; paired differences stand; its tokens are the usage table's `judge` row;
/// `judge_validation` measures it on the labelled set; `--offline` replays every judge stage's
/// calls with 0 requests.
fn judged_by_a_judge_model(
    ws: &Workspace,
    agent: &ScriptedServer,
    bundles: &[TaskBundle],
    only: &[&str],
    oracle: Vec<(String, String, String, String)>,
) {
    let splits = scripted_splits(ws);
    let judge = ScriptedServer::start(
        vec![],
        Behavior::respond(move |body| judge_reply(body, &splits)),
    );
    let agent_requests = agent.requests().len();
    let record = {
        run(ws, Some(&agent.url), Some(&judge.url), only);
        ws.last_run("iprefbench")
    };
    let s = statuses(&record);
    assert_eq!(s["episodes_llm"], "cached", "{s:?}");
    assert_eq!(s["episodes[agent=oracle,history=all]"], "cached", "{s:?}");
    for judged in [
        "judged_llm",
        "judged[agent=oracle,history=all]",
        "judged[agent=defaults,history=all]",
    ] {
        assert!(
            s[judged].starts_with("executed"),
            "{judged} re-judged: {s:?}"
        );
    }
    assert_eq!(agent.requests().len(), agent_requests, "no agent request");

    let free_text: usize = bundles
        .iter()
        .map(|b| b.criteria.iter().filter(|c| c.free_text).count())
        .sum();
    let with_free_text = bundles
        .iter()
        .filter(|b| b.criteria.iter().any(|c| c.free_text))
        .count();
    assert!(
        with_free_text > 0,
        "the released set has free-text criteria"
    );
    let scores = ws.table("judged_llm.scores", None);
    let asks_of = |scores: &DataFrame| -> u64 {
        strs(scores, "ask_user_calls")
            .iter()
            .map(|n| n.parse::<u64>().expect("count"))
            .sum()
    };
    let asks = asks_of(&scores);
    // One call per free-text criterion and one per question, in each of the three columns; an
    // identical prompt (the same question in two perturbations of one request, the oracle's
    // and the model's identical plays) is replayed from the record unless both were in flight
    // at once, so fewer are sent.
    let calls = free_text as u64 + asks;
    let all_calls: u64 = calls
        + [ORACLE, "agent=defaults,history=all"]
            .iter()
            .map(|v| free_text as u64 + asks_of(&ws.table("judged.scores", Some(v))))
            .sum::<u64>();
    let sent = judge.requests();
    assert!(
        sent.len() as u64 <= all_calls && sent.len() as u64 > calls / 2,
        "{} sent for {all_calls} calls",
        sent.len()
    );
    let runs = ws.cli(&["show", "runs", "--format", "json"]).expect_code(0);
    let rows: Vec<Value> = serde_json::from_str(&runs.stdout).expect("json rows");
    let judge_spent: Vec<(u64, u64)> = rows
        .iter()
        .filter(|r| r["scope"] == "spent" && r["role"] == "judge")
        .map(|r| {
            (
                r["requests"].as_u64().unwrap_or(0),
                r["replayed"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        judge_spent,
        [(sent.len() as u64, all_calls - sent.len() as u64)],
        "the judge's calls in `prefflow show runs`: sent, replayed"
    );
    let criterion_prompts = criterion_prompts_are_complete(&sent);
    assert!(
        criterion_prompts > 0 && criterion_prompts as u64 <= 3 * free_text as u64,
        "{criterion_prompts} criterion prompts for {free_text} free-text criteria per column"
    );
    let label = "hybrid_text:default+llm:default";
    assert_eq!(distinct(&scores, "judge"), [label]);
    let verdicts = ws.table("judged_llm.verdicts", None);
    let llm_rows = strs(&verdicts, "mode")
        .iter()
        .filter(|m| *m == "llm")
        .count();
    assert_eq!(
        llm_rows, free_text,
        "the LLM judges the free-text criteria only"
    );
    let requests = ws.table("judged_llm.requests", None);
    assert_eq!(distinct(&requests, "matcher"), ["llm"]);

    let table1 = ws.table("iprefbench.table1", None);
    assert_eq!(
        distinct(&table1, "judge"),
        [label],
        "one judge for every column"
    );
    for judged in [ORACLE, "agent=defaults,history=all"] {
        let scores = ws.table("judged.scores", Some(judged));
        assert_eq!(distinct(&scores, "judge"), [label], "{judged}");
    }
    let paired = ws.table("iprefbench.paired", None);
    assert_eq!(
        distinct(&paired, "note"),
        ["null"],
        "one judge: every difference stands"
    );
    let model = column_of(&table1, LLM);
    let oracle_now = column_of(&table1, ORACLE);
    assert_eq!(
        model, oracle_now,
        "the oracle and the model, judged by the same judge, still agree"
    );
    let value = |rows: &[(String, String, String, String)], m: &str| {
        rows.iter()
            .find(|r| r.0 == m)
            .map(|r| r.1.clone())
            .unwrap_or_default()
    };
    let expected = (bundles.len() - with_free_text) as f64 / bundles.len() as f64;
    let success: f64 = value(&model, "success").parse().expect("success");
    assert!(
        (success - expected).abs() < 1e-12,
        "{success} vs {expected}"
    );
    for same in ["recall", "precision", "ask_user_calls", "steps", "action"] {
        assert_eq!(value(&model, same), value(&oracle, same), "{same}");
    }
    let usage = ws.table("iprefbench.usage", None);
    let judge_tokens: Vec<String> = strs(&usage, "variant")
        .iter()
        .zip(strs(&usage, "role"))
        .zip(strs(&usage, "prompt_tokens"))
        .filter(|((v, r), _)| *v == LLM && r == "judge")
        .map(|(_, t)| t)
        .collect();
    assert_eq!(
        judge_tokens,
        [(10 * calls).to_string()],
        "the judge's tokens: 10 per call, replayed ones included"
    );
    let report = ws.cli(&["show", "iprefbench.table1"]).expect_code(0);
    assert!(report.stdout.contains(label), "{}", report.stdout);

    // The judge that judges Table 1 is validated too: `judged_labelled_model` judges the
    // labelled set with it, and `judge_validation` reports it beside the offline judge.
    run(
        ws,
        Some(&agent.url),
        Some(&judge.url),
        &["--only", "judge_validation"],
    );
    let agreement = ws.table("judge_validation.agreement", None);
    let [level, pair, n] = ["level", "pair", "n"].map(|c| strs(&agreement, c));
    let n_of = |p: &str, l: &str| {
        (0..agreement.height())
            .find(|&i| pair[i] == p && level[i] == l)
            .map(|i| n[i].clone())
            .unwrap_or_else(|| panic!("no {p} row at level {l}: {agreement}"))
    };
    for l in ["criterion", "success", "recall", "extra"] {
        assert_eq!(
            n_of(&format!("{label}~gold"), l),
            n_of("rule+scripted~gold", l),
            "the judge model is measured on the same judgements as the offline judge ({l})"
        );
    }

    // Offline, with the judge gone, every column's verdicts replay from the record.
    let targets: [&[&str]; 2] = [
        &["show", "judged_llm.scores", "--path"],
        &["show", "judged.scores", "--path", "--variant", ORACLE],
    ];
    let read = |ws: &Workspace| -> Vec<Vec<u8>> {
        targets
            .iter()
            .map(|args| std::fs::read(ws.table_path(args)).expect("scores"))
            .collect()
    };
    let before = read(ws);
    let sent_before = judge.requests().len();
    let validated = std::fs::read(ws.table_path(&["show", "judge_validation.agreement", "--path"]))
        .expect("agreement");
    for stage in ["judged_llm", "judged", "judged_labelled_model"] {
        forget_stage(ws, stage);
    }
    let mut offline = only.to_vec();
    offline.extend(["--only", "judge_validation", "--offline"]);
    run(ws, Some(&agent.url), Some(&judge.url), &offline);
    for stage in ["judged_llm", "judged", "judged_labelled_model"] {
        assert_executed(ws, "iprefbench", stage);
    }
    assert_eq!(
        std::fs::read(ws.table_path(&["show", "judge_validation.agreement", "--path"]))
            .expect("agreement"),
        validated,
        "the judge model's validation replays too"
    );
    assert_eq!(
        judge.requests().len(),
        sent_before,
        "--offline: 0 requests to the judge, every column replayed"
    );
    assert_eq!(read(ws), before, "the judge's calls replay bit-identically");
    let table1 = ws.table("iprefbench.table1", None);
    assert_eq!(
        distinct(&table1, "judge"),
        [label],
        "replayed: the same judge"
    );
    assert_eq!(column_of(&table1, LLM), model);
}

/// Every criterion prompt the judge model got carries what iPrefBench E.2/G.3 gives the rubric
/// judge: the rubric, a trajectory of at least one step, the final answer (or `(none)`), the
/// ground-truth profile, the hidden context and the simulator time (their content is checked
/// in `judging::tests::each_criterion_prompt_carries_…`).
fn criterion_prompts_are_complete(sent: &[prefflow_stages::llm::mock::Seen]) -> usize {
    let prompts: Vec<String> = sent
        .iter()
        .map(|r| {
            let body: Value = serde_json::from_str(&r.body).expect("a JSON request");
            body["messages"][0]["content"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .filter(|p| p.contains("Criterion `"))
        .collect();
    for p in &prompts {
        for needle in [
            "Simulator time: 20",
            "User profile (ground truth):\n- ",
            "Hidden context (what only the user knows, and what was unavailable):\n{",
            "Trajectory (step. action arguments [outcome] → user reply):\n1. ",
            "Final answer: ",
        ] {
            assert!(p.contains(needle), "no `{needle}` in\n{p}");
        }
    }
    prompts.len()
}

/// How the scripted matcher split each question of the model's episodes: (instruction,
/// question) → `[{request, slot_id}]`, read from the first judging's `requests` and `steps`.
fn scripted_splits(ws: &Workspace) -> HashMap<(String, String), Vec<Value>> {
    let steps = ws.table("episodes_llm.steps", None);
    let [episode, step, action, arguments] =
        ["episode_id", "step", "action_type", "arguments"].map(|c| strs(&steps, c));
    let scores = ws.table("judged_llm.scores", None);
    let bundles = bundles_from_table(&ws.table("validated.bundles", None)).expect("bundles");
    let instruction_of_task = |task: &str| {
        bundles
            .iter()
            .find(|b| b.task.task_id == task)
            .map(|b| b.task.instruction.clone())
            .expect("task")
    };
    let [s_episode, s_task] = ["episode_id", "task_id"].map(|c| strs(&scores, c));
    let task_of = |e: &str| {
        s_episode
            .iter()
            .position(|x| x == e)
            .map(|i| s_task[i].clone())
            .expect("episode")
    };
    let requests = ws.table("judged_llm.requests", None);
    let [r_episode, r_step, r_text, r_slot] =
        ["episode_id", "step", "request", "slot_id"].map(|c| strs(&requests, c));
    let mut out: HashMap<(String, String), Vec<Value>> = HashMap::new();
    for i in (0..steps.height()).filter(|&i| action[i] == "ask_user") {
        let args: Value = serde_json::from_str(&arguments[i]).expect("arguments");
        let question = args["text"].as_str().expect("text").to_string();
        let pieces: Vec<Value> = (0..requests.height())
            .filter(|&r| r_episode[r] == episode[i] && r_step[r] == step[i])
            .map(|r| {
                let slot = (r_slot[r] != "null").then(|| r_slot[r].clone());
                json!({ "request": r_text[r], "slot_id": slot })
            })
            .collect();
        let key = (instruction_of_task(&task_of(&episode[i])), question);
        if let Some(known) = out.insert(key.clone(), pieces.clone()) {
            assert_eq!(known, pieces, "one split per question: {key:?}");
        }
    }
    out
}

/// The scripted judge: every criterion fails; a question is split as `splits` says.
fn judge_reply(body: &str, splits: &HashMap<(String, String), Vec<Value>>) -> String {
    let request: Value = serde_json::from_str(body).unwrap_or_default();
    let prompt = request["messages"][0]["content"]
        .as_str()
        .unwrap_or_default();
    let content = if prompt.contains("Agent's message: ") {
        let instruction = between(prompt, "Task: ", "\n");
        let question = between(prompt, "Agent's message: ", "\n\nReply with");
        let pieces = splits
            .get(&(instruction, question))
            .cloned()
            .unwrap_or_default();
        json!({ "requests": pieces })
    } else {
        json!({ "verdict": "fail", "reason": "scripted judge" })
    };
    prefflow_stages::llm::mock::completion(&content.to_string(), 10, 2)
}

fn between(text: &str, start: &str, end: &str) -> String {
    let from = text.split_once(start).map_or("", |(_, rest)| rest);
    from.split_once(end).map_or(from, |(v, _)| v).to_string()
}

fn distinct(df: &DataFrame, col: &str) -> Vec<String> {
    let mut v = strs(df, col);
    v.sort();
    v.dedup();
    v
}
