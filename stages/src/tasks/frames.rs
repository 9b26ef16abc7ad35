//! Task bundles as tables: `tasks`, `slots`, `criteria` (one row per task, slot, criterion; the
//! contract in `docs/tables.md`) and `bundles` (one row per task with the whole bundle as JSON,
//! so per-item stages over `task_id` see everything about one task in one row).

use polars::prelude::*;

use super::error::TaskError;
use super::model::{Criterion, Slot, Task, TaskBundle};
use crate::tables::tasks::{BundleRow, CriterionRow, SlotRow, BUNDLES, CRITERIA, SLOTS, TASKS};
use crate::world::types::display;

fn json(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

fn slot_row(task_id: &str, s: &Slot) -> SlotRow {
    SlotRow {
        task_id: task_id.to_string(),
        slot_id: s.slot_id.clone(),
        source: s.source.as_str().into(),
        evidence: s.evidence.clone(),
        value: display(&s.value),
        value_json: json(&s.value),
        keywords: s.keywords.clone(),
        app_default: s.app_default.as_ref().map(display),
        profile_entry: s.profile_entry.clone(),
        about: s.about.clone(),
    }
}

fn criterion_row(task_id: &str, c: &Criterion) -> CriterionRow {
    CriterionRow {
        task_id: task_id.to_string(),
        criterion_id: c.criterion_id.clone(),
        kind: c.kind.as_str().into(),
        slot_id: c.slot_id.clone(),
        predicate: json(&c.predicate),
        rubric: c.rubric.clone(),
        free_text: c.free_text,
    }
}

/// The `tasks` table.
pub fn tasks_table(bundles: &[TaskBundle]) -> Result<DataFrame, TaskError> {
    let tasks: Vec<Task> = bundles.iter().map(|b| b.task.clone()).collect();
    Ok(Task::to_frame(&tasks)?)
}

/// The `slots` table.
pub fn slots_table(bundles: &[TaskBundle]) -> Result<DataFrame, TaskError> {
    let rows: Vec<SlotRow> = bundles
        .iter()
        .flat_map(|b| b.slots.iter().map(|s| slot_row(&b.task.task_id, s)))
        .collect();
    Ok(SlotRow::to_frame(&rows)?)
}

/// The `criteria` table.
pub fn criteria_table(bundles: &[TaskBundle]) -> Result<DataFrame, TaskError> {
    let rows: Vec<CriterionRow> = bundles
        .iter()
        .flat_map(|b| b.criteria.iter().map(|c| criterion_row(&b.task.task_id, c)))
        .collect();
    Ok(CriterionRow::to_frame(&rows)?)
}

/// The `bundles` table.
pub fn bundles_table(bundles: &[TaskBundle]) -> Result<DataFrame, TaskError> {
    let rows: Vec<BundleRow> = bundles
        .iter()
        .map(|b| BundleRow {
            task_id: b.task.task_id.clone(),
            bundle: json(b),
        })
        .collect();
    Ok(BundleRow::to_frame(&rows)?)
}

/// All four tables (`tasks`, `slots`, `criteria`, `bundles`).
pub fn task_tables(bundles: &[TaskBundle]) -> Result<Vec<(&'static str, DataFrame)>, TaskError> {
    Ok(vec![
        (TASKS.name, tasks_table(bundles)?),
        (SLOTS.name, slots_table(bundles)?),
        (CRITERIA.name, criteria_table(bundles)?),
        (BUNDLES.name, bundles_table(bundles)?),
    ])
}

/// Decodes a `bundles` table (as produced by [`bundles_table`]).
pub fn bundles_from_table(df: &DataFrame) -> Result<Vec<TaskBundle>, TaskError> {
    let rows =
        BundleRow::from_frame(df).map_err(|e| TaskError::table(BUNDLES.name, e.to_string()))?;
    rows.iter()
        .enumerate()
        .map(|(i, row)| {
            serde_json::from_str::<TaskBundle>(&row.bundle)
                .map_err(|e| TaskError::table(BUNDLES.name, format!("row {i}: {e}")))
        })
        .collect()
}
