//! Running an operation: argument binding (types, options, ranges, existing refs, defaults),
//! preconditions, then effects staged and applied all-or-nothing.

use serde_json::{Map, Value};

use crate::world::app::{Catalog, CheckTest, Effect, Operation, Record};
use crate::world::types::{check_value, check_value_owned, display, FieldDef, FieldKind, TableId};

use super::eval::{ClockText, Scope, Write};
use super::overlay::Overlay;

/// What a successful submission did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OpOutcome {
    /// The rendered result message.
    pub message: String,
    /// `(table, id)` of each record inserted, in order.
    pub inserted: Vec<(TableId, String)>,
}

/// Checks one submitted value against its form field, including that a ref names a current
/// record.
pub(crate) fn check_arg(
    cat: &Catalog,
    state: &Overlay,
    f: &FieldDef,
    v: &Value,
) -> Result<Value, String> {
    let norm = check_value(f, v).map_err(|e| format!("{}: {e}", f.name))?;
    if let (FieldKind::Ref(t), Some(id)) = (&f.kind, norm.as_str()) {
        if !state.exists(cat, *t, id) {
            return Err(format!(
                "{}: no {} record \"{id}\"",
                f.name,
                cat.table_name(*t)
            ));
        }
    }
    Ok(norm)
}

/// Binds named arguments to the form's fields, filling defaults; unknown and missing required
/// fields are errors naming the valid fields.
pub(crate) fn bind_args(
    cat: &Catalog,
    state: &Overlay,
    op: &Operation,
    given: &Map<String, Value>,
) -> Result<Vec<Value>, String> {
    if let Some(k) = given.keys().find(|k| op.field_idx(k).is_none()) {
        let names: Vec<&str> = op.fields.iter().map(|f| f.name.as_str()).collect();
        return Err(format!(
            "unknown argument `{k}`; {} takes {}",
            op.name,
            names.join(", ")
        ));
    }
    op.fields
        .iter()
        .map(|f| match given.get(&f.name) {
            Some(v) => check_arg(cat, state, f, v),
            None => f
                .default
                .clone()
                .ok_or_else(|| format!("missing required argument `{}`", f.name)),
        })
        .collect()
}

/// Runs checks and effects of `op` with bound `args`; on any failure nothing changes.
pub(crate) fn run(
    cat: &Catalog,
    state: &mut Overlay,
    op: &Operation,
    args: &[Value],
    clock: &ClockText,
) -> Result<OpOutcome, String> {
    check_all(cat, state, op, args, clock)?;
    let mut staged: Vec<Write> = Vec::with_capacity(op.effects.len());
    let mut inserted: Vec<(TableId, String)> = Vec::new();
    for e in &op.effects {
        let last = inserted.last().map(|(_, id)| id.as_str());
        let scope = Scope {
            cat,
            state,
            staged: &staged,
            args,
            clock,
            inserted: last,
        };
        let w = stage(&scope, e, &inserted)?;
        if let Write::Insert(t, r) = &w {
            inserted.push((*t, r.id.clone()));
        }
        staged.push(w);
    }
    for w in staged {
        match w {
            Write::Insert(t, r) => state.insert(t, r),
            Write::Put(t, r) => state.put(t, r),
            Write::Delete(t, id) => state.delete(cat, t, &id),
        }
    }
    let last = inserted.last().map(|(_, id)| id.as_str());
    let scope = Scope {
        cat,
        state,
        staged: &[],
        args,
        clock,
        inserted: last,
    };
    let message = match &op.result {
        Some(t) => scope
            .text(t)
            .unwrap_or_else(|_| format!("{} done", op.title)),
        None => format!("{} done", op.title),
    };
    Ok(OpOutcome { message, inserted })
}

fn check_all(
    cat: &Catalog,
    state: &Overlay,
    op: &Operation,
    args: &[Value],
    clock: &ClockText,
) -> Result<(), String> {
    let scope = Scope {
        cat,
        state,
        staged: &[],
        args,
        clock,
        inserted: None,
    };
    for c in &op.checks {
        let v = scope.path_ref(&c.value)?;
        let v = v.as_ref();
        let ok = match &c.test {
            CheckTest::In(p) => scope
                .path_ref(p)?
                .as_array()
                .is_some_and(|items| items.contains(v)),
            CheckTest::Equals(e) => scope.expr_ref(e)?.as_ref() == v,
            CheckTest::Min(e) => compare(v, scope.expr_ref(e)?.as_ref()).is_some_and(|o| o.is_ge()),
            CheckTest::Max(e) => compare(v, scope.expr_ref(e)?.as_ref()).is_some_and(|o| o.is_le()),
        };
        if !ok {
            return Err(scope.text(&c.message).unwrap_or_else(|e| e));
        }
    }
    Ok(())
}

fn compare(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x.partial_cmp(&y),
        _ => Some(a.as_str()?.cmp(b.as_str()?)),
    }
}

fn stage(scope: &Scope, e: &Effect, inserted: &[(TableId, String)]) -> Result<Write, String> {
    match e {
        Effect::Insert { table, values } => {
            let t = scope.cat.table(*table);
            let taken: Vec<String> = inserted
                .iter()
                .filter(|(it, _)| it == table)
                .map(|(_, id)| id.clone())
                .collect();
            let id = scope.state.fresh_id(scope.cat, *table, &taken);
            let mut rec = Record {
                id,
                values: t
                    .fields
                    .iter()
                    .map(|f| f.default.clone().unwrap_or(Value::Null))
                    .collect(),
            };
            assign(scope, *table, &mut rec, values)?;
            Ok(Write::Insert(*table, rec))
        }
        Effect::Update {
            table,
            record,
            values,
        } => {
            let mut rec = target(scope, *table, record)?.clone();
            assign(scope, *table, &mut rec, values)?;
            Ok(Write::Put(*table, rec))
        }
        Effect::Delete { table, record } => Ok(Write::Delete(
            *table,
            target(scope, *table, record)?.id.clone(),
        )),
    }
}

fn target<'a>(
    scope: &'a Scope,
    table: TableId,
    record: &crate::world::app::Expr,
) -> Result<&'a Record, String> {
    let id = scope.expr_ref(record)?;
    let id = id
        .as_str()
        .ok_or_else(|| format!("record id must be text, got {id}"))?;
    scope
        .record(table, id)
        .ok_or_else(|| format!("{} has no record \"{id}\"", scope.cat.table_name(table)))
}

fn assign(
    scope: &Scope,
    table: TableId,
    rec: &mut Record,
    values: &[(usize, crate::world::app::Expr)],
) -> Result<(), String> {
    let t = scope.cat.table(table);
    for (fi, e) in values {
        let f = &t.fields[*fi];
        let v = coerce(scope.expr(e)?, f);
        rec.values[*fi] = check_value_owned(f, v).map_err(|err| {
            format!(
                "cannot store in {}.{}: {err}",
                scope.cat.table_name(table),
                f.name
            )
        })?;
    }
    Ok(())
}

/// Text fields store any scalar as its display text.
fn coerce(v: Value, f: &FieldDef) -> Value {
    match (&f.kind, &v) {
        (FieldKind::Text, Value::String(_)) => v,
        (FieldKind::Text, _) if !f.many => Value::String(display(&v)),
        _ => v,
    }
}
