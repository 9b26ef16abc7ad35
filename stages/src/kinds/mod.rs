//! The domain's stage kinds, one per file.

mod llm_complete;

pub use llm_complete::LlmComplete;
