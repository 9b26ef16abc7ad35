//! Lowering of one profile entry: its value and mention, source, shift, other values, and the
//! evidence each side of a shift needs.

use serde_json::Value;
use serde_saphyr::Spanned;

use super::lower::{lower_date, Lower};
use super::templates::{lower_binds, lower_template};
use crate::world::clock::Date;
use crate::world::error::ProblemKind as K;
use crate::world::persona::model::{
    EventTemplate, OtherValue, Period, ProfileEntry, Shift, Source, DIMENSIONS,
};
use crate::world::persona::raw::{RawEntry, RawShift};
use crate::world::types::display;

pub(super) fn lower_entry(
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
    check_noise_and_ask_only(lw, e, source, &evidence, &others);
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

/// An entry whose evidence has twins lists the other values they carry, and an ask-only entry
/// has no counter-evidence or decoys (history says nothing about it).
fn check_noise_and_ask_only(
    lw: &mut Lower,
    e: &Spanned<RawEntry>,
    source: Source,
    evidence: &[EventTemplate],
    others: &[OtherValue],
) {
    let r = &e.value;
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
}

/// The entry's other values: `{ value, mention }` as written, or a scalar whose mention is the
/// entry's own with the value swapped in (`size M` → `size L`; `Thai` → `Korean`).
pub(super) fn lower_others(lw: &mut Lower, r: &RawEntry, mention: &str) -> Vec<OtherValue> {
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
pub(super) fn swap_mention(mention: &str, own: &str, other: &str) -> Option<String> {
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

pub(super) fn lower_source(lw: &mut Lower, r: &RawEntry) -> Option<Source> {
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

pub(super) fn check_evidence_presence(
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

pub(super) fn lower_shift(
    lw: &mut Lower,
    s: &Spanned<RawShift>,
    start: Date,
    end: Date,
) -> Option<Shift> {
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
