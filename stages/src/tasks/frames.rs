//! Task bundles as tables: `tasks`, `slots`, `criteria` (one row per task, slot, criterion; the
//! contract in `docs/tables.md`) and `bundles` (one row per task with the whole bundle as JSON,
//! so per-item stages over `task_id` see everything about one task in one row).

use polars::prelude::*;

use super::error::TaskError;
use super::model::TaskBundle;
use crate::world::types::display;

fn json(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

fn text(name: &str, values: Vec<String>) -> Column {
    Column::new(name.into(), values)
}

fn opt_text(name: &str, values: Vec<Option<String>>) -> Column {
    Column::new(name.into(), values)
}

fn list(name: &str, values: Vec<Vec<String>>) -> Column {
    if values.is_empty() {
        let dtype = DataType::List(Box::new(DataType::String));
        return Column::new_empty(name.into(), &dtype);
    }
    let series: Vec<Series> = values
        .into_iter()
        .map(|v| Series::new("".into(), v))
        .collect();
    Column::new(name.into(), series)
}

fn frame(columns: Vec<Column>) -> Result<DataFrame, TaskError> {
    let height = columns.first().map(|c| c.len()).unwrap_or(0);
    DataFrame::new(height, columns).map_err(TaskError::from)
}

/// The `tasks` table.
pub fn tasks_table(bundles: &[TaskBundle]) -> Result<DataFrame, TaskError> {
    let t = |f: &dyn Fn(&TaskBundle) -> String| bundles.iter().map(f).collect::<Vec<_>>();
    frame(vec![
        text("task_id", t(&|b| b.task.task_id.clone())),
        text("persona", t(&|b| b.task.persona.clone())),
        text("template", t(&|b| b.task.template.clone())),
        text("instruction", t(&|b| b.task.instruction.clone())),
        list(
            "apps",
            bundles.iter().map(|b| b.task.apps.clone()).collect(),
        ),
        text("category", t(&|b| b.task.category.clone())),
        text("task_type", t(&|b| b.task.task_type.as_str().into())),
        text("perturbation", t(&|b| b.task.perturbation.as_str().into())),
        Column::new(
            "cross_app".into(),
            bundles
                .iter()
                .map(|b| b.task.cross_app)
                .collect::<Vec<bool>>(),
        ),
        text("domain", t(&|b| b.task.domain.clone())),
        list(
            "offered_apps",
            bundles
                .iter()
                .map(|b| b.task.offered_apps.clone())
                .collect(),
        ),
        text("overrides", t(&|b| json(&b.task.overrides))),
        text("hidden_context", t(&|b| json(&b.task.hidden_context))),
        text(
            "reference_solution",
            t(&|b| json(&b.task.reference_solution)),
        ),
        text("defaults_solution", t(&|b| json(&b.task.defaults_solution))),
    ])
}

/// The `slots` table.
pub fn slots_table(bundles: &[TaskBundle]) -> Result<DataFrame, TaskError> {
    let rows: Vec<_> = bundles
        .iter()
        .flat_map(|b| b.slots.iter().map(move |s| (&b.task.task_id, s)))
        .collect();
    let t = |f: &dyn Fn(&crate::tasks::Slot) -> String| {
        rows.iter().map(|(_, s)| f(s)).collect::<Vec<_>>()
    };
    frame(vec![
        text(
            "task_id",
            rows.iter().map(|(id, _)| id.to_string()).collect(),
        ),
        text("slot_id", t(&|s| s.slot_id.clone())),
        text("source", t(&|s| s.source.as_str().into())),
        list(
            "evidence",
            rows.iter().map(|(_, s)| s.evidence.clone()).collect(),
        ),
        text("value", t(&|s| display(&s.value))),
        text("value_json", t(&|s| json(&s.value))),
        list(
            "keywords",
            rows.iter().map(|(_, s)| s.keywords.clone()).collect(),
        ),
        opt_text(
            "app_default",
            rows.iter()
                .map(|(_, s)| s.app_default.as_ref().map(display))
                .collect(),
        ),
        opt_text(
            "profile_entry",
            rows.iter().map(|(_, s)| s.profile_entry.clone()).collect(),
        ),
        text("about", t(&|s| s.about.clone())),
    ])
}

/// The `criteria` table.
pub fn criteria_table(bundles: &[TaskBundle]) -> Result<DataFrame, TaskError> {
    let rows: Vec<_> = bundles
        .iter()
        .flat_map(|b| b.criteria.iter().map(move |c| (&b.task.task_id, c)))
        .collect();
    let t = |f: &dyn Fn(&crate::tasks::Criterion) -> String| {
        rows.iter().map(|(_, c)| f(c)).collect::<Vec<_>>()
    };
    frame(vec![
        text(
            "task_id",
            rows.iter().map(|(id, _)| id.to_string()).collect(),
        ),
        text("criterion_id", t(&|c| c.criterion_id.clone())),
        text("kind", t(&|c| c.kind.as_str().into())),
        opt_text(
            "slot_id",
            rows.iter().map(|(_, c)| c.slot_id.clone()).collect(),
        ),
        text("predicate", t(&|c| json(&c.predicate))),
        text("rubric", t(&|c| c.rubric.clone())),
        Column::new(
            "free_text".into(),
            rows.iter().map(|(_, c)| c.free_text).collect::<Vec<_>>(),
        ),
    ])
}

/// The `bundles` table.
pub fn bundles_table(bundles: &[TaskBundle]) -> Result<DataFrame, TaskError> {
    frame(vec![
        text(
            "task_id",
            bundles.iter().map(|b| b.task.task_id.clone()).collect(),
        ),
        text("bundle", bundles.iter().map(json).collect()),
    ])
}

/// All four tables (`tasks`, `slots`, `criteria`, `bundles`).
pub fn task_tables(bundles: &[TaskBundle]) -> Result<Vec<(&'static str, DataFrame)>, TaskError> {
    Ok(vec![
        ("tasks", tasks_table(bundles)?),
        ("slots", slots_table(bundles)?),
        ("criteria", criteria_table(bundles)?),
        ("bundles", bundles_table(bundles)?),
    ])
}

/// Decodes a `bundles` table (as produced by [`bundles_table`]).
pub fn bundles_from_table(df: &DataFrame) -> Result<Vec<TaskBundle>, TaskError> {
    let col = df
        .column("bundle")
        .and_then(|c| c.str())
        .map_err(|e| TaskError::table("bundles", e.to_string()))?;
    col.iter()
        .enumerate()
        .map(|(i, cell)| {
            let cell =
                cell.ok_or_else(|| TaskError::table("bundles", format!("row {i}: empty bundle")))?;
            serde_json::from_str::<TaskBundle>(cell)
                .map_err(|e| TaskError::table("bundles", format!("row {i}: {e}")))
        })
        .collect()
}
