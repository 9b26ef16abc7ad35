//! Lowering of one event template: app, place, hours, period, twins, bindings and the text's
//! placeholders, each checked against the catalog.

use indexmap::IndexMap;
use serde_json::Value;
use serde_saphyr::Spanned;

use super::lower::{lower_days, parse_days, Lower};
use crate::world::app::Catalog;
use crate::world::error::ProblemKind as K;
use crate::world::persona::model::{At, Binding, Days, EventTemplate, Period, Var, Want};
use crate::world::persona::raw::{RawBind, RawTemplate};
use crate::world::persona::text::ONE_OFF_MARKERS;
use crate::world::template;

pub(super) fn lower_template(
    lw: &mut Lower,
    t: &Spanned<RawTemplate>,
    shared: &[Binding],
    shifted: bool,
    evidence: bool,
) -> Option<EventTemplate> {
    let r = &t.value;
    let twins = lower_twins(lw, r, evidence);
    let Some(_) = lw.cat.app(&r.app.value) else {
        lw.push(
            K::UnknownEvidenceApp,
            lw.at(&r.app),
            format!("unknown app `{}`", r.app.value),
            "name an app in datasets/apps/",
        );
        return None;
    };
    let binds = lower_binds(lw, shared, &r.bind)?;
    let mut texts = vec![lower_text(lw, &r.text, &binds)?];
    for p in &r.phrasings {
        texts.push(lower_text(lw, p, &binds)?);
    }
    check_once(lw, r);
    let at = lower_at(lw, &r.at, &binds)?;
    let place_hours = lw
        .places
        .get(&r.at.value)
        .and_then(|p| p.value.hours.as_ref());
    let hours = lower_hours(lw, r.hours.as_ref().or(place_hours));
    let period = lower_period(lw, r, shifted);
    // A place's days are checked once, where places are (`check_place_days`).
    let place_days = lw
        .places
        .get(&r.at.value)
        .and_then(|p| p.value.days.as_ref())
        .and_then(|d| parse_days(&d.value));
    let days = match &r.days {
        Some(d) => lower_days(lw, &Spanned::new(&d.value, d.referenced, d.defined))?,
        None => place_days.unwrap_or(Days::ANY),
    };
    Some(EventTemplate {
        app: r.app.value.clone(),
        at,
        texts,
        once: r.once,
        hours,
        period,
        binds,
        twins,
        context: r.context.unwrap_or(true),
        days,
        scene: r.scene.clone(),
    })
}

/// The constructions an evidence template names under `twins` (only evidence has twins).
pub(super) fn lower_twins(lw: &mut Lower, r: &RawTemplate, evidence: bool) -> Vec<usize> {
    if !evidence && !r.twins.is_empty() {
        lw.push(
            K::NoiseEvidences,
            lw.at(&r.twins[0]),
            "`twins` on a template that is not evidence",
            "only evidence templates have noise twins; remove `twins`",
        );
        return Vec::new();
    }
    if r.once && !r.twins.is_empty() {
        lw.push(
            K::NoiseEvidences,
            lw.at(&r.twins[0]),
            "`twins` on a `once` template (a one-off occasion has no twin)",
            "remove `twins` or `once`",
        );
        return Vec::new();
    }
    let mut out = Vec::new();
    for n in &r.twins {
        match lw.constructions.iter().position(|c| *c == n.value) {
            Some(i) => out.push(i),
            None => lw.push(
                K::NoiseEvidences,
                lw.at(n),
                format!("`twins` names unknown construction `{}`", n.value),
                format!("use one of {:?}", lw.constructions),
            ),
        }
    }
    out
}

/// A template naming a one-off occasion (a birthday, a renewal) must occur once.
pub(super) fn check_once(lw: &mut Lower, r: &RawTemplate) {
    if r.once {
        return;
    }
    for t in std::iter::once(&r.text).chain(&r.phrasings) {
        let lower = t.value.to_lowercase();
        if let Some(m) = ONE_OFF_MARKERS.iter().find(|m| lower.contains(*m)) {
            lw.push(
                K::BadTemplate,
                lw.at(t),
                format!(
                    "\"{}\" names a one-off occasion (\"{m}\") but may repeat",
                    t.value
                ),
                "add `once: true` so the occasion happens once in the history",
            );
            return;
        }
    }
}

/// The hour window: the template's, else its place's, else 08–22.
pub(super) fn lower_hours(lw: &mut Lower, hours: Option<&Spanned<(u32, u32)>>) -> (u32, u32) {
    match hours {
        None => (8, 22),
        Some(h) if h.value.0 < h.value.1 && h.value.1 <= 24 => h.value,
        Some(h) => {
            lw.push(
                K::BadTemplate,
                lw.at(h),
                format!("hours {:?} are not a window within a day", h.value),
                "write hours: [from, to] with 0 ≤ from < to ≤ 24",
            );
            (8, 22)
        }
    }
}

pub(super) fn lower_period(lw: &mut Lower, r: &RawTemplate, shifted: bool) -> Option<Period> {
    let p = r.period.as_ref()?;
    let period = match p.value.as_str() {
        "before" => Period::Before,
        "after" => Period::After,
        other => {
            lw.push(
                K::BadShift,
                lw.at(p),
                format!("unknown period `{other}`"),
                "use before or after",
            );
            return None;
        }
    };
    if !shifted {
        lw.push(
            K::BadShift,
            lw.at(p),
            "`period` on an entry without a shift",
            "remove `period` or add a `shift`",
        );
    }
    Some(period)
}

pub(super) fn lower_binds(
    lw: &mut Lower,
    shared: &[Binding],
    own: &IndexMap<String, Spanned<RawBind>>,
) -> Option<Vec<Binding>> {
    let mut binds: Vec<Binding> = shared.to_vec();
    let mut ok = true;
    for (name, b) in own {
        if binds.iter().any(|x| &x.name == name) {
            lw.push(
                K::BadBinding,
                lw.at(b),
                format!("binding `{name}` is defined twice"),
                "rename one of them",
            );
            ok = false;
            continue;
        }
        match lower_bind(lw, name, b, &binds) {
            Some(x) => binds.push(x),
            None => ok = false,
        }
    }
    ok.then_some(binds)
}

pub(super) fn lower_bind(
    lw: &mut Lower,
    name: &str,
    b: &Spanned<RawBind>,
    earlier: &[Binding],
) -> Option<Binding> {
    let from = &b.value.from;
    let Some(table) = from
        .value
        .contains('.')
        .then(|| lw.cat.table_id(&from.value, None))
        .flatten()
    else {
        lw.push(
            K::BadBinding,
            lw.at(from),
            format!("binding `{name}` reads unknown table `{}`", from.value),
            "write `from: <app>.<table>`",
        );
        return None;
    };
    let t = lw.cat.table(table);
    let mut filters = Vec::new();
    for (field, want) in &b.value.filter {
        let fi = if field == "id" {
            None
        } else {
            Some(t.field_idx(field))
        };
        let Some(fi) = fi.map_or(Some(None), |x| x.map(Some)) else {
            lw.push(
                K::BadBinding,
                lw.at(want),
                format!("`{}` has no field `{field}`", lw.cat.table_name(table)),
                "filter on a declared field (or id)",
            );
            return None;
        };
        filters.push((fi, lower_want(lw, want, earlier)?));
    }
    Some(Binding {
        name: name.to_string(),
        table,
        filters,
    })
}

pub(super) fn lower_want(
    lw: &mut Lower,
    want: &Spanned<Value>,
    earlier: &[Binding],
) -> Option<Want> {
    let Value::String(s) = &want.value else {
        return Some(Want::Lit(want.value.clone()));
    };
    let Some(path) = s
        .strip_prefix('$')
        .filter(|p| p.starts_with(|c: char| c.is_ascii_alphabetic()))
    else {
        return Some(Want::Lit(want.value.clone()));
    };
    if path == "value" {
        return Some(Want::Value);
    }
    let (b, field) = path.split_once('.').unwrap_or((path, "id"));
    let found = earlier.iter().position(|x| x.name == b).and_then(|bi| {
        if field == "id" {
            return Some(Want::Bound(bi, None));
        }
        lw.cat
            .table(earlier[bi].table)
            .field_idx(field)
            .map(|fi| Want::Bound(bi, Some(fi)))
    });
    if found.is_none() {
        lw.push(
            K::BadBinding,
            lw.at(want),
            format!("`{s}` names no earlier binding field"),
            "use $value, a literal, or $<earlier binding>.<field>",
        );
    }
    found
}

pub(super) fn lower_text(
    lw: &mut Lower,
    s: &Spanned<String>,
    binds: &[Binding],
) -> Option<template::Template<Var>> {
    let parsed = template::parse(&s.value)
        .and_then(|t| t.resolve(|p: Vec<String>| resolve_var(lw.cat, &lw.vocab, &p, binds)));
    match parsed {
        Ok(t) => Some(t),
        Err(m) => {
            lw.push(
                K::BadTemplate,
                lw.at(s),
                m,
                "use {value}, {mention}, {binding} or {binding.field}",
            );
            None
        }
    }
}

pub(super) fn resolve_var(
    cat: &Catalog,
    vocab: &[String],
    path: &[String],
    binds: &[Binding],
) -> std::result::Result<Var, String> {
    if let [v, name] = path {
        if v == "vocab" && !binds.iter().any(|b| &b.name == v) {
            return vocab
                .iter()
                .position(|n| n == name)
                .map(Var::Vocab)
                .ok_or_else(|| format!("`{{vocab.{name}}}` names no list under `vocab:`"));
        }
    }
    match path {
        [v] if v == "value" => return Ok(Var::Value),
        [m] if m == "mention" => return Ok(Var::Mention),
        [w] if w == "weekday" => return Ok(Var::Weekday),
        [d] if d == "daypart" => return Ok(Var::Daypart),
        _ => {}
    }
    let bi = binds
        .iter()
        .position(|b| b.name == path[0])
        .ok_or_else(|| format!("`{{{}}}` names no binding", path.join(".")))?;
    match path {
        [_] => Ok(Var::Label(bi)),
        [_, f] if f == "id" => Ok(Var::Id(bi)),
        [_, f] => cat
            .table(binds[bi].table)
            .field_idx(f)
            .map(|fi| Var::Field(bi, fi))
            .ok_or_else(|| format!("`{}` has no field `{f}`", cat.table_name(binds[bi].table))),
        _ => Err(format!(
            "`{{{}}}` is too deep; use {{binding.field}}",
            path.join(".")
        )),
    }
}

pub(super) fn lower_at(lw: &mut Lower, s: &Spanned<String>, binds: &[Binding]) -> Option<At> {
    if s.value.contains('{') {
        return lower_text(lw, s, binds).map(At::Template);
    }
    match lw.places.get(&s.value) {
        Some(place) => Some(At::Label(place.value.label.clone())),
        None => {
            let keys: Vec<&String> = lw.places.keys().collect();
            lw.push(
                K::UnknownPlace,
                lw.at(s),
                format!("unknown place `{}`", s.value),
                format!("use one of {keys:?} or a {{binding.field}} template"),
            );
            None
        }
    }
}
