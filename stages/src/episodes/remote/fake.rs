//! A fake device: a tiny env server on 127.0.0.1 that follows docs/remote-device.md, for tests
//! (no emulator exists on the machines this project is built on). It keeps one task at a time
//! like a real emulator, records every call, answers `ask_user` with a scripted reply, scores 1.0
//! when the episode's actions match the task's expected sequence, and can inject the failures
//! the adapter must survive: one unhealthy spell, or a task whose init always fails.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

/// One task the fake device knows.
#[derive(Debug, Clone, Default)]
pub struct FakeTask {
    /// `task_name`.
    pub name: String,
    /// What `GET /task/goal` returns.
    pub goal: String,
    /// The device actions that solve it; each is matched as a subset of the action sent.
    pub expected: Vec<Value>,
    /// What the simulated user answers to `ask_user`.
    pub reply: String,
}

/// How the fake device behaves.
#[derive(Debug, Clone, Default)]
pub struct FakeConfig {
    /// The tasks it serves.
    pub tasks: Vec<FakeTask>,
    /// The first `POST /step` of this task answers 503 and the next `/health` too (one unhealthy
    /// spell; the task's state is lost, as when an emulator restarts).
    pub unhealthy_once: Option<String>,
    /// `POST /task/init` of this task always answers 503 (the device is down for it).
    pub down_for: Option<String>,
    /// Time each step takes, so concurrent episodes overlap in time.
    pub step_delay: Duration,
}

/// What the fake device saw.
#[derive(Debug, Clone, Default)]
pub struct FakeStats {
    /// `task_name` of every `POST /task/init` (failed ones included).
    pub inits: Vec<String>,
    /// Episodes that reached `POST /task/tear_down`.
    pub completed: Vec<String>,
    /// Inits that arrived while another episode was still running on this device.
    pub overlaps: usize,
    /// The most requests in flight at once.
    pub max_in_flight: usize,
    /// Query parameters of every suite switch.
    pub suites: Vec<BTreeMap<String, String>>,
    /// Questions received through `ask_user`.
    pub questions: Vec<String>,
    /// Every action received, with its task.
    pub actions: Vec<(String, Value)>,
    /// `GET /health` calls.
    pub health_checks: usize,
}

#[derive(Default)]
struct DeviceState {
    config: FakeConfig,
    stats: FakeStats,
    active: Option<String>,
    app: Option<String>,
    episode_actions: Vec<Value>,
    unhealthy_polls: u32,
    spell_used: bool,
    in_flight: usize,
}

type Shared = Arc<Mutex<DeviceState>>;

fn lock(s: &Shared) -> MutexGuard<'_, DeviceState> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// A running fake device; stops serving when dropped.
pub struct FakeDevice {
    url: String,
    state: Shared,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeDevice {
    /// Binds a free loopback port and serves `config` on a background thread.
    pub fn start(config: FakeConfig) -> std::io::Result<Self> {
        let state: Shared = Arc::new(Mutex::new(DeviceState {
            config,
            ..DeviceState::default()
        }));
        let listener = std::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let app = router(state.clone());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let thread = std::thread::spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await;
            });
        });
        Ok(Self {
            url: format!("http://{addr}"),
            state,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A copy of what the device saw so far.
    pub fn stats(&self) -> FakeStats {
        lock(&self.state).stats.clone()
    }
}

impl Drop for FakeDevice {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn router(state: Shared) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/suite_family/switch", post(switch_suite))
        .route("/task/init", post(init))
        .route("/task/goal", get(goal))
        .route("/step", post(step))
        .route("/a11y", get(a11y))
        .route("/task/eval", get(eval))
        .route("/task/tear_down", post(tear_down))
        .with_state(state)
}

fn fail(status: StatusCode, detail: &str) -> Response {
    (status, Json(json!({"detail": detail}))).into_response()
}

/// Counts a request in flight for its lifetime.
struct InFlight(Shared);

impl InFlight {
    fn enter(s: &Shared) -> Self {
        let mut st = lock(s);
        st.in_flight += 1;
        st.stats.max_in_flight = st.stats.max_in_flight.max(st.in_flight);
        Self(s.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        lock(&self.0).in_flight -= 1;
    }
}

async fn health(State(s): State<Shared>) -> Response {
    let mut st = lock(&s);
    st.stats.health_checks += 1;
    if st.unhealthy_polls > 0 {
        st.unhealthy_polls -= 1;
        return (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"ok": false}))).into_response();
    }
    Json(json!({"ok": true, "devices": ["emulator-5554"]})).into_response()
}

async fn switch_suite(State(s): State<Shared>, RawQuery(raw): RawQuery) -> Response {
    let q = parse_query(raw.as_deref().unwrap_or(""));
    if !q.contains_key("target_family") {
        return fail(
            StatusCode::UNPROCESSABLE_ENTITY,
            "target_family is required",
        );
    }
    lock(&s).stats.suites.push(q);
    Json(json!({"switched": true})).into_response()
}

#[derive(Deserialize)]
struct TaskOp {
    task_name: String,
}

async fn init(State(s): State<Shared>, Json(op): Json<TaskOp>) -> Response {
    let _f = InFlight::enter(&s);
    {
        let mut st = lock(&s);
        st.stats.inits.push(op.task_name.clone());
        if st.config.down_for.as_deref() == Some(op.task_name.as_str()) {
            return fail(
                StatusCode::SERVICE_UNAVAILABLE,
                "Device is not healthy: emulator-5554",
            );
        }
        if !st.config.tasks.iter().any(|t| t.name == op.task_name) {
            return fail(
                StatusCode::NOT_FOUND,
                &format!("unknown task {}", op.task_name),
            );
        }
        if st.active.is_some() {
            st.stats.overlaps += 1;
        }
        st.active = Some(op.task_name);
        st.app = None;
        st.episode_actions.clear();
    }
    let delay = lock(&s).config.step_delay;
    tokio::time::sleep(delay).await;
    Json(json!("OK")).into_response()
}

async fn goal(State(s): State<Shared>, RawQuery(raw): RawQuery) -> Response {
    let q = parse_query(raw.as_deref().unwrap_or(""));
    let name = q.get("task_name").cloned().unwrap_or_default();
    let st = lock(&s);
    match st.config.tasks.iter().find(|t| t.name == name) {
        Some(t) => Json(json!(t.goal)).into_response(),
        None => fail(StatusCode::NOT_FOUND, &format!("unknown task {name}")),
    }
}

#[derive(Deserialize)]
struct StepBody {
    action: Value,
}

async fn step(State(s): State<Shared>, Json(body): Json<StepBody>) -> Response {
    let _f = InFlight::enter(&s);
    let delay = lock(&s).config.step_delay;
    tokio::time::sleep(delay).await;
    let mut st = lock(&s);
    let Some(task) = st.active.clone() else {
        return fail(
            StatusCode::CONFLICT,
            "no task is running; POST /task/init first",
        );
    };
    if st.config.unhealthy_once.as_deref() == Some(task.as_str()) && !st.spell_used {
        st.spell_used = true;
        st.unhealthy_polls = 1;
        st.active = None;
        return fail(
            StatusCode::SERVICE_UNAVAILABLE,
            "Device is not healthy: emulator-5554",
        );
    }
    let action = body.action;
    st.stats.actions.push((task.clone(), action.clone()));
    st.episode_actions.push(action.clone());
    let kind = action
        .get("action_type")
        .and_then(Value::as_str)
        .unwrap_or("");
    let result = match kind {
        "ask_user" => {
            let q = action.get("text").and_then(Value::as_str).unwrap_or("");
            st.stats.questions.push(q.to_string());
            let reply = st.config.tasks.iter().find(|t| t.name == task);
            reply.map(|t| t.reply.clone()).unwrap_or_default()
        }
        "open_app" => {
            st.app = action
                .get("app_name")
                .and_then(Value::as_str)
                .map(str::to_string);
            "OK".into()
        }
        "navigate_home" => {
            st.app = None;
            "OK".into()
        }
        "" => return fail(StatusCode::BAD_REQUEST, "action_type is required"),
        _ => "OK".into(),
    };
    Json(json!({"device": "emulator-5554", "action": action, "result": result})).into_response()
}

async fn a11y(State(s): State<Shared>) -> Response {
    let st = lock(&s);
    let elements = match &st.app {
        None => json!([
            {"index": 1, "text": "Messages", "class": "android.widget.TextView", "bounds": [0, 0, 100, 100]},
            {"index": 2, "text": "Clock", "class": "android.widget.TextView", "bounds": [100, 0, 200, 100]},
        ]),
        Some(app) => json!([
            {"index": 1, "text": format!("{app}: message"), "class": "android.widget.EditText", "bounds": [0, 100, 400, 160]},
            {"index": 2, "text": format!("{app}: send"), "class": "android.widget.Button", "bounds": [0, 200, 400, 260]},
        ]),
    };
    Json(json!({"elements": elements})).into_response()
}

async fn eval(State(s): State<Shared>, Json(op): Json<TaskOp>) -> Response {
    let st = lock(&s);
    if st.active.as_deref() != Some(op.task_name.as_str()) {
        return fail(
            StatusCode::CONFLICT,
            "Requested task is not the currently running task",
        );
    }
    let Some(task) = st.config.tasks.iter().find(|t| t.name == op.task_name) else {
        return fail(StatusCode::NOT_FOUND, "unknown task");
    };
    let matched = task.expected.len() == st.episode_actions.len()
        && task
            .expected
            .iter()
            .zip(&st.episode_actions)
            .all(|(want, got)| is_subset(want, got));
    let (score, reason) = if matched {
        (1.0, "the expected actions happened".to_string())
    } else {
        (0.0, format!("expected {:?}", task.expected))
    };
    Json(json!({"score": score, "reason": reason, "task_name": op.task_name})).into_response()
}

async fn tear_down(State(s): State<Shared>, Json(op): Json<TaskOp>) -> Response {
    let mut st = lock(&s);
    if st.active.as_deref() == Some(op.task_name.as_str()) {
        st.active = None;
        st.stats.completed.push(op.task_name);
    }
    Json(json!("OK")).into_response()
}

fn is_subset(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => w.iter().all(|(k, v)| g.get(k) == Some(v)),
        _ => want == got,
    }
}

/// `a=b&c=d` with `+` and `%XX` decoded (the fake's only query parser; axum's needs a feature).
fn parse_query(raw: &str) -> BTreeMap<String, String> {
    raw.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b'+', _) => {
                out.push(b' ');
                i += 1;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
