//! `report`: the aggregate tables (and, for the drill-down, episodes, steps and verdicts) → one
//! self-contained HTML file. An export: its file lives outside the store, so a cached run whose
//! file was deleted runs again.

use std::path::Path;

use minijinja::Value;
use polars::prelude::*;
use prefflow_engine::{Kind, StageContext, StageError, Tables};
use serde::Deserialize;

use super::aggregate::optional_input;
use crate::report::drilldown::{drilldown, DrillInputs};
use crate::report::{figures, table1_view, table_view, TableView};

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
    const NAME: &'static str = "report";
    const VERSION: &'static str = "1";
    const OUTPUTS: &'static [&'static str] = &["report"];
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
        let mut env = minijinja::Environment::new();
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::Html);
        env.add_template("report", &source)
            .map_err(|e| StageError::Input(format!("template `{}`: {e}", params.template)))?;
        let (context, tasks) = context(params, ctx)?;
        let html = env
            .get_template("report")
            .and_then(|t| t.render(context))
            .map_err(|e| StageError::Input(format!("template `{}`: {e}", params.template)))?;
        write_atomic(&ctx.resolve(&params.path), &params.path, html.as_bytes())?;
        tracing::info!(
            "report written to {} ({} tasks in the drill-down)",
            params.path,
            tasks
        );
        let table = df!(
            "path" => [params.path.as_str()],
            "bytes" => [html.len() as u64],
            "tasks" => [tasks as u32],
        )?;
        Ok(Tables::single("report", table))
    }
}

fn view(ctx: &StageContext<'_>, name: &str) -> Result<Option<TableView>, StageError> {
    Ok(optional_input(ctx, name).map(table_view).transpose()?)
}

fn svg(text: String) -> Value {
    Value::from_safe_string(text)
}

/// The template's variables, and the number of tasks drilled into.
fn context(params: &ReportParams, ctx: &StageContext<'_>) -> Result<(Value, usize), StageError> {
    let table1 = ctx.input("table1")?;
    let mut figures_out: Vec<Value> = Vec::new();
    if let Some(p) = optional_input(ctx, "perturbations") {
        for metric in ["success", "personalization"] {
            figures_out.push(svg(figures::perturbation_deltas(p, metric)?));
        }
    }
    if let Some(c) = optional_input(ctx, "history_curve") {
        figures_out.push(svg(figures::history_curve(c, "personalization")?));
    }
    if let Some(f) = optional_input(ctx, "failure_labels") {
        figures_out.push(svg(figures::failure_bars(f)?));
    }
    let tasks = match optional_input(ctx, "episodes") {
        Some(episodes) => drilldown(
            &DrillInputs {
                episodes,
                steps: optional_input(ctx, "steps"),
                verdicts: optional_input(ctx, "verdicts"),
                scores: optional_input(ctx, "scores"),
                tasks: optional_input(ctx, "tasks"),
            },
            params.max_tasks,
        )?,
        None => Vec::new(),
    };
    let count = tasks.len();
    let context = minijinja::context! {
        title => params.title.clone(),
        table1 => Value::from_serialize(table1_view(table1)?),
        table1_long => Value::from_serialize(table_view(table1)?),
        paired => Value::from_serialize(view(ctx, "paired")?),
        pass_k => Value::from_serialize(view(ctx, "pass_k")?),
        perturbations => Value::from_serialize(view(ctx, "perturbations")?),
        agreement => Value::from_serialize(view(ctx, "agreement")?),
        figures => figures_out,
        tasks => Value::from_serialize(&tasks),
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
