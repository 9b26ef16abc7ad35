//! The consistency rules a history must keep with the profile and the app data, in one home:
//! history synthesis draws within them (`history.rs`) and the world audit checks them
//! (`audit.rs`), so the two can never disagree about what a contradiction is.

use super::app::{Catalog, Effect, Record};
use super::clock::Date;
use super::persona::{ProfileEntry, Want};
use super::types::{FieldKind, TableId};

/// A record dated further than this many days after an event that names it did not exist yet
/// when the event happened (shows, flights and calendar entries are listed a few weeks ahead).
pub const LISTING_DAYS: i64 = 60;

/// Phrases that mark an occasion that happens once in the history window; one app recording
/// the same occasion twice is a one-off repeated. Persona templates that name one must be
/// marked `once: true`.
pub const ONE_OFF_MARKERS: &[&str] = &[
    "birthday",
    "anniversary",
    "annual membership",
    "wedding",
    "graduation",
    "housewarming",
];

/// A table and field an entry's value is a value of (from its `$value` bindings).
pub type Attribute = (TableId, usize);

/// The single-valued fields an entry's value is a value of: a product offered in several
/// colours says nothing about the colour chosen.
pub fn attributes(cat: &Catalog, p: &ProfileEntry) -> Vec<Attribute> {
    let mut out: Vec<Attribute> = Vec::new();
    for t in &p.evidence {
        for b in &t.binds {
            for (field, want) in &b.filters {
                if let (Some(f), Want::Value) = (field, want) {
                    let single = cat.table(b.table).fields.get(*f).is_some_and(|d| !d.many);
                    if single && !out.contains(&(b.table, *f)) {
                        out.push((b.table, *f));
                    }
                }
            }
        }
    }
    out
}

/// Whether an entry is an avoid-list (its key names a dislike).
pub fn is_avoid(p: &ProfileEntry) -> bool {
    let k = p.key.to_lowercase();
    k.contains("disliked") || k.contains("avoid")
}

/// Tables whose records one buys or books: the entity of an irreversible operation that inserts
/// a record (a show's tickets, a flight's booking), as opposed to records of what already happened
/// (payments) or standing entries (a recurring standup).
pub fn purchasable(cat: &Catalog) -> Vec<TableId> {
    let mut out: Vec<TableId> = Vec::new();
    for op in cat.apps.iter().flat_map(|a| &a.operations) {
        let inserts = op
            .effects
            .iter()
            .any(|e| matches!(e, Effect::Insert { .. }));
        if let (true, true, Some(t)) = (op.irreversible, inserts, op.entity) {
            if !out.contains(&t) {
                out.push(t);
            }
        }
    }
    out.sort();
    out
}

/// Tables holding the user's own choices: those an irreversible operation inserts into (a
/// reservation, an order, a booking). Public records (others' reviews, trending dishes) and the
/// user's own opinions (a two-star review of a place she avoids) are not choices.
pub fn choice_tables(cat: &Catalog) -> Vec<TableId> {
    let mut out: Vec<TableId> = Vec::new();
    for op in cat
        .apps
        .iter()
        .flat_map(|a| &a.operations)
        .filter(|o| o.irreversible)
    {
        for e in &op.effects {
            if let Effect::Insert { table, .. } = e {
                if !out.contains(table) {
                    out.push(*table);
                }
            }
        }
    }
    out.sort();
    out
}

/// The date of a record: its first single `date` (or datetime) field.
pub fn record_date(cat: &Catalog, table: TableId, r: &Record) -> Option<Date> {
    let t = cat.table(table);
    let i = t
        .fields
        .iter()
        .position(|f| matches!(f.kind, FieldKind::Date | FieldKind::DateTime) && !f.many)?;
    let s = r.values.get(i)?.as_str()?;
    Date::parse(s.get(..10)?)
}

/// The days on which an event may name a dated purchasable record of `date`: from
/// [`LISTING_DAYS`] before it up to the day itself.
pub fn listing_window(date: Date) -> (Date, Date) {
    (date.add_days(-(LISTING_DAYS as i32)), date)
}

/// The one-off occasion a lower-cased event text records, if any: a marker with the word before
/// it (`sam's birthday`). One app recording the same occasion twice repeats a one-off.
pub fn occasion(text: &str) -> Option<String> {
    ONE_OFF_MARKERS.iter().find_map(|m| {
        let at = text.find(m)?;
        let before = text[..at].trim_end();
        let owner = before.rsplit(' ').next().unwrap_or_default();
        Some(format!("{owner} {m}").trim().to_string())
    })
}
