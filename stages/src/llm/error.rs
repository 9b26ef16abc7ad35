//! Typed LLM client errors.

use prefflow_engine::StageError;

/// Why a model call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// The API key variable named in the config is not set.
    #[error("environment variable `{var}` (api_key_env) is not set; export it or remove api_key_env for keyless servers")]
    MissingKey {
        /// The variable name.
        var: String,
    },
    /// Neither `base_url` nor the variable named by `base_url_env` gives an endpoint.
    #[error("no model endpoint: {}", missing_base_url(.var))]
    MissingBaseUrl {
        /// The variable named by `base_url_env`, if any.
        var: Option<String>,
    },
    /// `--offline` and the request is not in the record/replay cache.
    #[error("offline: no recorded response for a `{model}` request (cache key {key}); run without --offline to record it")]
    OfflineMiss {
        /// Model name.
        model: String,
        /// Cache key of the request.
        key: String,
    },
    /// The server kept failing transiently until retries ran out.
    #[error("{endpoint}: gave up after {attempts} attempts: {last}")]
    Exhausted {
        /// Endpoint URL.
        endpoint: String,
        /// Attempts made.
        attempts: u32,
        /// The last failure.
        last: String,
    },
    /// The server answered with a non-retryable HTTP error.
    #[error("{endpoint}: HTTP {status}: {body}")]
    Http {
        /// Endpoint URL.
        endpoint: String,
        /// Status code.
        status: u16,
        /// Start of the response body.
        body: String,
    },
    /// The response is not a valid chat completion.
    #[error("{endpoint}: malformed response: {detail} (body starts: {excerpt:?})")]
    Malformed {
        /// Endpoint URL.
        endpoint: String,
        /// What is wrong.
        detail: String,
        /// Start of the body.
        excerpt: String,
    },
    /// The endpoint's budget can never grant the request (larger than a limit, or the daily
    /// budget is spent for longer than the request may wait).
    #[error("model budget: {0}")]
    Budget(String),
    /// The request does not fit the model's context: the server said so (HTTP 400 about the
    /// context length), or the model entry's `max_context` says it would not, and it was not
    /// sent. Every task of the stage would fail alike, so this is the user's to fix.
    #[error("{endpoint}: the request is ~{prompt_tokens} prompt tokens ({method}){reply}, more than model `{model}`'s context{said}; shrink it: show less history (`history: top_k:N`, or `none`), offer fewer tools (`max_tools: N`) or lower `max_tokens`; give the model's entry `max_context: N` and `prefflow plan` checks every task before a run")]
    ContextLength {
        /// Endpoint URL.
        endpoint: String,
        /// The model.
        model: String,
        /// The request's prompt tokens as the one counter measures them.
        prompt_tokens: u64,
        /// How they were counted (`chars/4`).
        method: &'static str,
        /// ` + max_tokens N` when a completion limit is set.
        reply: String,
        /// What the server said (` (HTTP 400: …)`), or the configured window (` (max_context N)`).
        said: String,
    },
    /// The record/replay cache could not be read or written.
    #[error("model cache: {0}")]
    Cache(String),
}

/// Whether an error body says the prompt is longer than the model's context (OpenAI, vLLM,
/// llama.cpp, Anthropic and TGI phrasings).
pub fn is_context_length(body: &str) -> bool {
    let body = body.to_lowercase();
    [
        "context length",
        "context_length",
        "maximum context",
        "context window",
        "context size",
        "exceeds the available context",
        "too many tokens",
        "prompt is too long",
        "input is too long",
        "n_ctx",
    ]
    .iter()
    .any(|p| body.contains(p))
}

/// The fix for a missing endpoint, naming the variable when there is one.
fn missing_base_url(var: &Option<String>) -> String {
    match var {
        Some(v) => format!("environment variable `{v}` (base_url_env) is not set and `base_url` is empty; export {v}=http://HOST:PORT/v1 or set base_url"),
        None => "`base_url` is empty; set base_url (e.g. http://127.0.0.1:8080/v1) or base_url_env".into(),
    }
}

impl From<LlmError> for StageError {
    fn from(e: LlmError) -> Self {
        match e {
            // The client already retried: the engine must not retry again (one retry layer).
            LlmError::Exhausted { .. } => StageError::Exhausted(e.to_string()),
            LlmError::MissingKey { .. }
            | LlmError::MissingBaseUrl { .. }
            | LlmError::OfflineMiss { .. }
            | LlmError::ContextLength { .. } => StageError::Input(e.to_string()),
            _ => StageError::Failed(e.to_string()),
        }
    }
}
