//! `aggregate`: the judge's per-episode tables → Table 1 of iPrefBench with bootstrap CIs, paired
//! differences, pass^k, the subset tables behind Figures 2–4, and `usage` (tokens and money per
//! variant and role). Put `gather: true` on the stage
//! so it sees every variant of its inputs at once (all tables carry `variant`).

use prefflow_engine::schema::{InputDef, TableDef};
use prefflow_engine::{Kind, StageContext, StageError, Tables};
use serde::Deserialize;

use super::support::{optional_input, required_input};
use crate::metrics::{aggregate, AggregateOptions, Bootstrap};

/// Parameters of `aggregate`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AggregateParams {
    /// Bootstrap resamples over tasks (default 1000; 0 disables intervals).
    #[serde(default = "thousand")]
    pub resamples: u32,
    /// Bootstrap seed (default 0): the same inputs give the same intervals.
    #[serde(default)]
    pub seed: u64,
    /// Confidence level (default 0.95).
    #[serde(default = "level")]
    pub level: f64,
    /// The variant paired differences are taken against (default: the first by name).
    #[serde(default)]
    pub baseline: Option<String>,
}

fn thousand() -> u32 {
    1000
}
fn level() -> f64 {
    0.95
}

/// Aggregates judged episodes into the paper's tables.
pub struct Aggregate;

impl Kind for Aggregate {
    type Params = AggregateParams;
    type State = ();
    const NAME: &'static str = "aggregate";
    const VERSION: &'static str = "2";
    const OUTPUT_DEFS: &'static [&'static TableDef] = &[
        &crate::tables::aggregate::TABLE1,
        &crate::tables::aggregate::PAIRED,
        &crate::tables::aggregate::PASS_K,
        &crate::tables::aggregate::PERTURBATIONS,
        &crate::tables::aggregate::HISTORY_CURVE,
        &crate::tables::aggregate::FAILURE_LABELS,
        &crate::tables::aggregate::USAGE,
    ];
    const INPUTS: &'static [InputDef] = &[
        InputDef::required(
            &crate::tables::judging::SCORES,
            &[
                crate::tables::judging::EPISODE_ID,
                crate::tables::judging::TASK_ID,
                crate::tables::judging::VARIANT,
                crate::tables::judging::EPOCH,
                crate::tables::judging::SUCCESS,
                crate::tables::judging::SCORE,
            ],
        ),
        InputDef::optional(
            &crate::tables::judging::INTERACTION,
            &[crate::tables::judging::EPISODE_ID, "recall", "precision"],
        ),
        InputDef::optional(
            &crate::tables::judging::VERDICTS,
            &[
                crate::tables::judging::EPISODE_ID,
                crate::tables::judging::MODE,
                crate::tables::judging::VERDICT,
                crate::tables::judging::FAILURE_LABEL,
            ],
        ),
        InputDef::optional(
            &crate::tables::episodes::EPISODES,
            &[
                crate::tables::episodes::EPISODE_ID,
                crate::tables::episodes::VARIANT,
            ],
        ),
    ];
    const SUMMARY: &'static str = "scores (+ interaction, verdicts, episodes) → table1, paired, pass_k, perturbations, history_curve, failure_labels, usage (params: resamples, seed, level, baseline; use gather: true)";

    fn run(&self, params: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        if !(params.level > 0.0 && params.level < 1.0) {
            return Err(StageError::Input(format!(
                "parameter `level` is {}; give a confidence level between 0 and 1, e.g. 0.95",
                params.level
            )));
        }
        let options = AggregateOptions {
            bootstrap: Bootstrap {
                resamples: params.resamples,
                seed: params.seed,
                level: params.level,
            },
            baseline: params.baseline.clone(),
        };
        let a = aggregate(
            &*required_input(ctx, "scores")?,
            optional_input(ctx, "interaction")?.as_deref(),
            optional_input(ctx, "verdicts")?.as_deref(),
            optional_input(ctx, "episodes")?.as_deref(),
            &options,
        )?;
        Ok(Tables::new([
            ("table1", a.table1),
            ("paired", a.paired),
            ("pass_k", a.pass_k),
            ("perturbations", a.perturbations),
            ("history_curve", a.history_curve),
            ("failure_labels", a.failure_labels),
            ("usage", a.usage),
        ]))
    }
}
