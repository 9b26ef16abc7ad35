//! The OpenAI-compatible model client — chat completions and embeddings — shared by LLM agents,
//! the LLM user simulator, LLM judges, `llm_complete` and embedding retrieval (see
//! [`client`](LlmClient) for pools, retries and record/replay).
//!
//! Every request is recorded content-addressed in the run's store (model, endpoint, messages,
//! tools, sampling parameters and epoch — never the API key), so a finished pipeline replays
//! bit-identically with zero network calls, and `--offline` turns any cache miss into a clear
//! error. Provider faults (429, 5xx, timeouts, resets, unusable bodies) are retried with
//! exponential backoff and jitter, honouring `Retry-After`.
//!
//! [`tokens`] is the one prompt-token counter (the budget's reservations, `plan`'s estimate).

mod client;
mod error;
pub mod mock;
pub mod tokens;
mod types;

pub use client::{io_runtime, Endpoint, LlmClient, Reply};
pub use error::LlmError;
pub use types::{ChatMessage, ChatRequest, LlmConfig, Prices, ToolCall, ToolSpec, Usage};
