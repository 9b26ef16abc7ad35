//! Static checks of a predicate against the app catalog and the task's slots, so a template
//! typo (an unknown table, field or slot) is reported at generation instead of failing silently
//! in every episode.

use super::model::Slot;
use super::predicate::{Condition, Predicate};
use crate::world::app::Catalog;
use crate::world::types::{FieldDef, FieldKind, TableId};

/// Checks every table, tool, field path and slot a predicate names.
pub fn check_predicate(p: &Predicate, cat: &Catalog, slots: &[Slot]) -> Result<(), String> {
    for id in p.slot_refs() {
        if !slots.iter().any(|s| s.slot_id == id) {
            return Err(format!("refers to unknown slot `{id}`"));
        }
    }
    let mut result = Ok(());
    p.visit(&mut |q| {
        if result.is_ok() {
            result = check_one(q, cat);
        }
    });
    result
}

fn check_one(p: &Predicate, cat: &Catalog) -> Result<(), String> {
    match p {
        Predicate::Record {
            table, conditions, ..
        } => {
            let t = table_id(cat, table)?;
            conditions.iter().try_for_each(|c| check_path(cat, t, c))
        }
        Predicate::AnswerMentions {
            table,
            field,
            conditions,
        } => {
            let t = table_id(cat, table)?;
            field_def(cat, t, field).map(|_| ())?;
            conditions.iter().try_for_each(|c| check_path(cat, t, c))
        }
        Predicate::Called { tool, args } => {
            let op = cat
                .operation(tool)
                .ok_or_else(|| format!("unknown operation `{tool}`"))?;
            args.iter().try_for_each(|c| {
                let first = &c.path[0];
                let def = op
                    .field_idx(first)
                    .map(|i| &op.fields[i])
                    .ok_or_else(|| format!("`{tool}` has no argument `{first}`"))?;
                walk(cat, def, &c.path[1..], &c.path.join("."))
            })
        }
        _ => Ok(()),
    }
}

fn table_id(cat: &Catalog, table: &str) -> Result<TableId, String> {
    cat.table_id(table, None)
        .ok_or_else(|| format!("unknown table `{table}`"))
}

fn field_def<'c>(
    cat: &'c Catalog,
    t: TableId,
    field: &str,
) -> Result<Option<&'c FieldDef>, String> {
    if field == "id" {
        return Ok(None);
    }
    let table = cat.table(t);
    table
        .field_idx(field)
        .map(|i| Some(&table.fields[i]))
        .ok_or_else(|| format!("`{}` has no field `{field}`", cat.table_name(t)))
}

fn check_path(cat: &Catalog, t: TableId, c: &Condition) -> Result<(), String> {
    match field_def(cat, t, &c.path[0])? {
        Some(def) => walk(cat, def, &c.path[1..], &c.path.join(".")),
        None if c.path.len() == 1 => Ok(()),
        None => Err(format!("`{}`: `id` is not a ref field", c.path.join("."))),
    }
}

fn walk(cat: &Catalog, def: &FieldDef, rest: &[String], full: &str) -> Result<(), String> {
    let Some((next, tail)) = rest.split_first() else {
        return Ok(());
    };
    let FieldKind::Ref(t) = def.kind else {
        return Err(format!("`{full}`: `{}` is not a ref field", def.name));
    };
    match field_def(cat, t, next)? {
        Some(d) => walk(cat, d, tail, full),
        None if tail.is_empty() => Ok(()),
        None => Err(format!("`{full}`: `id` is not a ref field")),
    }
}
