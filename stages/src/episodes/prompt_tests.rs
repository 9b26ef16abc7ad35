//! What a model actually receives, read from the requests a scripted OpenAI-compatible server on
//! 127.0.0.1 records: the clock in words, the instruction to report outcomes with `answer`, no
//! user name handed over (it is on the owner card, behind a tool), and a user simulator told
//! what each ask-only value is, in words. Also: the prompt directory is part of the stage key.

use std::path::PathBuf;

use prefflow_engine::store::FsStore;
use prefflow_engine::Kind;
use serde_json::{json, Value};

use super::agents::LlmFactory;
use super::prompts::{self, Prompts};
use super::simulator::ScriptedUser;
use super::simulators::LlmUser;
use super::{run_episode, AgentFactory, EpisodeRow, EpisodeSpec, PhoneEnv};
use crate::kinds::{RunEpisodes, RunEpisodesParams};
use crate::llm::mock::{completion, tool_call_completion, Behavior, ScriptedServer};
use crate::llm::{LlmClient, LlmConfig};
use crate::tasks::testkit::{block_on, candidates, world};
use crate::tasks::user::spoken;
use crate::tasks::{Source, TaskBundle};
use crate::world::phone::{Action, ActionSpace, EpisodeConfig};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn config(url: &str) -> LlmConfig {
    serde_json::from_value(json!({
        "base_url": url, "model": "scripted", "temperature": 0,
        "max_retries": 1, "backoff_ms": 1, "timeout_s": 5
    }))
    .expect("config")
}

fn bodies(server: &ScriptedServer) -> Vec<Value> {
    server
        .requests()
        .iter()
        .map(|r| serde_json::from_str(&r.body).expect("request JSON"))
        .collect()
}

/// The first request of a one-step tools episode on `task` (the model finishes at once).
fn first_request(task: &TaskBundle) -> Value {
    let server = ScriptedServer::start(
        vec![],
        Behavior::ok(tool_call_completion(None, &[("finish", "{}")], 10, 1)),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let store = FsStore::new(dir.path());
    let factory = LlmFactory::from_parts(
        config(&server.url),
        &store,
        false,
        &root(),
        "datasets/prompts",
    )
    .expect("factory");
    let mut agent = factory.make(task, 1);
    let config = EpisodeConfig {
        space: ActionSpace::Tools,
        clock: None,
        overrides: task.task.overrides.clone(),
    };
    let mut env = PhoneEnv::new(world(), config).expect("phone");
    let history: Vec<_> = world().history.iter().take(5).collect();
    let spec = EpisodeSpec {
        indexes: Default::default(),
        row: EpisodeRow {
            episode_id: "e".into(),
            task_id: task.task.task_id.clone(),
            ..EpisodeRow::default()
        },
        instruction: task.task.instruction.clone(),
        space: ActionSpace::Tools,
        max_steps: 2,
        clarify: false,
    };
    block_on(run_episode(
        &mut env,
        agent.as_mut(),
        &mut ScriptedUser::new(&task.slots),
        &history,
        spec,
    ));
    bodies(&server).remove(0)
}

#[test]
fn the_agent_reads_the_clock_in_words_and_is_told_to_report_with_answer() {
    let task = candidates()
        .iter()
        .find(|b| !b.task.instruction.contains("Maya"))
        .expect("a task");
    let body = first_request(task);
    let system = body["messages"][0]["content"].as_str().expect("system");
    let first = body["messages"][1]["content"]
        .as_str()
        .expect("task message");
    // The default world's clock is Thursday 2025-10-02 17:30.
    assert!(first.contains("Thursday, 2 October 2025, 17:30"), "{first}");
    assert!(!first.contains("2025-10-02T17:30"), "{first}");
    assert!(first.contains(&task.task.instruction));
    // Outcomes, refusals and unavailable options go to the user through `answer`.
    assert!(
        system.contains("answer") && system.contains("not available"),
        "{system}"
    );
    let answer = body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["function"]["name"] == "answer")
        .expect("answer function");
    let said = answer["function"]["description"]
        .as_str()
        .unwrap_or_default();
    assert!(
        said.contains("not available") && said.contains("finish"),
        "{said}"
    );
    // The user's name is not handed to the model; it is on her card, behind offered tools.
    let name = &world().persona.name;
    assert!(!system.contains(name.as_str()) && !first.contains(name.as_str()));
    let offered: Vec<&str> = body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(offered.contains(&"contacts__get_owner"), "{offered:?}");
    // No implementation detail in what the model reads.
    assert!(!first.contains("Phone::") && !first.contains("tools available"));
}

#[test]
fn the_owner_card_names_the_user() {
    let mut env = PhoneEnv::new(world(), EpisodeConfig::default()).expect("phone");
    let listed = env.step(&Action::Call {
        tool: "contacts.list_owner".into(),
        args: Default::default(),
    });
    let page: Value = serde_json::from_str(&listed.text).expect("listing");
    assert_eq!(page["total"], 1, "{page}");
    let id = page["records"][0]["id"].as_str().expect("id").to_string();
    let card = env.step(&Action::Call {
        tool: "contacts.get_owner".into(),
        args: json!({ "id": id }).as_object().cloned().unwrap_or_default(),
    });
    let card: Value = serde_json::from_str(&card.text).expect("card");
    assert_eq!(card["name"].as_str(), Some(world().persona.name.as_str()));
}

#[test]
fn the_simulated_user_is_told_what_each_ask_only_value_is_in_words() {
    // A task whose ask-only value is an enum id, and one whose slot has an `about` sentence.
    let enum_task = candidates().iter().find(|b| {
        b.slots.iter().any(|s| {
            s.source == Source::AskOnly && s.value.as_str().is_some_and(|v| v.contains('_'))
        })
    });
    let about_task = candidates()
        .iter()
        .find(|b| {
            b.slots
                .iter()
                .any(|s| s.source == Source::AskOnly && !s.about.is_empty())
        })
        .expect("an ask-only slot with `about`");
    for task in enum_task.into_iter().chain([about_task]) {
        let server = ScriptedServer::start(vec![], Behavior::ok(completion("I don't know.", 5, 2)));
        let dir = tempfile::tempdir().expect("tempdir");
        let store = FsStore::new(dir.path());
        let client = LlmClient::new(config(&server.url), &store, false).expect("client");
        let prompts =
            Prompts::load(&root(), "datasets/prompts", &prompts::USER_TEMPLATES).expect("prompts");
        let mut user = LlmUser::new(client, prompts, world(), task, 0).expect("simulator");
        use super::Simulator;
        block_on(user.reply("Which one?")).expect("reply");
        let system = bodies(&server)[0]["messages"][0]["content"]
            .as_str()
            .expect("system")
            .to_string();
        for slot in task.slots.iter().filter(|s| s.source == Source::AskOnly) {
            let value = spoken(&slot.value);
            let line = system
                .lines()
                .find(|l| l.ends_with(&format!(": {value}")))
                .unwrap_or_else(|| panic!("no line for {} in\n{system}", slot.slot_id));
            if !slot.about.is_empty() {
                assert_eq!(line, format!("- {}: {value}", slot.about.trim()));
            }
            // The value is said in words, never as an enum id.
            if let Some(raw) = slot.value.as_str().filter(|v| v.contains('_')) {
                assert!(!system.contains(raw), "{raw} in\n{system}");
            }
        }
    }
}

#[test]
fn the_prompt_directory_is_part_of_the_stage_key() {
    let params = |agent: &str, simulator: &str| -> RunEpisodesParams {
        serde_json::from_value(json!({
            "agent": agent, "simulator": simulator, "prompts": "my-prompts"
        }))
        .expect("params")
    };
    assert_eq!(
        RunEpisodes.external_inputs(&params("llm", "scripted")),
        ["my-prompts"]
    );
    assert_eq!(
        RunEpisodes.external_inputs(&params("oracle", "llm")),
        ["my-prompts"]
    );
    assert!(RunEpisodes
        .external_inputs(&params("oracle", "scripted"))
        .is_empty());
    // The engine hashes the directory's files into the key: editing one prompt changes it.
    let dir = tempfile::tempdir().expect("tempdir");
    for entry in std::fs::read_dir(root().join("datasets/prompts")).expect("prompts") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), dir.path().join(entry.file_name())).expect("copy");
    }
    let before = prefflow_engine::keys::hash_path(dir.path());
    let principles = dir.path().join("_principles.j2");
    let text = std::fs::read_to_string(&principles).expect("read");
    std::fs::write(&principles, format!("{text}\n- Be brief.")).expect("write");
    assert_ne!(prefflow_engine::keys::hash_path(dir.path()), before);
}
