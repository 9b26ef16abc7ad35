//! Lowering and validation of a persona file against the app catalog: ids, dimensions, shifts,
//! bindings, templates, and the lexical guarantees (evidence mentions its value, noise mentions
//! no value, no template leaks an ask-only value).

mod checks;
mod entry;
mod lower;
mod phrases;
mod templates;

pub(crate) use checks::leak_phrases;
use checks::*;
use entry::*;
use lower::{lower_date, Lower};
use phrases::*;
use templates::*;

use std::collections::HashSet;

use serde_saphyr::Spanned;

use super::model::{Persona, ProfileEntry, SituationalFact};
use super::raw::{RawPersona, RawSituational};
use crate::world::app::Catalog;
use crate::world::clock::DateTime;
use crate::world::error::{ProblemKind as K, Problems, Result, WorldError};
use crate::world::yaml::parse;

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
    check_place_days(lw, raw);
    let contexts = lower_contexts(lw, raw);
    let holidays = raw
        .holidays
        .iter()
        .filter_map(|d| lower_date(lw, d))
        .collect();
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
        holidays,
        constructions,
        towns: raw
            .towns
            .iter()
            .map(|(town, names)| std::iter::once(town).chain(names).cloned().collect())
            .collect(),
    })
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
