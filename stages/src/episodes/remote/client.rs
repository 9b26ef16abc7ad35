//! An async HTTP client for one device's env server (the API in docs/remote-device.md, a
//! subset of MobileWorld's FastAPI server that KnowU-Bench extends). Requests run as tasks on the
//! model client's I/O runtime ([`crate::llm::io_runtime`]), so an episode waiting on its device
//! holds no thread. Every call has a timeout and classifies failures into [`DeviceError`]s;
//! [`DevicePatience::wait_healthy`] is the recovery half: after a retryable failure the episode
//! waits for `/health` with doubling backoff (the engine's [`RetryPolicy`]), then starts again
//! from `POST /task/init` (a half-played episode cannot be resumed on a reset device).

use std::collections::BTreeMap;
use std::time::Duration;

use prefflow_engine::retry::{Retry, RetryPolicy};
use reqwest::{Client, RequestBuilder};
use serde::Deserialize;
use serde_json::{json, Value};

use super::error::DeviceError;
use super::screen::Element;

/// The `adb` device id the server drives when none is configured (MobileWorld's default).
pub const DEFAULT_DEVICE_ID: &str = "emulator-5554";

/// What `/task/eval` reports.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Evaluation {
    /// In [0, 1]; KnowU counts > 0.99 as success.
    pub score: f64,
    /// The evaluator's reason.
    #[serde(default)]
    pub reason: String,
}

/// One device's env server.
pub struct DeviceClient {
    http: Client,
    base: String,
    device: String,
}

impl DeviceClient {
    /// A client for the server at `url` driving adb device `device`, with a per-request timeout.
    pub fn new(url: &str, device: &str, timeout: Duration) -> Result<Self, DeviceError> {
        let base = url.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(DeviceError::BadUrl {
                url: url.into(),
                why: "must start with http:// or https://".into(),
            });
        }
        let http = Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .build()
            .map_err(|e| DeviceError::BadUrl {
                url: url.into(),
                why: format!("cannot build an HTTP client: {e}"),
            })?;
        Ok(Self {
            http,
            base,
            device: device.into(),
        })
    }

    /// The server's base URL.
    pub fn url(&self) -> &str {
        &self.base
    }

    /// `GET /health`: Ok when the server answers 2xx and does not say `"ok": false`.
    pub async fn health(&self) -> Result<(), DeviceError> {
        let what = "GET /health";
        let body = self.send(self.http.get(self.at("/health")), what).await?;
        if body.get("ok") == Some(&Value::Bool(false)) {
            return Err(DeviceError::Unhealthy {
                url: self.base.clone(),
                what: what.into(),
                status: 200,
                detail: format!("the server reports ok=false: {body}"),
            });
        }
        Ok(())
    }

    /// `POST /suite_family/switch?target_family=…&…`: every suite field is a query parameter.
    pub async fn switch_suite(&self, suite: &BTreeMap<String, String>) -> Result<(), DeviceError> {
        let req = self.http.post(self.at("/suite_family/switch")).query(suite);
        self.send(req, "POST /suite_family/switch").await.map(drop)
    }

    /// `POST /task/init {task_name, req_device}`: resets the device to the task's snapshot.
    pub async fn init_task(&self, task: &str) -> Result<(), DeviceError> {
        let req = self
            .http
            .post(self.at("/task/init"))
            .json(&self.task_body(task));
        self.send(req, "POST /task/init").await.map(drop)
    }

    /// `GET /task/goal?task_name=…`: the instruction (a JSON string).
    pub async fn goal(&self, task: &str) -> Result<String, DeviceError> {
        let what = "GET /task/goal";
        let req = self
            .http
            .get(self.at("/task/goal"))
            .query(&[("task_name", task)]);
        match self.send(req, what).await? {
            Value::String(s) => Ok(s),
            other => Err(self.malformed(what, format!("expected a JSON string, got {other}"))),
        }
    }

    /// `POST /step {device, action}`: the action's `result` as text (the simulated user's reply
    /// for `ask_user`).
    pub async fn step(&self, action: &Value) -> Result<String, DeviceError> {
        let body = json!({"device": self.device, "action": action});
        let reply = self
            .send(self.http.post(self.at("/step")).json(&body), "POST /step")
            .await?;
        Ok(match reply.get("result") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => "OK".into(),
            Some(other) => other.to_string(),
        })
    }

    /// `GET /a11y?device=…`: the current screen's elements.
    pub async fn screen(&self) -> Result<Vec<Element>, DeviceError> {
        let what = "GET /a11y";
        let req = self
            .http
            .get(self.at("/a11y"))
            .query(&[("device", self.device.as_str())]);
        let body = self.send(req, what).await?;
        let elements = body.get("elements").cloned().unwrap_or(Value::Null);
        serde_json::from_value(elements)
            .map_err(|e| self.malformed(what, format!("`elements`: {e}")))
    }

    /// `GET /task/eval {task_name, req_device}` (a JSON body on GET, as MobileWorld's server
    /// reads it): the score and reason.
    pub async fn eval(&self, task: &str) -> Result<Evaluation, DeviceError> {
        let what = "GET /task/eval";
        let req = self
            .http
            .get(self.at("/task/eval"))
            .json(&self.task_body(task));
        let body = self.send(req, what).await?;
        let eval: Evaluation = serde_json::from_value(body)
            .map_err(|e| self.malformed(what, format!("expected {{score, reason}}: {e}")))?;
        if !(0.0..=1.0).contains(&eval.score) {
            return Err(self.malformed(what, format!("score {} is outside [0, 1]", eval.score)));
        }
        Ok(eval)
    }

    /// `POST /task/tear_down {task_name, req_device}`.
    pub async fn tear_down(&self, task: &str) -> Result<(), DeviceError> {
        let req = self
            .http
            .post(self.at("/task/tear_down"))
            .json(&self.task_body(task));
        self.send(req, "POST /task/tear_down").await.map(drop)
    }

    fn at(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn task_body(&self, task: &str) -> Value {
        json!({"task_name": task, "req_device": self.device})
    }

    fn malformed(&self, what: &str, why: String) -> DeviceError {
        DeviceError::Malformed {
            url: self.base.clone(),
            what: what.into(),
            why,
        }
    }

    /// Sends one request (as a task on the I/O runtime) and classifies the outcome; 2xx bodies
    /// are parsed as JSON (an empty body is `null`).
    async fn send(&self, req: RequestBuilder, what: &str) -> Result<Value, DeviceError> {
        let exchange = crate::llm::io_runtime().spawn(async move {
            let res = req.send().await.map_err(|e| error_chain(&e))?;
            let status = res.status().as_u16();
            let text = res
                .text()
                .await
                .map_err(|e| format!("reading the body: {}", error_chain(&e)))?;
            Ok::<_, String>((status, text))
        });
        let outcome = match exchange.await {
            Ok(outcome) => outcome,
            Err(e) => Err(format!("the request task ended: {e}")),
        };
        let (status, text) = outcome.map_err(|cause| DeviceError::Unreachable {
            url: self.base.clone(),
            what: what.into(),
            cause,
        })?;
        let body: Option<Value> = serde_json::from_str(&text).ok();
        match status {
            200..=299 if text.trim().is_empty() => Ok(Value::Null),
            200..=299 => {
                body.ok_or_else(|| self.malformed(what, format!("not JSON: {}", clip(&text))))
            }
            400..=499 => Err(DeviceError::Rejected {
                url: self.base.clone(),
                what: what.into(),
                status,
                detail: detail(body.as_ref(), &text),
            }),
            _ => Err(DeviceError::Unhealthy {
                url: self.base.clone(),
                what: what.into(),
                status,
                detail: detail(body.as_ref(), &text),
            }),
        }
    }
}

/// The server's explanation: FastAPI's `detail`, our `error`, or the text itself.
fn detail(body: Option<&Value>, text: &str) -> String {
    let field = body.and_then(|b| b.get("detail").or_else(|| b.get("error")));
    match field {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => clip(text),
    }
}

fn clip(text: &str) -> String {
    let t = text.trim();
    match t.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &t[..i]),
        None => t.to_string(),
    }
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        parts.push(s.to_string());
        source = s.source();
    }
    parts.join(": ")
}

/// How hard to try before giving a device up for one episode: two loops of the engine's
/// [`RetryPolicy`] (its async waits, no thread asleep).
#[derive(Debug, Clone, Copy)]
pub struct DevicePatience {
    /// Replays of an episode after a retryable device failure; no wait of their own (each
    /// replay starts by waiting for `/health`).
    pub replays: RetryPolicy,
    /// `/health` polls after the first: `backoff`, `2·backoff`, … apart, capped at a minute.
    pub health: RetryPolicy,
}

impl DevicePatience {
    /// `retries` replays of an episode; `health_polls` polls of `/health` (at least one),
    /// the first wait `backoff`.
    pub fn new(retries: u32, backoff: Duration, health_polls: u32) -> Self {
        let plain = |retries, backoff| RetryPolicy {
            retries,
            backoff,
            max_delay: Duration::from_secs(60),
            jitter: false,
        };
        Self {
            replays: plain(retries, Duration::ZERO),
            health: plain(health_polls.max(1) - 1, backoff),
        }
    }

    /// Polls `/health` until the device is healthy; the last failure when it never becomes
    /// healthy, or the first one that waiting cannot fix.
    pub async fn wait_healthy(&self, client: &DeviceClient) -> Result<(), DeviceError> {
        let poll = |_| client.health();
        let classify = |e: &DeviceError| {
            if e.is_retryable() {
                tracing::debug!("{e}; polling /health again");
                Retry::After(None)
            } else {
                Retry::No
            }
        };
        self.health
            .run(poll, classify)
            .await
            .map(drop)
            .map_err(|gave_up| gave_up.error)
    }
}
