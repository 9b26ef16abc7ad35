//! The per-task view every aggregate is computed from: one row per variant × task with each
//! metric as a [`Ratio`] (epochs averaged within the task, or summed counts for the micro
//! metrics). Built with polars group-bys, so 100,000 episodes reduce to a few thousand rows
//! before any Rust loop runs.

use polars::prelude::*;
use prefflow_engine::StageError;

use super::bootstrap::{cluster_index, Bootstrap, Estimate, Ratio};

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
            Metric::Success => "success",
            Metric::Action => "action",
            Metric::Personalization => "personalization",
            Metric::Inferable => "inferable",
            Metric::AskOnly => "ask_only",
            Metric::Recall => "recall",
            Metric::Precision => "precision",
            Metric::AskUserCalls => "ask_user_calls",
            Metric::Steps => "steps",
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

/// Columns `scores` must have for aggregation.
const SCORE_COLUMNS: [&str; 11] = [
    "episode_id",
    "task_id",
    "variant",
    "success",
    "action",
    "personalization",
    "inferable",
    "ask_only",
    "steps",
    "ask_user_calls",
    "perturbation",
];

/// Columns `interaction` must have.
const INTERACTION_COLUMNS: [&str; 6] = [
    "task_id",
    "variant",
    "requests",
    "matched_requests",
    "ask_only_slots",
    "matched_ask_only",
];

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

/// Reduces `scores` (one row per episode), `interaction` (one row per episode, optional) and
/// `episodes` (for the exposure, optional) to [`PerTask`].
pub fn per_task(
    scores: &DataFrame,
    interaction: Option<&DataFrame>,
    episodes: Option<&DataFrame>,
) -> Result<PerTask, StageError> {
    require(scores, "scores", &SCORE_COLUMNS)?;
    let mut lf = scores.clone().lazy();
    lf = match episodes {
        Some(ep) if ep.schema().contains("exposure") => lf.join(
            ep.clone()
                .lazy()
                .select([col("episode_id"), col("exposure").cast(DataType::String)]),
            [col("episode_id")],
            [col("episode_id")],
            JoinArgs::new(JoinType::Left),
        ),
        _ => lf.with_column(lit(NULL).cast(DataType::String).alias("exposure")),
    };
    if !scores.schema().contains("template") {
        lf = lf.with_column(col("task_id").alias("template"));
    }
    let keys = [col("variant"), col("task_id")];
    let mean = |c: &str| col(c).cast(DataType::Float64).mean();
    let mut tasks = lf.group_by(keys.clone()).agg([
        col("perturbation").cast(DataType::String).first(),
        col("template").cast(DataType::String).first(),
        col("exposure").drop_nulls().first(),
        col("success")
            .cast(DataType::Float64)
            .mean()
            .alias("success"),
        col("success")
            .count()
            .cast(DataType::UInt32)
            .alias("epochs"),
        col("success")
            .cast(DataType::UInt32)
            .sum()
            .alias("successes"),
        mean("action"),
        mean("personalization"),
        mean("inferable"),
        mean("ask_only"),
        mean("ask_user_calls"),
        mean("steps"),
    ]);
    let counts = [
        "matched_ask_only",
        "ask_only_slots",
        "matched_requests",
        "requests",
    ];
    tasks = match interaction {
        Some(inter) => {
            require(inter, "interaction", &INTERACTION_COLUMNS)?;
            let sums = counts.map(|c| col(c).cast(DataType::Float64).sum());
            let by_task = inter.clone().lazy().group_by(keys.clone()).agg(sums);
            tasks.join(by_task, keys.clone(), keys, JoinArgs::new(JoinType::Left))
        }
        None => tasks.with_columns(counts.map(|c| lit(NULL).cast(DataType::Float64).alias(c))),
    };
    let df = tasks
        .sort(["variant", "task_id"], SortMultipleOptions::default())
        .collect()?;
    rows(&df).map_err(StageError::from)
}

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
    let variant = strs(df, "variant")?;
    let task = strs(df, "task_id")?;
    let pert = strs(df, "perturbation")?;
    let template = strs(df, "template")?;
    let expo = strs(df, "exposure")?;
    let (epochs, successes) = (u32s(df, "epochs")?, u32s(df, "successes")?);
    let macros = [
        "success",
        "action",
        "personalization",
        "inferable",
        "ask_only",
    ]
    .map(|c| f64s(df, c));
    let [succ, action, pers, inf, ask] = macros;
    let (succ, action, pers, inf, ask) = (succ?, action?, pers?, inf?, ask?);
    let (calls, steps) = (f64s(df, "ask_user_calls")?, f64s(df, "steps")?);
    let (m_ask, ask_slots) = (f64s(df, "matched_ask_only")?, f64s(df, "ask_only_slots")?);
    let (m_req, reqs) = (f64s(df, "matched_requests")?, f64s(df, "requests")?);
    let micro = |num: Option<f64>, den: Option<f64>| match (num, den) {
        (Some(num), Some(den)) if den > 0.0 => Some(Ratio { num, den }),
        _ => None,
    };
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
            metrics: [
                succ[i].map(Ratio::mean),
                action[i].map(Ratio::mean),
                pers[i].map(Ratio::mean),
                inf[i].map(Ratio::mean),
                ask[i].map(Ratio::mean),
                micro(m_ask[i], ask_slots[i]),
                micro(m_req[i], reqs[i]),
                calls[i].map(Ratio::mean),
                steps[i].map(Ratio::mean),
            ],
        };
        let v = variant[i].clone().unwrap_or_default();
        match out.variants.last_mut() {
            Some((last, rows)) if *last == v => rows.push(row),
            _ => out.variants.push((v, vec![row])),
        }
    }
    Ok(out)
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
