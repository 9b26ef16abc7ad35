//! The one model client: chat completions and embeddings, async, with record/replay, one retry
//! layer and a bounded connection pool per endpoint.
//!
//! - **Endpoints.** Every (base URL, model) pair gets one [`Endpoint`] for the whole process: a
//!   `reqwest` connection pool and its [`Budget`] (shared with other models when their entries
//!   name the same `budget`): the token buckets of the entry's `rpm`/`tpm`/`tpd`, an adaptive
//!   window of requests on the wire (at most `concurrency`) and a fair queue. A request holds a
//!   window slot only while it is on the wire; waiting for budget, and the backoff between
//!   attempts, sleep on the runtime without one, so a rate-limited model does not starve its
//!   own pool (see `budget`).
//! - **I/O.** Requests run as tasks on one small process-wide runtime ([`io_runtime`], two
//!   threads), whichever runtime or thread awaits them: thousands of requests in flight cost
//!   tasks, not OS threads, and a connection pool is never shared between runtimes. Callers
//!   are async all the way up (agents, simulators, judges, embedding retrieval and the stage
//!   kinds running them), so a request waiting on the network holds no thread of its caller.
//! - **Retries.** One retry layer: 5xx, transport failures and bodies that are not a usable
//!   answer (truncated or unparsable, no choices, no message) are provider faults, retried
//!   `max_retries` times with the engine's [`RetryPolicy`] backoff (jittered doubling,
//!   honouring `Retry-After`). A 429 is not a fault: the budget pauses the endpoint for the
//!   server's hint and the request is sent again, first in line, however often, for up to
//!   `rate_limit_wait_s` (default 30 minutes) from its first 429. When either runs out the
//!   error is [`LlmError::Exhausted`], which the engine does not retry again. Other statuses
//!   (400, 401, 404) are permanent. Each retry is logged at debug with its cause and counted
//!   in the client's usage meter ([`UsageMeter::retried`]); the run says the counts by cause
//!   once per stage, at info.
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
use prefflow_engine::retry::RetryPolicy;
use prefflow_engine::store::Store;
use prefflow_engine::usage::UsageMeter;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::sync::watch;

use super::budget::{self, Budget, Class, Grant, Ticket};
use super::error::{is_context_length, LlmError};
use super::headers::RateHeaders;
use super::record;
use super::tokens;
use super::types::{ChatRequest, LlmConfig, ToolCall, Usage, WireUsage};

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

/// A request body as the bytes that are hashed, sent and recorded.
fn body_bytes(body: &Value) -> Vec<u8> {
    // Serializing a JSON value cannot fail.
    serde_json::to_vec(body).unwrap_or_default()
}

/// One model endpoint as the process shares it: its connection pool, its budget and the
/// requests on their way to it.
pub struct Endpoint {
    http: reqwest::Client,
    concurrency: usize,
    budget: Arc<Budget>,
    chats: InFlight<Reply>,
    embeddings: InFlight<Vec<Vec<f64>>>,
}

impl Endpoint {
    /// The most requests this endpoint's budget lets be on the wire at once.
    pub fn concurrency(&self) -> usize {
        self.budget.concurrency()
    }

    /// Requests on the wire right now.
    pub fn in_flight(&self) -> usize {
        self.budget.in_flight()
    }

    /// The budget this endpoint's requests are granted by.
    pub fn budget(&self) -> &Arc<Budget> {
        &self.budget
    }
}

/// The process's endpoint for `config`'s base URL and model, created on first use (later
/// callers share it; a larger `concurrency` widens its pool), with the budget it draws from:
/// the model's own, or the one named by `budget` on that base URL.
fn endpoint(base_url: &str, config: &LlmConfig) -> Result<Arc<Endpoint>, LlmError> {
    let (model, concurrency) = (config.model.as_str(), config.concurrency.max(1));
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
    let budget_name = match &config.budget {
        Some(shared) => format!("budget:{shared}"),
        None => model.to_string(),
    };
    let budget = budget::budget((key.0.clone(), budget_name), concurrency, config.limits());
    if let Some(known) = all.get(&key) {
        if known.concurrency >= concurrency && Arc::ptr_eq(&known.budget, &budget) {
            return Ok(known.clone());
        }
    }
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .build()
        .map_err(|e| LlmError::Cache(format!("cannot build an HTTP client: {e}")))?;
    let made = Arc::new(Endpoint {
        http,
        concurrency,
        budget,
        chats: InFlight::default(),
        embeddings: InFlight::default(),
    });
    all.insert(key, made.clone());
    Ok(made)
}

/// What identifies one request in flight: where it is recorded (the store's location, as
/// [`Store::describe`] names it: stores opened on one location hold the same records) and its
/// cache key.
type FlightKey = (String, String);

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
    /// The role its calls play (`agent`, `user`, `judge`, …), for their class in the budget.
    role: &'static str,
    /// The flow its calls belong to in the budget's fair queue.
    flow: Arc<str>,
}

impl<'a> LlmClient<'a> {
    /// A client for `config`, recording into `cache`. With `offline`, only cached replies are used.
    pub fn new(config: LlmConfig, cache: &'a dyn Store, offline: bool) -> Result<Self, LlmError> {
        let base_url = config
            .resolved_base_url()?
            .trim_end_matches('/')
            .to_string();
        let endpoint = endpoint(&base_url, &config)?;
        let flow = Arc::from(config.model.as_str());
        Ok(Self {
            config,
            base_url,
            endpoint,
            cache,
            offline,
            meter: None,
            role: "",
            flow,
        })
    }

    /// This client's calls as their own flow in the endpoint's fair queue (e.g. the stage
    /// instance: `episodes_llm[model=a]`); by default a flow is the role and model. Flows
    /// waiting for one budget are served in proportion to their entries' `concurrency`.
    pub fn flow(mut self, name: &str) -> Self {
        if name.is_empty() {
            return self;
        }
        self.flow = Arc::from(format!("{name}/{}", self.role).as_str());
        self
    }

    /// This client with every call it answers — chat completions and embeddings — counted in
    /// `meter` (when given) as `role` and the config's model: answered by the provider
    /// (requests, tokens, cost at the config's prices) or replayed from the record — the one
    /// place model calls are counted, so `prefflow show runs` sums what each stage's calls cost.
    pub fn metered(mut self, meter: Option<&'a UsageMeter>, role: &'static str) -> Self {
        self.meter = meter.map(|m| (m, role));
        self.role = role;
        if !self.flow.contains('/') {
            self.flow = Arc::from(format!("{}/{role}", self.config.model).as_str());
        }
        self
    }

    /// How urgent a chat request is: user-simulator and judge calls serve an episode under
    /// way; anything else (agent turns, `llm_complete` rows) is served in fair order. Agent
    /// turns are not ranked by how far their episode is: with identical episodes that made
    /// them finish in lock-step waves, and the episode benchmark lost 6 points of throughput.
    fn class_of(&self) -> Class {
        if matches!(self.role, "user" | "judge") {
            Class::Continue
        } else {
            Class::Start
        }
    }

    fn ticket(&self, class: Class, estimate: u64) -> Ticket {
        Ticket {
            flow: self.flow.clone(),
            weight: self.config.concurrency.max(1) as f64,
            class,
            estimate,
        }
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
        if let Some(reply) = record::load(self.cache, &key)? {
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
        let prompt_tokens = tokens::prompt_tokens(request);
        if let Some(window) = self.config.max_context {
            let reply = u64::from(self.config.max_tokens.unwrap_or(0));
            if prompt_tokens + reply > window {
                return Err(self.too_long(prompt_tokens, format!(" (max_context {window})")));
            }
        }
        let ticket = self.ticket(self.class_of(), prompt_tokens);
        let parse = |url: &str, text: &str| {
            parse_reply(url, text).map(|r| {
                let usage = r.usage;
                (r, usage)
            })
        };
        let (mut reply, attempts) = self
            .exchange(self.chat_url(), body.clone(), ticket, parse)
            .await
            .map_err(|e| match e {
                LlmError::Http {
                    status: 400, body, ..
                } if is_context_length(&body) => {
                    self.too_long(prompt_tokens, format!(" (HTTP 400: {body})"))
                }
                other => other,
            })?;
        record::store(self.cache, &key, &body, &reply)?;
        leader.publish(reply.clone());
        reply.attempts = attempts;
        reply.cache_key = key;
        self.count(reply.usage, false);
        Ok(reply)
    }

    /// The error of a request longer than the model's context, with its measured size and
    /// the settings that shrink it.
    fn too_long(&self, prompt_tokens: u64, said: String) -> LlmError {
        LlmError::ContextLength {
            endpoint: self.chat_url(),
            model: self.config.model.clone(),
            prompt_tokens,
            method: tokens::METHOD,
            reply: match self.config.max_tokens {
                Some(m) => format!(" + max_tokens {m}"),
                None => String::new(),
            },
            said,
        }
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

    /// This client's store location and `key`: identical requests share one flight only when
    /// they are recorded in the same store.
    fn flight_key(&self, key: &str) -> FlightKey {
        (self.cache.describe(), key.to_string())
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
        let parse = move |url: &str, text: &str| {
            parse_embeddings(url, text, n).map(|(v, usage)| ((v, usage), usage))
        };
        let ticket = self.ticket(Class::Start, tokens::embedding_tokens(texts));
        let ((vectors, usage), _) = self.exchange(url, body_bytes(&body), ticket, parse).await?;
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

    fn api_key(&self) -> Result<Option<String>, LlmError> {
        match &self.config.api_key_env {
            None => Ok(None),
            Some(var) => std::env::var(var)
                .map(Some)
                .map_err(|_| LlmError::MissingKey { var: var.clone() }),
        }
    }

    /// The engine's retry policy for this endpoint's settings: the backoff of provider faults.
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
    /// the attempts it took. `parse` also returns the usage the answer reports, which settles
    /// the budget's reservation.
    async fn exchange<T, P>(
        &self,
        url: String,
        body: Vec<u8>,
        ticket: Ticket,
        parse: P,
    ) -> Result<(T, u32), LlmError>
    where
        T: Send + 'static,
        P: Fn(&str, &str) -> Result<(T, Usage), LlmError> + Send + Sync + 'static,
    {
        let (result, retried) = self.exchange_once(url, body, ticket, parse).await?;
        if let Some((meter, _)) = self.meter {
            for cause in retried {
                meter.retried(cause.as_str());
            }
        }
        result
    }

    /// [`Self::exchange`] on [`io_runtime`]: its result, and the cause of each retry it took.
    async fn exchange_once<T, P>(
        &self,
        url: String,
        body: Vec<u8>,
        ticket: Ticket,
        parse: P,
    ) -> Result<(Result<(T, u32), LlmError>, Vec<String>), LlmError>
    where
        T: Send + 'static,
        P: Fn(&str, &str) -> Result<(T, Usage), LlmError> + Send + Sync + 'static,
    {
        let call = Call {
            endpoint: self.endpoint.clone(),
            url,
            body,
            key: self.api_key()?,
            timeout: Duration::from_secs_f64(self.config.timeout_s.max(0.001)),
            patience: Duration::from_secs_f64(self.config.rate_limit_wait_s.max(0.0)),
        };
        let policy = self.policy();
        let task = async move {
            let mut retried = Vec::new();
            let result = call.run(&policy, ticket, &parse, &mut retried).await;
            (result, retried)
        };
        io_runtime()
            .spawn(task)
            .await
            .map_err(|e| LlmError::Cache(format!("a model request task failed: {e}")))
    }
}

/// One request as the I/O task owns it.
struct Call {
    endpoint: Arc<Endpoint>,
    url: String,
    body: Vec<u8>,
    key: Option<String>,
    timeout: Duration,
    /// How long the request may keep being answered 429, from its first 429.
    patience: Duration,
}

impl Call {
    /// Attempts until an answer, a permanent error, `policy`'s retries spent on faults, or
    /// 429s for longer than `patience`. 429s are not faults: the budget pauses for the server's
    /// hint, and the request goes again first in line. The cause of every retry is logged at
    /// debug and pushed onto `retried`.
    async fn run<T>(
        &self,
        policy: &RetryPolicy,
        mut ticket: Ticket,
        parse: &(impl Fn(&str, &str) -> Result<(T, Usage), LlmError> + ?Sized),
        retried: &mut Vec<String>,
    ) -> Result<(T, u32), LlmError> {
        let (mut attempts, mut faults) = (0u32, 0u32);
        let mut limited_since: Option<std::time::Instant> = None;
        loop {
            attempts += 1;
            let why = match self.attempt(&ticket, parse).await {
                Ok(value) => return Ok((value, attempts)),
                Err(Attempt::Permanent(e)) => return Err(e),
                Err(Attempt::RateLimited { why }) => {
                    let since = *limited_since.get_or_insert_with(std::time::Instant::now);
                    if since.elapsed() >= self.patience {
                        format!(
                            "{why}: still rate-limited after {:.0} s (rate_limit_wait_s)",
                            since.elapsed().as_secs_f64()
                        )
                    } else {
                        ticket.class = Class::Retry;
                        self.retrying(attempts, RATE_LIMITED, &why, "when the budget allows");
                        retried.push(RATE_LIMITED.to_string());
                        continue;
                    }
                }
                Err(Attempt::Transient { why, cause, hint }) => {
                    if faults < policy.retries {
                        let delay = policy.delay(faults, hint);
                        let after = format!("in {} ms", delay.as_millis());
                        self.retrying(attempts, &cause, &why, &after);
                        retried.push(cause);
                        tokio::time::sleep(delay).await;
                        faults += 1;
                        continue;
                    }
                    why
                }
            };
            return Err(LlmError::Exhausted {
                endpoint: self.url.clone(),
                attempts,
                last: why,
            });
        }
    }

    /// Logs a retry at debug: the request, its attempt, the cause and when it goes again.
    fn retrying(&self, attempt: u32, cause: &str, why: &str, after: &str) {
        let what = if cause.contains(why) {
            cause.to_string()
        } else if why.starts_with(cause) {
            why.to_string()
        } else {
            format!("{cause}: {why}")
        };
        tracing::debug!(
            "model request to {}: attempt {attempt} failed ({what}); retrying {after}",
            self.url
        );
    }

    /// One attempt: wait for the budget's grant, send, read, parse, settle the grant.
    async fn attempt<T>(
        &self,
        ticket: &Ticket,
        parse: &(impl Fn(&str, &str) -> Result<(T, Usage), LlmError> + ?Sized),
    ) -> Result<T, Attempt> {
        let grant = self
            .endpoint
            .budget
            .acquire(ticket, self.patience)
            .await
            .map_err(|r| Attempt::Permanent(LlmError::Budget(r.to_string())))?;
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
        let resp = match req.send().await {
            Ok(resp) => resp,
            Err(e) => {
                grant.failed(&RateHeaders::default());
                return Err(Attempt::Transient {
                    why: describe(&e),
                    cause: cause_of(&e, "request failed"),
                    hint: None,
                });
            }
        };
        let status = resp.status().as_u16();
        let headers = rate_headers(resp.headers());
        let text = resp.text().await.map_err(|e| Attempt::Transient {
            why: format!("reading the response failed: {}", describe(&e)),
            cause: cause_of(&e, "response cut off"),
            hint: None,
        });
        settle(grant, &self.url, status, &headers, text, parse)
    }
}

/// Settles the grant with how the exchange ended, and gives the parsed answer or why not.
fn settle<T>(
    grant: Grant,
    url: &str,
    status: u16,
    headers: &RateHeaders,
    text: Result<String, Attempt>,
    parse: &(impl Fn(&str, &str) -> Result<(T, Usage), LlmError> + ?Sized),
) -> Result<T, Attempt> {
    if status == 429 {
        grant.rate_limited(headers);
        return Err(Attempt::RateLimited {
            why: "HTTP 429".into(),
        });
    }
    let parsed = classify_response(url, status, headers.retry_after, text).and_then(|text| {
        parse(url, &text).map_err(|e| Attempt::Transient {
            why: e.to_string(),
            cause: "unusable answer".into(),
            hint: headers.retry_after,
        })
    });
    match parsed {
        Ok((value, usage)) => {
            grant.answered(headers, Some(usage));
            Ok(value)
        }
        Err(e) => {
            grant.failed(headers);
            Err(e)
        }
    }
}

/// Why one attempt failed, and whether another may help.
#[derive(Debug)]
enum Attempt {
    /// The server said 429: waited out by the budget, not counted as a fault.
    RateLimited { why: String },
    /// A provider fault: retried (after `hint` when the server gave one). `cause` is its
    /// kind in the retry counts (`HTTP 503`, `timeout`, `unusable answer`, …).
    Transient {
        why: String,
        cause: String,
        hint: Option<Duration>,
    },
    /// No retry can fix it.
    Permanent(LlmError),
}

/// The body of a successful exchange, or why the exchange failed: 5xx are transient, other
/// non-2xx statuses permanent (429 is handled before: see [`settle`]).
fn classify_response(
    endpoint: &str,
    status: u16,
    hint: Option<Duration>,
    text: Result<String, Attempt>,
) -> Result<String, Attempt> {
    if (500..600).contains(&status) {
        return Err(Attempt::Transient {
            why: format!("HTTP {status}"),
            cause: format!("HTTP {status}"),
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

/// The rate-limit headers of a response.
fn rate_headers(headers: &reqwest::header::HeaderMap) -> RateHeaders {
    RateHeaders::parse(
        headers
            .iter()
            .filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?))),
        std::time::SystemTime::now(),
    )
}

/// The cause of a 429 in the retry counts.
const RATE_LIMITED: &str = "rate-limited (HTTP 429)";

/// A transport failure's kind in the retry counts: `timeout`, `connection failed`, else
/// `otherwise`.
fn cause_of(e: &reqwest::Error, otherwise: &str) -> String {
    if e.is_timeout() {
        "timeout".into()
    } else if e.is_connect() {
        "connection failed".into()
    } else {
        otherwise.into()
    }
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
    usage: Option<WireUsage>,
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
        usage: wire.usage.map(Usage::from).unwrap_or_default(),
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
        ..Usage::default()
    };
    Ok((out, usage))
}
