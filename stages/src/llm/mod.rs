//! An OpenAI-compatible chat-completions client, shared by LLM agents, the LLM user simulator
//! and LLM judges.
//!
//! Every request is recorded content-addressed in the run's store (model, endpoint, messages,
//! tools, sampling parameters and epoch — never the API key), so a finished pipeline replays
//! bit-identically with zero network calls, and `--offline` turns any cache miss into a clear
//! error. Transient failures (429, 5xx, timeouts, resets) are retried with exponential backoff
//! and jitter, honouring `Retry-After`.

mod client;
mod error;
pub mod mock;
mod types;

pub use client::{LlmClient, Reply};
pub use error::LlmError;
pub use types::{ChatMessage, ChatRequest, LlmConfig, Prices, ToolCall, ToolSpec, Usage};
