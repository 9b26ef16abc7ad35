//! History synthesis: a deterministic, seeded stream of natural-language phone-activity events
//! that evidences every inferable profile entry (≥ `min_per_entry` events each, per side of a
//! shift), mixes in noise that evidences nothing, and never reveals an ask-only value. Every
//! guarantee is re-checked on the produced text, so a violation is an error, not silent data.

mod constraints;
mod draw;
mod plan;
mod select;
mod situate;

use constraints::*;
use draw::*;
use plan::*;
use select::*;
use situate::*;

use std::cell::RefCell;
use std::collections::HashSet;

use rand::rngs::Xoshiro256PlusPlus;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::app::{Catalog, Record};
use super::clock::{Date, DateTime, Time};
use super::error::{Result, WorldError};
use super::persona::text::mentions_lowered;
use super::persona::Var;
use super::persona::{
    choose, leak_phrases, render, render_at, Binding, Construction, Context, Days, EventTemplate,
    Fill, Period, Persona, ProfileEntry, Source,
};
use super::rules::{
    act_on, act_window, attributes, is_avoid, listing_window, occasion, one_off_key, owned,
    purchasable, purposes, record_date, record_towns, towns_named, Act,
};
use super::template::{Seg, Template};
use super::types::{value_matches, TableId};

/// Whether an event evidences a profile entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    /// Evidences the entries in `supports`.
    Signal,
    /// Evidences nothing.
    Noise,
}

impl Label {
    /// The table spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Label::Signal => "signal",
            Label::Noise => "noise",
        }
    }
}

/// One timestamped record of past phone activity: the agent's only prior knowledge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEvent {
    /// `ev_0001`…, in time order.
    pub event_id: String,
    /// Local time.
    pub time: DateTime,
    /// UTC offset in minutes when the source gave one (imported logs).
    #[serde(default)]
    pub utc_offset_minutes: Option<i32>,
    /// The app used (an app id, or a free name for imported logs).
    pub app: String,
    /// Where it happened.
    pub location: String,
    /// What happened.
    pub text: String,
    /// Signal or noise.
    pub label: Label,
    /// A topic tag: the entry's dimension for synthesized signal, `noise` for noise, the source's
    /// category for imported logs.
    pub category: String,
    /// Ids of the profile entries this event evidences (empty for noise).
    pub supports: Vec<String>,
    /// Ids of the profile entries this event is designed counter-evidence for: a minority
    /// exception (a later table once, another cuisine for a friend) that a careful reader
    /// outweighs. Hidden from agents, like `supports`.
    #[serde(default)]
    pub counters: Vec<String>,
}

/// Knobs of history synthesis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HistoryParams {
    /// Total events.
    pub events: usize,
    /// Fraction of noise events, in [0, 1).
    pub noise: f64,
    /// PRNG seed; the same seed gives the same history.
    pub seed: u64,
    /// Minimum events per inferable entry (per side of a shift).
    pub min_per_entry: usize,
}

impl Default for HistoryParams {
    fn default() -> Self {
        Self {
            events: 3051,
            noise: 0.2,
            seed: 7,
            min_per_entry: 3,
        }
    }
}

/// The share of an entry's events that are designed counter-evidence (when it has counter
/// templates and at least [`MIN_WITH_COUNTER`] events); always kept within 10–20%.
pub const COUNTER_SHARE: f64 = 0.15;

/// Fewest events an entry with counter templates gets, so one counter stays a minority of
/// at most 20%.
pub const MIN_WITH_COUNTER: usize = 5;

/// The share of noise events drawn from entries' decoys (noise that looks like signal: the same
/// apps, records and values in someone else's or a non-preference context); the rest comes from
/// the persona's plain noise templates.
pub const DECOY_SHARE: f64 = 0.65;

/// The share of noise events (within [`DECOY_SHARE`]) that are noise twins of her evidence: the
/// same event wrapped in a noise construction, carrying another value. The rest of the decoys
/// are hand-written.
pub const TWIN_SHARE: f64 = 0.4;

/// The share of noise twins that carry the value in effect rather than another one: someone
/// else's booking at a Thai place is no evidence of hers either. Her values then occur in noise
/// as in signal, so a value word alone does not tell the classes apart (world.audit's logistic
/// regression); whose event it is does.
pub const TWIN_OWN_SHARE: f64 = 0.5;

/// The share of her own events from an evidence template with `twins` that are wrapped in a
/// signal form of one of those constructions ("For Sam and me: booked …", "Once again, …"), so
/// the constructions of noise twins ("For Marco: booked …", "Just this once, …") occur in both
/// classes and no phrase tells them apart.
pub const SIGNAL_FRAMED: f64 = 0.3;

/// The share of counter-evidence events (her own one-off exceptions) wrapped in a construction's
/// `counter` form ("This time, went along with Tom's pick …"), the words one-off noise twins use.
pub const COUNTER_FRAMED: f64 = 0.6;

/// The share of an entry's counter-evidence drawn as one of her usual events carrying another
/// value, wrapped in a `counter` form (when a construction its evidence lists has one).
pub const COUNTER_TWIN_SHARE: f64 = 0.6;

/// Draw attempts per event before synthesis reports that no record fits the profile.
const ATTEMPTS: usize = 64;

/// What an event is to the entry it was drawn for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Evidence of the value in effect.
    Support,
    /// A designed exception.
    Counter,
    /// Noise dressed as the entry's evidence.
    Decoy,
    /// Plain noise.
    Noise,
}

/// An event before ids are assigned.
struct Draft {
    time: DateTime,
    app: String,
    location: String,
    text: String,
    supports: Option<String>,
    counters: Option<String>,
    category: String,
}

/// Everything a draw reads.
struct Ctx<'a> {
    cat: &'a Catalog,
    /// One-off occasions already recorded, per app (a birthday is booked once).
    occasions: RefCell<HashSet<(String, String)>>,
    /// One-off acts already told, per app, by core text (a rating of one place is given once).
    one_offs: RefCell<HashSet<(String, String)>>,
    /// Dated records (flights, shows) an event already said she bought.
    purchased: RefCell<HashSet<(TableId, String)>>,
    /// Dated records (flights, shows) an event already said she flew or saw: told once.
    completed: RefCell<HashSet<(TableId, String)>>,
    /// The persona's decorations, for core texts (`core_text::decorations`).
    decorations: Vec<String>,
    /// The people noise twins are told about (the capitalised words of the `someone` list): a
    /// text names each at most once.
    people: Vec<String>,
    vocab: &'a [Vec<Template<Var>>],
    /// The vocabulary list of companions (`with`), if the persona has one.
    companions: Option<usize>,
    /// Circumstances per app ([`Persona`]'s `contexts`).
    contexts: &'a indexmap::IndexMap<String, Vec<Context>>,
    /// Public holidays: no workday falls on one.
    holidays: &'a [Date],
    constructions: &'a [Construction],
    /// Towns away from home ([`Persona`]'s `towns`): an event is about one at most.
    towns: &'a [Vec<String>],
    guards: Guards,
    rules: Constraints,
}

impl<'a> Ctx<'a> {
    /// What every draw of `persona`'s history reads, with nothing told yet.
    fn new(cat: &'a Catalog, persona: &'a Persona) -> Self {
        Ctx {
            cat,
            occasions: RefCell::new(HashSet::new()),
            one_offs: RefCell::new(HashSet::new()),
            purchased: RefCell::new(HashSet::new()),
            completed: RefCell::new(HashSet::new()),
            decorations: super::core_text::decorations(cat, persona),
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

/// One event to draw: the template, the entry it is drawn for, its role and its day window (one
/// side of a shift at most, so the value in effect is fixed).
struct Ask<'a> {
    t: &'a EventTemplate,
    entry: Option<&'a ProfileEntry>,
    role: Role,
    window: (Date, Date),
    /// A noise twin of the evidence template `t`: wrapped in a noise construction, carrying
    /// another value.
    twin: bool,
}

/// Synthesizes the history of `persona`.
pub fn synthesize(
    cat: &Catalog,
    persona: &Persona,
    params: &HistoryParams,
) -> Result<Vec<HistoryEvent>> {
    let entries: Vec<&ProfileEntry> = persona
        .profile
        .iter()
        .filter(|e| e.source == Source::Inferable)
        .collect();
    let (n_signal, n_noise) = split_counts(persona, params, &entries)?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(params.seed);
    let counts = allocate(&entries, n_signal, params.min_per_entry, &mut rng);
    let ctx = Ctx::new(cat, persona);
    let mut drafts = Vec::with_capacity(params.events);
    for (&entry, &count) in entries.iter().zip(&counts) {
        entry_events(
            &ctx,
            persona,
            entry,
            count,
            params.min_per_entry,
            &mut rng,
            &mut drafts,
        )?;
    }
    let signal: Vec<(&str, usize)> = entries.iter().map(|e| e.id.as_str()).zip(counts).collect();
    noise_events(&ctx, persona, &signal, n_noise, &mut rng, &mut drafts)?;
    Ok(finish(drafts))
}

/// Sorts drafts by time (stable, so ties keep generation order) and assigns ids.
fn finish(mut drafts: Vec<Draft>) -> Vec<HistoryEvent> {
    drafts.sort_by_key(|d| d.time);
    let width = drafts.len().to_string().len().max(4);
    drafts
        .into_iter()
        .enumerate()
        .map(|(i, d)| HistoryEvent {
            event_id: format!("ev_{:0width$}", i + 1),
            time: d.time,
            utc_offset_minutes: None,
            app: d.app,
            location: d.location,
            text: d.text,
            label: if d.supports.is_some() || d.counters.is_some() {
                Label::Signal
            } else {
                Label::Noise
            },
            category: d.category,
            supports: d.supports.into_iter().collect(),
            counters: d.counters.into_iter().collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests;
