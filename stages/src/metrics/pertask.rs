//! The per-task view every aggregate is computed from: one row per variant × task with each
//! metric as a [`Ratio`] (epochs averaged within the task, or summed counts for the micro
//! metrics). Built with polars group-bys, so 100,000 episodes reduce to a few thousand rows
//! before any Rust loop runs.

use polars::prelude::*;
use prefflow_engine::StageError;

use super::bootstrap::{cluster_index, Bootstrap, Estimate, Ratio};
use crate::tables::episodes::PlayedEpisode;
use crate::tables::judging::{Interaction, Score, INTERACTION, SCORES};
use crate::tables::row::RowError;

/// The metrics of Table 1, in the order the table lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// All criteria pass (macro over tasks).
    Success,
    /// Fraction of action criteria passed.
    Action,
    /// Fraction of personalization criteria passed.
    Personalization,
    /// Personalization criteria whose slot is inferable from history.
    Inferable,
    /// Personalization criteria whose slot is ask-only.
    AskOnly,
    /// Interaction recall: ask-only slots asked / ask-only slots (micro over episodes).
    Recall,
    /// Interaction precision: requests matched to an ask-only slot / requests (micro).
    Precision,
    /// ask_user calls per task.
    AskUserCalls,
    /// Agent steps per task.
    Steps,
}

/// Every metric, in table order.
pub const METRICS: [Metric; 9] = [
    Metric::Success,
    Metric::Action,
    Metric::Personalization,
    Metric::Inferable,
    Metric::AskOnly,
    Metric::Recall,
    Metric::Precision,
    Metric::AskUserCalls,
    Metric::Steps,
];

impl Metric {
    /// The name in the `metric` column.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Success => Score::success,
            Metric::Action => Score::action,
            Metric::Personalization => Score::personalization,
            Metric::Inferable => Score::inferable,
            Metric::AskOnly => Score::ask_only,
            Metric::Recall => Interaction::recall,
            Metric::Precision => Interaction::precision,
            Metric::AskUserCalls => Score::ask_user_calls,
            Metric::Steps => Score::steps,
        }
    }

    /// Rates are shown as percentages; counts as plain numbers.
    pub fn is_rate(self) -> bool {
        !matches!(self, Metric::AskUserCalls | Metric::Steps)
    }

    fn index(self) -> usize {
        METRICS.iter().position(|m| *m == self).unwrap_or(0)
    }
}

/// One variant × task.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRow {
    /// The task.
    pub task_id: String,
    /// The template it was instantiated from: the cluster the bootstrap resamples (the task id
    /// itself when the scores do not say).
    pub template: String,
    /// Its perturbation subset (`none` when the scores do not say).
    pub perturbation: String,
    /// The history exposure its episodes saw (`unknown` without the episodes table).
    pub exposure: String,
    /// Epochs with a scored success (pass^k's n).
    pub epochs: u32,
    /// Successful epochs (pass^k's c).
    pub successes: u32,
    metrics: [Option<Ratio>; 9],
}

impl TaskRow {
    /// The task's contribution to `metric`; None when the metric is undefined for the task
    /// (no criteria of that kind, no ask-only slot, no request).
    pub fn get(&self, metric: Metric) -> Option<Ratio> {
        self.metrics[metric.index()]
    }
}

/// Task rows grouped by variant, variants and tasks sorted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PerTask {
    /// `(variant, rows)` pairs.
    pub variants: Vec<(String, Vec<TaskRow>)>,
}

crate::tables::row! {
    /// The `scores` columns aggregation reads (`template` too when present).
    pub struct ScoreFacts of SCORES {
        /// See [`SCORES`].
        pub episode_id: String,
        /// See [`SCORES`].
        pub task_id: String,
        /// See [`SCORES`].
        pub variant: String,
        /// See [`SCORES`].
        pub success: Option<bool>,
        /// See [`SCORES`].
        pub action: Option<f64>,
        /// See [`SCORES`].
        pub personalization: Option<f64>,
        /// See [`SCORES`].
        pub inferable: Option<f64>,
        /// See [`SCORES`].
        pub ask_only: Option<f64>,
        /// See [`SCORES`].
        pub steps: u32,
        /// See [`SCORES`].
        pub ask_user_calls: u32,
        /// See [`SCORES`].
        pub perturbation: String,
    }
}

crate::tables::row! {
    /// The `interaction` columns aggregation reads.
    pub struct InteractionCounts of INTERACTION {
        /// See [`INTERACTION`].
        pub task_id: String,
        /// See [`INTERACTION`].
        pub variant: String,
        /// See [`INTERACTION`].
        pub requests: u32,
        /// See [`INTERACTION`].
        pub matched_requests: u32,
        /// See [`INTERACTION`].
        pub ask_only_slots: u32,
        /// See [`INTERACTION`].
        pub matched_ask_only: u32,
    }
}

/// An input table that lacks a column its reader needs (or holds it typed otherwise), as the
/// stage's input error naming the table, the column and the contract.
pub fn input_error(e: RowError) -> StageError {
    StageError::Input(format!("input {e}; produce it as docs/tables.md describes"))
}

/// Fails with the missing column and the table's contract when `df` lacks one of `columns`.
pub fn require(df: &DataFrame, table: &str, columns: &[&str]) -> Result<(), StageError> {
    let names: Vec<&str> = df.get_column_names().iter().map(|c| c.as_str()).collect();
    match columns.iter().find(|c| !names.contains(c)) {
        None => Ok(()),
        Some(missing) => Err(StageError::Input(format!(
            "input table `{table}` has no column `{missing}` (it has [{}]); produce it as docs/tables.md describes",
            names.join(", ")
        ))),
    }
}

/// The score facts aggregation reads.
type S = ScoreFacts;
/// The interaction counts it sums.
type I = InteractionCounts;

/// Reduces `scores` (one row per episode), `interaction` (one row per episode, optional) and
/// `episodes` (for the exposure, optional) to [`PerTask`].
pub fn per_task(
    scores: &DataFrame,
    interaction: Option<&DataFrame>,
    episodes: Option<&DataFrame>,
) -> Result<PerTask, StageError> {
    S::check(scores).map_err(input_error)?;
    let mut tasks = task_means(scores, episodes);
    let keys = [col(S::variant), col(S::task_id)];
    let counts = [
        I::matched_ask_only,
        I::ask_only_slots,
        I::matched_requests,
        I::requests,
    ];
    tasks = match interaction {
        Some(inter) => {
            I::check(inter).map_err(input_error)?;
            let sums = counts.map(|c| col(c).cast(DataType::Float64).sum());
            let by_task = inter.clone().lazy().group_by(keys.clone()).agg(sums);
            tasks.join(by_task, keys.clone(), keys, JoinArgs::new(JoinType::Left))
        }
        None => tasks.with_columns(counts.map(|c| lit(NULL).cast(DataType::Float64).alias(c))),
    };
    let df = tasks
        .sort([S::variant, S::task_id], SortMultipleOptions::default())
        .collect()?;
    rows(&df).map_err(StageError::from)
}

/// Epochs averaged per variant × task, with the exposure of `episodes` (when given).
fn task_means(scores: &DataFrame, episodes: Option<&DataFrame>) -> LazyFrame {
    let (id, exposure) = (PlayedEpisode::episode_id, PlayedEpisode::exposure);
    let mut lf = scores.clone().lazy();
    lf = match episodes {
        Some(ep) if ep.schema().contains(exposure) => lf.join(
            ep.clone()
                .lazy()
                .select([col(id), col(exposure).cast(DataType::String)]),
            [col(S::episode_id)],
            [col(id)],
            JoinArgs::new(JoinType::Left),
        ),
        _ => lf.with_column(lit(NULL).cast(DataType::String).alias(exposure)),
    };
    if !scores.schema().contains(Score::template) {
        lf = lf.with_column(col(S::task_id).alias(Score::template));
    }
    let keys = [col(S::variant), col(S::task_id)];
    let mean = |c: &str| col(c).cast(DataType::Float64).mean();
    lf.group_by(keys).agg([
        col(S::perturbation).cast(DataType::String).first(),
        col(Score::template).cast(DataType::String).first(),
        col(exposure).drop_nulls().first(),
        col(S::success)
            .cast(DataType::Float64)
            .mean()
            .alias(S::success),
        col(S::success).count().cast(DataType::UInt32).alias(EPOCHS),
        col(S::success)
            .cast(DataType::UInt32)
            .sum()
            .alias(SUCCESSES),
        mean(S::action),
        mean(S::personalization),
        mean(S::inferable),
        mean(S::ask_only),
        mean(S::ask_user_calls),
        mean(S::steps),
    ])
}

/// The per-task frame's count of scored epochs.
const EPOCHS: &str = "epochs";
/// The per-task frame's count of successful epochs.
const SUCCESSES: &str = "successes";

fn f64s(df: &DataFrame, name: &str) -> PolarsResult<Vec<Option<f64>>> {
    Ok(df.column(name)?.f64()?.iter().collect())
}

fn strs(df: &DataFrame, name: &str) -> PolarsResult<Vec<Option<String>>> {
    Ok(df
        .column(name)?
        .str()?
        .iter()
        .map(|s| s.map(str::to_string))
        .collect())
}

fn u32s(df: &DataFrame, name: &str) -> PolarsResult<Vec<u32>> {
    let c = df.column(name)?.cast(&DataType::UInt32)?;
    Ok(c.u32()?.iter().map(|v| v.unwrap_or(0)).collect())
}

/// Task rows from the per-task frame (sorted by variant, task).
fn rows(df: &DataFrame) -> PolarsResult<PerTask> {
    let variant = strs(df, S::variant)?;
    let task = strs(df, S::task_id)?;
    let pert = strs(df, S::perturbation)?;
    let template = strs(df, Score::template)?;
    let expo = strs(df, PlayedEpisode::exposure)?;
    let (epochs, successes) = (u32s(df, EPOCHS)?, u32s(df, SUCCESSES)?);
    let metrics = METRICS.map(|m| match m {
        Metric::Recall => micro(df, I::matched_ask_only, I::ask_only_slots),
        Metric::Precision => micro(df, I::matched_requests, I::requests),
        m => Ok(f64s(df, m.name())?
            .into_iter()
            .map(|v| v.map(Ratio::mean))
            .collect()),
    });
    let metrics = metrics
        .into_iter()
        .collect::<PolarsResult<Vec<Vec<Option<Ratio>>>>>()?;
    let mut out = PerTask::default();
    for i in 0..df.height() {
        let row = TaskRow {
            task_id: task[i].clone().unwrap_or_default(),
            template: template[i]
                .clone()
                .or_else(|| task[i].clone())
                .unwrap_or_default(),
            perturbation: pert[i].clone().unwrap_or_else(|| "none".into()),
            exposure: expo[i].clone().unwrap_or_else(|| "unknown".into()),
            epochs: epochs[i],
            successes: successes[i],
            metrics: std::array::from_fn(|m| metrics[m][i]),
        };
        let v = variant[i].clone().unwrap_or_default();
        match out.variants.last_mut() {
            Some((last, rows)) if *last == v => rows.push(row),
            _ => out.variants.push((v, vec![row])),
        }
    }
    Ok(out)
}

/// A micro ratio per task: the summed `num` over the summed `den` (None when `den` is 0).
fn micro(df: &DataFrame, num: &str, den: &str) -> PolarsResult<Vec<Option<Ratio>>> {
    let (num, den) = (f64s(df, num)?, f64s(df, den)?);
    Ok(num
        .into_iter()
        .zip(den)
        .map(|(num, den)| match (num, den) {
            (Some(num), Some(den)) if den > 0.0 => Some(Ratio { num, den }),
            _ => None,
        })
        .collect())
}

/// The estimate of `metric` over `rows` (tasks where it is defined), resampling templates.
pub fn clustered<'a>(
    boot: &Bootstrap,
    key: &str,
    rows: impl Iterator<Item = &'a TaskRow>,
    metric: Metric,
) -> Estimate {
    let (items, templates): (Vec<_>, Vec<&str>) = rows
        .filter_map(|t| Some((t.get(metric)?, t.template.as_str())))
        .unzip();
    boot.ratio_clustered(key, &items, &cluster_index(&templates))
}
