//! Applying a review round: per task, the decision (keep or drop) and the edits of every sheet
//! row, checked for conflicts first, then applied with one audit row per change.

use std::collections::HashMap;

use serde_json::Value;

use super::error::TaskError;
use super::model::{Source, TaskBundle};
use super::sheet::{Round, SheetRow};
use crate::world::types::display;

/// One applied change: the `audit` table's row (`field` is `decision`, `instruction`,
/// `slots.<id>.source`, `slots.<id>.value`, `slots.<id>.evidence` or `criteria.<id>.rubric`).
pub use crate::tables::tasks::AuditRow;

/// One requested change with where it came from.
struct Edit<'r> {
    field: String,
    new: String,
    origin: &'r SheetRow,
}

/// Applies a round: tasks with a keeping decision stay (edited), the rest are dropped. Tasks
/// without any row are dropped too: every released task is reviewed in every round.
pub fn apply_round(
    bundles: Vec<TaskBundle>,
    rows: &[SheetRow],
    round: Round,
) -> Result<(Vec<TaskBundle>, Vec<AuditRow>), TaskError> {
    let mut by_task: HashMap<&str, Vec<&SheetRow>> = HashMap::new();
    for r in rows {
        by_task.entry(r.task_id.as_str()).or_default().push(r);
    }
    // In task order, so the first conflict reported is the same on every run.
    for b in &bundles {
        if let Some(task_rows) = by_task.get(b.task.task_id.as_str()) {
            check_conflicts(task_rows)?;
        }
    }
    let mut kept = Vec::new();
    let mut audit = Vec::new();
    for mut b in bundles {
        let Some(task_rows) = by_task.get(b.task.task_id.as_str()) else {
            continue;
        };
        let first = task_rows[0];
        audit.push(audit_row(&b, round, "decision", "", &first.decision, first));
        if !first.keep {
            continue;
        }
        for r in task_rows {
            apply_row(&mut b, r, round, &mut audit);
        }
        b.sync_hidden_context();
        kept.push(b);
    }
    Ok((kept, audit))
}

/// The changes a row asks for, as (field, new value) pairs.
fn edits(r: &SheetRow) -> Vec<Edit<'_>> {
    let mut out = vec![Edit {
        field: "decision".into(),
        new: r.decision.clone(),
        origin: r,
    }];
    if let Some(i) = &r.new_instruction {
        out.push(Edit {
            field: "instruction".into(),
            new: i.clone(),
            origin: r,
        });
    }
    for (slot, s) in &r.set_source {
        out.push(Edit {
            field: format!("slots.{slot}.source"),
            new: s.as_str().into(),
            origin: r,
        });
    }
    for (slot, v) in &r.set_value {
        out.push(Edit {
            field: format!("slots.{slot}.value"),
            new: v.to_string(),
            origin: r,
        });
    }
    out
}

/// Two rows of one round may not set one field of one task differently.
fn check_conflicts(rows: &[&SheetRow]) -> Result<(), TaskError> {
    let mut seen: HashMap<String, Edit<'_>> = HashMap::new();
    for r in rows {
        for e in edits(r) {
            match seen.get(&e.field) {
                Some(prev) if prev.new != e.new => {
                    let column = match e.field.as_str() {
                        "decision" => "decision",
                        "instruction" => "new_instruction",
                        f if f.ends_with(".source") => "set_source",
                        _ => "set_value",
                    };
                    return Err(TaskError::Sheet {
                        file: e.origin.file.clone(),
                        row: e.origin.row,
                        column: column.into(),
                        message: format!(
                            "conflicting edit of `{}` for task `{}`: {} here, but {} row {} says {}; settle on one",
                            e.field, r.task_id, e.new, prev.origin.file, prev.origin.row, prev.new
                        ),
                    });
                }
                Some(_) => {}
                None => {
                    seen.insert(e.field.clone(), e);
                }
            }
        }
    }
    Ok(())
}

fn apply_row(b: &mut TaskBundle, r: &SheetRow, round: Round, audit: &mut Vec<AuditRow>) {
    if let Some(new) = &r.new_instruction {
        if *new != b.task.instruction {
            let old = std::mem::replace(&mut b.task.instruction, new.clone());
            audit.push(audit_row(b, round, "instruction", &old, new, r));
        }
    }
    for (slot, source) in &r.set_source {
        set_source(b, slot, *source, r, round, audit);
    }
    for (slot, value) in &r.set_value {
        set_value(b, slot, value, r, round, audit);
    }
}

fn set_source(
    b: &mut TaskBundle,
    slot: &str,
    source: Source,
    r: &SheetRow,
    round: Round,
    audit: &mut Vec<AuditRow>,
) {
    let Some(s) = b.slot_mut(slot) else { return };
    if s.source == source {
        return;
    }
    let old = std::mem::replace(&mut s.source, source);
    let cleared = if source == Source::AskOnly && !s.evidence.is_empty() {
        Some(std::mem::take(&mut s.evidence).len())
    } else {
        None
    };
    let field = format!("slots.{slot}.source");
    audit.push(audit_row(
        b,
        round,
        &field,
        old.as_str(),
        source.as_str(),
        r,
    ));
    if let Some(n) = cleared {
        let field = format!("slots.{slot}.evidence");
        audit.push(audit_row(b, round, &field, &format!("{n} events"), "", r));
    }
}

/// Sets a slot's value and rewrites it in the rubrics of the slot's criteria (checks and the
/// reference solution refer to the slot, so they follow by themselves).
fn set_value(
    b: &mut TaskBundle,
    slot: &str,
    value: &Value,
    r: &SheetRow,
    round: Round,
    audit: &mut Vec<AuditRow>,
) {
    let Some(s) = b.slot_mut(slot) else { return };
    if &s.value == value {
        return;
    }
    let old = std::mem::replace(&mut s.value, value.clone());
    let (old_text, new_text) = (display(&old), display(value));
    audit.push(audit_row(
        b,
        round,
        &format!("slots.{slot}.value"),
        &old_text,
        &new_text,
        r,
    ));
    let mut rubric_changes = Vec::new();
    for c in b
        .criteria
        .iter_mut()
        .filter(|c| c.slot_id.as_deref() == Some(slot))
    {
        if !old_text.is_empty() && c.rubric.contains(&old_text) {
            let before = c.rubric.clone();
            c.rubric = c.rubric.replace(&old_text, &new_text);
            rubric_changes.push((c.criterion_id.clone(), before, c.rubric.clone()));
        }
    }
    for (id, before, after) in rubric_changes {
        audit.push(audit_row(
            b,
            round,
            &format!("criteria.{id}.rubric"),
            &before,
            &after,
            r,
        ));
    }
}

fn audit_row(
    b: &TaskBundle,
    round: Round,
    field: &str,
    old: &str,
    new: &str,
    r: &SheetRow,
) -> AuditRow {
    AuditRow {
        task_id: b.task.task_id.clone(),
        round: round.as_str().into(),
        field: field.into(),
        old: old.into(),
        new: new.into(),
        reviewer: r.reviewer.clone(),
        note: r.note.clone(),
        sheet: r.file.clone(),
        row: r.row as u32,
    }
}
