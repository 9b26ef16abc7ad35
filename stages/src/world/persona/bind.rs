//! Drawing app records for a template's bindings and rendering the template. Shared by load-time
//! validation (first matching record) and history synthesis (seeded random choice).

use serde_json::Value;

use super::model::{At, Binding, EventTemplate, Var, Want};
use crate::world::app::{Catalog, Record};
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

/// Chooses one record per binding, in order; `pick(n)` selects among `n > 0` candidates. On
/// failure returns the index of the first binding with no matching record.
pub(crate) fn choose<'c>(
    cat: &'c Catalog,
    binds: &[Binding],
    value: &Value,
    pick: &mut impl FnMut(usize) -> usize,
) -> Result<Vec<&'c Record>, usize> {
    let mut chosen: Vec<&Record> = Vec::with_capacity(binds.len());
    let mut candidates: Vec<&Record> = Vec::new();
    for (bi, b) in binds.iter().enumerate() {
        let wants: Vec<(Option<usize>, Option<Value>)> = b
            .filters
            .iter()
            .map(|(f, w)| (*f, wanted(w, value, &chosen)))
            .collect();
        candidates.clear();
        for r in &cat.table(b.table).records {
            let ok = wants.iter().all(|(f, w)| {
                let Some(w) = w else { return false };
                match f {
                    None => r.id == w.as_str().unwrap_or_default(),
                    Some(fi) => r.values.get(*fi).is_some_and(|have| value_matches(have, w)),
                }
            });
            if ok {
                candidates.push(r);
            }
        }
        if candidates.is_empty() {
            return Err(bi);
        }
        let i = pick(candidates.len()).min(candidates.len() - 1);
        chosen.push(candidates[i]);
    }
    Ok(chosen)
}

/// Renders a template for chosen records and the value/mention in effect.
pub(crate) fn render(
    cat: &Catalog,
    tpl: &Template<Var>,
    binds: &[Binding],
    chosen: &[&Record],
    value: &Value,
    mention: &str,
) -> String {
    tpl.render(|var, out| match var {
        Var::Value => write_display(value, out),
        Var::Mention => out.push_str(mention),
        Var::Id(b) => out.push_str(&chosen[*b].id),
        Var::Label(b) => out.push_str(&cat.table(binds[*b].table).label(chosen[*b])),
        Var::Field(b, f) => write_display(&chosen[*b].values[*f], out),
    })
}

/// Renders an event's location.
pub(crate) fn render_at(
    cat: &Catalog,
    t: &EventTemplate,
    chosen: &[&Record],
    value: &Value,
    mention: &str,
) -> String {
    match &t.at {
        At::Label(l) => l.clone(),
        At::Template(tpl) => render(cat, tpl, &t.binds, chosen, value, mention),
    }
}
