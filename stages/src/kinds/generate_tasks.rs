//! `generate_tasks`: world tables + task templates → candidate tasks (`tasks`, `slots`,
//! `criteria`, `bundles`), deterministic by seed.

use prefflow_engine::schema::{InputDef, TableDef};
use prefflow_engine::{Kind, ParamError, StageContext, StageError, Tables};
use serde::Deserialize;

use crate::tasks::frames::task_tables;
use crate::tasks::generate::{instantiate_all, select};
use crate::tasks::template::{load_dir, load_domains};

/// Parameters of `generate_tasks`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenerateTasksParams {
    /// Directory of template files (`*.yaml`).
    #[serde(default = "default_templates")]
    pub templates: String,
    /// How many candidates to draw from all template instances.
    #[serde(default = "default_count")]
    pub count: usize,
    /// Seed of the draw.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Raises the limit on `count` (default 100,000; see README, "Limits").
    #[serde(default)]
    pub max_count: Option<u64>,
}

fn default_templates() -> String {
    "datasets/tasks".into()
}
fn default_count() -> usize {
    188
}
fn default_seed() -> u64 {
    7
}

/// Instantiates task templates over the world into a candidate pool (iPrefBench D.1).
pub struct GenerateTasks;

impl Kind for GenerateTasks {
    type Params = GenerateTasksParams;
    type State = ();
    const NAME: &'static str = "generate_tasks";
    const VERSION: &'static str = "2";
    const OUTPUT_DEFS: &'static [&'static TableDef] = &[
        &crate::tables::tasks::TASKS,
        &crate::tables::tasks::SLOTS,
        &crate::tables::tasks::CRITERIA,
        &crate::tables::tasks::BUNDLES,
    ];
    const INPUTS: &'static [InputDef] = &[
        crate::tables::world::READ_SOURCES,
        crate::tables::world::READ_HISTORY,
    ];
    const SUMMARY: &'static str = "world (sources, history_events) + templates → candidate tasks, slots, criteria, bundles (params: templates, count, seed, max_count)";

    fn external_inputs(&self, params: &Self::Params) -> Vec<String> {
        vec![params.templates.clone()]
    }

    fn check(&self, params: &Self::Params) -> Result<(), ParamError> {
        crate::limits::TASK_COUNT.check(params.count as u64, params.max_count)
    }

    fn run(&self, params: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let world = super::support::world_input(ctx)?;
        let dir = ctx.resolve(&params.templates);
        let files = load_dir(&dir, &params.templates)?;
        let domains = load_domains(&dir, &params.templates)?;
        let all = instantiate_all(&world, &files, &domains)?;
        let picked = select(all, params.count, params.seed)?;
        Ok(Tables::new(task_tables(&picked)?))
    }
}
