//! The lowering state of one persona file (the catalog, the names lowered so far, the problems
//! found) and the small lowerings every part of the file shares.

use indexmap::IndexMap;
use serde_saphyr::Spanned;

use crate::world::app::Catalog;
use crate::world::clock::Date;
use crate::world::error::{Loc, Problem, ProblemKind as K};
use crate::world::persona::model::Days;
use crate::world::persona::raw::{RawDays, RawPlace};
use crate::world::yaml::at;

/// Lowering state for one file.
pub(super) struct Lower<'a> {
    pub(super) cat: &'a Catalog,
    /// Vocabulary list names, once lowered (`{vocab.<name>}` resolves against them).
    pub(super) vocab: Vec<String>,
    /// Construction names (`twins:` resolves against them).
    pub(super) constructions: Vec<String>,
    pub(super) file: &'a str,
    pub(super) places: &'a IndexMap<String, Spanned<RawPlace>>,
    pub(super) problems: Vec<Problem>,
}

impl Lower<'_> {
    pub(super) fn push(
        &mut self,
        kind: K,
        at: Loc,
        msg: impl Into<String>,
        fix: impl Into<String>,
    ) {
        self.problems.push(Problem::new(kind, at, msg, fix));
    }
    pub(super) fn at<T>(&self, s: &Spanned<T>) -> Loc {
        at(self.file, s)
    }
}

/// The date `s` spells, or a problem saying it is none.
pub(super) fn lower_date(lw: &mut Lower, s: &Spanned<String>) -> Option<Date> {
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

/// Days of the week by name (`any`, `workdays`, `weekends`) or as a list of `mon` … `sun` (a
/// list of weekdays only refuses holidays, as `workdays` does); a located problem otherwise.
pub(super) fn lower_days(lw: &mut Lower, d: &Spanned<&RawDays>) -> Option<Days> {
    let days = parse_days(d.value);
    if days.is_none() {
        lw.push(
            K::BadTemplate,
            lw.at(d),
            format!("`days` is not a set of days: {:?}", d.value),
            "write `days: workdays`, `weekends`, `any`, or a list such as [tue, thu]",
        );
    }
    days
}

/// The days a `days:` value names, `None` when it names none.
pub(super) fn parse_days(d: &RawDays) -> Option<Days> {
    const NAMES: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
    match d {
        RawDays::Named(n) => match n.as_str() {
            "any" => Some(Days::ANY),
            "workdays" => Some(Days::WORKDAYS),
            "weekends" => Some(Days {
                mask: 0x60,
                workday: false,
            }),
            _ => None,
        },
        RawDays::List(l) => l
            .iter()
            .map(|n| NAMES.iter().position(|x| x == n))
            .try_fold(0u8, |m, i| i.map(|i| m | (1 << i)))
            .filter(|m| *m != 0)
            // Weekdays only are workdays: a holiday is none of them.
            .map(|mask| Days {
                mask,
                workday: mask & 0x60 == 0,
            }),
    }
}
