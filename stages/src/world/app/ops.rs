//! Lowering of operations: form fields, the detail-page entity, checks, effects and the result
//! message, each validated against the whole catalog (effects may write to other apps).

use crate::world::hash::FastMap;

use indexmap::IndexMap;
use serde_json::Value;
use serde_saphyr::Spanned;

use super::expr::{assignable, is_path, ExprScope, Ty};
use super::fields::{lower_field, value_problem_kind, FieldCtx, FieldSite};
use super::model::{Catalog, Check, CheckTest, Effect, Expr, Operation, Path};
use super::raw::{RawCheck, RawEffect, RawOperation};
use super::sink::{PendingRef, Sink};
use crate::world::error::{Loc, Problem, ProblemKind};
use crate::world::types::{check_value, FieldDef, FieldKind, TableId};
use crate::world::yaml::at;

/// Lowers one operation of app `app`.
pub(crate) fn lower_operation(
    cat: &Catalog,
    app: usize,
    file: &str,
    name: &str,
    raw: &Spanned<RawOperation>,
    sink: &mut Sink,
) -> Operation {
    let r = &raw.value;
    let ctx = FieldCtx {
        cat,
        app,
        file,
        site: FieldSite::Operation,
    };
    let fields: Vec<FieldDef> = r
        .fields
        .iter()
        .filter_map(|(n, f)| lower_field(&ctx, n, f, sink))
        .collect();
    let field_index: FastMap<String, usize> = fields
        .iter()
        .enumerate()
        .map(|(i, f)| (f.name.clone(), i))
        .collect();
    if fields.len() != r.fields.len() {
        // A field failed to lower; checks and effects would only report follow-on problems.
        return Operation {
            name: name.to_string(),
            title: name.to_string(),
            description: String::new(),
            entity: None,
            irreversible: r.irreversible,
            fields,
            checks: vec![],
            effects: vec![],
            result: None,
            field_index,
        };
    }
    let entity = r
        .entity
        .as_ref()
        .and_then(|e| lower_entity(cat, app, file, name, e, &fields, sink));
    let mut scope = ExprScope {
        cat,
        fields: &fields,
        inserted: None,
    };
    let checks = r
        .checks
        .iter()
        .filter_map(|c| lower_check(&scope, file, c, sink))
        .collect();
    let mut effects = Vec::new();
    for e in &r.effects {
        if let Some(eff) = lower_effect(&scope, app, file, e, sink) {
            if let Effect::Insert { table, .. } = &eff {
                scope.inserted = Some(*table);
            }
            effects.push(eff);
        }
    }
    let result = r
        .result
        .as_ref()
        .and_then(|t| template_or_problem(&scope, file, t, sink));
    Operation {
        name: name.to_string(),
        title: r.title.clone().unwrap_or_else(|| name.replace('_', " ")),
        description: r.description.clone(),
        entity,
        irreversible: r.irreversible,
        fields,
        checks,
        effects,
        result,
        field_index,
    }
}

fn lower_entity(
    cat: &Catalog,
    app: usize,
    file: &str,
    op: &str,
    e: &Spanned<String>,
    fields: &[FieldDef],
    sink: &mut Sink,
) -> Option<TableId> {
    let Some(tid) = cat.table_id(&e.value, Some(app)) else {
        sink.push(Problem::new(
            ProblemKind::UnknownDisplayField,
            at(file, e),
            format!("operation `{op}` names unknown entity table `{}`", e.value),
            "name a table of this app, or `<app>.<table>`",
        ));
        return None;
    };
    if !fields.iter().any(|f| f.kind == FieldKind::Ref(tid)) {
        sink.push(Problem::new(
            ProblemKind::UnknownDisplayField,
            at(file, e),
            format!(
                "operation `{op}` is offered on `{}` pages but has no ref field to it",
                e.value
            ),
            "add a ref field to that table, or remove `entity`",
        ));
    }
    Some(tid)
}

fn template_or_problem(
    scope: &ExprScope,
    file: &str,
    t: &Spanned<String>,
    sink: &mut Sink,
) -> Option<crate::world::template::Template<Path>> {
    scope
        .template(&t.value)
        .map_err(|m| {
            sink.push(Problem::new(
                ProblemKind::BadTemplate,
                at(file, t),
                m,
                "fix the placeholders: `{field}` or `{field.subfield}` of this operation",
            ))
        })
        .ok()
}

fn path_or_problem(
    scope: &ExprScope,
    file: &str,
    s: &Spanned<String>,
    sink: &mut Sink,
) -> Option<(Path, Ty)> {
    let Some(dotted) = s.value.strip_prefix('$').filter(|_| is_path(&s.value)) else {
        sink.push(Problem::new(
            ProblemKind::BadExpression,
            at(file, s),
            format!("\"{}\" is not a path", s.value),
            "write `$field` or `$field.subfield`",
        ));
        return None;
    };
    scope
        .path(dotted)
        .map_err(|m| {
            sink.push(Problem::new(
                ProblemKind::BadExpression,
                at(file, s),
                m,
                "use a field of this operation, or now/today/inserted",
            ))
        })
        .ok()
}

fn lower_check(
    scope: &ExprScope,
    file: &str,
    c: &Spanned<RawCheck>,
    sink: &mut Sink,
) -> Option<Check> {
    let r = &c.value;
    let (value, vty) = path_or_problem(scope, file, &r.value, sink)?;
    let message = template_or_problem(scope, file, &r.message, sink)?;
    let given = [
        r.in_list.is_some(),
        r.equals.is_some(),
        r.min.is_some(),
        r.max.is_some(),
    ];
    if given.iter().filter(|g| **g).count() != 1 {
        sink.push(Problem::new(
            ProblemKind::BadExpression,
            at(file, c),
            "a check needs exactly one of in, equals, min, max",
            "keep one test per check",
        ));
        return None;
    }
    let test = if let Some(list) = &r.in_list {
        let (p, (_, many)) = path_or_problem(scope, file, list, sink)?;
        if !many {
            sink.push(Problem::new(
                ProblemKind::ExpressionTypeMismatch,
                at(file, list),
                format!("`in: {}` is not a list", list.value),
                "point `in` at a `many` field",
            ));
            return None;
        }
        CheckTest::In(p)
    } else {
        let (v, ordered, wrap): (&Spanned<Value>, bool, fn(Expr) -> CheckTest) =
            match (&r.equals, &r.min, &r.max) {
                (Some(v), _, _) => (v, false, CheckTest::Equals),
                (_, Some(v), _) => (v, true, CheckTest::Min),
                (_, _, Some(v)) => (v, true, CheckTest::Max),
                _ => return None,
            };
        let (e, _) = scope
            .expr(&v.value)
            .map_err(|m| {
                sink.push(Problem::new(
                    ProblemKind::BadExpression,
                    at(file, v),
                    m,
                    "use a literal or a `$path`",
                ))
            })
            .ok()?;
        let is_ordered = matches!(
            vty.0,
            FieldKind::Int(_)
                | FieldKind::Float(_)
                | FieldKind::Date
                | FieldKind::Time
                | FieldKind::DateTime
        );
        if ordered && !is_ordered {
            sink.push(Problem::new(
                ProblemKind::ExpressionTypeMismatch,
                at(file, &r.value),
                "min/max need a number, date or time",
                "compare an ordered value",
            ));
        }
        wrap(e)
    };
    Some(Check {
        value,
        test,
        message,
    })
}

fn lower_effect(
    scope: &ExprScope,
    app: usize,
    file: &str,
    e: &Spanned<RawEffect>,
    sink: &mut Sink,
) -> Option<Effect> {
    let r = &e.value;
    let (verb, target) = match (&r.insert, &r.update, &r.delete) {
        (Some(t), None, None) => ("insert", t),
        (None, Some(t), None) => ("update", t),
        (None, None, Some(t)) => ("delete", t),
        _ => {
            sink.push(Problem::new(
                ProblemKind::UnknownEffectTable,
                at(file, e),
                "an effect needs exactly one of insert, update, delete",
                "write `insert: <table>`, `update: <table>` or `delete: <table>`",
            ));
            return None;
        }
    };
    let Some(table) = scope.cat.table_id(&target.value, Some(app)) else {
        sink.push(Problem::new(
            ProblemKind::UnknownEffectTable,
            at(file, target),
            format!("{verb} names unknown table `{}`", target.value),
            "name a table of this app, or `<app>.<table>`",
        ));
        return None;
    };
    match verb {
        "insert" => {
            let values = lower_values(scope, table, file, &r.values, sink);
            check_insert_complete(scope.cat, table, &r.values, at(file, target), sink);
            Some(Effect::Insert { table, values })
        }
        _ => {
            let record = lower_record_path(scope, table, file, e, sink)?;
            if verb == "delete" {
                return Some(Effect::Delete { table, record });
            }
            Some(Effect::Update {
                table,
                record,
                values: lower_values(scope, table, file, &r.values, sink),
            })
        }
    }
}

fn lower_record_path(
    scope: &ExprScope,
    table: TableId,
    file: &str,
    e: &Spanned<RawEffect>,
    sink: &mut Sink,
) -> Option<Expr> {
    let Some(rec) = &e.value.record else {
        sink.push(Problem::new(
            ProblemKind::BadExpression,
            at(file, e),
            "update/delete needs `record:`",
            "add `record: $field` (a ref to the target table) or `record: <literal id>`",
        ));
        return None;
    };
    if !is_path(&rec.value) {
        let value = Value::String(rec.value.clone());
        sink.refs.push(PendingRef {
            table,
            value: value.clone(),
            at: at(file, rec),
            what: "`record` of an effect".into(),
        });
        return Some(Expr::Lit(value));
    }
    let (p, ty) = path_or_problem(scope, file, rec, sink)?;
    if ty != (FieldKind::Ref(table), false) {
        sink.push(Problem::new(
            ProblemKind::ExpressionTypeMismatch,
            at(file, rec),
            format!(
                "`{}` is not a ref to {}",
                rec.value,
                scope.cat.table_name(table)
            ),
            "use a ref field whose `to` is the target table",
        ));
        return None;
    }
    Some(Expr::Path(p))
}

fn check_insert_complete(
    cat: &Catalog,
    table: TableId,
    given: &IndexMap<String, Spanned<Value>>,
    here: Loc,
    sink: &mut Sink,
) {
    for f in &cat.table(table).fields {
        if f.default.is_none() && !given.contains_key(&f.name) {
            let msg = format!(
                "insert into {} omits `{}`, which has no default",
                cat.table_name(table),
                f.name
            );
            sink.push(Problem::new(
                ProblemKind::UnknownEffectField,
                here.clone(),
                msg,
                "set it in `values`, or give the table field a default",
            ));
        }
    }
}

fn lower_values(
    scope: &ExprScope,
    table: TableId,
    file: &str,
    values: &IndexMap<String, Spanned<Value>>,
    sink: &mut Sink,
) -> Vec<(usize, Expr)> {
    let t = scope.cat.table(table);
    let mut out = Vec::new();
    for (name, v) in values {
        let here = at(file, v);
        let Some(fi) = t.field_idx(name) else {
            sink.push(Problem::new(
                ProblemKind::UnknownEffectField,
                here,
                format!("{} has no field `{name}`", scope.cat.table_name(table)),
                "set only fields the table declares",
            ));
            continue;
        };
        let dst = &t.fields[fi];
        match scope.expr(&v.value) {
            Err(m) => sink.push(Problem::new(
                ProblemKind::BadExpression,
                here,
                m,
                "use `$field`, `$field.subfield`, a `{…}` template or a literal",
            )),
            Ok((Expr::Lit(lit), _)) => match check_value(dst, &lit) {
                Ok(norm) => {
                    if let FieldKind::Ref(t) = dst.kind {
                        sink.refs.push(PendingRef {
                            table: t,
                            value: norm.clone(),
                            at: here,
                            what: format!("value for `{name}`"),
                        });
                    }
                    out.push((fi, Expr::Lit(norm)))
                }
                Err(e) => sink.push(Problem::new(
                    value_problem_kind(&e),
                    here,
                    format!("value for `{name}`: {e}"),
                    "use a value the field accepts",
                )),
            },
            Ok((expr, Some(ty))) => match assignable(scope.cat, &ty, dst) {
                Ok(()) => out.push((fi, expr)),
                Err(m) => sink.push(Problem::new(
                    ProblemKind::ExpressionTypeMismatch,
                    here,
                    m,
                    "store a value of the field's type",
                )),
            },
            Ok((expr, None)) => out.push((fi, expr)),
        }
    }
    out
}
