//! Lowering of field declarations (`type`, `options`, `range`, `to`, `many`, `required`,
//! `default`) into [`FieldDef`]s, with a located problem for every rule broken.

use serde_json::Value;
use serde_saphyr::Spanned;

use super::raw::RawField;
use super::sink::{PendingRef, Sink};
use crate::world::app::model::Catalog;
use crate::world::error::{Loc, Problem, ProblemKind};
use crate::world::types::{check_value, FieldDef, FieldKind, ValueError};
use crate::world::yaml::at;

/// Where a field is declared, which changes the rules: entity fields may be lists and need no
/// default; operation fields are scalars and need a default unless required.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldSite {
    /// A column of an entity table.
    Entity,
    /// A field of an operation form.
    Operation,
}

/// The context a field is lowered in.
pub(crate) struct FieldCtx<'a> {
    pub cat: &'a Catalog,
    pub app: usize,
    pub file: &'a str,
    pub site: FieldSite,
}

/// Maps a value error to the problem kind that names it.
pub(crate) fn value_problem_kind(e: &ValueError) -> ProblemKind {
    match e {
        ValueError::Type(_) => ProblemKind::ValueTypeMismatch,
        ValueError::NotAnOption(_) => ProblemKind::DefaultNotInOptions,
        ValueError::OutOfRange(_) => ProblemKind::DefaultOutOfRange,
    }
}

/// Lowers one field; `None` (with problems pushed) if its type cannot be determined.
pub(crate) fn lower_field(
    ctx: &FieldCtx,
    name: &str,
    raw: &Spanned<RawField>,
    sink: &mut Sink,
) -> Option<FieldDef> {
    let r = &raw.value;
    let kind = lower_kind(ctx, name, r, sink)?;
    let mut def = FieldDef {
        name: name.to_string(),
        kind,
        many: r.many,
        required: r.required,
        default: None,
        description: r.description.clone(),
    };
    let here = at(ctx.file, raw);
    if ctx.site == FieldSite::Operation {
        check_operation_rules(name, r, &here, sink);
        def.many = false;
    }
    if r.required && ctx.site == FieldSite::Entity {
        sink.push(Problem::new(ProblemKind::BadFieldType, here, format!("entity field `{name}` says `required`"), "remove `required`: entity fields without a default are always required in seed records"));
    }
    if let Some(d) = &r.default {
        def.default = lower_default(ctx, name, &def, d, sink);
    }
    Some(def)
}

fn check_operation_rules(name: &str, r: &RawField, here: &Loc, sink: &mut Sink) {
    if r.many {
        sink.push(Problem::new(
            ProblemKind::BadFieldType,
            here.clone(),
            format!("operation field `{name}` is `many`"),
            "operation fields hold one value; remove `many`",
        ));
    }
    match (r.required, &r.default) {
        (true, Some(d)) => sink.push(Problem::new(ProblemKind::RequiredHasDefault, at_default(here, d), format!("required field `{name}` has a default"), "remove the default, or drop `required: true` to make the field optional")),
        (false, None) => sink.push(Problem::new(ProblemKind::MissingDefault, here.clone(), format!("optional field `{name}` has no default"), "add `default: …` (what the form shows before the user touches it), or mark it `required: true`")),
        _ => {}
    }
    if ["now", "today", "inserted"].contains(&name) {
        sink.push(Problem::new(
            ProblemKind::BadId,
            here.clone(),
            format!("`{name}` is a reserved name"),
            "rename the field",
        ));
    }
}

fn at_default(here: &Loc, d: &Spanned<Value>) -> Loc {
    Loc {
        file: here.file.clone(),
        line: d.referenced.line() as u32,
        column: d.referenced.column() as u32,
    }
}

fn lower_default(
    ctx: &FieldCtx,
    name: &str,
    def: &FieldDef,
    d: &Spanned<Value>,
    sink: &mut Sink,
) -> Option<Value> {
    let here = at(ctx.file, d);
    match check_value(def, &d.value) {
        Ok(v) => {
            if let FieldKind::Ref(t) = &def.kind {
                sink.refs.push(PendingRef {
                    table: *t,
                    value: v.clone(),
                    at: here,
                    what: format!("default of `{name}`"),
                });
            }
            Some(v)
        }
        Err(e) => {
            sink.push(Problem::new(
                value_problem_kind(&e),
                here,
                format!("default of `{name}`: {e}"),
                "change the default to a value the field accepts",
            ));
            None
        }
    }
}

fn lower_kind(ctx: &FieldCtx, name: &str, r: &RawField, sink: &mut Sink) -> Option<FieldKind> {
    let here = at(ctx.file, &r.ty);
    let bad =
        |msg: String, fix: &str| Problem::new(ProblemKind::BadFieldType, here.clone(), msg, fix);
    let ty = r.ty.value.as_str();
    if r.options.is_some() && ty != "enum" {
        sink.push(bad(
            format!("field `{name}` has `options` but type {ty}"),
            "use `type: enum` or remove `options`",
        ));
    }
    if r.to.is_some() && ty != "ref" {
        sink.push(bad(
            format!("field `{name}` has `to` but type {ty}"),
            "use `type: ref` or remove `to`",
        ));
    }
    if r.range.is_some() && !matches!(ty, "int" | "float") {
        sink.push(bad(
            format!("field `{name}` has `range` but type {ty}"),
            "only int and float fields take a range",
        ));
    }
    let kind = match ty {
        "text" => FieldKind::Text,
        "bool" => FieldKind::Bool,
        "date" => FieldKind::Date,
        "time" => FieldKind::Time,
        "datetime" => FieldKind::DateTime,
        "int" => FieldKind::Int(lower_int_range(name, r, &here, sink)),
        "float" => FieldKind::Float(lower_float_range(name, r, &here, sink)),
        "enum" => lower_enum(name, r, &here, sink)?,
        "ref" => lower_ref(ctx, name, r, &here, sink)?,
        other => {
            sink.push(bad(
                format!("field `{name}` has unknown type `{other}`"),
                "use one of text, int, float, bool, date, time, datetime, enum, ref",
            ));
            return None;
        }
    };
    Some(kind)
}

fn lower_float_range(name: &str, r: &RawField, here: &Loc, sink: &mut Sink) -> Option<(f64, f64)> {
    let (lo, hi) = r.range.as_ref()?.value;
    if lo > hi {
        sink.push(Problem::new(
            ProblemKind::BadFieldType,
            here.clone(),
            format!("field `{name}` has range [{lo}, {hi}] with min > max"),
            "write the range as [min, max]",
        ));
        return None;
    }
    Some((lo, hi))
}

fn lower_int_range(name: &str, r: &RawField, here: &Loc, sink: &mut Sink) -> Option<(i64, i64)> {
    let (lo, hi) = lower_float_range(name, r, here, sink)?;
    if lo.fract() != 0.0 || hi.fract() != 0.0 {
        sink.push(Problem::new(
            ProblemKind::BadFieldType,
            here.clone(),
            format!("int field `{name}` has a fractional range"),
            "use whole numbers",
        ));
        return None;
    }
    Some((lo as i64, hi as i64))
}

fn lower_enum(name: &str, r: &RawField, here: &Loc, sink: &mut Sink) -> Option<FieldKind> {
    match &r.options {
        Some(o) if !o.value.is_empty() => {
            let mut seen = std::collections::HashSet::new();
            for opt in &o.value {
                if !seen.insert(opt) {
                    sink.push(Problem::new(
                        ProblemKind::DuplicateId,
                        here.clone(),
                        format!("enum `{name}` lists option \"{opt}\" twice"),
                        "remove the duplicate option",
                    ));
                }
            }
            Some(FieldKind::Enum(o.value.clone()))
        }
        _ => {
            sink.push(Problem::new(
                ProblemKind::BadFieldType,
                here.clone(),
                format!("enum field `{name}` has no options"),
                "add `options: [a, b, …]`",
            ));
            None
        }
    }
}

fn lower_ref(
    ctx: &FieldCtx,
    name: &str,
    r: &RawField,
    here: &Loc,
    sink: &mut Sink,
) -> Option<FieldKind> {
    let Some(to) = &r.to else {
        sink.push(Problem::new(
            ProblemKind::BadFieldType,
            here.clone(),
            format!("ref field `{name}` has no `to`"),
            "add `to: <table>` or `to: <app>.<table>`",
        ));
        return None;
    };
    match ctx.cat.table_id(&to.value, Some(ctx.app)) {
        Some(t) => Some(FieldKind::Ref(t)),
        None => {
            let fix = "name a table of this app, or `<app>.<table>` for another app's table";
            sink.push(Problem::new(
                ProblemKind::UnknownRefTarget,
                at(ctx.file, to),
                format!("ref field `{name}` points at unknown table `{}`", to.value),
                fix,
            ));
            None
        }
    }
}
