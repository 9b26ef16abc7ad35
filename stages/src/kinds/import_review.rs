//! `import_review`: task bundles + the reviewers' sheets of one round → the reviewed tasks and
//! the audit trail of every applied edit (appended to the upstream `audit`, if any), and the
//! instructions the reviewed set gives twice (`repeats`, for `validate_tasks`).

use prefflow_engine::schema::{InputDef, TableDef};
use std::collections::HashMap;
use std::path::PathBuf;

use polars::prelude::*;
use prefflow_engine::{Kind, StageContext, StageError, Tables};
use serde::Deserialize;

use crate::tables::tasks::RepeatRow;
use crate::tasks::error::TaskError;
use crate::tasks::frames::{bundles_from_table, task_tables};
use crate::tasks::review::{apply_round, AuditRow};
use crate::tasks::sheet::{read_sheet, Round, SheetRow};
use crate::tasks::TaskBundle;

/// Parameters of `import_review`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportReviewParams {
    /// `refinement` (accept/reject) or `validation` (confirm/flag).
    pub round: Round,
    /// Sheet files, or directories whose `*.csv` files are read in name order.
    pub sheets: Vec<String>,
}

/// Applies one review round (iPrefBench D.1); a bad sheet fails the stage and applies nothing.
pub struct ImportReview;

impl Kind for ImportReview {
    type Params = ImportReviewParams;
    type State = ();
    const NAME: &'static str = "import_review";
    const VERSION: &'static str = "3";
    const OUTPUT_DEFS: &'static [&'static TableDef] = &[
        &crate::tables::tasks::TASKS,
        &crate::tables::tasks::SLOTS,
        &crate::tables::tasks::CRITERIA,
        &crate::tables::tasks::BUNDLES,
        &crate::tables::tasks::AUDIT,
        &crate::tables::tasks::REPEATS,
    ];
    const INPUTS: &'static [InputDef] = &[
        InputDef::required(
            &crate::tables::tasks::BUNDLES,
            &[crate::tables::tasks::TASK_ID, crate::tables::tasks::BUNDLE],
        ),
        InputDef::optional(
            &crate::tables::tasks::AUDIT,
            &[crate::tables::tasks::TASK_ID, "round", "field"],
        ),
    ];
    const SUMMARY: &'static str = "bundles (+ audit) + review sheets of one round → reviewed tasks, slots, criteria, bundles, audit, repeats (params: round, sheets)";

    fn external_inputs(&self, params: &Self::Params) -> Vec<String> {
        params.sheets.clone()
    }

    fn run(&self, params: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let bundles = bundles_from_table(ctx.input("bundles")?)?;
        let rows = read_all(params, ctx, &bundles)?;
        let (kept, audit) = apply_round(bundles, &rows, params.round)?;
        let mut audit_df = audit_frame(&audit)?;
        if let Some(prev) = ctx.inputs.iter().find(|t| t.table == "audit") {
            audit_df = prev.df.vstack(&audit_df)?;
        }
        tracing::info!(
            "{} review: {} rows from {} sheet(s), {} tasks kept",
            params.round.as_str(),
            rows.len(),
            params.sheets.len(),
            kept.len()
        );
        let mut out: Vec<(&str, DataFrame)> = task_tables(&kept)?;
        out.push(("audit", audit_df));
        out.push(("repeats", repeats_frame(&kept)?));
        Ok(Tables::new(out))
    }
}

/// Reads every sheet, in the order given (directories expanded in name order).
fn read_all(
    params: &ImportReviewParams,
    ctx: &StageContext<'_>,
    bundles: &[TaskBundle],
) -> Result<Vec<SheetRow>, TaskError> {
    let by_id: HashMap<&str, &TaskBundle> = bundles
        .iter()
        .map(|b| (b.task.task_id.as_str(), b))
        .collect();
    let mut rows = Vec::new();
    for (path, shown) in sheet_files(params, ctx)? {
        rows.extend(read_sheet(&path, &shown, params.round, &by_id)?);
    }
    Ok(rows)
}

fn sheet_files(
    params: &ImportReviewParams,
    ctx: &StageContext<'_>,
) -> Result<Vec<(PathBuf, String)>, TaskError> {
    let mut out = Vec::new();
    for s in &params.sheets {
        let path = ctx.resolve(s);
        if !path.is_dir() {
            out.push((path, s.clone()));
            continue;
        }
        let files = crate::files::sorted_files(&path, &["csv"]).map_err(|e| TaskError::File {
            file: s.clone(),
            message: e.to_string(),
        })?;
        for f in files {
            let name = f
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.push((f, format!("{}/{name}", s.trim_end_matches('/'))));
        }
    }
    Ok(out)
}

/// The `repeats` table: the kept tasks whose instruction an earlier one already gives.
fn repeats_frame(kept: &[TaskBundle]) -> Result<DataFrame, TaskError> {
    let tasks: Vec<(String, String)> = kept
        .iter()
        .map(|b| (b.task.task_id.clone(), b.task.instruction.clone()))
        .collect();
    let rows = crate::tasks::lints::repeated_instructions(&tasks);
    let rows: Vec<RepeatRow> = rows
        .into_iter()
        .map(|(task_id, same_as)| RepeatRow { task_id, same_as })
        .collect();
    RepeatRow::to_frame(&rows).map_err(TaskError::from)
}

/// The `audit` table.
fn audit_frame(rows: &[AuditRow]) -> Result<DataFrame, TaskError> {
    AuditRow::to_frame(rows).map_err(TaskError::from)
}
