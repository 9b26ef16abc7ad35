//! The circumstance added to an event and the construction it is wrapped in: a circumstance is
//! type-checked against what the event already says (who, why, where).

use rand::rngs::Xoshiro256PlusPlus;
use rand::RngExt;

use super::ask::Ask;
use super::context::Ctx;
use crate::world::app::{Catalog, Record};
use crate::world::clock::Date;
use crate::world::persona::{render, Binding, Context, Days, Fill, Var};
use crate::world::rules::{purposes, record_towns, towns_named};
use crate::world::template::{Seg, Template};

/// The phrasing with one of its app's circumstances (" for Friday's catch-up") before its
/// trailing vocabulary phrase — for every event of the app, hers or not, so circumstances say
/// nothing about whose event it is; `None` when the template opts out, the app has none, or the
/// text opens with something other than an act ("Reminder: …", "Health recorded …"). A
/// circumstance that says "with" goes only where nothing else does (no "… with Dev with Sam"):
/// the flag says it was one, for the caller to check the rendered text. A circumstance of a scene
/// (" once Jordan approved expenses") joins only an act of that scene, and one told on some days
/// (" after standup": workdays) only an event on `day`, one of them.
pub(super) fn situate(
    ctx: &Ctx<'_>,
    ask: &Ask<'_>,
    phrasing: &Template<Var>,
    wrap: Option<&Template<Var>>,
    chosen: &[&Record],
    day: Date,
    rng: &mut Xoshiro256PlusPlus,
) -> Option<Situated> {
    let list = ctx.contexts.get(&ask.t.app)?;
    // A circumstance follows an act ("Booked …", "Texted …"), not a label ("Reminder: …").
    let opens_with_verb = match phrasing.segs.first() {
        Some(Seg::Text(t)) => t
            .split_whitespace()
            .next()
            .is_some_and(|w| super::super::rules::verb_like(&w.to_lowercase())),
        _ => false,
    };
    if !ask.t.context || list.is_empty() || !opens_with_verb {
        return None;
    }
    // One "with" per text: a circumstance that brings someone along (" after karaoke with Dev")
    // goes only to a phrasing that says "with" nowhere and cannot end in a companion.
    let says_with = |t: &Template<Var>| {
        t.segs
            .iter()
            .any(|s| matches!(s, Seg::Text(x) if x.contains(" with ") || x.starts_with("with ")))
    };
    let companion = matches!(
        phrasing.segs.last(),
        Some(Seg::Var(Var::Vocab(i), _)) if Some(*i) == ctx.companions
    );
    // Typed like companions: a circumstance that says why goes only to an event that does not
    // already ("… for a maybe-someday trip" takes no " for Dev's conference talk"), and one
    // that names a town only to an event about that town or none ("Landed in PDX" takes no "
    // to visit Aisha in Seattle").
    let told = format!(
        "{} {}",
        literal(phrasing),
        wrap.map(literal).unwrap_or_default()
    );
    let says_why = purposes(&told) > 0;
    let about = towns_of(ctx, &told, &shown(phrasing, chosen));
    let fits: Vec<&Context> = list
        .iter()
        .filter(|c| c.scene.is_none() || c.scene == ask.t.scene)
        .filter(|c| c.days.allows(day, ctx.holidays))
        .filter(|c| !(says_with(&c.text) && (companion || says_with(phrasing))))
        .filter(|c| {
            let said = literal(&c.text);
            !(says_why && purposes(&said) > 0)
                && (about.is_empty()
                    || towns_named(&said, ctx.towns)
                        .iter()
                        .all(|t| about.contains(t)))
        })
        .collect();
    if fits.is_empty() {
        return None;
    }
    let c = fits[rng.random_range(0..fits.len())];
    let with = says_with(&c.text);
    let mut segs = phrasing.segs.clone();
    let at = match segs.last() {
        Some(Seg::Var(Var::Vocab(_), _)) => segs.len() - 1,
        _ => segs.len(),
    };
    segs.splice(at..at, c.text.segs.iter().cloned());
    Some(Situated {
        phrasing: Template { segs },
        with,
        days: c.days,
    })
}

/// A phrasing with its circumstance.
pub(super) struct Situated {
    /// The phrasing, the circumstance inserted.
    pub phrasing: Template<Var>,
    /// Whether the circumstance says "with" (the rendered text is checked for a second one).
    pub with: bool,
    /// The days the circumstance can be told on.
    pub days: Days,
}

/// The words a template says whatever it is filled with (each placeholder as `X`).
pub(super) fn literal(t: &Template<Var>) -> String {
    t.segs
        .iter()
        .map(|s| match s {
            Seg::Text(x) => x.as_str(),
            _ => "X",
        })
        .collect()
}

/// The bound records a phrasing shows (by label, field or id): the records its event is about.
/// A record bound only to filter another (a booking behind its flight) is not shown.
pub(super) fn shown<'r>(phrasing: &Template<Var>, chosen: &[&'r Record]) -> Vec<&'r Record> {
    let mut out: Vec<&Record> = Vec::new();
    for s in &phrasing.segs {
        if let Seg::Var(Var::Label(i) | Var::Field(i, _) | Var::Id(i), _) = s {
            if let Some(r) = chosen.get(*i) {
                if !out.iter().any(|o| std::ptr::eq(*o, *r)) {
                    out.push(r);
                }
            }
        }
    }
    out
}

/// The towns an event is about: those its words name and those its records are in or go to.
pub(super) fn towns_of(ctx: &Ctx<'_>, text: &str, records: &[&Record]) -> Vec<usize> {
    let mut out = towns_named(text, ctx.towns);
    for r in records {
        out.extend(record_towns(r, ctx.towns));
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// An event's phrasing rendered inside a construction's form: `{event}` is the phrasing without
/// its trailing vocabulary phrase (" with Priya", " on Tuesday"), which goes where the form puts
/// `{tail}` and is dropped otherwise (no "For Aisha: … with Aisha").
pub(super) fn wrapped(
    cat: &Catalog,
    form: &Template<Var>,
    phrasing: &Template<Var>,
    binds: &[Binding],
    fill: &Fill<'_>,
) -> String {
    let (core, tail) = match phrasing.segs.split_last() {
        Some((last @ Seg::Var(Var::Vocab(_), _), core)) => (core, Some(last)),
        _ => (&phrasing.segs[..], None),
    };
    let part = |segs: Vec<Seg<Var>>| render(cat, &Template { segs }, binds, fill);
    let event = part(core.to_vec());
    let tail = tail.map(|t| part(vec![t.clone()])).unwrap_or_default();
    let outer = Fill {
        event: &event,
        tail: &tail,
        ..*fill
    };
    render(cat, form, binds, &outer)
}
