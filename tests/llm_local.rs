//! A real model: llama.cpp's `llama-server` with SmolLM2-135M (see ../shared/local-llm.md),
//! found through `LOCAL_LLM_BIN` and `LOCAL_LLM_MODEL` (`.ci/run` installs it and sets them
//! under `CI=true`; elsewhere the test skips with a message when they are unset, and fails
//! under `CI=true`). Three short GUI-mode episodes run through the real CLI with the `llm`
//! agent and the `llm` simulator, then judge → aggregate → report; the model is tiny, so only
//! structure is asserted: every step is a parsed action or a recorded parse failure, tokens are
//! counted, each episode is judged, the model has a Table 1 column over the 3 tasks and usage
//! rows, the report names it, a re-run sends nothing to the server, and `--offline` replays the
//! same tables. The simulator and a tools-mode
//! request are also put to the server directly.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use polars::prelude::*;
use prefflow_engine::store::FsStore;
use prefflow_stages::episodes::agents::llm::function_specs;
use prefflow_stages::episodes::codec::decode;
use prefflow_stages::episodes::prompts::{Prompts, USER_TEMPLATES};
use prefflow_stages::episodes::simulator::Simulator;
use prefflow_stages::episodes::simulators::LlmUser;
use prefflow_stages::llm::{ChatMessage, ChatRequest, LlmClient, LlmConfig};
use prefflow_stages::tasks::frames::bundles_from_table;
use prefflow_stages::world::from_tables::world_from_tables;

use crate::common::*;

const URL_VAR: &str = "PREFFLOW_TEST_LOCAL_LLM_URL";

/// Short prompts: prompt processing runs at ~30–115 tokens/s on one thread.
const PROMPTS: &[(&str, &str)] = &[
    ("agent_gui.j2", "You operate a phone. Reply with one JSON action only, e.g. {\"action\": \"tap\", \"element\": 3}, {\"action\": \"ask_user\", \"text\": \"...\"} or {\"action\": \"finish\"}."),
    ("agent_system.j2", "You operate a phone with function calls. Call finish when done."),
    ("agent_task.j2", "Request: {{ instruction }}\nScreen:\n{{ observation[:240] }}"),
    ("agent_observation.j2", "{{ status }}: {{ text[:160] }}"),
    ("clarify.j2", "Request: {{ instruction }}\nReply {\"questions\": []} listing what to ask."),
    ("user_system.j2", "You are {{ persona.name }}. You asked your phone: \"{{ instruction }}\". Answer in one short sentence.{% for p in profile[:3] %} {{ p.key }}: {{ p.value }}.{% endfor %}"),
    ("user_question.j2", "{{ question }}"),
];

/// The server binary and model, or `None` (skip) when not configured outside CI.
fn configured() -> Option<(String, String)> {
    match (
        std::env::var("LOCAL_LLM_BIN"),
        std::env::var("LOCAL_LLM_MODEL"),
    ) {
        (Ok(bin), Ok(model)) => Some((bin, model)),
        _ if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true but LOCAL_LLM_BIN / LOCAL_LLM_MODEL are unset: .ci/run must install the local model (../shared/tools/install-local-llm.sh) and export them")
        }
        _ => {
            eprintln!("skipping llm_local: set LOCAL_LLM_BIN and LOCAL_LLM_MODEL (read -r LOCAL_LLM_BIN LOCAL_LLM_MODEL < <(../shared/tools/install-local-llm.sh | paste -sd' '))");
            None
        }
    }
}

/// A running llama-server, killed when dropped (also when the test panics).
struct LlamaServer {
    child: Child,
    log: PathBuf,
    url: String,
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl LlamaServer {
    /// Starts the server on a free loopback port (one thread, two slots so the agent's and the
    /// user's prompts each keep their prefix cache) and waits until it is healthy.
    fn start(bin: &str, model: &str, dir: &Path) -> Self {
        let log = dir.join("llama.log");
        let out = File::create(&log).expect("log file");
        let err = out.try_clone().expect("log file");
        let child = Command::new(bin)
            .args([
                "-m",
                model,
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "-c",
                "4096",
                "-np",
                "2",
            ])
            .args(["-t", "1", "--no-webui", "--offline", "-a", "smollm2"])
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .expect("spawn llama-server");
        let mut server = Self {
            child,
            log,
            url: String::new(),
        };
        let port = server.wait_for(|log| {
            log.split("listening on http://127.0.0.1:")
                .nth(1)
                .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|p| p.parse::<u16>().ok())
        });
        server.url = format!("http://127.0.0.1:{port}/v1");
        let health = format!("http://127.0.0.1:{port}/health");
        server.wait_for(|_| {
            reqwest::blocking::get(&health)
                .ok()
                .filter(|r| r.status().is_success())
                .map(|_| ())
        });
        server
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Polls `ready` over the log until it yields, the server dies, or a minute passes.
    fn wait_for<T>(&mut self, ready: impl Fn(&str) -> Option<T>) -> T {
        let start = Instant::now();
        loop {
            if let Some(v) = ready(&self.log_text()) {
                return v;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("llama-server exited ({status}):\n{}", self.log_text());
            }
            if start.elapsed() > Duration::from_secs(60) {
                panic!("llama-server not ready after 60 s:\n{}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Completion requests the server has processed.
    fn requests(&self) -> usize {
        self.log_text().matches("launch_slot_").count()
    }
}

/// The model's variant as the downstream tables name it.
const LLM: &str = "agent=llm,model=smollm2,history=none";

/// Three tasks played by the model, then judged (rule + scripted), aggregated and reported as
/// in `pipelines/iprefbench.yaml`.
fn pipeline(prompts: &Path) -> String {
    let head = world_and_candidates("local_llm", "", &repo("datasets/tasks"), 3, 5);
    format!(
        "{head}  play:
    kind: run_episodes
    inputs: [candidates.bundles, world.sources, world.history_events]
    per_item: task_id
    concurrency: 1
    params:
      agent: llm
      simulator: llm
      space: gui
      history: none
      max_steps: 3
      prompts: '{}'
      llm: {{ base_url_env: {URL_VAR}, model: smollm2, temperature: 0, max_tokens: 24, timeout_s: 120, max_retries: 1, backoff_ms: 100 }}
  judged:
    kind: judge
    inputs: [play.episodes, play.steps, candidates.bundles, world.sources, world.history_events]
    per_item: episode_id
  table:
    kind: aggregate
    gather: true
    inputs: [judged.scores, judged.interaction, judged.verdicts, play.episodes]
    params: {{ resamples: 20 }}
  report:
    kind: report
    gather: true
    inputs: [table.table1, table.usage, table.paired, table.pass_k, table.perturbations,
             table.history_curve, table.failure_labels, play.episodes, play.steps,
             judged.verdicts, judged.scores]
    params: {{ template: '{}' }}
",
        prompts.display(),
        repo("datasets/report/report.html.j2")
    )
}

fn run(ws: &Workspace, url: &str, extra: &[&str]) -> Output {
    let mut args = vec!["run", "p.yaml", "--progress", "none"];
    args.extend_from_slice(extra);
    let out = ws.command(&args).env(URL_VAR, url).output().expect("spawn");
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn tables(ws: &Workspace) -> Vec<DataFrame> {
    ["play.episodes", "play.steps", "play.diffs"]
        .iter()
        .map(|t| ws.table(t, None))
        .collect()
}

fn column<T>(df: &DataFrame, col: &str, get: impl Fn(AnyValue) -> T) -> Vec<T> {
    let c = df.column(col).expect("column");
    (0..df.height())
        .map(|i| get(c.get(i).expect("value")))
        .collect()
}

fn text(v: AnyValue) -> String {
    v.get_str().unwrap_or_default().to_string()
}

fn count(v: AnyValue) -> u64 {
    v.extract::<u64>().unwrap_or_default()
}

fn config(url: &str) -> LlmConfig {
    serde_json::from_value(serde_json::json!({
        "base_url": url, "model": "smollm2", "temperature": 0, "max_tokens": 24,
        "timeout_s": 120, "max_retries": 1, "seed": 3
    }))
    .expect("config")
}

#[test]
fn a_real_local_model_plays_records_and_replays_episodes() {
    let Some((bin, model)) = configured() else {
        return;
    };
    let ws = Workspace::new();
    let server = LlamaServer::start(&bin, &model, ws.path());
    for (name, text) in PROMPTS {
        ws.write(&format!("prompts/{name}"), text);
    }
    ws.write("p.yaml", &pipeline(&ws.path().join("prompts")));

    run(&ws, &server.url, &[]);
    let sent = server.requests();
    let first = tables(&ws);
    let (episodes, steps) = (&first[0], &first[1]);
    assert_eq!(episodes.height(), 3);
    for status in column(episodes, "status", text) {
        assert!(status == "ok" || status == "max_steps", "{status}");
    }
    for col in ["prompt_tokens_agent", "completion_tokens_agent"] {
        assert!(column(episodes, col, count).iter().all(|t| *t > 0), "{col}");
    }
    assert!(steps.height() >= 2);
    let kinds = column(steps, "action_type", text);
    let args = column(steps, "arguments", text);
    let raws = column(steps, "raw", text);
    for ((kind, arg), raw) in kinds.iter().zip(&args).zip(&raws) {
        assert!(
            !raw.is_empty(),
            "the model's output is recorded on every step"
        );
        let arguments: serde_json::Value = serde_json::from_str(arg).expect("arguments JSON");
        if kind != "unknown" {
            decode(kind, &arguments).unwrap_or_else(|e| panic!("step `{kind}` {arg}: {e}"));
        }
    }
    // Records, not the shared parts they point at (stages/src/llm/record.rs).
    let recorded =
        count_files(&ws.store().join("llm")) - count_files(&ws.store().join("llm").join("parts"));
    assert_eq!(
        recorded, sent,
        "each request the server processed is recorded once"
    );

    // Downstream, structure only: each episode judged, a Table 1 column for the model with
    // every metric over its 3 tasks, its tokens in the usage table, and the report naming it.
    let scores = ws.table("judged.scores", None);
    assert_eq!(scores.height(), 3);
    assert!(column(&scores, "variant", text).iter().all(|v| v == LLM));
    assert!(column(&scores, "judge", text)
        .iter()
        .all(|j| j == "rule+scripted"));
    let table1 = ws.table("table.table1", None);
    let rows: Vec<(String, String, u64)> = (0..table1.height())
        .map(|i| {
            let get = |c: &str| table1.column(c).expect(c).get(i).expect("value");
            (text(get("variant")), text(get("metric")), count(get("n")))
        })
        .collect();
    assert!(rows.iter().all(|(v, _, _)| v == LLM), "{table1}");
    let success = rows
        .iter()
        .find(|(_, m, _)| m == "success")
        .expect("success");
    assert_eq!(success.2, 3, "success over the 3 tasks");
    assert!(rows.len() >= 9, "every metric: {rows:?}");
    let usage = ws.table("table.usage", None);
    let agent_tokens: Vec<u64> = (0..usage.height())
        .filter(|&i| text(usage.column("role").expect("role").get(i).expect("role")) == "agent")
        .map(|i| {
            count(
                usage
                    .column("prompt_tokens")
                    .expect("tokens")
                    .get(i)
                    .expect("n"),
            )
        })
        .collect();
    assert!(agent_tokens.len() == 1 && agent_tokens[0] > 0, "{usage}");
    let html = std::fs::read_to_string(ws.path().join("out/report.html")).expect("report");
    assert!(html.contains(LLM), "the report names the model");

    // With the stage's results forgotten, a re-run replays every model call: the server hears nothing.
    forget_stage(&ws, "play");
    run(&ws, &server.url, &[]);
    assert_executed(&ws, "local_llm", "play");
    assert_eq!(server.requests(), sent);
    assert_eq!(tables(&ws), first);
    forget_stage(&ws, "play");
    run(&ws, &server.url, &["--offline"]);
    assert_executed(&ws, "local_llm", "play");
    assert_eq!(server.requests(), sent);
    assert_eq!(tables(&ws), first);

    // The simulator against the real model, on one of the tasks just played.
    let store = FsStore::new(ws.store());
    let world = world_from_tables(
        &ws.table("world.sources", None),
        &ws.table("world.history_events", None),
    )
    .expect("world");
    let bundles = bundles_from_table(&ws.table("candidates.bundles", None)).expect("bundles");
    let prompts = Prompts::load(ws.path(), "prompts", &USER_TEMPLATES).expect("prompts");
    let client = LlmClient::new(config(&server.url), &store, false).expect("client");
    let mut user = LlmUser::new(client, prompts, &world.persona, &bundles[0], 0).expect("user");
    let reply = block_on(user.reply("Which option do you prefer?")).expect("reply");
    assert!(!reply.text.is_empty());
    assert!(reply.usage.prompt_tokens > 0 && reply.usage.completion_tokens > 0);

    // Tools mode: the server accepts a request offering functions (SmolLM2 never calls them).
    let client = LlmClient::new(config(&server.url), &store, false).expect("client");
    let request = ChatRequest {
        messages: vec![
            ChatMessage::new("system", "You operate a phone. Call finish when done."),
            ChatMessage::new("user", "Nothing to do."),
        ],
        tools: function_specs(&[]),
        json_mode: false,
    };
    let reply = client
        .chat_now(&request, 0)
        .expect("a request with tools is accepted");
    assert!(reply.usage.prompt_tokens > 0);
    assert!(reply.content.is_some() || !reply.tool_calls.is_empty());
}
