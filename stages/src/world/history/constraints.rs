//! The profile and app-data rules every draw obeys, and the guards of each role re-checked on
//! the produced text ([`super::super::rules`]).

use serde_json::Value;

use super::ask::{Ask, Role};
use crate::world::app::{Catalog, Record};
use crate::world::clock::{Date, DateTime};
use crate::world::error::{Result, WorldError};
use crate::world::persona::text::mentions_lowered;
use crate::world::persona::{leak_phrases, Binding, Persona, ProfileEntry, Source};
use crate::world::rules::{
    act_on, act_window, attributes, is_avoid, listing_window, purchasable, record_date, Act,
};
use crate::world::types::{value_matches, TableId};

/// Lower-cased phrases to test texts against, computed once.
pub(super) struct Guards {
    leaks: Vec<String>,
    mentions: Vec<String>,
}

/// A record value a choice may not name: an avoid-list's value always, a shift's earlier value
/// from its change date on.
pub(super) struct Exclusion {
    entry: String,
    table: TableId,
    field: usize,
    value: Value,
    /// Everything but this value (a shift's current value is never excluded).
    keep: Option<Value>,
    from: Option<Date>,
}

/// A record name the user's own events may not carry: the lower-cased label of a record of an
/// avoided value (except in the avoid-list's own evidence), or of a shift's earlier value from
/// the change date on. The audit's `avoid` and `shift` rules read text the same way.
pub(super) struct ExcludedName {
    label: String,
    entry: String,
    from: Option<Date>,
}

/// What an event's text says she did with one dated record it names, and the days that allows.
pub(super) struct ActSpan<'r> {
    pub(super) table: TableId,
    pub(super) id: &'r str,
    pub(super) act: Act,
    pub(super) window: (Date, Date),
}

/// The profile and app-data rules every draw obeys ([`super::super::rules`]).
pub(super) struct Constraints {
    exclusions: Vec<Exclusion>,
    names: Vec<ExcludedName>,
    purchasable: Vec<TableId>,
}

impl Constraints {
    pub(super) fn new(cat: &Catalog, persona: &Persona) -> Self {
        let mut exclusions = Vec::new();
        for p in persona
            .profile
            .iter()
            .filter(|p| p.source == Source::Inferable)
        {
            for (table, field) in attributes(cat, p) {
                if is_avoid(p) {
                    exclusions.push(Exclusion {
                        entry: p.id.clone(),
                        table,
                        field,
                        value: p.value.clone(),
                        keep: None,
                        from: None,
                    });
                }
                if let Some(s) = &p.shift {
                    exclusions.push(Exclusion {
                        entry: p.id.clone(),
                        table,
                        field,
                        value: s.from.clone(),
                        keep: Some(p.value.clone()),
                        from: Some(s.changed),
                    });
                }
            }
        }
        let names = exclusions
            .iter()
            .flat_map(|x| excluded_names(cat, x))
            .collect();
        Self {
            exclusions,
            names,
            purchasable: purchasable(cat),
        }
    }

    /// Whether the user's own event about `entry` on `day` may say `lower` (no record she avoids
    /// or has moved away from is named).
    pub(super) fn text_fits(&self, lower: &str, day: Date, entry: &str) -> bool {
        self.names.iter().all(|n| {
            (n.from.is_none() && n.entry == entry)
                || n.from.is_some_and(|d| day < d)
                || !mentions_lowered(lower, &n.label)
        })
    }

    /// Whether the user's own choice on `day` may name `r` through binding `b`: not a value she
    /// avoids or has moved away from (unless the binding asks for that field, or for one record
    /// by id, itself: the avoid-list's own evidence and its designed exceptions do).
    pub(super) fn fits_profile(&self, b: &Binding, r: &Record, day: Date) -> bool {
        self.exclusions.iter().all(|x| {
            x.table != b.table
                || b.filters
                    .iter()
                    .any(|(f, _)| f.is_none() || *f == Some(x.field))
                || x.from.is_some_and(|d| day < d)
                || !r.values.get(x.field).is_some_and(|v| {
                    value_matches(v, &x.value)
                        && !x.keep.as_ref().is_some_and(|k| value_matches(v, k))
                })
        })
    }

    /// What `text` says she did with each dated record one buys among `chosen` (a flight, a
    /// show), with the days each act allows ([`act_window`]).
    pub(super) fn acts<'r>(
        &self,
        cat: &Catalog,
        binds: &[Binding],
        chosen: &[&'r Record],
        text: &str,
    ) -> Vec<ActSpan<'r>> {
        let mut out = Vec::new();
        for (b, r) in binds.iter().zip(chosen) {
            if !self.purchasable.contains(&b.table) {
                continue;
            }
            let Some(d) = record_date(cat, b.table, r) else {
                continue;
            };
            let label = cat.table(b.table).label(r).to_lowercase();
            let act = act_on(text, &label);
            out.push(ActSpan {
                table: b.table,
                id: r.id.as_str(),
                act,
                window: act_window(act, d),
            });
        }
        out
    }

    /// The days within `window` on which an event may name `r`: all of them, unless `r` is a
    /// dated thing one buys (a show, a flight), which is named from its listing to its day.
    pub(super) fn days_for(
        &self,
        cat: &Catalog,
        b: &Binding,
        r: &Record,
        window: (Date, Date),
    ) -> Option<(Date, Date)> {
        if !self.purchasable.contains(&b.table) {
            return Some(window);
        }
        let Some(d) = record_date(cat, b.table, r) else {
            return Some(window);
        };
        let (lo, hi) = listing_window(d);
        let (lo, hi) = (lo.max(window.0), hi.min(window.1));
        (lo <= hi).then_some((lo, hi))
    }
}

/// The names of the records an exclusion covers (labels of at least four letters or digits, as
/// the audit reads them).
pub(super) fn excluded_names(cat: &Catalog, x: &Exclusion) -> Vec<ExcludedName> {
    let t = cat.table(x.table);
    t.records
        .iter()
        .filter(|r| {
            r.values.get(x.field).is_some_and(|v| {
                value_matches(v, &x.value) && !x.keep.as_ref().is_some_and(|k| value_matches(v, k))
            })
        })
        .map(|r| t.label(r).to_lowercase())
        .filter(|l| l.chars().filter(|c| c.is_alphanumeric()).count() >= 4)
        .map(|label| ExcludedName {
            label,
            entry: x.entry.clone(),
            from: x.from,
        })
        .collect()
}

pub(super) fn guards(persona: &Persona) -> Guards {
    let mentions = persona
        .profile
        .iter()
        .filter(|e| e.source == Source::Inferable)
        .flat_map(|e| {
            std::iter::once(e.mention.to_lowercase())
                .chain(e.shift.iter().map(|s| s.from_mention.to_lowercase()))
        })
        .collect();
    Guards {
        leaks: leak_phrases(persona)
            .iter()
            .map(|l| l.to_lowercase())
            .collect(),
        mentions,
    }
}

/// The guards of an event's role, re-checked on the produced text.
pub(super) fn check(
    guards: &Guards,
    ask: &Ask<'_>,
    text: &str,
    location: &str,
    time: DateTime,
    carry_own: bool,
) -> Result<()> {
    let lower = text.to_lowercase();
    let here = || {
        ask.entry
            .map_or("noise".to_string(), |e| format!("entry `{}`", e.id))
    };
    if let Some(e) = ask.entry {
        let (own, other) = (e.mention_on(time.date), other_side(e, time.date));
        let names_own = mentions_lowered(&lower, &own.to_lowercase());
        let names_other = other.is_some_and(|o| mentions_lowered(&lower, &o.to_lowercase()));
        match ask.role {
            Role::Support if !names_own => {
                return Err(WorldError::Synthesis(format!(
                    "{}: \"{text}\" does not mention \"{own}\"",
                    here()
                )))
            }
            Role::Support if names_other => {
                return Err(WorldError::Synthesis(format!(
                    "{}: \"{text}\" mentions the other side of its shift",
                    here()
                )))
            }
            Role::Counter if names_own || names_other => {
                return Err(WorldError::Synthesis(format!(
                    "{}: counter-evidence \"{text}\" names the entry's own value",
                    here()
                )))
            }
            Role::Decoy if ask.twin && names_own && !carry_own => {
                return Err(WorldError::Synthesis(format!(
                    "{}: the noise twin \"{text}\" names the entry's own value",
                    here()
                )))
            }
            _ => {}
        }
    }
    if ask.role == Role::Noise {
        if let Some(m) = guards.mentions.iter().find(|m| mentions_lowered(&lower, m)) {
            return Err(WorldError::Synthesis(format!(
                "noise \"{text}\" mentions profile value \"{m}\""
            )));
        }
    }
    check_leaks(&lower, &location.to_lowercase(), guards, text)
}

/// The mention of the other side of an entry's shift on `day`.
pub(super) fn other_side(e: &ProfileEntry, day: Date) -> Option<&str> {
    e.shift.as_ref().map(|s| {
        if day < s.changed {
            e.mention.as_str()
        } else {
            s.from_mention.as_str()
        }
    })
}

pub(super) fn check_leaks(
    text_lower: &str,
    location_lower: &str,
    guards: &Guards,
    text: &str,
) -> Result<()> {
    match guards
        .leaks
        .iter()
        .find(|l| mentions_lowered(text_lower, l) || mentions_lowered(location_lower, l))
    {
        Some(l) => Err(WorldError::Synthesis(format!(
            "\"{text}\" would reveal ask-only \"{l}\""
        ))),
        None => Ok(()),
    }
}
