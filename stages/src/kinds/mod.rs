//! The domain's stage kinds, one per file.

mod build_world;
mod generate_tasks;
mod llm_complete;

pub use build_world::{input_error, BuildWorld, WORLD_TABLES};
pub use generate_tasks::GenerateTasks;
pub use llm_complete::{rows_as_json, LlmComplete};
