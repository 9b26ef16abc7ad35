//! Table 1 of iPrefBench per variant, and [`aggregate`], the one function that builds every
//! aggregate table (the function the lead benchmarks on 100,000 episodes).

use polars::prelude::*;
use prefflow_engine::StageError;

use super::bootstrap::{Bootstrap, Estimate};
use super::paired::{paired, refuse_across_judges};
use super::passk::pass_k;
use super::pertask::{clustered, per_task, Metric, PerTask, METRICS};
use super::subsets::{failure_labels, history_curve, perturbations};
use crate::tables::aggregate::{PassKRow as K, Table1Row as T};
use crate::tables::judging::Score;

/// Settings of [`aggregate`].
#[derive(Debug, Clone, Default)]
pub struct AggregateOptions {
    /// Bootstrap resamples, seed and level.
    pub bootstrap: Bootstrap,
    /// The variant paired differences are taken against (default: the first variant by name).
    pub baseline: Option<String>,
}

/// Every table the `aggregate` kind writes.
#[derive(Debug, Clone)]
pub struct Aggregates {
    /// Table 1: per variant × metric with CIs.
    pub table1: DataFrame,
    /// Paired differences of each variant against the baseline.
    pub paired: DataFrame,
    /// pass^k and pass@k per variant and k.
    pub pass_k: DataFrame,
    /// Figure 2: each perturbation subset minus overall.
    pub perturbations: DataFrame,
    /// Figure 4: metrics per history exposure.
    pub history_curve: DataFrame,
    /// Figure 3: failure labels of failed criteria.
    pub failure_labels: DataFrame,
    /// Table 1's companion: tokens and money per variant and role (agent, user, judge).
    pub usage: DataFrame,
}

/// Builds all aggregate tables from the judge's `scores`, `interaction` and `verdicts` and the
/// runner's `episodes` (for the exposure). Inputs may hold many variants (`variant` column).
pub fn aggregate(
    scores: &DataFrame,
    interaction: Option<&DataFrame>,
    verdicts: Option<&DataFrame>,
    episodes: Option<&DataFrame>,
    options: &AggregateOptions,
) -> Result<Aggregates, StageError> {
    let tasks = per_task(scores, interaction, episodes)?;
    let boot = &options.bootstrap;
    let baseline = options
        .baseline
        .clone()
        .or_else(|| tasks.variants.first().map(|(v, _)| v.clone()));
    if let Some(b) = &options.baseline {
        if !tasks.variants.iter().any(|(v, _)| v == b) {
            let known: Vec<&str> = tasks.variants.iter().map(|(v, _)| v.as_str()).collect();
            return Err(StageError::Input(format!(
                "parameter `baseline`: no variant `{b}` in the scores (variants: [{}])",
                known.join(", ")
            )));
        }
    }
    Ok(Aggregates {
        table1: with_user(
            with_agent(
                judge_row(with_judge(table1(&tasks, boot)?, scores)?)?,
                episodes,
            )?,
            episodes,
        )?,
        paired: refuse_across_judges(
            with_judge(
                paired(&tasks, baseline.as_deref().unwrap_or(""), boot)?,
                scores,
            )?,
            baseline
                .as_deref()
                .and_then(|b| judge_of(scores, b))
                .as_deref(),
        )?,
        pass_k: with_judge(pass_k_frame(&tasks)?, scores)?,
        perturbations: perturbations(&tasks)?,
        history_curve: history_curve(&tasks, boot)?,
        failure_labels: failure_labels(verdicts)?,
        usage: with_judge(super::usage::usage(scores, episodes)?, scores)?,
    })
}

/// `table1`: variant, metric, value, ci_low, ci_high, n, templates, display. Intervals
/// resample templates (the variants of one template are one cluster); `templates` says how many
/// stand behind each `n`.
pub fn table1(tasks: &PerTask, boot: &Bootstrap) -> PolarsResult<DataFrame> {
    let mut rows = EstimateRows::default();
    for (variant, task_rows) in &tasks.variants {
        for metric in METRICS {
            let est = clustered(
                boot,
                &format!("{variant}/{}", metric.name()),
                task_rows.iter(),
                metric,
            );
            rows.push(variant, metric, est);
        }
    }
    rows.frame()
}

/// A per-variant table (`table1`, `paired`, `pass_k`, `usage`) with a `judge` column: for each
/// variant, which judge produced its numbers (the distinct `judge` labels of its scores,
/// sorted, comma-separated, the offline judge marked as such (`reader_label`); null for
/// scores written without one), so a model judged by a judge model is never read as
/// rule-judged.
pub fn with_judge(table1: DataFrame, scores: &DataFrame) -> PolarsResult<DataFrame> {
    reader_labels(with_episode_label(table1, Some(scores), T::judge)?)
}

/// The judge label of `variant`'s scores as [`with_judge`] writes it; `None` without a
/// `judge` column or scores of the variant.
fn judge_of(scores: &DataFrame, variant: &str) -> Option<String> {
    let variants = scores.column(Score::variant).ok()?.str().ok()?;
    let judges = scores
        .column(Score::judge)
        .ok()?
        .cast(&DataType::String)
        .ok()?;
    let judges = judges.str().ok()?;
    let labels: std::collections::BTreeSet<&str> = variants
        .iter()
        .zip(judges.iter())
        .filter(|(v, _)| *v == Some(variant))
        .filter_map(|(_, j)| j)
        .collect();
    (!labels.is_empty()).then(|| reader_label(&labels.into_iter().collect::<Vec<_>>().join(", ")))
}

/// A `judge` label as a reader needs it: each label naming no model (`rule+scripted`) is the
/// offline judge and says so (`rule+scripted (offline)`); labels naming a model are kept.
fn reader_label(labels: &str) -> String {
    labels
        .split(", ")
        .map(|l| {
            if l.contains(':') {
                l.to_string()
            } else {
                format!("{l} (offline)")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `df`'s `judge` column through [`reader_label`].
fn reader_labels(df: DataFrame) -> PolarsResult<DataFrame> {
    let marked: Vec<Option<String>> = df
        .column(T::judge)?
        .cast(&DataType::String)?
        .str()?
        .iter()
        .map(|j| j.map(reader_label))
        .collect();
    let mut out = df;
    out.with_column(Column::new(T::judge.into(), marked))?;
    Ok(out)
}

/// Table 1, warned about when its columns were judged by different judges (`paired` refuses
/// those comparisons).
fn judge_row(table1: DataFrame) -> PolarsResult<DataFrame> {
    let judges = table1.column(T::judge)?.cast(&DataType::String)?;
    let distinct: std::collections::BTreeSet<&str> = judges.str()?.iter().flatten().collect();
    if distinct.len() > 1 {
        tracing::warn!(
            "Table 1 mixes judges ({}): columns judged differently are not comparable; configure one judge for every column (docs/judging.md)",
            distinct.into_iter().collect::<Vec<_>>().join("; ")
        );
    }
    Ok(table1)
}

/// Table 1 with an `agent` column: for each variant, the agent that played it as the episodes
/// name it (`oracle`, `llm:<provider model id>`; distinct values, sorted, comma-separated), so
/// a model's column carries both the name it goes by in the pipeline (in the variant) and the
/// model id the provider was asked for. Null without an `episodes` table.
pub fn with_agent(table1: DataFrame, episodes: Option<&DataFrame>) -> PolarsResult<DataFrame> {
    with_episode_label(table1, episodes, T::agent)
}

/// Table 1 with a `user` column: who answered each variant's questions (`scripted`,
/// `llm:<model>`, `llm:<model> (the model under test)`; the episodes' `user` column, distinct
/// values joined), so a column answered by a model — or by the model under test itself — is
/// never read as answered by the scripted user. Null when the episodes do not say.
pub fn with_user(table1: DataFrame, episodes: Option<&DataFrame>) -> PolarsResult<DataFrame> {
    with_episode_label(table1, episodes, T::user)
}

/// Table 1 with column `label` taken from the episodes' (or scores') own (distinct values per
/// variant, sorted, comma-separated; null without it).
fn with_episode_label(
    table1: DataFrame,
    episodes: Option<&DataFrame>,
    label: &str,
) -> PolarsResult<DataFrame> {
    let Some(episodes) = episodes.filter(|e| e.schema().contains(label)) else {
        return table1
            .lazy()
            .with_column(lit(NULL).cast(DataType::String).alias(label))
            .collect();
    };
    let labels = episodes
        .clone()
        .lazy()
        .select([col(T::variant), col(label).cast(DataType::String)])
        .unique_stable(None, UniqueKeepStrategy::First)
        .sort([T::variant, label], SortMultipleOptions::default())
        .group_by_stable([col(T::variant)])
        .agg([col(label).str().join(", ", true)]);
    table1
        .lazy()
        .join(
            labels,
            [col(T::variant)],
            [col(T::variant)],
            JoinArgs::new(JoinType::Left),
        )
        .collect()
}

/// Columns of estimate tables, collected row by row (one row per variant × metric: small).
#[derive(Default)]
struct EstimateRows {
    variant: Vec<String>,
    metric: Vec<&'static str>,
    value: Vec<Option<f64>>,
    low: Vec<Option<f64>>,
    high: Vec<Option<f64>>,
    n: Vec<u32>,
    templates: Vec<u32>,
    display: Vec<String>,
}

impl EstimateRows {
    fn push(&mut self, variant: &str, metric: Metric, e: Estimate) {
        self.variant.push(variant.to_string());
        self.metric.push(metric.name());
        self.value.push(e.value);
        self.low.push(e.ci_low);
        self.high.push(e.ci_high);
        self.n.push(e.n);
        self.templates.push(e.clusters);
        self.display.push(display(metric, &e));
    }

    fn frame(self) -> PolarsResult<DataFrame> {
        df!(
            T::variant => self.variant,
            T::metric => self.metric,
            T::value => self.value,
            T::ci_low => self.low,
            T::ci_high => self.high,
            T::n => self.n,
            T::templates => self.templates,
            T::display => self.display,
        )
    }
}

/// `61.5% [53.1, 70.0]` for rates, `3.20 [2.90, 3.50]` for counts, `n/a` when undefined.
pub fn display(metric: Metric, e: &Estimate) -> String {
    let Some(v) = e.value else {
        return "n/a".into();
    };
    let (scale, digits, unit) = if metric.is_rate() {
        (100.0, 1, "%")
    } else {
        (1.0, 2, "")
    };
    let ci = match (e.ci_low, e.ci_high) {
        (Some(l), Some(h)) => format!(" [{:.*}, {:.*}]", digits, l * scale, digits, h * scale),
        _ => String::new(),
    };
    format!("{:.*}{unit}{ci}", digits, v * scale)
}

/// `pass_k`: variant, k, pass_hat_k, pass_at_k, n (tasks with at least k scored epochs).
fn pass_k_frame(tasks: &PerTask) -> PolarsResult<DataFrame> {
    let (mut variant, mut k, mut hat, mut at, mut n) = (vec![], vec![], vec![], vec![], vec![]);
    for (v, rows) in &tasks.variants {
        let counts: Vec<(u32, u32)> = rows.iter().map(|t| (t.epochs, t.successes)).collect();
        for p in pass_k(&counts) {
            variant.push(v.clone());
            k.push(p.k);
            hat.push(p.pass_hat_k);
            at.push(p.pass_at_k);
            n.push(p.n);
        }
    }
    df!(K::variant => variant, K::k => k, K::pass_hat_k => hat, K::pass_at_k => at, K::n => n)
}
