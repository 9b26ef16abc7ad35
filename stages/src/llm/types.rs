//! Wire and configuration types of the chat-completions API.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where and how to call a model. Deserialized from stage params; the key itself is never here,
/// only the name of the environment variable that holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    /// Base URL up to and including `/v1`, e.g. `http://127.0.0.1:8080/v1`. May be left out
    /// when `base_url_env` names the variable that holds it.
    #[serde(default)]
    pub base_url: String,
    /// Environment variable holding the base URL, read at run time (it wins over `base_url`).
    /// Lets a pipeline ship an endpoint block that works on any machine that sets the variable,
    /// without putting machine-specific URLs in the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url_env: Option<String>,
    /// Model name sent in requests.
    pub model: String,
    /// Environment variable holding the API key (none for keyless local servers).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Sampling seed, for servers that honour it.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Completion token limit.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Per-request timeout in seconds (default 120).
    #[serde(default = "default_timeout")]
    pub timeout_s: f64,
    /// Retries after the first attempt for transient failures (default 6).
    #[serde(default = "default_retries")]
    pub max_retries: u32,
    /// First backoff in milliseconds (default 500); doubles per retry, with jitter, capped at 60 s.
    #[serde(default = "default_backoff")]
    pub backoff_ms: u64,
    /// Optional prices, for cost accounting.
    #[serde(default)]
    pub prices: Option<Prices>,
    /// The model's context window in tokens, when known: `plan` refuses a run whose requests
    /// would not fit (naming `history: top_k:N` or `max_tools` as the fix), and the agent
    /// refuses to send such a request rather than pay for an HTTP 400.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_context: Option<u64>,
    /// Requests on the wire at once to this endpoint and model, for the whole process (default
    /// 16): the endpoint's own pool, shared by every stage, item and role that calls it, so a
    /// provider's rate limit is respected however many episodes wait. A request holds a slot
    /// only while it is sent and read, never while backing off.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// The provider's request limit per minute for this model (your tier's RPM). Enforced by
    /// the client's budget: requests wait for it without holding a connection slot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm: Option<u64>,
    /// The provider's token limit per minute (prompt + completion; your tier's TPM). Each
    /// request reserves its estimated prompt tokens before it is sent; the answer's `usage`
    /// corrects the reservation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpm: Option<u64>,
    /// The provider's token limit per day (TPD), for tiers that have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpd: Option<u64>,
    /// Name of a budget shared with other entries on the same base URL (a provider whose
    /// limits hold per organisation or deployment rather than per model): they share one
    /// set of limits and one window. By default each model has its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<String>,
    /// How long one request may keep being answered 429 before it fails (default 1800 s).
    /// 429s are waited out, never counted against `max_retries`.
    #[serde(default = "default_rate_limit_wait")]
    pub rate_limit_wait_s: f64,
}

impl LlmConfig {
    /// The budget limits the entry declares (`rpm`, `tpm`, `tpd`).
    pub fn limits(&self) -> Limits {
        Limits {
            rpm: self.rpm,
            tpm: self.tpm,
            tpd: self.tpd,
        }
    }

    /// The base URL to call: `$base_url_env` when that variable is set and non-empty, otherwise
    /// `base_url`; an error naming both when neither gives one.
    pub fn resolved_base_url(&self) -> Result<String, super::error::LlmError> {
        let from_env = self
            .base_url_env
            .as_ref()
            .and_then(|var| std::env::var(var).ok())
            .filter(|v| !v.trim().is_empty());
        match from_env {
            Some(url) => Ok(url.trim().to_string()),
            None if !self.base_url.trim().is_empty() => Ok(self.base_url.clone()),
            None => Err(super::error::LlmError::MissingBaseUrl {
                var: self.base_url_env.clone(),
            }),
        }
    }

    /// Checks what would otherwise fail every request alike — the endpoint, and the key
    /// variable when requests will be sent — so a stage fails once (exit 2) with the fix.
    pub fn check_endpoint(&self, offline: bool) -> Result<(), super::error::LlmError> {
        self.resolved_base_url()?;
        if let (Some(var), false) = (&self.api_key_env, offline) {
            if std::env::var_os(var).is_none() {
                return Err(super::error::LlmError::MissingKey { var: var.clone() });
            }
        }
        Ok(())
    }

    /// `entry` (a `models` entry, a mapping named `name` in messages) over `defaults` (the
    /// stage's `llm` block): an entry's endpoint replaces the defaults' endpoint whole, its other
    /// fields replace theirs one by one, and `name` is left out. The error names the entry.
    pub fn with_entry(
        defaults: Option<&LlmConfig>,
        entry: &Value,
        name: &str,
    ) -> Result<LlmConfig, String> {
        let mut merged = match defaults {
            Some(defaults) => serde_json::to_value(defaults).map_err(|e| e.to_string())?,
            None => serde_json::json!({}),
        };
        let (Some(base), Some(over)) = (merged.as_object_mut(), entry.as_object()) else {
            return Err(format!("`models` entry `{name}` must be a mapping"));
        };
        if over.contains_key("base_url") || over.contains_key("base_url_env") {
            base.remove("base_url");
            base.remove("base_url_env");
        }
        for (k, v) in over.iter().filter(|(k, _)| k.as_str() != "name") {
            base.insert(k.clone(), v.clone());
        }
        serde_json::from_value(merged).map_err(|e| format!("`models` entry `{name}`: {e}"))
    }

    /// This configuration for one episode: the configured sampling seed, else the episode's
    /// own, kept to 31 bits because servers differ in the integer width they accept.
    pub fn for_episode(&self, seed: u64) -> LlmConfig {
        let mut config = self.clone();
        config.seed = config.seed.or(Some(seed & 0x7fff_ffff));
        config
    }
}

fn default_timeout() -> f64 {
    120.0
}
fn default_retries() -> u32 {
    6
}
fn default_backoff() -> u64 {
    500
}
fn default_concurrency() -> usize {
    16
}
fn default_rate_limit_wait() -> f64 {
    1800.0
}

/// Prices per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    /// Price of one million prompt tokens.
    pub prompt_per_mtok: f64,
    /// Price of one million completion tokens.
    pub completion_per_mtok: f64,
    /// Price of one million prompt tokens the provider served from its prompt cache (reported
    /// as `usage.prompt_tokens_details.cached_tokens` or the equivalent); default: the prompt
    /// price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_prompt_per_mtok: Option<f64>,
}

impl Prices {
    /// The cost of `prompt` prompt tokens (`cached` of them from the provider's prompt cache)
    /// and `completion` completion tokens.
    pub fn cost(&self, prompt: f64, cached: f64, completion: f64) -> f64 {
        let cached = cached.min(prompt);
        let cached_price = self.cached_prompt_per_mtok.unwrap_or(self.prompt_per_mtok);
        ((prompt - cached) * self.prompt_per_mtok
            + cached * cached_price
            + completion * self.completion_per_mtok)
            / 1e6
    }
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// Text content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Tool calls made by the assistant.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For `tool` messages: the call answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl ChatMessage {
    /// A message with text content.
    pub fn new(role: &str, content: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: Some(content.into()),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Call id, echoed in the tool result.
    #[serde(default)]
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type", default = "function")]
    pub kind: String,
    /// The function and its JSON-encoded arguments.
    pub function: FunctionCall,
}

fn function() -> String {
    "function".into()
}

/// The function part of a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// Function name.
    pub name: String,
    /// Arguments as a JSON string (as the API sends them).
    #[serde(default)]
    pub arguments: String,
}

/// A tool offered to the model (OpenAI function-calling format).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Name, description and JSON-Schema parameters.
    pub function: Value,
}

/// What to send: the conversation and tools. Sampling settings come from [`LlmConfig`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The conversation.
    pub messages: Vec<ChatMessage>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// Ask for a JSON object reply (`response_format: json_object`).
    #[serde(default)]
    pub json_mode: bool,
}

/// Token usage of one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens (the cached ones included).
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Prompt tokens the provider served from its prompt cache, as it reports them (priced at
    /// `prices.cached_prompt_per_mtok`); 0 when it says nothing.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_prompt_tokens: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// `usage` as providers send it: OpenAI's `prompt_tokens_details.cached_tokens`, DeepSeek's
/// `prompt_cache_hit_tokens` and Anthropic-style `cache_read_input_tokens` all say how many
/// prompt tokens came from the provider's cache.
#[derive(Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<WireDetails>,
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct WireDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl From<WireUsage> for Usage {
    fn from(w: WireUsage) -> Self {
        let cached = w
            .prompt_tokens_details
            .and_then(|d| d.cached_tokens)
            .or(w.prompt_cache_hit_tokens)
            .or(w.cache_read_input_tokens)
            .unwrap_or(0);
        Usage {
            prompt_tokens: w.prompt_tokens,
            completion_tokens: w.completion_tokens,
            cached_prompt_tokens: cached.min(w.prompt_tokens),
        }
    }
}

impl Usage {
    /// Cost under `prices` (0 when no prices are configured); cached prompt tokens at the
    /// cached price.
    pub fn cost(&self, prices: Option<Prices>) -> f64 {
        prices.map_or(0.0, |p| {
            p.cost(
                self.prompt_tokens as f64,
                self.cached_prompt_tokens as f64,
                self.completion_tokens as f64,
            )
        })
    }

    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cached_prompt_tokens += other.cached_prompt_tokens;
    }

    /// What one call counts for in the engine's usage meter (`ctx.usage`): a call replayed from
    /// the record/replay cache is `replayed`, with no tokens or cost; a live call is a request.
    pub fn counts(&self, prices: Option<Prices>, from_cache: bool) -> prefflow_engine::UsageCounts {
        if from_cache {
            return prefflow_engine::UsageCounts {
                replayed: 1,
                ..Default::default()
            };
        }
        prefflow_engine::UsageCounts {
            requests: 1,
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            cached_prompt_tokens: self.cached_prompt_tokens,
            cost: self.cost(prices),
            ..Default::default()
        }
    }
}

/// Budget limits of a model entry (any may be absent).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limits {
    /// Requests per minute.
    pub rpm: Option<u64>,
    /// Tokens (prompt + completion) per minute.
    pub tpm: Option<u64>,
    /// Tokens per day.
    pub tpd: Option<u64>,
}

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
