//! Drawing app records for a template's bindings and rendering the template. Shared by load-time
//! validation (first matching record) and history synthesis (seeded random choice).

use serde_json::Value;

use super::model::{At, Binding, EventTemplate, Var, Want};
use crate::world::app::{Catalog, Record};
use crate::world::clock::DateTime;
use crate::world::template::Template;
use crate::world::types::{value_matches, write_display};

fn wanted<'v>(want: &'v Want, value: &'v Value, chosen: &[&'v Record]) -> Option<Value> {
    match want {
        Want::Lit(v) => Some(v.clone()),
        Want::Value => Some(value.clone()),
        Want::Bound(b, None) => chosen.get(*b).map(|r| Value::String(r.id.clone())),
        Want::Bound(b, Some(f)) => chosen.get(*b).and_then(|r| r.values.get(*f)).cloned(),
    }
}

/// Chooses one record per binding, in order, among those matching its filters that `admit`
/// accepts (history synthesis admits only records consistent with the profile and the event's
/// time); `pick(n)` selects among `n > 0` candidates. A binding whose filters name an earlier
/// one's field (`id: $bk.flight`) may match nothing for one choice of the earlier binding: the
/// earlier binding then tries its other candidates (in `pick`'s order) before giving up. On
/// failure returns the index of the first binding that no choice could satisfy.
pub(crate) fn choose<'c>(
    cat: &'c Catalog,
    binds: &[Binding],
    value: &Value,
    admit: &dyn Fn(&Binding, &Record) -> bool,
    pick: &mut impl FnMut(usize) -> usize,
) -> Result<Vec<&'c Record>, usize> {
    let mut chosen: Vec<&Record> = Vec::with_capacity(binds.len());
    let mut deepest = 0;
    if extend(cat, binds, value, admit, pick, &mut chosen, &mut deepest) {
        Ok(chosen)
    } else {
        Err(deepest)
    }
}

/// Chooses records for `binds[chosen.len()..]`, backtracking over candidates; `deepest` records
/// the furthest binding that found no candidate.
fn extend<'c>(
    cat: &'c Catalog,
    binds: &[Binding],
    value: &Value,
    admit: &dyn Fn(&Binding, &Record) -> bool,
    pick: &mut impl FnMut(usize) -> usize,
    chosen: &mut Vec<&'c Record>,
    deepest: &mut usize,
) -> bool {
    let bi = chosen.len();
    let Some(b) = binds.get(bi) else {
        return true;
    };
    let wants: Vec<(Option<usize>, Option<Value>)> = b
        .filters
        .iter()
        .map(|(f, w)| (*f, wanted(w, value, chosen)))
        .collect();
    let mut candidates: Vec<&Record> = cat
        .table(b.table)
        .records
        .iter()
        .filter(|r| {
            wants.iter().all(|(f, w)| {
                let Some(w) = w else { return false };
                match f {
                    None => r.id == w.as_str().unwrap_or_default(),
                    Some(fi) => r.values.get(*fi).is_some_and(|have| value_matches(have, w)),
                }
            }) && admit(b, r)
        })
        .collect();
    if candidates.is_empty() {
        *deepest = (*deepest).max(bi);
        return false;
    }
    while !candidates.is_empty() {
        let i = pick(candidates.len()).min(candidates.len() - 1);
        chosen.push(candidates.swap_remove(i));
        if extend(cat, binds, value, admit, pick, chosen, deepest) {
            return true;
        }
        chosen.pop();
        // The last binding needs no second try: its candidates all fit alike.
        if bi + 1 == binds.len() {
            break;
        }
    }
    false
}

/// Admits every record (load-time checks render with the first matching record).
pub(crate) fn admit_all(_: &Binding, _: &Record) -> bool {
    true
}

/// What a template renders with: the chosen records, the value and mention in effect, and the
/// event's time (for `{weekday}` and `{daypart}`).
pub(crate) struct Fill<'a> {
    pub chosen: &'a [&'a Record],
    pub value: &'a Value,
    pub mention: &'a str,
    pub when: DateTime,
    /// The persona's vocabulary lists and the phrase picked from each for this event.
    pub vocab: &'a [Vec<Template<Var>>],
    pub picks: &'a [usize],
    /// The wrapped event's text, for a construction's form (`{event}`); empty otherwise.
    pub event: &'a str,
    /// The wrapped event's trailing vocabulary phrase, for a form's `{tail}`.
    pub tail: &'a str,
}

/// `morning`, `afternoon`, `evening` or `night` for an hour of the day.
pub(crate) fn daypart(hour: u32) -> &'static str {
    match hour {
        5..=11 => "morning",
        12..=16 => "afternoon",
        17..=21 => "evening",
        _ => "night",
    }
}

/// Renders a template for chosen records, the value/mention in effect and the event's time.
pub(crate) fn render(
    cat: &Catalog,
    tpl: &Template<Var>,
    binds: &[Binding],
    f: &Fill<'_>,
) -> String {
    let (chosen, value, mention) = (f.chosen, f.value, f.mention);
    tpl.render(|var, out| match var {
        Var::Weekday => out.push_str(&f.when.date.weekday_name()),
        Var::Daypart => out.push_str(daypart(f.when.time.seconds() / 3600)),
        Var::Vocab(l) => {
            let list = &f.vocab[*l];
            let pick = f.picks.get(*l).copied().unwrap_or(0);
            if let Some(t) = list.get(pick.min(list.len().saturating_sub(1))) {
                // " this {daypart}" at night is said " tonight".
                out.push_str(&render(cat, t, binds, f).replace("this night", "tonight"));
            }
        }
        Var::Event => out.push_str(f.event),
        Var::Tail => out.push_str(f.tail),
        Var::Value => write_display(value, out),
        Var::Mention => out.push_str(mention),
        Var::Id(b) => out.push_str(&chosen[*b].id),
        Var::Label(b) => out.push_str(&cat.table(binds[*b].table).label(chosen[*b])),
        Var::Field(b, f) => write_display(&chosen[*b].values[*f], out),
    })
}

/// Renders an event's location.
pub(crate) fn render_at(cat: &Catalog, t: &EventTemplate, f: &Fill<'_>) -> String {
    match &t.at {
        At::Label(l) => l.clone(),
        At::Template(tpl) => render(cat, tpl, &t.binds, f),
    }
}
