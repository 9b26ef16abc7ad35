//! The one model client: chat completions and embeddings, async, with record/replay, one retry
//! layer and a bounded connection pool per endpoint.
//!
//! - **Endpoints.** Every (base URL, model) pair gets one [`Endpoint`] for the whole process: a
//!   `reqwest` connection pool and a semaphore of `concurrency` slots. A request holds a slot
//!   only while it is on the wire; the backoff between attempts sleeps on the runtime without
//!   one, so a rate-limited model does not starve its own pool.
//! - **I/O.** Requests run as tasks on one small process-wide runtime ([`io_runtime`], two
//!   threads), whichever runtime or thread awaits them: thousands of requests in flight cost
//!   tasks, not OS threads, and a connection pool is never shared between runtimes. Callers
//!   are async all the way up (agents, simulators, judges, embedding retrieval and the stage
//!   kinds running them), so a request waiting on the network holds no thread of its caller.
//! - **Retries.** [`RetryPolicy`] of the engine, the one retry layer: 429, 5xx, transport
//!   failures and bodies that are not a usable answer (truncated or unparsable, no choices, no
//!   message) are provider faults and are retried with jittered doubling backoff (honouring
//!   `Retry-After`); when retries run out the error is [`LlmError::Exhausted`], which the engine
//!   does not retry again. Other statuses (400, 401, 404) are permanent.
//! - **Record/replay.** Every answered request is stored content-addressed in the run's store
//!   (endpoint, body and epoch — never the key), so a finished run replays with zero network
//!   and `--offline` turns a miss into [`LlmError::OfflineMiss`].
//! - **One request per identical request in flight.** A request whose key (and store) matches
//!   one already on its way — judge prompts repeat across epochs and variants, every episode of
//!   a world embeds the same history — waits for that one's answer instead of sending again,
//!   and is then counted as replayed, as it would be had it come a moment later. Only answers
//!   are shared: when the first request fails (or is dropped), each waiting one sends its own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use prefflow_engine::keys::{hash_bytes, hash_json};
use prefflow_engine::retry::{Retry, RetryPolicy};
use prefflow_engine::store::Store;
use prefflow_engine::usage::UsageMeter;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::sync::{watch, Semaphore};

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

/// One model endpoint as the process shares it: its connection pool, its request slots and
/// the requests on their way to it.
pub struct Endpoint {
    http: reqwest::Client,
    slots: Semaphore,
    concurrency: usize,
    chats: InFlight<Reply>,
    embeddings: InFlight<Vec<Vec<f64>>>,
}

impl Endpoint {
    /// Requests this endpoint lets be on the wire at once.
    pub fn concurrency(&self) -> usize {
        self.concurrency
    }

    /// Requests on the wire right now.
    pub fn in_flight(&self) -> usize {
        self.concurrency - self.slots.available_permits()
    }
}

/// The process's endpoint for `base_url` and `model`, created on first use with
/// `concurrency` slots (later callers share it; a larger `concurrency` widens it).
fn endpoint(base_url: &str, model: &str, concurrency: usize) -> Result<Arc<Endpoint>, LlmError> {
    type Registry = Mutex<HashMap<(String, String), Arc<Endpoint>>>;
    static ENDPOINTS: OnceLock<Registry> = OnceLock::new();
    let mut all = ENDPOINTS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let key = (
        base_url.trim_end_matches('/').to_string(),
        model.to_string(),
    );
    if let Some(known) = all.get(&key) {
        if known.concurrency >= concurrency {
            return Ok(known.clone());
        }
    }
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .build()
        .map_err(|e| LlmError::Cache(format!("cannot build an HTTP client: {e}")))?;
    let made = Arc::new(Endpoint {
        http,
        slots: Semaphore::new(concurrency),
        concurrency,
        chats: InFlight::default(),
        embeddings: InFlight::default(),
    });
    all.insert(key, made.clone());
    Ok(made)
}

/// What identifies one request in flight: the store it is recorded in (its address: a request
/// in flight borrows its store, so the address cannot be reused meanwhile) and its cache key.
type FlightKey = (usize, String);

/// The requests of one kind (chat or embeddings) on their way to an endpoint, each with the
/// channel its answer will be published on.
struct InFlight<T>(Mutex<HashMap<FlightKey, watch::Receiver<Option<T>>>>);

impl<T> Default for InFlight<T> {
    fn default() -> Self {
        Self(Mutex::default())
    }
}

/// A caller's part in a request: it sends it, or it waits for the one already sent.
enum Flight<'a, T> {
    Lead(Leader<'a, T>),
    Follow(watch::Receiver<Option<T>>),
}

impl<T> InFlight<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<FlightKey, watch::Receiver<Option<T>>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Follows the request already in flight under `key`, or leads a new one.
    fn join(&self, key: FlightKey) -> Flight<'_, T> {
        let mut all = self.lock();
        if let Some(answer) = all.get(&key) {
            return Flight::Follow(answer.clone());
        }
        let (answer, rx) = watch::channel(None);
        all.insert(key.clone(), rx);
        Flight::Lead(Leader {
            flights: self,
            key,
            answer,
        })
    }
}

/// The caller sending a request others may wait for. Dropping it — answered, failed or
/// cancelled — takes the request out of flight; waiters of an unanswered one send their own.
struct Leader<'a, T> {
    flights: &'a InFlight<T>,
    key: FlightKey,
    answer: watch::Sender<Option<T>>,
}

impl<T> Leader<'_, T> {
    /// Hands the answer (already recorded) to every caller waiting for it.
    fn publish(self, answer: T) {
        self.answer.send_replace(Some(answer));
    }
}

impl<T> Drop for Leader<'_, T> {
    fn drop(&mut self) {
        self.flights.lock().remove(&self.key);
    }
}

/// The answer the leader of a request published, or `None` when it ended without one.
async fn answer_of<T: Clone>(mut rx: watch::Receiver<Option<T>>) -> Option<T> {
    rx.wait_for(Option::is_some)
        .await
        .ok()
        .and_then(|a| a.clone())
}

/// The runtime every model request runs on: two threads for the whole process, whoever awaits.
pub fn io_runtime() -> &'static tokio::runtime::Runtime {
    static IO: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    IO.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("prefflow-model-io")
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot start the model I/O runtime: {e}"))
    })
}

/// A model client bound to one configuration, endpoint and record/replay cache.
pub struct LlmClient<'a> {
    config: LlmConfig,
    base_url: String,
    endpoint: Arc<Endpoint>,
    cache: &'a dyn Store,
    offline: bool,
    /// Where each answered call is counted (provider or replayed), under this role.
    meter: Option<(&'a UsageMeter, &'static str)>,
}

impl<'a> LlmClient<'a> {
    /// A client for `config`, recording into `cache`. With `offline`, only cached replies are used.
    pub fn new(config: LlmConfig, cache: &'a dyn Store, offline: bool) -> Result<Self, LlmError> {
        let base_url = config
            .resolved_base_url()?
            .trim_end_matches('/')
            .to_string();
        let endpoint = endpoint(&base_url, &config.model, config.concurrency.max(1))?;
        Ok(Self {
            config,
            base_url,
            endpoint,
            cache,
            offline,
            meter: None,
        })
    }

    /// This client with every call it answers — chat completions and embeddings — counted in
    /// `meter` (when given) as `role` and the config's model: answered by the provider
    /// (requests, tokens, cost at the config's prices) or replayed from the record — the one
    /// place model calls are counted, so `prefflow show runs` sums what each stage's calls cost.
    pub fn metered(mut self, meter: Option<&'a UsageMeter>, role: &'static str) -> Self {
        self.meter = meter.map(|m| (m, role));
        self
    }

    fn count(&self, usage: Usage, from_cache: bool) {
        if let Some((meter, role)) = self.meter {
            let counts = usage.counts(self.config.prices, from_cache);
            meter.record(role, &self.config.model, &counts);
        }
    }

    /// The configuration in use.
    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    /// The shared endpoint this client sends to (its pool and slots).
    pub fn endpoint(&self) -> &Arc<Endpoint> {
        &self.endpoint
    }

    fn chat_url(&self) -> String {
        format!("{}/chat/completions", self.base_url)
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
        let url = self.chat_url();
        let mut bytes = Vec::with_capacity(body.len() + url.len() + 16);
        bytes.extend_from_slice(url.as_bytes());
        bytes.push(0x1f);
        bytes.extend_from_slice(body);
        bytes.push(0x1f);
        bytes.extend_from_slice(epoch.to_string().as_bytes());
        hash_bytes(&bytes)
    }

    /// Sends `request` (or replays it). `epoch` separates independent repeats of one request.
    pub async fn chat(&self, request: &ChatRequest, epoch: u32) -> Result<Reply, LlmError> {
        // The body is built once: it keys the record, is sent, and is recorded.
        let body = body_bytes(&self.body(request));
        let key = self.key_of(&body, epoch);
        let path = format!("llm/{}/{key}.json", &key[..2]);
        if let Some(reply) = self.replay(&path)? {
            return Ok(self.replayed(reply, key));
        }
        if self.offline {
            return Err(LlmError::OfflineMiss {
                model: self.config.model.clone(),
                key,
            });
        }
        let leader = loop {
            match self.endpoint.chats.join(self.flight_key(&key)) {
                Flight::Lead(leader) => break leader,
                Flight::Follow(answer) => {
                    if let Some(reply) = answer_of(answer).await {
                        return Ok(self.replayed(reply, key));
                    }
                }
            }
        };
        let (mut reply, attempts) = self
            .exchange(self.chat_url(), body.clone(), parse_reply)
            .await?;
        let bytes = recorded_bytes(&body, &reply)?;
        self.put(&path, &bytes)?;
        leader.publish(reply.clone());
        reply.attempts = attempts;
        reply.cache_key = key;
        self.count(reply.usage, false);
        Ok(reply)
    }

    /// A reply that cost this caller no request (recorded, or sent by an identical request in
    /// flight), marked and counted as replayed.
    fn replayed(&self, mut reply: Reply, key: String) -> Reply {
        reply.from_cache = true;
        reply.attempts = 0;
        reply.cache_key = key;
        self.count(reply.usage, true);
        reply
    }

    /// This client's store and `key`: identical requests share one flight only when they are
    /// recorded in the same store.
    fn flight_key(&self, key: &str) -> FlightKey {
        let store = std::ptr::from_ref(self.cache).cast::<()>() as usize;
        (store, key.to_string())
    }

    /// One vector per text from the endpoint's `/embeddings`, replayed when recorded (keyed by
    /// endpoint, model and inputs). Metered like chat: a live call is a request with the
    /// response's `usage.prompt_tokens` (0 when the server sends none), a replay is `replayed`
    /// (the record holds only the vectors).
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f64>>, LlmError> {
        let url = format!("{}/embeddings", self.base_url);
        let body = json!({ "model": self.config.model, "input": texts });
        let key = hash_json(&json!({ "endpoint": url, "body": body }));
        let path = format!("embeddings/{}/{key}.json", &key[..2]);
        let cached = self
            .cache
            .get(&path)
            .map_err(|e| LlmError::Cache(e.to_string()))?;
        if let Some(v) = cached.and_then(|b| serde_json::from_slice::<Vec<Vec<f64>>>(&b).ok()) {
            self.count(Usage::default(), true);
            return Ok(v);
        }
        if self.offline {
            return Err(LlmError::OfflineMiss {
                model: self.config.model.clone(),
                key,
            });
        }
        let leader = loop {
            match self.endpoint.embeddings.join(self.flight_key(&key)) {
                Flight::Lead(leader) => break leader,
                Flight::Follow(answer) => {
                    if let Some(vectors) = answer_of(answer).await {
                        self.count(Usage::default(), true);
                        return Ok(vectors);
                    }
                }
            }
        };
        let n = texts.len();
        let parse = move |url: &str, text: &str| parse_embeddings(url, text, n);
        let ((vectors, usage), _) = self.exchange(url, body_bytes(&body), parse).await?;
        let bytes = serde_json::to_vec(&vectors).map_err(|e| LlmError::Cache(e.to_string()))?;
        self.put(&path, &bytes)?;
        leader.publish(vectors.clone());
        self.count(usage, false);
        Ok(vectors)
    }

    fn put(&self, path: &str, bytes: &[u8]) -> Result<(), LlmError> {
        self.cache
            .put(path, bytes)
            .map_err(|e| LlmError::Cache(e.to_string()))
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

    /// The live exchange with retries, run as a task on [`io_runtime`]: the parsed answer and
    /// the attempts it took.
    async fn exchange<T, P>(
        &self,
        url: String,
        body: Vec<u8>,
        parse: P,
    ) -> Result<(T, u32), LlmError>
    where
        T: Send + 'static,
        P: Fn(&str, &str) -> Result<T, LlmError> + Send + Sync + 'static,
    {
        let call = Call {
            endpoint: self.endpoint.clone(),
            url,
            body,
            key: self.api_key()?,
            timeout: Duration::from_secs_f64(self.config.timeout_s.max(0.001)),
        };
        let policy = self.policy();
        let task = async move {
            let call = &call;
            let parse = &parse;
            policy
                .run(|_| call.attempt(parse), Attempt::retry)
                .await
                .map_err(|gave_up| gave_up.error.into_error(&call.url, gave_up.attempts))
        };
        io_runtime()
            .spawn(task)
            .await
            .map_err(|e| LlmError::Cache(format!("a model request task failed: {e}")))?
    }
}

/// One request as the I/O task owns it.
struct Call {
    endpoint: Arc<Endpoint>,
    url: String,
    body: Vec<u8>,
    key: Option<String>,
    timeout: Duration,
}

impl Call {
    /// One attempt: take a slot, send, read, give the slot back, parse.
    async fn attempt<T>(
        &self,
        parse: &(impl Fn(&str, &str) -> Result<T, LlmError> + ?Sized),
    ) -> Result<T, Attempt> {
        let (status, hint, text) =
            {
                let _slot =
                    self.endpoint.slots.acquire().await.map_err(|_| {
                        Attempt::Permanent(LlmError::Cache("endpoint closed".into()))
                    })?;
                let mut req = self
                    .endpoint
                    .http
                    .post(&self.url)
                    .timeout(self.timeout)
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(self.body.clone());
                if let Some(k) = &self.key {
                    req = req.bearer_auth(k);
                }
                let resp = req.send().await.map_err(|e| Attempt::Transient {
                    why: describe(&e),
                    hint: None,
                })?;
                let status = resp.status().as_u16();
                let hint = retry_after(resp.headers());
                let text = resp.text().await.map_err(|e| Attempt::Transient {
                    why: format!("reading the response failed: {}", describe(&e)),
                    hint: None,
                });
                (status, hint, text)
            };
        let text = classify_response(&self.url, status, hint, text)?;
        parse(&self.url, &text).map_err(|e| Attempt::Transient {
            why: e.to_string(),
            hint,
        })
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

/// The body of a successful exchange, or why the exchange failed: 429 and 5xx are transient,
/// other non-2xx statuses permanent.
fn classify_response(
    endpoint: &str,
    status: u16,
    hint: Option<Duration>,
    text: Result<String, Attempt>,
) -> Result<String, Attempt> {
    if status == 429 || (500..600).contains(&status) {
        return Err(Attempt::Transient {
            why: format!("HTTP {status}"),
            hint,
        });
    }
    let text = text?;
    if !(200..300).contains(&status) {
        return Err(Attempt::Permanent(LlmError::Http {
            endpoint: endpoint.to_string(),
            status,
            body: excerpt(&text),
        }));
    }
    Ok(text)
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

fn malformed(endpoint: &str, detail: String, text: &str) -> LlmError {
    LlmError::Malformed {
        endpoint: endpoint.to_string(),
        detail,
        excerpt: excerpt(text),
    }
}

/// A chat completion, or why the body is not one (no choices, no message, not JSON).
fn parse_reply(endpoint: &str, text: &str) -> Result<Reply, LlmError> {
    let wire: WireResponse =
        serde_json::from_str(text).map_err(|e| malformed(endpoint, e.to_string(), text))?;
    let choice = wire
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| malformed(endpoint, "no choices".into(), text))?;
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

/// `{"data": [{"index": i, "embedding": [...]}, …], "usage": {"prompt_tokens": …}}` → `n`
/// vectors in input order, and the tokens the inputs cost (0 when the server does not say).
fn parse_embeddings(
    endpoint: &str,
    text: &str,
    n: usize,
) -> Result<(Vec<Vec<f64>>, Usage), LlmError> {
    let v: Value =
        serde_json::from_str(text).map_err(|e| malformed(endpoint, e.to_string(), text))?;
    let data = v["data"]
        .as_array()
        .ok_or_else(|| malformed(endpoint, "no `data` list".into(), text))?;
    let mut out = vec![Vec::new(); n];
    for (pos, item) in data.iter().enumerate() {
        let i = item["index"].as_u64().map_or(pos, |i| i as usize);
        let vector: Option<Vec<f64>> = item["embedding"]
            .as_array()
            .and_then(|a| a.iter().map(Value::as_f64).collect());
        match (out.get_mut(i), vector) {
            (Some(slot), Some(vec)) => *slot = vec,
            _ => return Err(malformed(endpoint, format!("bad item {pos}"), text)),
        }
    }
    if out.iter().any(Vec::is_empty) {
        return Err(malformed(
            endpoint,
            format!("expected {n} embeddings"),
            text,
        ));
    }
    let usage = Usage {
        prompt_tokens: v["usage"]["prompt_tokens"].as_u64().unwrap_or(0),
        completion_tokens: 0,
    };
    Ok((out, usage))
}
