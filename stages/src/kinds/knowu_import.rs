//! `import_knowu_runs`: a KnowU-Bench results directory → `episodes`, `steps`, `reports`,
//! `errors`.
//!
//! The stage kind only: what it computes lives in [`crate::knowu::interop::import`].

use crate::knowu::interop::import::*;
use crate::knowu::interop::run;
use crate::knowu::interop::tasks;
use prefflow_engine::schema::TableDef;
use prefflow_engine::{Kind, StageContext, StageError, Tables};

/// Imports a KnowU-Bench results directory; its whole content is part of the cache key.
pub struct ImportKnowuRuns;

impl Kind for ImportKnowuRuns {
    type Params = ImportParams;
    type State = ();
    const NAME: &'static str = "import_knowu_runs";
    const VERSION: &'static str = "2";
    const OUTPUT_DEFS: &'static [&'static TableDef] = &[
        &crate::tables::episodes::EPISODES,
        &crate::tables::episodes::STEPS,
        &crate::tables::knowu::REPORTS,
        &crate::tables::knowu::IMPORT_ERRORS,
    ];
    const SUMMARY: &'static str = "import a KnowU-Bench results directory into tables episodes, steps, reports and errors (unreadable files) (params: root, label, tasks?)";

    fn external_inputs(&self, params: &Self::Params) -> Vec<String> {
        let mut files = vec![params.root.clone()];
        files.extend(params.tasks.clone());
        files
    }

    fn run(&self, params: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let root = ctx.resolve(&params.root);
        let mut dir = read_run_dir(&root)?;
        if let Some(path) = &params.tasks {
            add_missing_tasks(&mut dir.episodes, &tasks::read_names(&ctx.resolve(path))?);
        }
        warn_on_report_mismatch(ctx.stage, &params.root, &dir);
        if !dir.errors.is_empty() {
            tracing::warn!(
                "stage `{}`: {} file(s) of {} could not be read; their episodes have status `error` and are left out of the metrics (see table `errors`); first: {}",
                ctx.stage,
                dir.errors.len(),
                params.root,
                dir.errors[0].message
            );
        }
        Ok(Tables::new([
            (
                "episodes",
                run::episodes_frame(&params.label, &dir.episodes)?,
            ),
            ("steps", run::steps_frame(&params.label, &dir.episodes)?),
            (
                "reports",
                reports_frame(&params.label, &dir.reports, &dir.episodes)?,
            ),
            ("errors", errors_frame(&dir.errors)?),
        ]))
    }
}
