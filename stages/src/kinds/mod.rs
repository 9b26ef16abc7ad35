//! The domain's stage kinds, one per file.

mod aggregate;
mod build_knowu_world;
mod build_world;
mod export_review;
mod generate_knowu_tasks;
mod generate_tasks;
mod import_persona;
mod import_review;
mod judge;
mod judge_agreement;
mod knowu_export;
mod knowu_import;
mod knowu_leaderboard;
mod knowu_metrics;
mod llm_complete;
mod report;
mod run_episodes;
mod run_knowu_episodes;
mod run_remote_episodes;
mod task_stats;
mod validate_tasks;

pub use aggregate::{optional_input, required_input, Aggregate};
pub use build_knowu_world::BuildKnowuWorld;
pub use build_world::{input_error, BuildWorld};
pub use export_review::ExportReview;
pub use generate_knowu_tasks::GenerateKnowuTasks;
pub use generate_tasks::GenerateTasks;
pub use import_persona::ImportPersona;
pub use import_review::ImportReview;
pub use judge::{Judge, JudgeParams};
pub use judge_agreement::JudgeAgreement;
pub use knowu_export::ExportKnowuRuns;
pub use knowu_import::ImportKnowuRuns;
pub use knowu_leaderboard::KnowuLeaderboard;
pub use knowu_metrics::KnowuMetrics;
pub use llm_complete::{rows_as_json, LlmComplete};
pub use report::Report;
pub use run_episodes::{RunEpisodes, RunEpisodesParams};
pub use run_knowu_episodes::RunKnowuEpisodes;
pub use run_remote_episodes::{RunRemoteEpisodes, RunRemoteEpisodesParams};
pub use task_stats::TaskStats;
pub use validate_tasks::ValidateTasks;

use std::sync::Arc;

use prefflow_engine::{StageContext, StageError};

use crate::tasks::error::TaskError;
use crate::world::from_tables::world_from_tables;
use crate::world::World;

/// The world described by a stage's `sources` and `history_events` inputs. Kinds whose items
/// share it build it once per instance, in `prepare`.
fn world_input(ctx: &StageContext<'_>) -> Result<Arc<World>, StageError> {
    let world = world_from_tables(ctx.input("sources")?, ctx.input("history_events")?)
        .map_err(TaskError::from)?;
    Ok(Arc::new(world))
}
