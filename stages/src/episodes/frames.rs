//! Episode rows as the `episodes`, `steps` and `diffs` tables (docs/tables.md), through the
//! runners' row structs (`tables::episodes`), which the runner's record is.

use polars::prelude::*;

use super::record::{EpisodeRun, StepRow};
use crate::tables::episodes::{Diff, PlayedEpisode, DIFFS, EPISODES, STEPS};

/// All three tables for a batch of runs.
pub fn episode_tables(runs: &[EpisodeRun]) -> PolarsResult<Vec<(&'static str, DataFrame)>> {
    let episodes: Vec<PlayedEpisode> = runs.iter().map(|r| r.episode.clone()).collect();
    let steps: Vec<StepRow> = runs.iter().flat_map(|r| r.steps.iter().cloned()).collect();
    let diffs: Vec<Diff> = runs
        .iter()
        .map(|r| Diff {
            episode_id: r.episode.episode_id.clone(),
            diff: r.diff.clone(),
        })
        .collect();
    Ok(vec![
        (EPISODES.name, PlayedEpisode::to_frame(&episodes)?),
        (STEPS.name, StepRow::to_frame(&steps)?),
        (DIFFS.name, Diff::to_frame(&diffs)?),
    ])
}
