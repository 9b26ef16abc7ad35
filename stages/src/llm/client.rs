//! The client: request building, record/replay, retries.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use prefflow_engine::keys::hash_bytes;
use prefflow_engine::retry::{Retry, RetryPolicy};
use prefflow_engine::store::Store;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::error::LlmError;
use super::types::{ChatRequest, LlmConfig, ToolCall, Usage};

/// Longest wait between attempts, whatever Retry-After says.
const MAX_WAIT: Duration = Duration::from_secs(60);

/// A model's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// Text content.
    pub content: Option<String>,
    /// Tool calls.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// Why generation stopped.
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// Token usage (as recorded when the reply was first fetched).
    pub usage: Usage,
    /// True when served from the record/replay cache.
    #[serde(skip)]
    pub from_cache: bool,
    /// Attempts the live call took (0 when cached).
    #[serde(skip)]
    pub attempts: u32,
    /// The cache key of the request.
    #[serde(skip)]
    pub cache_key: String,
}

/// A recorded exchange, as stored in the cache.
#[derive(Serialize, Deserialize)]
struct Recorded {
    request: Value,
    reply: Reply,
}

/// A request body as the bytes that are hashed, sent and recorded.
fn body_bytes(body: &Value) -> Vec<u8> {
    // Serializing a JSON value cannot fail.
    serde_json::to_vec(body).unwrap_or_default()
}

/// The record of one exchange, `{"request": …, "reply": …}`, with the already serialized body
/// spliced in rather than serialized again.
fn recorded_bytes(body: &[u8], reply: &Reply) -> Result<Vec<u8>, LlmError> {
    let reply = serde_json::to_vec(reply).map_err(|e| LlmError::Cache(e.to_string()))?;
    let mut out = Vec::with_capacity(body.len() + reply.len() + 24);
    out.extend_from_slice(b"{\"request\":");
    out.extend_from_slice(body);
    out.extend_from_slice(b",\"reply\":");
    out.extend_from_slice(&reply);
    out.push(b'}');
    Ok(out)
}

/// A chat-completions client bound to one endpoint and one record/replay cache.
pub struct LlmClient<'a> {
    config: LlmConfig,
    endpoint: String,
    http: reqwest::blocking::Client,
    cache: &'a dyn Store,
    offline: bool,
}

impl<'a> LlmClient<'a> {
    /// A client for `config`, recording into `cache`. With `offline`, only cached replies are used.
    pub fn new(config: LlmConfig, cache: &'a dyn Store, offline: bool) -> Result<Self, LlmError> {
        let base_url = config.resolved_base_url()?;
        let endpoint = format!("{}/chat/completions", base_url.trim_end_matches('/'));
        let http = shared_http_client(Duration::from_secs_f64(config.timeout_s.max(0.001)))?;
        Ok(Self {
            config,
            endpoint,
            http,
            cache,
            offline,
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    /// The request body sent to the server (and recorded with the reply).
    fn body(&self, request: &ChatRequest) -> Value {
        let mut body = json!({ "model": self.config.model, "messages": request.messages });
        if !request.tools.is_empty() {
            body["tools"] = json!(request.tools);
        }
        if request.json_mode {
            body["response_format"] = json!({ "type": "json_object" });
        }
        if let Some(t) = self.config.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(s) = self.config.seed {
            body["seed"] = json!(s);
        }
        if let Some(m) = self.config.max_tokens {
            body["max_tokens"] = json!(m);
        }
        body
    }

    /// The record/replay key: endpoint, body and epoch. Never the key or any header.
    pub fn cache_key(&self, request: &ChatRequest, epoch: u32) -> String {
        self.key_of(&body_bytes(&self.body(request)), epoch)
    }

    /// Hashes the serialized body (object keys are sorted: serde_json's maps are ordered), so
    /// the body is serialized once per call for the key, the request and the record.
    fn key_of(&self, body: &[u8], epoch: u32) -> String {
        let mut bytes = Vec::with_capacity(body.len() + self.endpoint.len() + 16);
        bytes.extend_from_slice(self.endpoint.as_bytes());
        bytes.push(0x1f);
        bytes.extend_from_slice(body);
        bytes.push(0x1f);
        bytes.extend_from_slice(epoch.to_string().as_bytes());
        hash_bytes(&bytes)
    }

    /// Sends `request` (or replays it). `epoch` separates independent repeats of one request.
    pub fn chat(&self, request: &ChatRequest, epoch: u32) -> Result<Reply, LlmError> {
        // The body is built once: it keys the record, is sent, and is recorded.
        let body = body_bytes(&self.body(request));
        let key = self.key_of(&body, epoch);
        let path = format!("llm/{}/{key}.json", &key[..2]);
        if let Some(mut reply) = self.replay(&path)? {
            reply.from_cache = true;
            reply.cache_key = key;
            return Ok(reply);
        }
        if self.offline {
            return Err(LlmError::OfflineMiss {
                model: self.config.model.clone(),
                key,
            });
        }
        let (mut reply, attempts) = self.call(&body)?;
        let bytes = recorded_bytes(&body, &reply)?;
        self.cache
            .put(&path, &bytes)
            .map_err(|e| LlmError::Cache(e.to_string()))?;
        reply.attempts = attempts;
        reply.cache_key = key;
        Ok(reply)
    }

    fn replay(&self, path: &str) -> Result<Option<Reply>, LlmError> {
        let Some(bytes) = self
            .cache
            .get(path)
            .map_err(|e| LlmError::Cache(e.to_string()))?
        else {
            return Ok(None);
        };
        // An unreadable entry is treated as absent and re-recorded.
        Ok(serde_json::from_slice::<Recorded>(&bytes)
            .ok()
            .map(|r| r.reply))
    }

    fn api_key(&self) -> Result<Option<String>, LlmError> {
        match &self.config.api_key_env {
            None => Ok(None),
            Some(var) => std::env::var(var)
                .map(Some)
                .map_err(|_| LlmError::MissingKey { var: var.clone() }),
        }
    }

    /// The engine's retry policy for this endpoint's settings: the one retry layer for model calls.
    fn policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_delay: MAX_WAIT,
            ..RetryPolicy::new(
                self.config.max_retries,
                Duration::from_millis(self.config.backoff_ms),
            )
        }
    }

    /// The live call with retries; returns the reply and the attempts used. A reply that is not
    /// a usable chat completion (truncated or unparsable body, no choices, no message) is a
    /// provider fault like a 5xx and is retried; so are 429, 5xx and transport failures.
    fn call(&self, body: &[u8]) -> Result<(Reply, u32), LlmError> {
        let key = self.api_key()?;
        let attempt = |_: u32| self.attempt(body, key.as_deref());
        self.policy()
            .run_blocking(attempt, Attempt::retry)
            .map_err(|gave_up| gave_up.error.into_error(&self.endpoint, gave_up.attempts))
    }

    /// One attempt: send, read, parse.
    fn attempt(&self, body: &[u8], key: Option<&str>) -> Result<Reply, Attempt> {
        let mut req = self
            .http
            .post(&self.endpoint)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_vec());
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        let resp = req.send().map_err(|e| Attempt::Transient {
            why: describe(&e),
            hint: None,
        })?;
        let status = resp.status();
        let hint = retry_after(resp.headers());
        let text = resp.text().map_err(|e| Attempt::Transient {
            why: format!("reading the response failed: {e}"),
            hint: None,
        });
        classify_response(&self.endpoint, status.as_u16(), hint, text)
    }
}

/// Why one attempt failed, and whether another may help.
#[derive(Debug)]
enum Attempt {
    /// A provider fault: retried (after `hint` when the server gave one).
    Transient { why: String, hint: Option<Duration> },
    /// No retry can fix it.
    Permanent(LlmError),
}

impl Attempt {
    fn retry(&self) -> Retry {
        match self {
            Attempt::Transient { hint, .. } => Retry::After(*hint),
            Attempt::Permanent(_) => Retry::No,
        }
    }

    /// The error the caller sees once the policy stopped retrying.
    fn into_error(self, endpoint: &str, attempts: u32) -> LlmError {
        match self {
            Attempt::Transient { why, .. } => LlmError::Exhausted {
                endpoint: endpoint.to_string(),
                attempts,
                last: why,
            },
            Attempt::Permanent(e) => e,
        }
    }
}

/// The verdict on one HTTP exchange: a reply, a transient fault (429, 5xx, a body that is not a
/// usable completion) or a permanent error (other statuses).
fn classify_response(
    endpoint: &str,
    status: u16,
    hint: Option<Duration>,
    text: Result<String, Attempt>,
) -> Result<Reply, Attempt> {
    let transient = |why: String| Attempt::Transient { why, hint };
    if status == 429 || (500..600).contains(&status) {
        return Err(transient(format!("HTTP {status}")));
    }
    let text = text?;
    if !(200..300).contains(&status) {
        return Err(Attempt::Permanent(LlmError::Http {
            endpoint: endpoint.to_string(),
            status,
            body: excerpt(&text),
        }));
    }
    parse_reply(endpoint, &text).map_err(|e| transient(e.to_string()))
}

/// HTTP clients are shared by the whole process: building one (TLS roots, a runtime thread)
/// costs far more than a request, and clients keep connection pools. Blocking clients kept per
/// timeout. Each blocking client drives its requests on one internal
/// thread; with 64 requests in flight that one thread's per-request work queues up, so requests
/// are spread over a few clients (their threads run in parallel on the machine's cores).
const CLIENTS_PER_TIMEOUT: usize = 4;

type ClientPool = (Vec<reqwest::blocking::Client>, usize);

fn shared_http_client(timeout: Duration) -> Result<reqwest::blocking::Client, LlmError> {
    static CLIENTS: OnceLock<Mutex<HashMap<u128, ClientPool>>> = OnceLock::new();
    let clients = CLIENTS.get_or_init(Mutex::default);
    let mut clients = clients
        .lock()
        .map_err(|_| LlmError::Cache("HTTP client registry poisoned".into()))?;
    let (pool, next) = clients.entry(timeout.as_millis()).or_default();
    if pool.len() < CLIENTS_PER_TIMEOUT {
        let client = reqwest::blocking::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| LlmError::Cache(format!("cannot build HTTP client: {e}")))?;
        pool.push(client);
    }
    *next = (*next + 1) % pool.len();
    Ok(pool[*next].clone())
}

fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| *s >= 0.0)
        .map(Duration::from_secs_f64)
}

fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "request timed out".into()
    } else if e.is_connect() {
        format!("connection failed: {e}")
    } else {
        format!("request failed: {e}")
    }
}

fn excerpt(text: &str) -> String {
    text.chars().take(200).collect()
}

#[derive(Deserialize)]
struct WireResponse {
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct WireChoice {
    message: WireMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCall>>,
}

fn parse_reply(endpoint: &str, text: &str) -> Result<Reply, LlmError> {
    let malformed = |detail: String| LlmError::Malformed {
        endpoint: endpoint.to_string(),
        detail,
        excerpt: excerpt(text),
    };
    let wire: WireResponse = serde_json::from_str(text).map_err(|e| malformed(e.to_string()))?;
    let choice = wire
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| malformed("no choices".into()))?;
    Ok(Reply {
        content: choice.message.content,
        tool_calls: choice.message.tool_calls.unwrap_or_default(),
        finish_reason: choice.finish_reason,
        usage: wire.usage.unwrap_or_default(),
        from_cache: false,
        attempts: 0,
        cache_key: String::new(),
    })
}
