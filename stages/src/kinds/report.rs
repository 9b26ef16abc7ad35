//! `report`: the aggregate tables (and, for the drill-down, episodes, steps and verdicts) → one
//! self-contained HTML file. An export: its file lives outside the store, so a cached run whose
//! file was deleted runs again.

use prefflow_engine::schema::{InputDef, TableDef};
use std::path::Path;

use minijinja::Value;
use polars::prelude::*;
use prefflow_engine::{Kind, StageContext, StageError, Tables};
use serde::{Deserialize, Serialize};

use super::support::{optional_input, required_input};
use crate::episodes::prompts::{Flavor, Prompts};
use crate::metrics::pertask::Metric;
use crate::report::drilldown::{coverage, drilldown, DrillInputs, EpisodeView};
use crate::report::figures::Figure;
use crate::report::{
    figures, palette, table1_grid, table_view, text_column, Table1Grid, TableView,
};
use crate::tables::aggregate::{ReportRow, Table1Row};

/// Parameters of `report`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportParams {
    /// Where to write the HTML (default `out/report.html`).
    #[serde(default = "out")]
    pub path: String,
    /// The page template (default `datasets/report/report.html.j2`).
    #[serde(default = "template")]
    pub template: String,
    /// The page title.
    #[serde(default = "title")]
    pub title: String,
    /// Tasks in the drill-down (first by id; default 200), to keep the file small.
    #[serde(default = "two_hundred")]
    pub max_tasks: usize,
}

fn out() -> String {
    "out/report.html".into()
}
fn template() -> String {
    "datasets/report/report.html.j2".into()
}
fn title() -> String {
    "iPrefBench report".into()
}
fn two_hundred() -> usize {
    200
}

/// Writes the HTML report.
pub struct Report;

impl Kind for Report {
    type Params = ReportParams;
    type State = ();
    const NAME: &'static str = "report";
    const VERSION: &'static str = "2";
    const OUTPUT_DEFS: &'static [&'static TableDef] = &[&crate::tables::aggregate::REPORT];
    const INPUTS: &'static [InputDef] = &[
        InputDef::required(
            &crate::tables::aggregate::TABLE1,
            &[
                crate::tables::aggregate::VARIANT,
                crate::tables::aggregate::METRIC,
                crate::tables::aggregate::VALUE,
                crate::tables::aggregate::CI_LOW,
                crate::tables::aggregate::CI_HIGH,
                crate::tables::aggregate::N,
            ],
        ),
        InputDef::optional(&crate::tables::aggregate::PAIRED, &[]),
        InputDef::optional(&crate::tables::aggregate::PASS_K, &[]),
        InputDef::optional(&crate::tables::aggregate::PERTURBATIONS, &[]),
        InputDef::optional(&crate::tables::aggregate::HISTORY_CURVE, &[]),
        InputDef::optional(&crate::tables::aggregate::FAILURE_LABELS, &[]),
        InputDef::optional(&crate::tables::aggregate::AGREEMENT, &[]),
        InputDef::optional(&crate::tables::episodes::EPISODES, &[]),
        InputDef::optional(&crate::tables::episodes::STEPS, &[]),
        InputDef::optional(&crate::tables::judging::VERDICTS, &[]),
        InputDef::optional(&crate::tables::judging::SCORES, &[]),
        InputDef::optional(&crate::tables::tasks::TASKS, &[]),
    ];
    const SUMMARY: &'static str = "table1 (+ paired, pass_k, perturbations, history_curve, failure_labels, agreement, episodes, steps, verdicts, scores, tasks) → a self-contained HTML file (params: path, template, title, max_tasks)";

    fn external_inputs(&self, params: &Self::Params) -> Vec<String> {
        vec![params.template.clone()]
    }

    fn cached_output_is_valid(&self, params: &Self::Params, workdir: &Path) -> bool {
        workdir.join(&params.path).is_file()
    }

    fn run(&self, params: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let source = std::fs::read_to_string(ctx.resolve(&params.template)).map_err(|e| {
            StageError::Input(format!(
                "parameter `template`: cannot read `{}`: {e}",
                params.template
            ))
        })?;
        let bad =
            |e: minijinja::Error| StageError::Input(format!("template `{}`: {e}", params.template));
        let env = Prompts::with_flavor("report", &[("report", source.as_str())], Flavor::Html)
            .map_err(|(_, e)| bad(e))?;
        let (context, tasks) = context(params, ctx)?;
        let html = env.render_plain("report", &context).map_err(bad)?;
        write_atomic(&ctx.resolve(&params.path), &params.path, html.as_bytes())?;
        tracing::info!(
            "report written to {} ({} tasks in the drill-down)",
            params.path,
            tasks
        );
        let table = ReportRow::to_frame(&[ReportRow {
            path: params.path.clone(),
            bytes: html.len() as u64,
            tasks: tasks as u32,
        }])?;
        Ok(Tables::single("report", table))
    }
}

/// One table section of the page.
#[derive(Serialize)]
struct Section {
    id: &'static str,
    heading: &'static str,
    note: &'static str,
    collapsed: bool,
    table: TableView,
}

/// The optional aggregate tables, in page order: (input, id, heading, note, collapsed).
const SECTIONS: [(&str, &str, &str, &str, bool); 7] = [
    ("usage", "usage", "Usage and cost per variant", "Tokens and money per role (agent, user simulator, judge), summed over the variant's episodes; replayed calls cost nothing. Money uses each model's configured `prices` (0 without).", false),
    ("paired", "paired", "Paired differences (variant − baseline, same tasks)", "wins / ties / losses count tasks; n/a when no common task defines the metric.", false),
    ("pass_k", "pass-k", "pass^k and pass@k", "pass^k: all k epochs succeed; pass@k: at least one does (tasks with ≥ k epochs).", false),
    ("agreement", "agreement", "Judge validation", "Agreement and Cohen's κ against human labels; κ is n/a when undefined (a single label used by both raters).", false),
    ("perturbations", "perturbations", "Perturbation subsets (Figure 2 data)", "", true),
    ("history_curve", "history-curve", "History exposure (Figure 4 data)", "", true),
    ("failure_labels", "failure-labels", "Failure labels (Figure 3 data)", "", true),
];

fn sections(ctx: &StageContext<'_>) -> Result<Vec<Section>, StageError> {
    let mut out = Vec::new();
    for (input, id, heading, note, collapsed) in SECTIONS {
        if let Some(df) = optional_input(ctx, input)? {
            out.push(Section {
                id,
                heading,
                note,
                collapsed,
                table: table_view(&df)?,
            });
        }
    }
    Ok(out)
}

/// Table 1 as the page lays it out: each column's variant split at its commas (one
/// `dimension=value` per line, so ten model columns stay narrow) with its colour.
#[derive(Serialize)]
struct Table1Page {
    columns: Vec<Column>,
    grid: Table1Grid,
}

/// One variant of the page: its name, the lines of its header, its colour and its filter
/// (`vi`), with how many episodes it has in the list.
#[derive(Serialize, Clone)]
struct Column {
    name: String,
    parts: Vec<Part>,
    color: String,
    vi: usize,
    episodes: usize,
}

/// One line of a Table 1 header: `dimension=value`, `model` set for the model's name.
#[derive(Serialize, Clone)]
struct Part {
    text: String,
    model: bool,
}

/// One perturbation subset of the episode filter, `si` its filter.
#[derive(Serialize)]
struct Subset {
    name: String,
    si: usize,
    episodes: usize,
}

/// The variants in Table 1's order, then any that only the episodes have.
fn variant_order(
    table1: &DataFrame,
    episodes: Option<&DataFrame>,
) -> Result<Vec<String>, StageError> {
    let mut order: Vec<String> = Vec::new();
    let tables = [Some(table1), episodes];
    for df in tables.into_iter().flatten() {
        for v in text_column(df, Table1Row::variant)?.into_iter().flatten() {
            if !order.contains(&v) {
                order.push(v);
            }
        }
    }
    Ok(order)
}

fn columns(variants: &[String], episodes: &[EpisodeView]) -> Vec<Column> {
    variants
        .iter()
        .enumerate()
        .map(|(vi, v)| Column {
            name: v.clone(),
            parts: v
                .split(',')
                .map(|p| Part {
                    text: if p.is_empty() {
                        "(unswept)".into()
                    } else {
                        p.to_string()
                    },
                    model: p.starts_with("model="),
                })
                .collect(),
            color: palette::color(vi),
            vi,
            episodes: episodes.iter().filter(|e| e.vi == vi).count(),
        })
        .collect()
}

/// The perturbation subsets of the listed episodes (by name), each episode given its subset's
/// filter number.
fn subsets(episodes: &mut [EpisodeView]) -> Vec<Subset> {
    let names: std::collections::BTreeSet<String> =
        episodes.iter().map(|e| e.perturbation.clone()).collect();
    let mut out: Vec<Subset> = names
        .into_iter()
        .enumerate()
        .map(|(si, name)| Subset {
            name,
            si,
            episodes: 0,
        })
        .collect();
    for e in episodes {
        if let Some(s) = out.iter_mut().find(|s| s.name == e.perturbation) {
            s.episodes += 1;
            e.si = s.si;
        }
    }
    out
}

fn figures(ctx: &StageContext<'_>, variants: &[String]) -> Result<Vec<Figure>, StageError> {
    let mut out = Vec::new();
    if let Some(p) = optional_input(ctx, "perturbations")? {
        for metric in [Metric::Success, Metric::Personalization] {
            out.push(figures::perturbation_deltas(&p, metric.name(), variants)?);
        }
    }
    if let Some(c) = optional_input(ctx, "history_curve")? {
        out.push(figures::history_curve(
            &c,
            Metric::Personalization.name(),
            variants,
        )?);
    }
    if let Some(f) = optional_input(ctx, "failure_labels")? {
        out.push(figures::failure_bars(&f, variants)?);
    }
    Ok(out)
}

/// The template's variables, and the number of tasks drilled into.
fn context(params: &ReportParams, ctx: &StageContext<'_>) -> Result<(Value, usize), StageError> {
    let table1 = required_input(ctx, "table1")?;
    let episodes = optional_input(ctx, "episodes")?;
    let variants = variant_order(&table1, episodes.as_deref())?;
    let (steps, verdicts) = (
        optional_input(ctx, "steps")?,
        optional_input(ctx, "verdicts")?,
    );
    let (scores, tasks) = (
        optional_input(ctx, "scores")?,
        optional_input(ctx, "tasks")?,
    );
    let (mut listed, covered) = match &episodes {
        Some(episodes) => (
            drilldown(
                &DrillInputs {
                    episodes,
                    steps: steps.as_deref(),
                    verdicts: verdicts.as_deref(),
                    scores: scores.as_deref(),
                    tasks: tasks.as_deref(),
                },
                &variants,
                params.max_tasks,
            )?,
            coverage(episodes, tasks.as_deref())?,
        ),
        None => (Vec::new(), Vec::new()),
    };
    let count = listed
        .iter()
        .map(|e| e.task_id.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let coverage: Vec<String> = covered
        .iter()
        .map(|(v, n, all)| format!("{v}: {n} of {all} tasks"))
        .collect();
    let grid = table1_grid(&table1)?;
    let subsets = subsets(&mut listed);
    let all = columns(&variants, &listed);
    let context = minijinja::context! {
        title => params.title.clone(),
        coverage => coverage,
        table1 => Value::from_serialize(Table1Page {
            columns: all.iter().take(grid.variants.len()).cloned().collect(),
            grid,
        }),
        variants => Value::from_serialize(&all),
        sections => Value::from_serialize(sections(ctx)?),
        figures => Value::from_serialize(figures(ctx, &variants)?),
        subsets => Value::from_serialize(subsets),
        failures => listed.iter().filter(|e| e.outcome == "fail").count(),
        episodes => Value::from_serialize(&listed),
        max_tasks => params.max_tasks,
    };
    Ok((context, count))
}

/// Writes `bytes` next to `path` and renames, so a reader never sees half a report.
fn write_atomic(path: &Path, shown: &str, bytes: &[u8]) -> Result<(), StageError> {
    let fail = |e: std::io::Error| StageError::Failed(format!("writing the report `{shown}`: {e}"));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let tmp = path.with_extension("html.tmp");
    std::fs::write(&tmp, bytes).map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(fail)
}
