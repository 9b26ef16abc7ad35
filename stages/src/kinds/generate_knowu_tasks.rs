//! `generate_knowu_tasks`: a KnowU world (`build_knowu_world`'s `sources`) + the templates in
//! `datasets/knowu/templates/` → general / personalized / proactive tasks in the usual task
//! tables, plus `knowu_tasks` (tasks.csv's columns, for `knowu_metrics`) and `skipped` (templates
//! the persona lacks a section for, with the section).

use polars::prelude::*;
use prefflow_engine::schema::{InputDef, TableDef};
use prefflow_engine::{Kind, StageContext, StageError, Tables};
use serde::Deserialize;

use crate::knowu::profile::KnowuProfile;
use crate::knowu::sim::generate::{generate, Generated, Scoring};
use crate::knowu::sim::table;
use crate::knowu::sim::template::load_dir;
use crate::knowu::sim::world::PROFILE_KIND;
use crate::tables::knowu::{GeneratedRow, SkippedRow};
use crate::tables::world as world_tables;
use crate::tasks::frames::task_tables;
use crate::tasks::TaskBundle;

/// Parameters of `generate_knowu_tasks`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenerateKnowuTasksParams {
    /// Directory of template files (default `datasets/knowu/templates`).
    #[serde(default = "default_templates")]
    pub templates: String,
    /// λ and judge split per class, each citing KnowU's definition (default
    /// `datasets/knowu/scoring.csv`).
    #[serde(default = "default_scoring")]
    pub scoring: String,
}

fn default_templates() -> String {
    "datasets/knowu/templates".into()
}

fn default_scoring() -> String {
    "datasets/knowu/scoring.csv".into()
}

/// Instantiates KnowU-style templates for the world's KnowU persona.
pub struct GenerateKnowuTasks;

impl Kind for GenerateKnowuTasks {
    type Params = GenerateKnowuTasksParams;
    type State = ();
    const NAME: &'static str = "generate_knowu_tasks";
    const VERSION: &'static str = "2";
    const OUTPUT_DEFS: &'static [&'static TableDef] = &[
        &crate::tables::tasks::TASKS,
        &crate::tables::tasks::SLOTS,
        &crate::tables::tasks::CRITERIA,
        &crate::tables::tasks::BUNDLES,
        &crate::tables::knowu::KNOWU_TASKS,
        &crate::tables::knowu::SKIPPED,
        &crate::tables::knowu::GENERATED,
    ];
    const INPUTS: &'static [InputDef] = &[
        crate::tables::world::READ_SOURCES,
        crate::tables::world::READ_HISTORY,
    ];
    const SUMMARY: &'static str = "KnowU world (sources, history_events) + templates → tasks, slots, criteria, bundles, knowu_tasks (tasks.csv columns + KnowU facts), skipped (templates the persona lacks a section for), generated (counts per split) (params: templates, scoring)";

    fn external_inputs(&self, params: &Self::Params) -> Vec<String> {
        vec![params.templates.clone(), params.scoring.clone()]
    }

    fn run(&self, params: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let sources = ctx.input("sources")?;
        let world = super::support::world_input(ctx)?;
        let persona = knowu_persona(sources, ctx.stage)?;
        let templates = load_dir(&ctx.resolve(&params.templates), &params.templates)
            .map_err(|e| StageError::Input(e.to_string()))?;
        let table =
            crate::knowu::sim::scoring::load(&ctx.resolve(&params.scoring), &params.scoring)?;
        let scoring = Scoring {
            table: &table,
            label: &params.scoring,
        };
        let out = generate(&templates, &persona, &world.catalog, &scoring)
            .map_err(|e| StageError::Input(format!("{}: {e}", params.templates)))?;
        let bundles: Vec<TaskBundle> = out.tasks.iter().map(|t| t.bundle.clone()).collect();
        let mut tables = task_tables(&bundles)?;
        tables.push(("knowu_tasks", table::frame(&out.tasks)?));
        tables.push(("skipped", skipped(&out)?));
        tables.push(("generated", generated(&out.summary(&templates))?));
        Ok(Tables::new(tables))
    }
}

/// The KnowU profile carried in `sources`.
fn knowu_persona(sources: &DataFrame, stage: &str) -> Result<KnowuProfile, StageError> {
    let (kind, name, text) = (
        sources.column(world_tables::KIND)?.str()?,
        sources.column(world_tables::NAME)?.str()?,
        sources.column(world_tables::TEXT)?.str()?,
    );
    let row = (0..sources.height()).find(|&i| kind.get(i) == Some(PROFILE_KIND));
    let Some(i) = row else {
        return Err(StageError::Input(format!(
            "stage `{stage}`: its `sources` input has no `{PROFILE_KIND}` row; feed it from a `build_knowu_world` stage"
        )));
    };
    Ok(KnowuProfile::parse(
        name.get(i).unwrap_or_default(),
        text.get(i).unwrap_or_default(),
    )?)
}

fn generated(rows: &[crate::knowu::sim::generate::SplitCount]) -> Result<DataFrame, StageError> {
    let rows: Vec<GeneratedRow> = rows
        .iter()
        .map(|r| GeneratedRow {
            persona: r.persona.clone(),
            split: r.split.as_str().to_string(),
            tasks: r.tasks,
            knowu_classes: r.knowu_classes,
            skipped: r.skipped,
        })
        .collect();
    Ok(GeneratedRow::to_frame(&rows)?)
}

fn skipped(out: &Generated) -> Result<DataFrame, StageError> {
    let rows: Vec<SkippedRow> = out
        .skipped
        .iter()
        .map(|k| SkippedRow {
            template: k.template.clone(),
            persona: k.persona.clone(),
            split: k.split.as_str().to_string(),
            missing: k.missing.clone(),
        })
        .collect();
    Ok(SkippedRow::to_frame(&rows)?)
}
