//! Both action spaces of the `llm` agent are runnable end to end: real tasks of the default world
//! played by a scripted OpenAI-compatible server on 127.0.0.1, once as function calls
//! (`space: tools`) and once as one JSON GUI action per turn (`space: gui`, the paper's setting),
//! change the phone exactly as the task's reference solution does.

use std::path::PathBuf;

use prefflow_engine::store::FsStore;
use serde_json::{json, Map, Value};

use super::agents::LlmFactory;
use super::simulator::ScriptedUser;
use super::{
    run_episode, AgentFactory, Environment, EpisodeRow, EpisodeRun, EpisodeSpec, PhoneEnv,
};
use crate::llm::mock::{completion, tool_call_completion, Behavior, ScriptedServer};
use crate::llm::LlmConfig;
use crate::tasks::eval::resolve_json;
use crate::tasks::testkit::{block_on, candidates, world};
use crate::tasks::validate::validate;
use crate::tasks::world_index::WorldIndex;
use crate::tasks::{TaskBundle, TaskType};
use crate::world::phone::{Action, ActionSpace, EpisodeConfig, Status};
use crate::world::types::{display, FieldKind};

fn config(url: &str) -> LlmConfig {
    serde_json::from_value(json!({
        "base_url": url, "model": "scripted", "temperature": 0,
        "max_retries": 1, "backoff_ms": 1, "timeout_s": 5
    }))
    .expect("config")
}

/// Valid operation tasks whose reference solution changes the phone by tool calls alone (no
/// question to the user), one per first app, so the spaces are tried on several apps' forms.
fn call_only_tasks() -> Vec<&'static TaskBundle> {
    let ix = WorldIndex::new(world());
    let mut seen = Vec::new();
    candidates()
        .iter()
        .filter(|b| {
            let steps = &b.task.reference_solution;
            b.task.task_type == TaskType::Operation
                && steps.iter().any(|s| s["action"] == "call")
                && steps.iter().all(|s| {
                    ["call", "answer", "finish"].contains(&s["action"].as_str().unwrap_or_default())
                })
        })
        .filter(|b| {
            let first = b.task.apps.first().cloned().unwrap_or_default();
            let new = !seen.contains(&first);
            if new && validate(&ix, b).is_empty() {
                seen.push(first);
                return true;
            }
            false
        })
        .take(4)
        .collect()
}

/// The task's reference calls, with slots resolved.
fn calls(task: &TaskBundle) -> Vec<(String, Map<String, Value>)> {
    task.task
        .reference_solution
        .iter()
        .filter_map(|s| {
            let s = resolve_json(s, &task.slots).ok()?;
            Some((
                s["tool"].as_str()?.to_string(),
                s["args"].as_object()?.clone(),
            ))
        })
        .collect()
}

fn env(task: &TaskBundle, space: ActionSpace) -> PhoneEnv<'static> {
    let config = EpisodeConfig {
        space,
        clock: None,
        overrides: task.task.overrides.clone(),
    };
    PhoneEnv::new(world(), config).expect("overrides")
}

/// The element number of the first line of `screen` whose label starts with `prefix`.
fn element(screen: &str, prefix: &str) -> u32 {
    screen
        .lines()
        .filter_map(|l| {
            let l = l.trim().strip_prefix('[')?;
            let (n, label) = l.split_once("] ")?;
            label.starts_with(prefix).then(|| n.parse().ok())?
        })
        .next()
        .unwrap_or_else(|| panic!("no {prefix} on\n{screen}"))
}

/// What a person does on the screens to make one tool call: open the app, open the form, set
/// each passed field, submit. Played on `phone` as it goes (the element numbers depend on the
/// screens), and returned.
fn gui_actions(phone: &mut PhoneEnv<'_>, tool: &str, args: &Map<String, Value>) -> Vec<Action> {
    let op = world().catalog.operation(tool).expect("operation");
    let (app, _) = tool.split_once('.').expect("app.op");
    let mut played = Vec::new();
    let mut play = |phone: &mut PhoneEnv<'_>, a: Action| {
        let obs = phone.step(&a);
        assert_ne!(obs.status, Status::Error, "{tool}: {a:?}: {}", obs.text);
        played.push(a);
        obs.text
    };
    let screen = play(phone, Action::OpenApp { app: app.into() });
    let mut screen = play(
        phone,
        Action::Tap {
            element: element(&screen, &format!("button \"{}\"", op.title)),
        },
    );
    for f in &op.fields {
        let Some(v) = args.get(&f.name) else { continue };
        let n = element(&screen, &format!("field \"{}\"", f.name.replace('_', " ")));
        let text = match v {
            Value::Bool(b) => (if *b { "yes" } else { "no" }).to_string(),
            other => display(other),
        };
        let action = match f.kind {
            FieldKind::Enum(_) | FieldKind::Bool | FieldKind::Ref(_) => Action::Select {
                element: n,
                option: text,
            },
            _ => Action::Type { element: n, text },
        };
        screen = play(phone, action);
    }
    let submit = element(&screen, &format!("button \"{}\" (submits", op.title));
    play(phone, Action::Tap { element: submit });
    played
}

fn play_llm(task: &TaskBundle, server: &ScriptedServer, space: ActionSpace) -> EpisodeRun {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = FsStore::new(dir.path());
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let factory = LlmFactory::from_parts(
        config(&server.url),
        &store,
        false,
        &root,
        "datasets/prompts",
    )
    .expect("factory");
    let mut agent = factory.make(task, 3);
    let mut phone = env(task, space);
    let spec = EpisodeSpec {
        indexes: Default::default(),
        row: EpisodeRow {
            episode_id: "e".into(),
            task_id: task.task.task_id.clone(),
            ..EpisodeRow::default()
        },
        instruction: task.task.instruction.clone(),
        space,
        max_steps: 40,
        clarify: false,
    };
    let mut user = ScriptedUser::new(&task.slots);
    block_on(run_episode(
        &mut phone,
        agent.as_mut(),
        &mut user,
        &[],
        spec,
    ))
}

#[test]
fn tools_and_gui_episodes_do_what_the_reference_does() {
    let tasks = call_only_tasks();
    assert!(tasks.len() >= 3, "{} tasks", tasks.len());
    for task in tasks {
        let id = &task.task.task_id;
        let calls = calls(task);
        // The reference, played as plain tool calls: the state both spaces must reach.
        let mut reference = env(task, ActionSpace::Tools);
        for (tool, args) in &calls {
            let obs = reference.step(&Action::Call {
                tool: tool.clone(),
                args: args.clone(),
            });
            assert_ne!(obs.status, Status::Error, "{id}: {tool}: {}", obs.text);
        }
        let want = reference.diff();
        assert_ne!(want, json!({}), "{id}: the reference changes nothing");

        // tools: one function call per turn, then finish.
        let mut script: Vec<Behavior> = calls
            .iter()
            .map(|(tool, args)| {
                let name = tool.replace('.', "__");
                let args = Value::Object(args.clone()).to_string();
                Behavior::ok(tool_call_completion(None, &[(&name, &args)], 10, 5))
            })
            .collect();
        script.push(Behavior::ok(tool_call_completion(
            None,
            &[("answer", r#"{"text": "Done."}"#)],
            10,
            5,
        )));
        let server = ScriptedServer::start(
            script,
            Behavior::ok(tool_call_completion(None, &[("finish", "{}")], 10, 1)),
        );
        let run = play_llm(task, &server, ActionSpace::Tools);
        assert_eq!(run.episode.status, "ok", "{id}: {:?}", run.episode.error);
        assert!(
            run.steps.iter().all(|s| s.observation_status != "error"),
            "{id}: {:?}",
            run.steps
        );
        assert_eq!(
            serde_json::from_str::<Value>(&run.diff).unwrap(),
            want,
            "{id} (tools)"
        );

        // gui: the same calls as screens, one JSON action per turn, then finish.
        let mut rehearsal = env(task, ActionSpace::Gui);
        let actions: Vec<Action> = calls
            .iter()
            .flat_map(|(tool, args)| gui_actions(&mut rehearsal, tool, args))
            .collect();
        assert_eq!(
            rehearsal.diff(),
            want,
            "{id}: the GUI rehearsal differs from the tools"
        );
        let script = actions
            .iter()
            .map(|a| Behavior::ok(completion(&serde_json::to_string(a).unwrap(), 10, 5)))
            .collect();
        let server = ScriptedServer::start(
            script,
            Behavior::ok(completion("{\"action\": \"finish\"}", 10, 1)),
        );
        let run = play_llm(task, &server, ActionSpace::Gui);
        assert_eq!(run.episode.status, "ok", "{id}: {:?}", run.episode.error);
        assert_eq!(run.steps.len(), actions.len() + 1, "{id}");
        assert_eq!(
            serde_json::from_str::<Value>(&run.diff).unwrap(),
            want,
            "{id} (gui)"
        );
        // Every request of the GUI episode asked for JSON and offered no functions.
        for r in server.requests() {
            let body: Value = serde_json::from_str(&r.body).unwrap();
            assert_eq!(body["response_format"]["type"], "json_object");
            assert!(body.get("tools").is_none());
        }
    }
}
