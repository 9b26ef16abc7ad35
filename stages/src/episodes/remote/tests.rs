//! The adapter against the fake device over real loopback HTTP: the client's calls and failure
//! classes, and whole episodes with the retry policy.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::client::{DeviceClient, DevicePatience};
use super::episode::{self, RemoteSpec};
use super::error::DeviceError;
use super::fake::{FakeConfig, FakeDevice, FakeTask};
use crate::episodes::agents::Replay;
use crate::episodes::record::EpisodeRow;
use crate::tasks::testkit::block_on;
use crate::world::phone::Action;

fn alarm_task() -> FakeTask {
    FakeTask {
        name: "SetAlarm@student".into(),
        goal: "Set my usual weekday alarm.".into(),
        expected: vec![
            json!({"action_type": "ask_user", "text": "What time?"}),
            json!({"action_type": "open_app", "app_name": "Clock"}),
            json!({"action_type": "click", "x": 200, "y": 130}),
            json!({"action_type": "input_text", "text": "07:00"}),
        ],
        reply: "7 am, please.".into(),
    }
}

fn alarm_actions() -> HashMap<String, Vec<Action>> {
    let actions = vec![
        Action::AskUser {
            text: "What time?".into(),
        },
        Action::OpenApp {
            app: "Clock".into(),
        },
        Action::Type {
            element: 1,
            text: "07:00".into(),
        },
        Action::Finish,
    ];
    HashMap::from([("SetAlarm@student".to_string(), actions)])
}

fn client(url: &str) -> Arc<DeviceClient> {
    Arc::new(DeviceClient::new(url, "emulator-5554", Duration::from_secs(10)).unwrap())
}

fn policy(retries: u32) -> DevicePatience {
    DevicePatience::new(retries, Duration::from_millis(5), 3)
}

/// [`episode::play_remote`], awaited on a test runtime.
fn play_remote(
    client: &Arc<DeviceClient>,
    patience: &DevicePatience,
    factory: &dyn crate::episodes::AgentFactory,
    spec: &RemoteSpec,
) -> Result<super::Played, DeviceError> {
    block_on(episode::play_remote(client, patience, factory, spec))
}

fn spec(task: &str) -> RemoteSpec {
    RemoteSpec {
        row: EpisodeRow {
            episode_id: format!("{task}##0"),
            task_id: task.into(),
            agent: "replay".into(),
            ..EpisodeRow::default()
        },
        goal: None,
        max_steps: 10,
        read_screen: true,
    }
}

#[test]
fn a_full_episode_asks_on_device_clicks_by_bounds_and_carries_the_score() {
    let device = FakeDevice::start(FakeConfig {
        tasks: vec![alarm_task()],
        ..FakeConfig::default()
    })
    .unwrap();
    let factory = Replay::new(alarm_actions());
    let played = play_remote(
        &client(device.url()),
        &policy(0),
        &factory,
        &spec("SetAlarm@student"),
    )
    .unwrap();
    let ep = &played.run.episode;
    assert_eq!(
        (ep.status.as_str(), ep.score),
        ("ok", Some(1.0)),
        "{played:?}"
    );
    assert_eq!(played.attempts, 1);
    assert_eq!(ep.ask_user_calls, 1);
    let ask = &played.run.steps[0];
    assert_eq!(ask.action_type, "ask_user");
    assert_eq!(ask.user_reply.as_deref(), Some("7 am, please."));
    assert!(played.run.steps[1]
        .observation
        .as_deref()
        .unwrap()
        .contains("[1] Clock: message"));
    assert_eq!(played.run.diff, "null");
    let stats = device.stats();
    assert_eq!(stats.questions, vec!["What time?".to_string()]);
    assert_eq!(stats.completed, vec!["SetAlarm@student".to_string()]);
}

#[test]
fn a_wrong_episode_scores_zero_and_the_goal_comes_from_the_device() {
    let device = FakeDevice::start(FakeConfig {
        tasks: vec![alarm_task()],
        ..FakeConfig::default()
    })
    .unwrap();
    let factory = Replay::new(HashMap::from([(
        "SetAlarm@student".to_string(),
        vec![
            Action::Home,
            Action::Answer {
                text: "done".into(),
            },
        ],
    )]));
    let played = play_remote(
        &client(device.url()),
        &policy(0),
        &factory,
        &spec("SetAlarm@student"),
    )
    .unwrap();
    assert_eq!(played.run.episode.score, Some(0.0));
    assert_eq!(played.run.episode.final_answer.as_deref(), Some("done"));
    // `answer` ends the episode, as in KnowU-Bench's runner.
    assert_eq!(played.run.steps.len(), 2);
    assert!(played.eval.unwrap().reason.contains("expected"));
}

#[test]
fn an_unhealthy_spell_is_retried_from_a_fresh_init() {
    let device = FakeDevice::start(FakeConfig {
        tasks: vec![alarm_task()],
        unhealthy_once: Some("SetAlarm@student".into()),
        ..FakeConfig::default()
    })
    .unwrap();
    let factory = Replay::new(alarm_actions());
    let played = play_remote(
        &client(device.url()),
        &policy(2),
        &factory,
        &spec("SetAlarm@student"),
    )
    .unwrap();
    assert_eq!(played.attempts, 2);
    assert_eq!(played.run.episode.score, Some(1.0));
    // Only the successful attempt is recorded: 4 agent steps, numbered from 1.
    let steps: Vec<u32> = played.run.steps.iter().map(|s| s.step).collect();
    assert_eq!(steps, vec![1, 2, 3, 4]);
    let stats = device.stats();
    assert_eq!(stats.inits.len(), 2, "{:?}", stats.inits);
    assert!(
        stats.health_checks >= 3,
        "health was not re-checked: {}",
        stats.health_checks
    );
}

#[test]
fn a_device_that_stays_down_fails_with_its_cause_after_the_retries() {
    let device = FakeDevice::start(FakeConfig {
        tasks: vec![alarm_task()],
        down_for: Some("SetAlarm@student".into()),
        ..FakeConfig::default()
    })
    .unwrap();
    let factory = Replay::new(alarm_actions());
    let e = play_remote(
        &client(device.url()),
        &policy(2),
        &factory,
        &spec("SetAlarm@student"),
    )
    .unwrap_err();
    assert!(
        matches!(e, DeviceError::Unhealthy { status: 503, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("POST /task/init"), "{e}");
    assert_eq!(device.stats().inits.len(), 3, "1 attempt + 2 retries");
}

#[test]
fn client_failures_are_classified() {
    let device = FakeDevice::start(FakeConfig {
        tasks: vec![alarm_task()],
        ..FakeConfig::default()
    })
    .unwrap();
    let c = client(device.url());
    block_on(c.health()).unwrap();
    assert_eq!(
        block_on(c.goal("SetAlarm@student")).unwrap(),
        "Set my usual weekday alarm."
    );
    let e = block_on(c.init_task("NoSuchTask")).unwrap_err();
    assert!(
        matches!(e, DeviceError::Rejected { status: 404, .. }) && !e.is_retryable(),
        "{e}"
    );
    assert!(e.to_string().contains("unknown task NoSuchTask"), "{e}");
    let e = block_on(c.step(&json!({"action_type": "wait"}))).unwrap_err();
    assert!(
        matches!(e, DeviceError::Rejected { status: 409, .. }),
        "{e}"
    );
    let url = device.url().to_string();
    drop(device);
    let e = block_on(client(&url).health()).unwrap_err();
    assert!(
        matches!(e, DeviceError::Unreachable { .. }) && e.is_retryable(),
        "{e}"
    );
    assert!(DeviceClient::new("localhost:1", "d", Duration::from_secs(1)).is_err());
}

#[test]
fn suites_are_sent_as_query_parameters() {
    let device = FakeDevice::start(FakeConfig::default()).unwrap();
    let suite = [
        ("target_family".to_string(), "knowu_bench".to_string()),
        ("user_log_source".to_string(), "clean".to_string()),
    ]
    .into();
    block_on(client(device.url()).switch_suite(&suite)).unwrap();
    assert_eq!(device.stats().suites, vec![suite]);
}
