//! Everything a draw reads: the catalog, the persona's vocabularies and guards, the profile and
//! app-data rules, and what has been told already (one-off occasions, purchases).

use std::cell::RefCell;
use std::collections::HashSet;

use super::constraints::{guards, Constraints, Guards};
use crate::world::app::Catalog;
use crate::world::clock::Date;
use crate::world::core_text::decorations;
use crate::world::persona::{Construction, Context, Persona, Var};
use crate::world::template::{Seg, Template};
use crate::world::types::TableId;

/// Everything a draw reads.
pub(super) struct Ctx<'a> {
    pub(super) cat: &'a Catalog,
    /// One-off occasions already recorded, per app (a birthday is booked once).
    pub(super) occasions: RefCell<HashSet<(String, String)>>,
    /// One-off acts already told, per app, by core text (a rating of one place is given once).
    pub(super) one_offs: RefCell<HashSet<(String, String)>>,
    /// Dated records (flights, shows) an event already said she bought.
    pub(super) purchased: RefCell<HashSet<(TableId, String)>>,
    /// Dated records (flights, shows) an event already said she flew or saw: told once.
    pub(super) completed: RefCell<HashSet<(TableId, String)>>,
    /// The persona's decorations, for core texts (`core_text::decorations`).
    pub(super) decorations: Vec<String>,
    /// The people noise twins are told about (the capitalised words of the `someone` list): a
    /// text names each at most once.
    pub(super) people: Vec<String>,
    pub(super) vocab: &'a [Vec<Template<Var>>],
    /// The vocabulary list of companions (`with`), if the persona has one.
    pub(super) companions: Option<usize>,
    /// Circumstances per app ([`Persona`]'s `contexts`).
    pub(super) contexts: &'a indexmap::IndexMap<String, Vec<Context>>,
    /// Public holidays: no workday falls on one.
    pub(super) holidays: &'a [Date],
    pub(super) constructions: &'a [Construction],
    /// Towns away from home ([`Persona`]'s `towns`): an event is about one at most.
    pub(super) towns: &'a [Vec<String>],
    pub(super) guards: Guards,
    pub(super) rules: Constraints,
}

impl<'a> Ctx<'a> {
    /// What every draw of `persona`'s history reads, with nothing told yet.
    pub(super) fn new(cat: &'a Catalog, persona: &'a Persona) -> Self {
        Ctx {
            cat,
            occasions: RefCell::new(HashSet::new()),
            one_offs: RefCell::new(HashSet::new()),
            purchased: RefCell::new(HashSet::new()),
            completed: RefCell::new(HashSet::new()),
            decorations: decorations(cat, persona),
            people: people(persona),
            vocab: &persona.vocab,
            companions: persona.vocab_names.iter().position(|n| n == "with"),
            contexts: &persona.contexts,
            holidays: &persona.holidays,
            constructions: &persona.constructions,
            towns: &persona.towns,
            guards: guards(persona),
            rules: Constraints::new(cat, persona),
        }
    }
}

/// The capitalised words of the persona's `someone` list: the people noise twins are about.
pub(super) fn people(persona: &Persona) -> Vec<String> {
    let Some(i) = persona.vocab_names.iter().position(|n| n == "someone") else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for phrase in &persona.vocab[i] {
        for seg in &phrase.segs {
            if let Seg::Text(t) = seg {
                for w in t.split(|c: char| !c.is_alphanumeric()) {
                    if w.chars().next().is_some_and(char::is_uppercase)
                        && !out.iter().any(|o| o == w)
                    {
                        out.push(w.to_string());
                    }
                }
            }
        }
    }
    out
}
