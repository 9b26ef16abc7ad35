//! The `llm` agent and simulator in real episodes on the default world, against a scripted
//! OpenAI-compatible server on 127.0.0.1: tool calls change the phone, JSON actions drive the
//! GUI, bad output becomes an `unknown` step the agent recovers from, clarification questions
//! reach the simulator, simulator leaks are flagged, and a dead endpoint ends the episode with
//! status `error`.

use std::path::{Path, PathBuf};

use prefflow_engine::store::FsStore;
use serde_json::{json, Value};

use super::agents::LlmFactory;
use super::simulator::{ScriptedUser, Simulator};
use super::simulators::LlmUser;
use super::{run_episode, AgentFactory, EpisodeRow, EpisodeRun, EpisodeSpec, PhoneEnv};
use crate::llm::mock::{completion, tool_call_completion, Behavior, ScriptedServer};
use crate::llm::{LlmClient, LlmConfig};
use crate::tasks::eval::resolve_json;
use crate::tasks::testkit::{block_on, candidates, world};
use crate::tasks::{Source, TaskBundle, TaskType};
use crate::world::phone::{ActionSpace, EpisodeConfig};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn config(url: &str) -> LlmConfig {
    serde_json::from_value(json!({
        "base_url": url, "model": "scripted", "temperature": 0,
        "max_retries": 1, "backoff_ms": 1, "timeout_s": 5
    }))
    .unwrap()
}

/// An operation task whose reference solution is tool calls (then `finish`), no questions.
fn tool_task() -> &'static TaskBundle {
    candidates()
        .iter()
        .find(|b| {
            let steps = &b.task.reference_solution;
            b.task.task_type == TaskType::Operation
                && steps.iter().any(|s| s["action"] == "call")
                && steps
                    .iter()
                    .all(|s| s["action"] == "call" || s["action"] == "finish")
        })
        .expect("an operation task solved by tool calls alone")
}

/// A task with an ask-only slot, for simulator tests.
fn ask_task() -> &'static TaskBundle {
    candidates()
        .iter()
        .find(|b| b.slots.iter().any(|s| s.source == Source::AskOnly))
        .expect("a task with an ask-only slot")
}

fn play(
    bundle: &TaskBundle,
    factory: &dyn AgentFactory,
    user: &mut dyn Simulator,
    space: ActionSpace,
    clarify: bool,
) -> EpisodeRun {
    let config = EpisodeConfig {
        space,
        clock: None,
        overrides: bundle.task.overrides.clone(),
    };
    let mut env = PhoneEnv::new(world(), config).unwrap();
    let mut agent = factory.make(bundle, 11);
    let history: Vec<_> = world().history.iter().take(5).collect();
    let spec = EpisodeSpec {
        indexes: Default::default(),
        row: EpisodeRow {
            episode_id: "e".into(),
            task_id: bundle.task.task_id.clone(),
            ..EpisodeRow::default()
        },
        instruction: bundle.task.instruction.clone(),
        space,
        max_steps: 6,
        clarify,
    };
    block_on(run_episode(&mut env, agent.as_mut(), user, &history, spec))
}

fn factory<'a>(url: &str, store: &'a FsStore) -> LlmFactory<'a> {
    LlmFactory::from_parts(config(url), store, false, &root(), "datasets/prompts").unwrap()
}

fn bodies(server: &ScriptedServer) -> Vec<Value> {
    server
        .requests()
        .iter()
        .map(|r| serde_json::from_str(&r.body).unwrap())
        .collect()
}

fn step_types(run: &EpisodeRun) -> Vec<&str> {
    run.steps.iter().map(|s| s.action_type.as_str()).collect()
}

#[test]
fn tools_mode_tool_calls_change_the_phone_and_results_go_back_by_call_id() {
    let task = tool_task();
    let calls: Vec<(String, String)> = task
        .task
        .reference_solution
        .iter()
        .filter(|s| s["action"] == "call")
        .map(|s| {
            let s = resolve_json(s, &task.slots).unwrap();
            let name = s["tool"].as_str().unwrap().replace('.', "__");
            (name, s["args"].to_string())
        })
        .collect();
    let refs: Vec<(&str, &str)> = calls
        .iter()
        .map(|(n, a)| (n.as_str(), a.as_str()))
        .collect();
    // All solution calls in one reply (played one per step), then `finish`.
    let server = ScriptedServer::start(
        vec![Behavior::ok(tool_call_completion(None, &refs, 100, 20))],
        Behavior::ok(tool_call_completion(None, &[("finish", "{}")], 120, 5)),
    );
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::new(dir.path());
    let f = factory(&server.url, &store);
    let run = play(
        task,
        &f,
        &mut ScriptedUser::new(&task.slots),
        ActionSpace::Tools,
        false,
    );

    assert_eq!(run.episode.status, "ok", "{:?}", run.episode.error);
    let expected: Vec<String> = calls.iter().map(|(n, _)| n.replace("__", ".")).collect();
    assert_eq!(
        &step_types(&run)[..calls.len()],
        expected.iter().map(String::as_str).collect::<Vec<_>>()
    );
    assert_eq!(step_types(&run).last(), Some(&"finish"));
    assert!(
        run.steps[..calls.len()]
            .iter()
            .all(|s| s.observation_status == "ok"),
        "{:?}",
        run.steps
    );
    let diff: Value = serde_json::from_str(&run.diff).unwrap();
    assert_ne!(diff, json!({}), "the phone state did not change");
    assert!(
        diff.to_string().contains("inserted") || diff.to_string().contains("updated"),
        "{diff}"
    );

    // Two model calls: the solution reply and `finish`; usage summed over both.
    let sent = bodies(&server);
    assert_eq!(sent.len(), 2);
    assert_eq!(run.episode.agent_usage().prompt_tokens, 220);
    let names: Vec<&str> = sent[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&calls[0].0.as_str()) && names.contains(&"ask_user"),
        "{names:?}"
    );
    let tool_msgs: Vec<&Value> = sent[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    let ids: Vec<&str> = tool_msgs
        .iter()
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    let want: Vec<String> = (1..=calls.len()).map(|i| format!("call_{i}")).collect();
    assert_eq!(ids, want.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(
        sent[0]["seed"],
        json!(11 & 0x7fff_ffff),
        "the episode seed is the request seed"
    );
}

#[test]
fn gui_mode_plays_json_actions_and_recovers_from_unparseable_output() {
    let task = tool_task();
    let server = ScriptedServer::start(
        vec![
            Behavior::ok(completion("I should open the notes app first.", 50, 9)),
            Behavior::ok(completion(
                "{\"action\": \"open_app\", \"app\": \"notes\"}",
                60,
                9,
            )),
        ],
        Behavior::ok(completion("```json\n{\"action\": \"finish\"}\n```", 70, 5)),
    );
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::new(dir.path());
    let f = factory(&server.url, &store);
    let run = play(
        task,
        &f,
        &mut ScriptedUser::new(&task.slots),
        ActionSpace::Gui,
        false,
    );

    assert_eq!(step_types(&run), ["unknown", "open_app", "finish"]);
    assert_eq!(run.episode.status, "ok");
    assert_eq!(
        run.steps[0].raw.as_deref(),
        Some("I should open the notes app first.")
    );
    assert_eq!(run.steps[1].observation_status, "ok");
    assert!(run.steps[1]
        .observation
        .as_deref()
        .unwrap_or_default()
        .to_lowercase()
        .contains("notes"));
    let sent = bodies(&server);
    assert!(sent
        .iter()
        .all(|b| b["response_format"]["type"] == "json_object" && b.get("tools").is_none()));
    // The agent was told why its output was refused, and the transcript keeps its turns.
    let second = sent[1]["messages"].as_array().unwrap();
    let told = second.last().unwrap()["content"].as_str().unwrap();
    assert!(
        told.contains("could not parse your action") && told.contains("no JSON object"),
        "{told}"
    );
    assert_eq!(second[second.len() - 2]["role"], "assistant");
    assert_eq!(run.episode.agent_usage().completion_tokens, 23);
}

#[test]
fn clarification_questions_reach_the_simulator_and_the_transcript() {
    let task = ask_task();
    let server = ScriptedServer::start(
        vec![Behavior::ok(completion(
            "{\"questions\": [\"Anything I should know?\"]}",
            30,
            8,
        ))],
        Behavior::ok(completion("{\"action\": \"finish\"}", 40, 4)),
    );
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::new(dir.path());
    let f = factory(&server.url, &store);
    let run = play(
        task,
        &f,
        &mut ScriptedUser::new(&task.slots),
        ActionSpace::Gui,
        true,
    );

    assert_eq!(run.steps[0].phase, "clarify");
    assert_eq!(run.steps[0].action_type, "ask_user");
    assert_eq!(run.episode.ask_user_calls, 1);
    let sent = bodies(&server);
    let clarify_prompt = sent[0]["messages"][1]["content"].as_str().unwrap();
    assert!(
        clarify_prompt.contains(&task.task.instruction) && clarify_prompt.contains("questions")
    );
    let task_msg = sent[1]["messages"][1]["content"].as_str().unwrap();
    assert!(task_msg.contains("Anything I should know?"), "{task_msg}");
    assert_eq!(run.episode.agent_usage().prompt_tokens, 70);
}

#[test]
fn the_llm_user_is_audited_for_volunteered_values() {
    let task = ask_task();
    let slot = task
        .slots
        .iter()
        .find(|s| s.source == Source::AskOnly)
        .unwrap();
    let value = crate::world::types::display(&slot.value);
    let server = ScriptedServer::start(
        vec![Behavior::ok(completion(
            &format!("Oh, and by the way: {value}."),
            200,
            12,
        ))],
        Behavior::ok(completion("I don't know.", 210, 4)),
    );
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::new(dir.path());
    let client = LlmClient::new(config(&server.url), &store, false).unwrap();
    let prompts =
        super::prompts::Prompts::load(&root(), "datasets/prompts", &super::prompts::USER_TEMPLATES)
            .unwrap();
    let mut user = LlmUser::new(client, prompts, world(), task, 0).unwrap();

    let leak = block_on(user.reply("Shall I go ahead?")).unwrap();
    assert_eq!(leak.disclosed, vec![slot.slot_id.clone()]);
    assert_eq!(leak.volunteered, vec![slot.slot_id.clone()]);
    let unknown = block_on(user.reply("What colour is the sky on Mars?")).unwrap();
    assert!(unknown.disclosed.is_empty() && !unknown.ungrounded);
    assert_eq!(unknown.usage.prompt_tokens, 210);

    let sent = bodies(&server);
    let system = sent[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains(&world().persona.name) && system.contains(&value),
        "{system}"
    );
    // The conversation is kept: the second request carries the first exchange.
    assert_eq!(sent[1]["messages"].as_array().unwrap().len(), 4);
}

#[test]
fn a_dead_endpoint_ends_the_episode_with_error_after_retries() {
    let task = tool_task();
    let server = ScriptedServer::start(
        vec![Behavior::ok(completion("{\"action\": \"home\"}", 5, 5))],
        Behavior::status(500),
    );
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::new(dir.path());
    let f = factory(&server.url, &store);
    let run = play(
        task,
        &f,
        &mut ScriptedUser::new(&task.slots),
        ActionSpace::Gui,
        false,
    );

    assert_eq!(run.episode.status, "error");
    assert!(
        matches!(run.fault, Some(crate::llm::LlmError::Exhausted { .. })),
        "a provider fault, which run_episodes refuses to store: {:?}",
        run.fault
    );
    let e = run.episode.error.clone().unwrap_or_default();
    assert!(
        e.contains("gave up after 2 attempts") && e.contains("HTTP 500"),
        "{e}"
    );
    assert_eq!(
        step_types(&run),
        ["home"],
        "steps before the failure are kept"
    );
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn a_missing_endpoint_or_template_fails_before_any_episode() {
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::new(dir.path());
    let mut c = config("");
    c.base_url_env = Some("PREFFLOW_TEST_SURELY_UNSET_URL".into());
    let e = LlmFactory::from_parts(c, &store, false, &root(), "datasets/prompts")
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("PREFFLOW_TEST_SURELY_UNSET_URL"), "{e}");
    let prompts = tempfile::tempdir().unwrap();
    for name in super::prompts::AGENT_TEMPLATES {
        std::fs::write(prompts.path().join(name), "fine").unwrap();
    }
    std::fs::write(prompts.path().join("agent_gui.j2"), "line\n{{ oops").unwrap();
    let dir_text = prompts.path().to_string_lossy().into_owned();
    let e = LlmFactory::from_parts(
        config("http://127.0.0.1:9/v1"),
        &store,
        false,
        Path::new("/"),
        &dir_text,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("agent_gui.j2:2"), "{e}");
}

/// A reply the server cut at the completion limit (`finish_reason: length`, its arguments
/// unfinished) is an `unknown` step that says "cut at max_tokens", so neither the model nor
/// the reader of the trajectory takes it for a formatting mistake.
#[test]
fn a_reply_cut_at_max_tokens_is_reported_as_such() {
    let cut = json!({
        "choices": [{ "index": 0, "finish_reason": "length", "message": { "role": "assistant",
            "tool_calls": [{ "id": "c1", "type": "function",
                "function": { "name": "notes__create_note", "arguments": "{\"title\": \"Shopping li" } }] } }],
        "usage": { "prompt_tokens": 50, "completion_tokens": 64 },
    })
    .to_string();
    let server = ScriptedServer::start(
        vec![Behavior::ok(cut)],
        Behavior::ok(tool_call_completion(None, &[("finish", "{}")], 50, 2)),
    );
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::new(dir.path());
    let mut c = config(&server.url);
    c.max_tokens = Some(64);
    let factory = LlmFactory::from_parts(c, &store, false, &root(), "datasets/prompts").unwrap();
    let mut user = ScriptedUser::new(&tool_task().slots);
    let run = play(tool_task(), &factory, &mut user, ActionSpace::Tools, false);
    assert_eq!(step_types(&run), ["unknown", "finish"]);
    let told = run.steps[0].observation.clone().unwrap_or_default();
    assert!(told.contains("cut at max_tokens (64)"), "{told}");
    // The model reads it on its next turn.
    let next = &bodies(&server)[1]["messages"];
    assert!(
        next.to_string().contains("cut at max_tokens (64)"),
        "{next}"
    );
}
