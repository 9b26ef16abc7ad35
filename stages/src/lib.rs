//! # prefflow-stages
//!
//! The benchmark domain: the `world` (apps, persona, history and the simulated phone), model
//! calls, KnowU-Bench interop, the phone served over HTTP (`serve`), and one module per stage
//! kind. This crate depends on the engine; the engine never depends on it.

#![deny(missing_docs)]

pub mod episodes;
pub mod files;
pub mod judging;
pub mod kinds;
pub mod knowu;
pub mod limits;
pub mod llm;
pub mod metrics;
#[cfg(test)]
mod property_tests;
pub mod report;
pub mod serve;
pub mod tables;
pub mod tasks;
pub mod text;
pub mod world;

use prefflow_engine::{CrateCode, Registry};

/// This crate's code (its sources, hashed by `build.rs`, and the engine's): part of the key of
/// every kind it defines, so a change here re-runs what it can change.
pub static CODE: CrateCode = CrateCode {
    name: env!("CARGO_PKG_NAME"),
    sources: env!("PREFFLOW_SOURCES_HASH"),
    deps: &[&prefflow_engine::code::CODE],
};

/// Registers the domain's stage kinds so pipeline files can name them.
pub fn register(registry: &mut Registry) {
    registry.defined_in(&CODE);
    registry.register(kinds::LlmComplete);
    registry.register(kinds::BuildWorld);
    registry.register(kinds::ImportPersona);
    registry.register(kinds::GenerateTasks);
    registry.register(kinds::ExportReview);
    registry.register(kinds::ImportReview);
    registry.register(kinds::ValidateTasks);
    registry.register(kinds::TaskStats);
    registry.register(kinds::RunEpisodes);
    registry.register(kinds::RunRemoteEpisodes);
    registry.register(kinds::Aggregate);
    registry.register(kinds::JudgeAgreement);
    registry.register(kinds::Report);
    registry.register(kinds::Judge);
    registry.register(kinds::BuildKnowuWorld);
    registry.register(kinds::GenerateKnowuTasks);
    registry.register(kinds::RunKnowuEpisodes);
    registry.register(kinds::ImportKnowuRuns);
    registry.register(kinds::ExportKnowuRuns);
    registry.register(kinds::KnowuMetrics);
    registry.register(kinds::KnowuLeaderboard);
}
