//! The OpenAI-compatible model client — chat completions and embeddings — shared by LLM agents,
//! the LLM user simulator, LLM judges, `llm_complete` and embedding retrieval (see
//! [`client`](LlmClient) for pools, retries and record/replay).
//!
//! Every request is recorded content-addressed in the run's store (model, endpoint, messages,
//! tools, sampling parameters and epoch — never the API key), so a finished pipeline replays
//! bit-identically with zero network calls, and `--offline` turns any cache miss into a clear
//! error. Provider faults (5xx, timeouts, resets, unusable bodies) are retried with
//! exponential backoff and jitter, honouring `Retry-After`; 429s are waited out.
//!
//! Each endpoint has a [`Budget`](budget::Budget): the provider's limits (`rpm`, `tpm`, `tpd`
//! in the model entry, or learned from its rate-limit headers), an adaptive window of
//! requests in flight and a fair queue between the stages, roles and models sharing it.
//! [`tokens`] is the one prompt-token counter (the budget's reservations, `plan`'s estimate).

pub mod budget;
mod client;
mod error;
pub mod headers;
#[cfg(any(test, feature = "testkit"))]
pub mod mock;
pub mod record;
pub mod tokens;
mod types;

pub use client::{io_runtime, Endpoint, LlmClient, Reply};
pub use error::LlmError;
pub use types::{ChatMessage, ChatRequest, LlmConfig, Prices, ToolCall, ToolSpec, Usage};
