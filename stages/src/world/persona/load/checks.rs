//! The lexical guarantees, checked on rendered templates once the persona is lowered: evidence
//! mentions its value, noise mentions none, companions fit, no template leaks an ask-only value.

use serde_json::Value;
use serde_saphyr::Spanned;

use super::lower::Lower;
use crate::world::clock::{DateTime, Time};
use crate::world::error::ProblemKind as K;
use crate::world::persona::bind::{admit_all, choose, render, render_at, Fill};
use crate::world::persona::model::{EventTemplate, Period, Persona, ProfileEntry, Source, Var};
use crate::world::persona::raw::{RawPersona, RawTemplate};
use crate::world::persona::text::mentions;
use crate::world::template;
use crate::world::types::display;

/// The time load-time checks render `{weekday}` and `{daypart}` with.
pub(super) fn check_time(p: &Persona) -> DateTime {
    DateTime {
        date: p.start,
        time: Time::from_seconds(12 * 3600),
    }
}

/// What every load-time render shares: the leak phrases, a time, the vocabulary (first phrase
/// of each list).
pub(super) struct CheckEnv<'p> {
    leaks: Vec<String>,
    when: DateTime,
    vocab: &'p [Vec<template::Template<Var>>],
    picks: Vec<usize>,
}

impl<'p> CheckEnv<'p> {
    /// A fill with no records, value, mention or wrapped event: what a construction form or a
    /// vocabulary phrase renders to on its own, for the leak checks.
    pub(super) fn empty_fill(&self) -> Fill<'_> {
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
pub(super) fn check_lexical(lw: &mut Lower, p: &Persona, raw: &RawPersona) {
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
        for template in e.evidence.iter().zip(&re.value.evidence) {
            check_sides(lw, e, template, &env, false);
        }
        for template in e.counter.iter().zip(&re.value.counter) {
            check_sides(lw, e, template, &env, true);
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
            if let Some(m) = all_mentions
                .iter()
                .find(|m| mentions(phrase.value.text(), m))
            {
                lw.push(
                    K::NoiseEvidences,
                    lw.at(phrase),
                    format!(
                        "context \"{}\" of `{app}` mentions profile value \"{}\"",
                        phrase.value.text(),
                        m
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
pub(super) fn check_companions(lw: &mut Lower, raw: &RawPersona) {
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
pub(super) fn outside_parentheses(text: &str) -> String {
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
pub(super) fn check_twins(
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
pub(super) fn check_forms(lw: &mut Lower, p: &Persona, raw: &RawPersona, env: &CheckEnv<'_>) {
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
pub(super) fn check_vocab(lw: &mut Lower, p: &Persona, raw: &RawPersona, env: &CheckEnv<'_>) {
    for (list, phrases) in p.vocab.iter().zip(raw.vocab.values()) {
        for (tpl, src) in list.iter().zip(phrases) {
            let text = render(lw.cat, tpl, &[], &env.empty_fill());
            check_leaks(lw, &text, &env.leaks, src);
        }
    }
}

/// Renders each phrasing of `t` with the first matching records and checks its text (by
/// `check`) and its text and location for leaks.
pub(super) fn check_rendered(
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
pub(super) fn phrasings(rt: &Spanned<RawTemplate>) -> impl Iterator<Item = &Spanned<String>> {
    std::iter::once(&rt.value.text).chain(&rt.value.phrasings)
}

/// (value, mention, other side's mention) for each side a template serves.
pub(super) fn sides<'e>(
    e: &'e ProfileEntry,
    t: &EventTemplate,
) -> Vec<(&'e Value, &'e str, Option<&'e str>)> {
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
pub(super) type Side<'e> = (&'e Value, &'e str, Option<&'e str>);

/// Renders every side of `t` (an evidence template of `e`, or a counter-evidence one when
/// `counter`) and checks each text: evidence names its side's value and not the other side's,
/// counter-evidence names neither.
fn check_sides(
    lw: &mut Lower,
    e: &ProfileEntry,
    (t, rt): (&EventTemplate, &Spanned<RawTemplate>),
    env: &CheckEnv<'_>,
    counter: bool,
) {
    for side in sides(e, t) {
        check_rendered(
            lw,
            t,
            rt,
            (side.0, side.1),
            env,
            &mut |lw, text| match counter {
                false => check_evidence_text(lw, rt, side, e, text),
                true => check_counter_text(lw, rt, side, e, text),
            },
        );
    }
}

/// Evidence names its side's value, and not the other side of a shift.
fn check_evidence_text(
    lw: &mut Lower,
    rt: &Spanned<RawTemplate>,
    (_, mention, other): Side<'_>,
    e: &ProfileEntry,
    text: &str,
) {
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
}

/// Counter-evidence disagrees: it names neither the value in effect nor, for a shift, the other
/// side (a reversion would blur the shift, not make an exception).
fn check_counter_text(
    lw: &mut Lower,
    rt: &Spanned<RawTemplate>,
    (_, mention, other): Side<'_>,
    e: &ProfileEntry,
    text: &str,
) {
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
}

pub(super) fn check_leaks(lw: &mut Lower, text: &str, leaks: &[String], here: &Spanned<String>) {
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
