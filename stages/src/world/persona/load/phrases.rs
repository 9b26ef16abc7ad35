//! Lowering of the persona-wide phrase lists: vocabulary, per-app circumstances and the
//! constructions evidence templates list as `twins`.

use indexmap::IndexMap;
use serde_saphyr::Spanned;

use super::lower::{lower_days, Lower};
use super::templates::{lower_text, resolve_var};
use crate::world::error::ProblemKind as K;
use crate::world::persona::model::{Construction, Context, Days, Var};
use crate::world::persona::raw::{RawConstruction, RawContext, RawPersona};
use crate::world::template;

/// Lowers the constructions: each form wraps `{event}` exactly once, may place the event's
/// trailing vocabulary phrase (`{tail}`) once, and may use `{vocab.<list>}`, `{weekday}` and
/// `{daypart}` (never a value: a twin's value comes from the event inside).
pub(super) fn lower_constructions(lw: &mut Lower, raw: &RawPersona) -> Vec<Construction> {
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

pub(super) fn lower_form(lw: &mut Lower, s: &Spanned<String>) -> Option<template::Template<Var>> {
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
pub(super) fn lower_vocab(lw: &mut Lower, raw: &RawPersona) -> Vec<Vec<template::Template<Var>>> {
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
/// placeholders only), their days and scene.
pub(super) fn lower_contexts(lw: &mut Lower, raw: &RawPersona) -> IndexMap<String, Vec<Context>> {
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
        let lowered: Vec<Context> = phrases
            .iter()
            .filter_map(|p| lower_context(lw, p))
            .collect();
        out.insert(app.clone(), lowered);
    }
    out
}

/// One circumstance: its phrase, days and scene.
fn lower_context(lw: &mut Lower, p: &Spanned<RawContext>) -> Option<Context> {
    let text = Spanned::new(p.value.text().to_string(), p.referenced, p.defined);
    let (days, scene) = match &p.value {
        RawContext::Plain(_) => (Days::ANY, None),
        RawContext::Typed(t) => (
            match &t.days {
                Some(d) => lower_days(lw, &Spanned::new(d, p.referenced, p.defined))?,
                None => Days::ANY,
            },
            t.scene.clone(),
        ),
    };
    Some(Context {
        text: lower_text(lw, &text, &[])?,
        days,
        scene,
    })
}

/// Checks every place's `days` once (templates at the place take them without a second report).
pub(super) fn check_place_days(lw: &mut Lower, raw: &RawPersona) {
    for place in raw.places.values() {
        if let Some(d) = &place.value.days {
            lower_days(lw, &Spanned::new(&d.value, d.referenced, d.defined));
        }
    }
}
