//! The domain's stage kinds, one per file.

mod build_world;
mod import_persona;
mod llm_complete;

pub use build_world::{input_error, BuildWorld, WORLD_TABLES};
pub use import_persona::ImportPersona;
pub use llm_complete::{rows_as_json, LlmComplete};
