//! `validate_tasks` (per item over `task_id`): each reviewed task is run in the simulated phone
//! (reference solution, defaults-only agent, untouched state) and linted; valid tasks form the
//! released set, the rest land in `rejections` with their reasons.

use std::sync::Arc;

use polars::prelude::*;
use prefflow_engine::schema::{InputDef, TableDef};
use prefflow_engine::{Kind, StageContext, StageError, Tables};
use serde::Deserialize;

use crate::tables::tasks::{RejectionRow, RepeatRow, SlotRow, REJECTIONS, SLOTS};
use crate::tasks::error::TaskError;
use crate::tasks::frames::{bundles_from_table, task_tables};
use crate::tasks::lints::{SetView, SlotSource};
use crate::tasks::validate::{validate_in_set, Rejection};
use crate::tasks::world_index::WorldIndex;
use crate::tasks::Source;
use crate::tasks::TaskBundle;
use crate::world::World;

/// Parameters of `validate_tasks` (none yet; the checks are fixed).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidateTasksParams {}

/// Execution-based validation of tasks (iPrefBench D.1).
pub struct ValidateTasks;

/// What every task of a `validate_tasks` instance is checked against, built once in `prepare`.
pub struct ValidationState {
    /// The world the tasks run in.
    world: Arc<World>,
    /// The reviewed set's slot sources and repeated instructions (from the optional `slots`
    /// and `repeats` inputs), so a slot's source can be compared across the variants of its
    /// template and an instruction given twice is rejected.
    set: SetView,
}

impl Kind for ValidateTasks {
    type Params = ValidateTasksParams;
    type State = ValidationState;
    const NAME: &'static str = "validate_tasks";
    const VERSION: &'static str = "3";
    const OUTPUT_DEFS: &'static [&'static TableDef] = &[
        &crate::tables::tasks::TASKS,
        &crate::tables::tasks::SLOTS,
        &crate::tables::tasks::CRITERIA,
        &crate::tables::tasks::BUNDLES,
        &crate::tables::tasks::REJECTIONS,
    ];
    const INPUTS: &'static [InputDef] = &[
        InputDef::required(
            &crate::tables::tasks::BUNDLES,
            &[crate::tables::tasks::TASK_ID, crate::tables::tasks::BUNDLE],
        ),
        crate::tables::world::READ_SOURCES,
        crate::tables::world::READ_HISTORY,
        InputDef::optional(
            &crate::tables::tasks::SLOTS,
            &[
                crate::tables::tasks::TASK_ID,
                crate::tables::tasks::SLOT_ID,
                crate::tables::tasks::SOURCE,
            ],
        ),
        InputDef::optional(
            &crate::tables::tasks::REPEATS,
            &[crate::tables::tasks::TASK_ID, "same_as"],
        ),
    ];
    const SUMMARY: &'static str = "bundles + world (sources, history_events) [+ the reviewed set's slots and repeats, for the cross-variant source lint and instructions given twice] → validated tasks, slots, criteria, bundles and rejections with reasons (use per_item: task_id)";

    fn prepare(
        &self,
        _: &Self::Params,
        ctx: &StageContext<'_>,
    ) -> Result<ValidationState, StageError> {
        let slots = match ctx.input("slots") {
            Ok(df) => slot_sources(df)?,
            Err(_) => Vec::new(),
        };
        let repeats = match ctx.input("repeats") {
            Ok(df) => repeats(df)?,
            Err(_) => Vec::new(),
        };
        let set = SetView { slots, repeats };
        Ok(ValidationState {
            world: super::support::world_input(ctx)?,
            set,
        })
    }

    fn run(
        &self,
        _: &Self::Params,
        ctx: &StageContext<'_, ValidationState>,
    ) -> Result<Tables, StageError> {
        let (ix, set) = (WorldIndex::new(&ctx.state.world), &ctx.state.set);
        let mut valid: Vec<TaskBundle> = Vec::new();
        let mut rejected: Vec<(String, Rejection)> = Vec::new();
        for mut b in bundles_from_table(ctx.input("bundles")?)? {
            let reasons = validate_in_set(&ix, &b, set);
            if reasons.is_empty() {
                b.task.cross_app = ix.cross_app(&b.task.overrides.history, &b.task.apps, &b.slots);
                valid.push(b);
            } else {
                rejected.extend(reasons.into_iter().map(|r| (b.task.task_id.clone(), r)));
            }
        }
        let mut out: Vec<(&str, DataFrame)> = task_tables(&valid)?;
        out.push((REJECTIONS.name, rejections_frame(&rejected)?));
        Ok(Tables::new(out))
    }
}

/// `(task_id, slot_id, source)` rows of a `slots` table.
fn slot_sources(df: &DataFrame) -> Result<Vec<SlotSource>, TaskError> {
    let col = |name: &str| {
        df.column(name)
            .and_then(|c| c.str().cloned())
            .map_err(|e| TaskError::table(SLOTS.name, e.to_string()))
    };
    let (task, slot, source) = (
        col(SlotRow::task_id)?,
        col(SlotRow::slot_id)?,
        col(SlotRow::source)?,
    );
    Ok((0..df.height())
        .filter_map(|i| {
            Some(SlotSource {
                task_id: task.get(i)?.to_string(),
                slot_id: slot.get(i)?.to_string(),
                source: Source::parse(source.get(i)?)?,
            })
        })
        .collect())
}

/// `(task_id, same_as)` rows of a `repeats` table.
fn repeats(df: &DataFrame) -> Result<Vec<(String, String)>, TaskError> {
    let rows = RepeatRow::from_frame(df).map_err(|e| TaskError::table(e.table, e.to_string()))?;
    Ok(rows.into_iter().map(|r| (r.task_id, r.same_as)).collect())
}

/// The `rejections` table: one [`RejectionRow`] per failed check.
fn rejections_frame(rows: &[(String, Rejection)]) -> Result<DataFrame, TaskError> {
    let rows: Vec<RejectionRow> = rows
        .iter()
        .map(|(task_id, r)| RejectionRow {
            task_id: task_id.clone(),
            check_name: r.check.as_str().to_string(),
            subject: r.subject.clone(),
            reason: r.reason.clone(),
        })
        .collect();
    RejectionRow::to_frame(&rows).map_err(TaskError::from)
}
