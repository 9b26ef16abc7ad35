//! Lowering and validation of a persona file against the app catalog: ids, dimensions, shifts,
//! bindings, templates, and the lexical guarantees (evidence mentions its value, noise mentions
//! no value, no template leaks an ask-only value).

use std::collections::HashSet;

use indexmap::IndexMap;
use serde_json::Value;
use serde_saphyr::Spanned;

use super::bind::{admit_all, choose, render, render_at, Fill};
use super::model::{
    At, Binding, Construction, EventTemplate, OtherValue, Period, Persona, ProfileEntry, Shift,
    SituationalFact, Source, Var, Want, DIMENSIONS,
};
use super::raw::{
    RawBind, RawConstruction, RawEntry, RawPersona, RawPlace, RawShift, RawSituational, RawTemplate,
};
use super::text::mentions;
use super::text::ONE_OFF_MARKERS;
use crate::world::app::Catalog;
use crate::world::clock::{Date, DateTime, Time};
use crate::world::error::{Loc, Problem, ProblemKind as K, Problems, Result, WorldError};
use crate::world::template;
use crate::world::types::display;
use crate::world::yaml::{at, parse};

/// Lowering state for one file.
struct Lower<'a> {
    cat: &'a Catalog,
    /// Vocabulary list names, once lowered (`{vocab.<name>}` resolves against them).
    vocab: Vec<String>,
    /// Construction names (`twins:` resolves against them).
    constructions: Vec<String>,
    file: &'a str,
    places: &'a IndexMap<String, Spanned<RawPlace>>,
    problems: Vec<Problem>,
}

impl Lower<'_> {
    fn push(&mut self, kind: K, at: Loc, msg: impl Into<String>, fix: impl Into<String>) {
        self.problems.push(Problem::new(kind, at, msg, fix));
    }
    fn at<T>(&self, s: &Spanned<T>) -> Loc {
        at(self.file, s)
    }
}

/// Parses and validates a persona from YAML text.
pub(crate) fn from_source(file: &str, text: &str, cat: &Catalog) -> Result<Persona> {
    let raw: RawPersona = parse(file, text)?;
    let mut lw = Lower {
        cat,
        vocab: Vec::new(),
        constructions: Vec::new(),
        file,
        places: &raw.places,
        problems: Vec::new(),
    };
    let persona = lower_persona(&mut lw, &raw);
    if let (true, Some(p)) = (lw.problems.is_empty(), &persona) {
        check_lexical(&mut lw, p, &raw);
    }
    match (lw.problems.is_empty(), persona) {
        (true, Some(p)) => Ok(p),
        _ => Err(WorldError::Invalid(Problems(lw.problems))),
    }
}

fn lower_persona(lw: &mut Lower, raw: &RawPersona) -> Option<Persona> {
    let start = lower_date(lw, &raw.history.start);
    let end = lower_date(lw, &raw.history.end);
    let now = DateTime::parse(&raw.now.value);
    if now.is_none() {
        lw.push(
            K::BadShift,
            lw.at(&raw.now),
            format!("`now` is not a datetime: {}", raw.now.value),
            "write YYYY-MM-DDTHH:MM",
        );
    }
    let (start, end, now) = (start?, end?, now?);
    if end <= start {
        lw.push(
            K::BadShift,
            lw.at(&raw.history.end),
            "history ends before it starts",
            "make `end` later than `start`",
        );
    }
    check_ids(lw, raw);
    let vocab = lower_vocab(lw, raw);
    let contexts = lower_contexts(lw, raw);
    let constructions = lower_constructions(lw, raw);
    let profile: Vec<ProfileEntry> = raw
        .profile
        .iter()
        .filter_map(|e| lower_entry(lw, e, start, end))
        .collect();
    let situational = raw.situational.iter().map(lower_situational).collect();
    let noise = raw
        .noise
        .iter()
        .filter_map(|t| lower_template(lw, t, &[], false, false))
        .collect();
    Some(Persona {
        id: raw.persona.value.clone(),
        name: raw.name.clone(),
        age: raw.age,
        city: raw.city.clone(),
        occupation: raw.occupation.clone(),
        summary: raw.summary.clone(),
        start,
        end,
        now,
        places: raw
            .places
            .iter()
            .map(|(k, v)| (k.clone(), v.value.label.clone()))
            .collect(),
        routines: raw.routines.clone(),
        profile,
        situational,
        noise,
        vocab,
        vocab_names: raw.vocab.keys().cloned().collect(),
        contexts,
        constructions,
        towns: raw
            .towns
            .iter()
            .map(|(town, names)| std::iter::once(town).chain(names).cloned().collect())
            .collect(),
    })
}

/// Lowers the constructions: each form wraps `{event}` exactly once, may place the event's
/// trailing vocabulary phrase (`{tail}`) once, and may use `{vocab.<list>}`, `{weekday}` and
/// `{daypart}` (never a value: a twin's value comes from the event inside).
fn lower_constructions(lw: &mut Lower, raw: &RawPersona) -> Vec<Construction> {
    let mut out = Vec::new();
    for (name, c) in &raw.constructions {
        let RawConstruction {
            noise,
            signal,
            counter,
        } = &c.value;
        if noise.is_empty() && counter.is_empty() {
            lw.push(
                K::BadTemplate,
                lw.at(c),
                format!("construction `{name}` has neither noise nor counter forms"),
                "give it `noise` forms (someone else's event) or `counter` forms (her exception)",
            );
        }
        out.push(Construction {
            name: name.clone(),
            noise: noise.iter().filter_map(|f| lower_form(lw, f)).collect(),
            signal: signal.iter().filter_map(|f| lower_form(lw, f)).collect(),
            counter: counter.iter().filter_map(|f| lower_form(lw, f)).collect(),
        });
    }
    lw.constructions = raw.constructions.keys().cloned().collect();
    out
}

fn lower_form(lw: &mut Lower, s: &Spanned<String>) -> Option<template::Template<Var>> {
    let parsed = template::parse(&s.value).and_then(|t| {
        t.resolve(|p: Vec<String>| match &p[..] {
            [e] if e == "event" => Ok(Var::Event),
            [t] if t == "tail" => Ok(Var::Tail),
            _ => match resolve_var(lw.cat, &lw.vocab, &p, &[]) {
                Ok(v @ (Var::Vocab(_) | Var::Weekday | Var::Daypart)) => Ok(v),
                Ok(_) => Err(format!(
                    "`{{{}}}`: a construction's form carries no value (the event inside does)",
                    p.join(".")
                )),
                Err(e) => Err(e),
            },
        })
    });
    let count = |var: Var| {
        parsed
            .as_ref()
            .map_or(0, |t| t.vars().filter(|v| **v == var).count())
    };
    match parsed {
        Ok(t) if count(Var::Event) == 1 && count(Var::Tail) <= 1 => Some(t),
        Ok(_) => {
            lw.push(
                K::BadTemplate,
                lw.at(s),
                format!("form \"{}\" must wrap {{event}} exactly once", s.value),
                "write the form around one {event} (or {event|uncap}), and {tail} at most once",
            );
            None
        }
        Err(m) => {
            lw.push(
                K::BadTemplate,
                lw.at(s),
                m,
                "use {event}, {tail}, {vocab.<list>}, {weekday} or {daypart}",
            );
            None
        }
    }
}

/// Lowers the vocabulary lists; a phrase may use `{weekday}` and `{daypart}` but no binding
/// and no other list.
fn lower_vocab(lw: &mut Lower, raw: &RawPersona) -> Vec<Vec<template::Template<Var>>> {
    let mut out = Vec::new();
    for (name, phrases) in &raw.vocab {
        let lowered: Vec<_> = phrases
            .iter()
            .filter_map(|p| lower_text(lw, p, &[]))
            .collect();
        if lowered.is_empty() {
            if let Some(first) = phrases.first() {
                lw.push(
                    K::BadTemplate,
                    lw.at(first),
                    format!("vocabulary list `{name}` has no usable phrase"),
                    "give the list at least one phrase",
                );
            }
        }
        out.push(lowered);
    }
    // Names become visible only now, so a phrase cannot name a list.
    lw.vocab = raw.vocab.keys().cloned().collect();
    out
}

/// The circumstances per app: known apps, phrases that parse (weekday, daypart and vocabulary
/// placeholders only).
fn lower_contexts(
    lw: &mut Lower,
    raw: &RawPersona,
) -> IndexMap<String, Vec<template::Template<Var>>> {
    let mut out = IndexMap::new();
    for (app, phrases) in &raw.contexts {
        if lw.cat.app(app).is_none() {
            if let Some(first) = phrases.first() {
                lw.push(
                    K::UnknownEvidenceApp,
                    lw.at(first),
                    format!("`contexts` names unknown app `{app}`"),
                    "key contexts by an app id of datasets/apps/",
                );
            }
            continue;
        }
        let lowered: Vec<_> = phrases
            .iter()
            .filter_map(|p| lower_text(lw, p, &[]))
            .collect();
        out.insert(app.clone(), lowered);
    }
    out
}

fn lower_date(lw: &mut Lower, s: &Spanned<String>) -> Option<Date> {
    let d = Date::parse(&s.value);
    if d.is_none() {
        lw.push(
            K::BadShift,
            lw.at(s),
            format!("\"{}\" is not a date", s.value),
            "write YYYY-MM-DD",
        );
    }
    d
}

fn check_ids(lw: &mut Lower, raw: &RawPersona) {
    let mut seen = HashSet::new();
    let ids = raw
        .profile
        .iter()
        .map(|e| &e.value.id)
        .chain(raw.situational.iter().map(|s| &s.value.id));
    for id in ids {
        if !seen.insert(id.value.clone()) {
            lw.push(
                K::DuplicateId,
                lw.at(id),
                format!("id `{}` is used twice", id.value),
                "give every profile entry and situational fact its own id",
            );
        }
    }
}

fn lower_situational(s: &Spanned<RawSituational>) -> SituationalFact {
    let r = &s.value;
    SituationalFact {
        id: r.id.value.clone(),
        key: r.key.clone(),
        value: r.value.clone(),
        about: r.about.clone(),
        leaks: r.leaks.clone(),
    }
}

fn lower_entry(
    lw: &mut Lower,
    e: &Spanned<RawEntry>,
    start: Date,
    end: Date,
) -> Option<ProfileEntry> {
    let r = &e.value;
    if !DIMENSIONS.contains(&r.dimension.value.as_str()) {
        lw.push(
            K::UnknownDimension,
            lw.at(&r.dimension),
            format!("unknown dimension `{}`", r.dimension.value),
            format!("use one of {}", DIMENSIONS.join(", ")),
        );
    }
    let source = lower_source(lw, r)?;
    let shift = r
        .shift
        .as_ref()
        .and_then(|s| lower_shift(lw, s, start, end));
    // Shared bindings are lowered once; if they fail, templates would only repeat the problem.
    let shared = lower_binds(lw, &[], &r.bind)?;
    let evidence: Vec<EventTemplate> = r
        .evidence
        .iter()
        .filter_map(|t| lower_template(lw, t, &shared, shift.is_some(), true))
        .collect();
    if evidence.len() == r.evidence.len() {
        check_evidence_presence(lw, e, source, &shift, &evidence);
    }
    let counter: Vec<EventTemplate> = r
        .counter
        .iter()
        .filter_map(|t| lower_template(lw, t, &shared, shift.is_some(), false))
        .collect();
    let decoys: Vec<EventTemplate> = r
        .decoys
        .iter()
        .filter_map(|t| lower_template(lw, t, &shared, shift.is_some(), false))
        .collect();
    let mention = r
        .mention
        .as_ref()
        .map_or_else(|| display(&r.value.value), |m| m.value.clone());
    let others = lower_others(lw, r, &mention);
    if others.is_empty() && evidence.iter().any(|t| !t.twins.is_empty()) {
        lw.push(
            K::NoiseEvidences,
            lw.at(e),
            format!(
                "entry `{}` has evidence with `twins` but no `others`",
                r.id.value
            ),
            "list `others:` (values a twin carries instead of hers), or drop `twins`",
        );
    }
    if source == Source::AskOnly && !(r.counter.is_empty() && r.decoys.is_empty()) {
        lw.push(
            K::NoEvidence,
            lw.at(e),
            format!(
                "ask-only entry `{}` has counter-evidence or decoys",
                r.id.value
            ),
            "remove `counter` and `decoys`: history must say nothing about an ask-only entry",
        );
    }
    Some(ProfileEntry {
        id: r.id.value.clone(),
        dimension: r.dimension.value.clone(),
        key: r.key.clone(),
        value: r.value.value.clone(),
        mention,
        source,
        shift,
        weight: r.weight.unwrap_or(1.0).max(0.0),
        note: r.note.clone(),
        evidence,
        counter,
        decoys,
        others,
    })
}

/// The entry's other values: `{ value, mention }` as written, or a scalar whose mention is the
/// entry's own with the value swapped in (`size M` → `size L`; `Thai` → `Korean`).
fn lower_others(lw: &mut Lower, r: &RawEntry, mention: &str) -> Vec<OtherValue> {
    let own = display(&r.value.value);
    let mut out = Vec::new();
    for o in &r.others {
        let explicit = o.value.as_object().map(|m| {
            (
                m.get("value").cloned(),
                m.get("mention").and_then(Value::as_str).map(str::to_string),
            )
        });
        let (value, mention) = match explicit {
            Some((Some(v), m)) => {
                let m = m.or_else(|| swap_mention(mention, &own, &display(&v)));
                (v, m)
            }
            Some((None, _)) => (Value::Null, None),
            None => {
                let v = o.value.clone();
                let m = swap_mention(mention, &own, &display(&v));
                (v, m)
            }
        };
        match mention {
            Some(m) if !value.is_null() => out.push(OtherValue { value, mention: m }),
            _ => lw.push(
                K::NoiseEvidences,
                lw.at(o),
                format!(
                    "other value {} of `{}` has no mention",
                    display(&o.value),
                    r.id.value
                ),
                "write `{ value: …, mention: … }`",
            ),
        }
        if out
            .last()
            .is_some_and(|x| crate::world::types::value_matches(&x.value, &r.value.value))
        {
            lw.push(
                K::NoiseEvidences,
                lw.at(o),
                format!(
                    "other value {} of `{}` is its own value",
                    display(&o.value),
                    r.id.value
                ),
                "list values she does not hold",
            );
        }
    }
    out
}

/// `mention` with `own` (case-insensitively) replaced by `other`, keeping a capital first letter.
fn swap_mention(mention: &str, own: &str, other: &str) -> Option<String> {
    let lower = mention.to_lowercase();
    if lower.len() != mention.len() {
        return None;
    }
    let at = lower.find(&own.to_lowercase())?;
    let found = &mention[at..at + own.len()];
    let other = if found.starts_with(char::is_uppercase) {
        let mut cs = other.chars();
        cs.next()
            .map(|c| c.to_uppercase().collect::<String>() + cs.as_str())
            .unwrap_or_default()
    } else {
        other.to_string()
    };
    Some(format!(
        "{}{other}{}",
        &mention[..at],
        &mention[at + own.len()..]
    ))
}

fn lower_source(lw: &mut Lower, r: &RawEntry) -> Option<Source> {
    match r.source.as_ref().map(|s| s.value.as_str()) {
        None | Some("inferable") => Some(Source::Inferable),
        Some("ask_only") => Some(Source::AskOnly),
        Some(other) => {
            let here = r.source.as_ref().map_or_else(|| lw.at(&r.id), |s| lw.at(s));
            lw.push(
                K::NoEvidence,
                here,
                format!("unknown source `{other}`"),
                "use inferable or ask_only",
            );
            None
        }
    }
}

fn check_evidence_presence(
    lw: &mut Lower,
    e: &Spanned<RawEntry>,
    source: Source,
    shift: &Option<Shift>,
    evidence: &[EventTemplate],
) {
    let id = &e.value.id.value;
    if source == Source::AskOnly {
        if !evidence.is_empty() {
            lw.push(
                K::NoEvidence,
                lw.at(e),
                format!("ask-only entry `{id}` has evidence"),
                "remove `evidence` or make the entry inferable",
            );
        }
        return;
    }
    let sides: &[Option<Period>] = if shift.is_some() {
        &[Some(Period::Before), Some(Period::After)]
    } else {
        &[None]
    };
    for side in sides {
        let usable = evidence
            .iter()
            .any(|t| side.is_none() || t.period.is_none() || t.period == *side);
        if !usable {
            let which = side.map_or("", |p| {
                if p == Period::Before {
                    " before the shift"
                } else {
                    " after the shift"
                }
            });
            lw.push(
                K::NoEvidence,
                lw.at(e),
                format!("inferable entry `{id}` has no evidence template{which}"),
                "add evidence templates (with `period` only when they fit one side)",
            );
        }
    }
}

fn lower_shift(lw: &mut Lower, s: &Spanned<RawShift>, start: Date, end: Date) -> Option<Shift> {
    let changed = lower_date(lw, &s.value.changed)?;
    if changed <= start || changed > end {
        lw.push(
            K::BadShift,
            lw.at(&s.value.changed),
            format!("shift date {changed} is outside the history window ({start} … {end})"),
            "pick a change date inside the history window so both values get evidence",
        );
        return None;
    }
    let from = s.value.from.value.clone();
    let from_mention = s
        .value
        .from_mention
        .clone()
        .unwrap_or_else(|| display(&from));
    Some(Shift {
        from,
        from_mention,
        changed,
    })
}

fn lower_template(
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
    })
}

/// The constructions an evidence template names under `twins` (only evidence has twins).
fn lower_twins(lw: &mut Lower, r: &RawTemplate, evidence: bool) -> Vec<usize> {
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
fn check_once(lw: &mut Lower, r: &RawTemplate) {
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
fn lower_hours(lw: &mut Lower, hours: Option<&Spanned<(u32, u32)>>) -> (u32, u32) {
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

fn lower_period(lw: &mut Lower, r: &RawTemplate, shifted: bool) -> Option<Period> {
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

fn lower_binds(
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

fn lower_bind(
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

fn lower_want(lw: &mut Lower, want: &Spanned<Value>, earlier: &[Binding]) -> Option<Want> {
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

fn lower_text(
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

fn resolve_var(
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

fn lower_at(lw: &mut Lower, s: &Spanned<String>, binds: &[Binding]) -> Option<At> {
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

/// The time load-time checks render `{weekday}` and `{daypart}` with.
fn check_time(p: &Persona) -> DateTime {
    DateTime {
        date: p.start,
        time: Time::from_seconds(12 * 3600),
    }
}

/// What every load-time render shares: the leak phrases, a time, the vocabulary (first phrase
/// of each list).
struct CheckEnv<'p> {
    leaks: Vec<String>,
    when: DateTime,
    vocab: &'p [Vec<template::Template<Var>>],
    picks: Vec<usize>,
}

impl<'p> CheckEnv<'p> {
    /// A fill with no records, value, mention or wrapped event: what a construction form or a
    /// vocabulary phrase renders to on its own, for the leak checks.
    fn empty_fill(&self) -> Fill<'_> {
        Fill {
            chosen: &[],
            value: &Value::Null,
            mention: "",
            when: self.when,
            vocab: self.vocab,
            picks: &self.picks,
            event: "",
            tail: "",
        }
    }
}

/// Renders every template (each phrasing) once per value it can carry (first matching records)
/// and checks the lexical guarantees that make history honest.
fn check_lexical(lw: &mut Lower, p: &Persona, raw: &RawPersona) {
    let env = CheckEnv {
        leaks: leak_phrases(p),
        when: check_time(p),
        vocab: &p.vocab,
        picks: vec![0; p.vocab.len()],
    };
    check_vocab(lw, p, raw, &env);
    let all_mentions: Vec<&str> = p
        .profile
        .iter()
        .filter(|e| e.source == Source::Inferable)
        .flat_map(|e| {
            std::iter::once(e.mention.as_str())
                .chain(e.shift.iter().map(|s| s.from_mention.as_str()))
        })
        .collect();
    for (e, re) in p.profile.iter().zip(&raw.profile) {
        for (t, rt) in e.evidence.iter().zip(&re.value.evidence) {
            for (value, mention, other) in sides(e, t) {
                check_one(lw, t, rt, (value, mention, other), &env, e);
            }
        }
        for (t, rt) in e.counter.iter().zip(&re.value.counter) {
            for (value, mention, other) in sides(e, t) {
                check_counter(lw, t, rt, (value, mention, other), &env, e);
            }
        }
        for (t, rt) in e.decoys.iter().zip(&re.value.decoys) {
            for (value, mention, _) in sides(e, t) {
                check_rendered(lw, t, rt, (value, mention), &env, &mut |_, _| {});
            }
        }
        for (t, rt) in e.evidence.iter().zip(&re.value.evidence) {
            if !t.twins.is_empty() {
                check_twins(lw, t, rt, &env, e);
            }
        }
    }
    check_forms(lw, p, raw, &env);
    check_companions(lw, raw);
    for (app, phrases) in &raw.contexts {
        for phrase in phrases {
            if let Some(m) = all_mentions.iter().find(|m| mentions(&phrase.value, m)) {
                lw.push(
                    K::NoiseEvidences,
                    lw.at(phrase),
                    format!(
                        "context \"{}\" of `{app}` mentions profile value \"{m}\"",
                        phrase.value
                    ),
                    "contexts go into every event of the app, so they may name no profile value",
                );
            }
        }
    }
    for (t, rt) in p.noise.iter().zip(&raw.noise) {
        check_rendered(lw, t, rt, (&Value::Null, ""), &env, &mut |lw, text| {
            if let Some(m) = all_mentions.iter().find(|m| mentions(text, m)) {
                lw.push(
                    K::NoiseEvidences,
                    lw.at(&rt.value.text),
                    format!("noise \"{text}\" mentions profile value \"{m}\""),
                    "reword the noise, or move it to the entry's `decoys` if it names the value in a non-preference context",
                );
            }
        });
    }
}

/// The vocabulary list of companions (" with Sam", " with Aisha and Marco").
pub const COMPANIONS: &str = "{vocab.with}";

/// Companions go only where they fit ([`K::CompanionMisfit`]): her own events (evidence,
/// counter-evidence), after a text that has no "with" of its own, no comma clause, and does not
/// end in a quote or a parenthesis.
fn check_companions(lw: &mut Lower, raw: &RawPersona) {
    let check = |lw: &mut Lower, t: &Spanned<RawTemplate>, hers: bool| {
        let r = &t.value;
        for text in std::iter::once(&r.text).chain(&r.phrasings) {
            let Some(at) = text.value.find(COMPANIONS) else {
                continue;
            };
            let before = text.value[..at].trim_end();
            let why = if !hers {
                Some("someone else's event takes no companions of hers")
            } else if before.contains(" with ") || before.starts_with("With ") {
                Some("the text already says who was with whom")
            } else if before.ends_with(['"', ')', '.', '!', '?']) {
                Some("a companion after a quote, a parenthesis or a full stop reads as part of it")
            } else if outside_parentheses(before).contains(", ") {
                Some("a companion after a comma clause attaches to the clause (\"…, the only one left with Sam\")")
            } else {
                None
            };
            if let Some(why) = why {
                lw.push(
                    K::CompanionMisfit,
                    lw.at(text),
                    format!("\"{}\": {why}", text.value),
                    "use {vocab.when} (when it happened) instead, or reword so a companion fits",
                );
            }
        }
    };
    for e in &raw.profile {
        for t in e.value.evidence.iter().chain(&e.value.counter) {
            check(lw, t, true);
        }
        for t in &e.value.decoys {
            check(lw, t, false);
        }
    }
    for t in &raw.noise {
        check(lw, t, false);
    }
}

/// `text` without its parenthesised asides ("Baan Thai (Thai, Inner Sunset)" → "Baan Thai ").
fn outside_parentheses(text: &str) -> String {
    let mut depth = 0usize;
    text.chars()
        .filter(|&c| {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                _ => return depth == 0,
            }
            false
        })
        .collect()
}

/// A noise twin carries each of the entry's other values: its bindings find records for it, and
/// its text names none of the entry's own values (but the one it carries, for a shift's other
/// side).
fn check_twins(
    lw: &mut Lower,
    t: &EventTemplate,
    rt: &Spanned<RawTemplate>,
    env: &CheckEnv<'_>,
    e: &ProfileEntry,
) {
    let own: Vec<&str> = std::iter::once(e.mention.as_str())
        .chain(e.shift.iter().map(|s| s.from_mention.as_str()))
        .collect();
    for o in &e.others {
        check_rendered(lw, t, rt, (&o.value, &o.mention), env, &mut |lw, text| {
            if let Some(m) = own.iter().find(|m| **m != o.mention && mentions(text, m)) {
                lw.push(
                    K::NoiseEvidences,
                    lw.at(&rt.value.text),
                    format!(
                        "the noise twin \"{text}\" of `{}` (carrying {}) names its value \"{m}\"",
                        e.id, o.mention
                    ),
                    "write the template so {mention}/{value} carry the value, or drop `twins`",
                );
            }
        });
    }
}

/// Every construction form is checked for leaks around an empty event.
fn check_forms(lw: &mut Lower, p: &Persona, raw: &RawPersona, env: &CheckEnv<'_>) {
    for (c, rc) in p.constructions.iter().zip(raw.constructions.values()) {
        let forms = c.noise.iter().zip(&rc.value.noise);
        let forms = forms.chain(c.signal.iter().zip(&rc.value.signal));
        for (tpl, src) in forms.chain(c.counter.iter().zip(&rc.value.counter)) {
            let text = render(lw.cat, tpl, &[], &env.empty_fill());
            check_leaks(lw, &text, &env.leaks, src);
        }
    }
}

/// Every vocabulary phrase is checked for leaks on its own (load-time renders of templates see
/// only the first phrase of each list).
fn check_vocab(lw: &mut Lower, p: &Persona, raw: &RawPersona, env: &CheckEnv<'_>) {
    for (list, phrases) in p.vocab.iter().zip(raw.vocab.values()) {
        for (tpl, src) in list.iter().zip(phrases) {
            let text = render(lw.cat, tpl, &[], &env.empty_fill());
            check_leaks(lw, &text, &env.leaks, src);
        }
    }
}

/// Renders each phrasing of `t` with the first matching records and checks its text (by
/// `check`) and its text and location for leaks.
fn check_rendered(
    lw: &mut Lower,
    t: &EventTemplate,
    rt: &Spanned<RawTemplate>,
    (value, mention): (&Value, &str),
    env: &CheckEnv<'_>,
    check: &mut dyn FnMut(&mut Lower, &str),
) {
    let (when, leaks) = (env.when, &env.leaks);
    let Ok(chosen) = choose(lw.cat, &t.binds, value, &admit_all, &mut |_| 0) else {
        lw.push(
            K::BadBinding,
            lw.at(&rt.value.text),
            format!("for {}, a binding matches no record", display(value)),
            "add matching seed records or loosen the `where` filter",
        );
        return;
    };
    let fill = Fill {
        chosen: &chosen,
        value,
        mention,
        when,
        vocab: env.vocab,
        picks: &env.picks,
        event: "",
        tail: "",
    };
    for (tpl, src) in t.texts.iter().zip(phrasings(rt)) {
        let text = render(lw.cat, tpl, &t.binds, &fill);
        check(lw, &text);
        check_leaks(lw, &text, leaks, src);
    }
    let at_text = render_at(lw.cat, t, &fill);
    check_leaks(lw, &at_text, leaks, &rt.value.at);
}

/// A template's phrasings as written: `text`, then `phrasings`.
fn phrasings(rt: &Spanned<RawTemplate>) -> impl Iterator<Item = &Spanned<String>> {
    std::iter::once(&rt.value.text).chain(&rt.value.phrasings)
}

/// (value, mention, other side's mention) for each side a template serves.
fn sides<'e>(e: &'e ProfileEntry, t: &EventTemplate) -> Vec<(&'e Value, &'e str, Option<&'e str>)> {
    match &e.shift {
        None => vec![(&e.value, e.mention.as_str(), None)],
        Some(s) => {
            let mut v = Vec::new();
            if t.period != Some(Period::After) {
                v.push((&s.from, s.from_mention.as_str(), Some(e.mention.as_str())));
            }
            if t.period != Some(Period::Before) {
                v.push((&e.value, e.mention.as_str(), Some(s.from_mention.as_str())));
            }
            v
        }
    }
}

/// The value, mention and other side's mention one check renders with.
type Side<'e> = (&'e Value, &'e str, Option<&'e str>);

fn check_one(
    lw: &mut Lower,
    t: &EventTemplate,
    rt: &Spanned<RawTemplate>,
    (value, mention, other): Side<'_>,
    env: &CheckEnv<'_>,
    e: &ProfileEntry,
) {
    check_rendered(lw, t, rt, (value, mention), env, &mut |lw, text| {
        let here = lw.at(&rt.value.text);
        if !mentions(text, mention) {
            lw.push(
                K::EvidenceMissesValue,
                here.clone(),
                format!(
                    "evidence \"{text}\" for `{}` never mentions \"{mention}\"",
                    e.id
                ),
                "include {mention} (or the phrase itself) in the text",
            );
        }
        if let Some(o) = other.filter(|o| mentions(text, o)) {
            lw.push(
                K::EvidenceMissesValue,
                here,
                format!(
                    "evidence \"{text}\" for `{}` also mentions the other side of the shift \"{o}\"",
                    e.id
                ),
                "keep each template to one side, or use `period`",
            );
        }
    });
}

/// Counter-evidence disagrees: it names neither the value in effect nor, for a shift, the other
/// side (a reversion would blur the shift, not make an exception).
fn check_counter(
    lw: &mut Lower,
    t: &EventTemplate,
    rt: &Spanned<RawTemplate>,
    (value, mention, other): Side<'_>,
    env: &CheckEnv<'_>,
    e: &ProfileEntry,
) {
    check_rendered(lw, t, rt, (value, mention), env, &mut |lw, text| {
        if let Some(m) = std::iter::once(mention)
            .chain(other)
            .find(|m| mentions(text, m))
        {
            lw.push(
                K::EvidenceMissesValue,
                lw.at(&rt.value.text),
                format!(
                    "counter-evidence \"{text}\" for `{}` mentions \"{m}\"",
                    e.id
                ),
                "counter-evidence names another choice, never the entry's own value",
            );
        }
    });
}

fn check_leaks(lw: &mut Lower, text: &str, leaks: &[String], here: &Spanned<String>) {
    if let Some(l) = leaks.iter().find(|l| mentions(text, l)) {
        lw.push(
            K::LeakInTemplate,
            lw.at(here),
            format!("\"{text}\" reveals ask-only \"{l}\""),
            "reword it; ask-only values must never appear in history",
        );
    }
}

/// Every phrase that would reveal an ask-only value: situational `leaks`, plus non-numeric
/// string values, plus the mentions of ask-only profile entries.
pub(crate) fn leak_phrases(p: &Persona) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in &p.situational {
        out.extend(s.leaks.iter().cloned());
        if let Value::String(v) = &s.value {
            if v.parse::<f64>().is_err() && v.chars().count() >= 3 {
                out.push(v.clone());
            }
        }
    }
    out.extend(
        p.profile
            .iter()
            .filter(|e| e.source == Source::AskOnly)
            .map(|e| e.mention.clone()),
    );
    out
}
