//! `export_review`: task bundles → a review sheet (CSV) for one round, one row per task with
//! empty decision columns; the sheet is also the stage's `sheet` table.

use prefflow_engine::schema::InputDef;
use prefflow_engine::schema::TableDef;
use std::path::Path;

use prefflow_engine::{Kind, StageContext, StageError, Tables};
use serde::Deserialize;

use crate::tasks::frames::bundles_from_table;
use crate::tasks::sheet::{export_frame, write_csv, Round};

/// Parameters of `export_review`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportReviewParams {
    /// The round the sheet is for (only labels the file's purpose; the columns are the same).
    pub round: Round,
    /// Where to write the CSV (relative to the working directory).
    pub path: String,
}

/// Writes the sheet reviewers fill in (iPrefBench D.1).
pub struct ExportReview;

impl Kind for ExportReview {
    type Params = ExportReviewParams;
    type State = ();
    const NAME: &'static str = "export_review";
    const VERSION: &'static str = "1";
    const OUTPUT_DEFS: &'static [&'static TableDef] = &[&crate::tables::tasks::SHEET];
    const INPUTS: &'static [InputDef] = &[InputDef::required(
        &crate::tables::tasks::BUNDLES,
        &[crate::tables::tasks::TASK_ID, crate::tables::tasks::BUNDLE],
    )];
    const SUMMARY: &'static str =
        "bundles → a CSV review sheet with empty decision columns (params: round, path)";

    fn cached_output_is_valid(&self, params: &Self::Params, workdir: &Path) -> bool {
        workdir.join(&params.path).is_file()
    }

    fn run(&self, params: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let bundles = bundles_from_table(ctx.input("bundles")?)?;
        let sheet = export_frame(&bundles)?;
        write_csv(&sheet, &ctx.resolve(&params.path), &params.path)?;
        tracing::info!(
            "{} sheet for {} tasks written to {}",
            params.round.as_str(),
            bundles.len(),
            params.path
        );
        Ok(Tables::single("sheet", sheet))
    }
}
