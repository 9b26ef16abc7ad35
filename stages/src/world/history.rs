//! History synthesis: a deterministic, seeded stream of natural-language phone-activity events
//! that evidences every inferable profile entry (≥ `min_per_entry` events each, per side of a
//! shift), mixes in noise that evidences nothing, and never reveals an ask-only value. Every
//! guarantee is re-checked on the produced text, so a violation is an error, not silent data.

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
    choose, leak_phrases, render, render_at, Binding, Construction, EventTemplate, Fill, Period,
    Persona, ProfileEntry, Source,
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

/// Lower-cased phrases to test texts against, computed once.
struct Guards {
    leaks: Vec<String>,
    mentions: Vec<String>,
}

/// A record value a choice may not name: an avoid-list's value always, a shift's earlier value
/// from its change date on.
struct Exclusion {
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
struct ExcludedName {
    label: String,
    entry: String,
    from: Option<Date>,
}

/// What an event's text says she did with one dated record it names, and the days that allows.
struct ActSpan<'r> {
    table: TableId,
    id: &'r str,
    act: Act,
    window: (Date, Date),
}

/// The profile and app-data rules every draw obeys ([`super::rules`]).
struct Constraints {
    exclusions: Vec<Exclusion>,
    names: Vec<ExcludedName>,
    purchasable: Vec<TableId>,
}

impl Constraints {
    fn new(cat: &Catalog, persona: &Persona) -> Self {
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
    fn text_fits(&self, lower: &str, day: Date, entry: &str) -> bool {
        self.names.iter().all(|n| {
            (n.from.is_none() && n.entry == entry)
                || n.from.is_some_and(|d| day < d)
                || !mentions_lowered(lower, &n.label)
        })
    }

    /// Whether the user's own choice on `day` may name `r` through binding `b`: not a value she
    /// avoids or has moved away from (unless the binding asks for that field, or for one record
    /// by id, itself: the avoid-list's own evidence and its designed exceptions do).
    fn fits_profile(&self, b: &Binding, r: &Record, day: Date) -> bool {
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
    fn acts<'r>(
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
    fn days_for(
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
fn excluded_names(cat: &Catalog, x: &Exclusion) -> Vec<ExcludedName> {
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

/// Everything a draw reads.
struct Ctx<'a> {
    cat: &'a Catalog,
    /// One-off occasions already recorded, per app (a birthday is booked once).
    occasions: RefCell<HashSet<(String, String)>>,
    /// One-off acts already told, per app, by core text (a rating of one place is given once).
    one_offs: RefCell<HashSet<(String, String)>>,
    /// Dated records (flights, shows) an event already said she bought.
    purchased: RefCell<HashSet<(TableId, String)>>,
    /// The persona's decorations, for core texts (`audit::decorations`).
    decorations: Vec<String>,
    /// The people noise twins are told about (the capitalised words of the `someone` list): a
    /// text names each at most once.
    people: Vec<String>,
    vocab: &'a [Vec<Template<Var>>],
    /// The vocabulary list of companions (`with`), if the persona has one.
    companions: Option<usize>,
    /// Circumstances per app ([`Persona`]'s `contexts`).
    contexts: &'a indexmap::IndexMap<String, Vec<Template<Var>>>,
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
            decorations: super::audit::decorations(cat, persona),
            people: people(persona),
            vocab: &persona.vocab,
            companions: persona.vocab_names.iter().position(|n| n == "with"),
            contexts: &persona.contexts,
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

fn split_counts(
    persona: &Persona,
    params: &HistoryParams,
    entries: &[&ProfileEntry],
) -> Result<(usize, usize)> {
    if !(0.0..1.0).contains(&params.noise) {
        return Err(WorldError::Synthesis(format!(
            "noise fraction {} must lie in [0, 1)",
            params.noise
        )));
    }
    if params.min_per_entry == 0 {
        return Err(WorldError::Synthesis(
            "min_per_entry must be at least 1".into(),
        ));
    }
    let n_noise = (params.events as f64 * params.noise).round() as usize;
    let n_signal = params.events - n_noise;
    let needed: usize = entries
        .iter()
        .map(|e| minimum(e, params.min_per_entry))
        .sum();
    if n_signal < needed {
        return Err(WorldError::Synthesis(format!("{n_signal} signal events cannot give {} inferable entries {} events each ({needed} needed); raise `events` or lower `noise`", entries.len(), params.min_per_entry)));
    }
    if n_signal > 0 && entries.is_empty() {
        return Err(WorldError::Synthesis(
            "signal events requested but the persona has no inferable entries".into(),
        ));
    }
    let decoys: usize = entries
        .iter()
        .map(|e| e.decoys.len() + e.evidence.iter().filter(|t| !t.twins.is_empty()).count())
        .sum();
    if n_noise > 0 && persona.noise_template_count() + decoys == 0 {
        return Err(WorldError::Synthesis(
            "noise requested but the persona has no noise templates".into(),
        ));
    }
    Ok((n_signal, n_noise))
}

fn sides(e: &ProfileEntry) -> usize {
    if e.shift.is_some() {
        2
    } else {
        1
    }
}

/// Fewest events of an entry: `min` supporting ones per side of a shift, and room for one
/// counter-event that stays within 20% when the entry has counter templates.
fn minimum(e: &ProfileEntry, min: usize) -> usize {
    let base = min * sides(e);
    if e.counter.is_empty() {
        base
    } else {
        (base * 5).div_ceil(4).max(MIN_WITH_COUNTER)
    }
}

/// Counter-events among an entry's `n` events: [`COUNTER_SHARE`], kept within 10–20%.
fn counter_count(e: &ProfileEntry, n: usize) -> usize {
    if e.counter.is_empty() || n < MIN_WITH_COUNTER {
        return 0;
    }
    let c = (n as f64 * COUNTER_SHARE).round() as usize;
    let c = c.clamp(n.div_ceil(10), n / 5);
    // `once` counter templates serve one event each.
    if e.counter.iter().all(|t| t.once) {
        c.min(e.counter.len())
    } else {
        c
    }
}

/// Events per entry: the minimum, plus the remainder drawn in proportion to entry weights.
fn allocate(
    entries: &[&ProfileEntry],
    n_signal: usize,
    min: usize,
    rng: &mut Xoshiro256PlusPlus,
) -> Vec<usize> {
    let mut counts: Vec<usize> = entries.iter().map(|e| minimum(e, min)).collect();
    let mut cumulative = Vec::with_capacity(entries.len());
    let mut total = 0.0;
    for e in entries {
        total += e.weight;
        cumulative.push(total);
    }
    let extra = n_signal - counts.iter().sum::<usize>();
    if total <= 0.0 {
        return counts;
    }
    for _ in 0..extra {
        let x = rng.random_range(0.0..total);
        let i = cumulative
            .partition_point(|&c| c <= x)
            .min(entries.len() - 1);
        counts[i] += 1;
    }
    counts
}

fn guards(persona: &Persona) -> Guards {
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

/// A day in `[from, to]` and a time within the template's hour window.
fn random_time(rng: &mut Xoshiro256PlusPlus, from: Date, to: Date, hours: (u32, u32)) -> DateTime {
    let span = from.days_until(to).max(0);
    let date = from.add_days(rng.random_range(0..=span));
    let secs = rng.random_range(hours.0 * 3600..hours.1 * 3600);
    DateTime {
        date,
        time: Time::from_seconds(secs / 60 * 60),
    }
}

/// The day windows of an entry: the whole history, or each side of its shift.
fn windows(persona: &Persona, e: &ProfileEntry) -> Vec<(Option<Period>, Date, Date)> {
    match &e.shift {
        None => vec![(None, persona.start, persona.end)],
        Some(s) => vec![
            (Some(Period::Before), persona.start, s.changed.add_days(-1)),
            (Some(Period::After), s.changed, persona.end),
        ],
    }
}

/// Templates that fit one side of a shift.
fn for_period(templates: &[EventTemplate], period: Option<Period>) -> Vec<&EventTemplate> {
    templates
        .iter()
        .filter(|t| period.is_none() || t.period.is_none() || t.period == period)
        .collect()
}

/// Rotates through templates from a random offset, skipping `once` templates already used and
/// templates with nothing new to say ([`Rotation::spend`]).
struct Rotation<'a> {
    templates: Vec<&'a EventTemplate>,
    next: usize,
    used: Vec<bool>,
    spent: Vec<bool>,
}

impl<'a> Rotation<'a> {
    fn new(templates: Vec<&'a EventTemplate>, rng: &mut Xoshiro256PlusPlus) -> Self {
        let next = if templates.is_empty() {
            0
        } else {
            rng.random_range(0..templates.len())
        };
        let used = vec![false; templates.len()];
        let spent = vec![false; templates.len()];
        Self {
            templates,
            next,
            used,
            spent,
        }
    }

    fn take(&mut self) -> Option<&'a EventTemplate> {
        for _ in 0..self.templates.len() {
            let i = self.next % self.templates.len();
            self.next += 1;
            if (self.templates[i].once && self.used[i]) || self.spent[i] {
                continue;
            }
            self.used[i] = true;
            return Some(self.templates[i]);
        }
        None
    }

    /// Marks a template as having nothing new to say (every record it could buy is bought).
    fn spend(&mut self, t: &EventTemplate) {
        if let Some(i) = self.templates.iter().position(|x| std::ptr::eq(*x, t)) {
            self.spent[i] = true;
        }
    }
}

/// Draws one event from the rotation: the next template, or the one after it when a template
/// has nothing new to say.
fn draw_rotating<'a>(
    ctx: &Ctx<'_>,
    rot: &mut Rotation<'a>,
    ask: impl Fn(&'a EventTemplate) -> Ask<'a>,
    rng: &mut Xoshiro256PlusPlus,
    what: &str,
) -> Result<Draft> {
    for _ in 0..=rot.templates.len() {
        let Some(t) = rot.take() else { break };
        match draw(ctx, &ask(t), rng)? {
            Some(d) => return Ok(d),
            None => rot.spend(t),
        }
    }
    Err(WorldError::Synthesis(format!(
        "{what}: every template is spent (its records bought, its one-off acts told); add templates or lower the event count"
    )))
}

fn entry_events<'a>(
    ctx: &Ctx<'_>,
    persona: &Persona,
    e: &'a ProfileEntry,
    count: usize,
    min: usize,
    rng: &mut Xoshiro256PlusPlus,
    out: &mut Vec<Draft>,
) -> Result<()> {
    let n_counter = counter_count(e, count);
    let supporting = count - n_counter;
    let wins = windows(persona, e);
    let per_window: Vec<usize> = match &e.shift {
        None => vec![supporting],
        Some(s) => {
            let before_days = persona.start.days_until(s.changed) as f64;
            let total_days = persona.start.days_until(persona.end) as f64 + 1.0;
            let before = ((supporting as f64 * before_days / total_days).round() as usize)
                .clamp(min, supporting - min);
            vec![before, supporting - before]
        }
    };
    for (&(period, from, to), &n) in wins.iter().zip(&per_window) {
        let mut rot = Rotation::new(for_period(&e.evidence, period), rng);
        for _ in 0..n {
            let ask = |t: &'a EventTemplate| Ask {
                t,
                entry: Some(e),
                role: Role::Support,
                window: (from, to),
                twin: false,
            };
            let what = format!("entry `{}` (evidence)", e.id);
            out.push(draw_rotating(ctx, &mut rot, ask, rng, &what)?);
        }
    }
    let mut rot = Rotation::new(e.counter.iter().collect(), rng);
    let exceptions = exception_templates(ctx, e);
    for _ in 0..n_counter {
        // An exception of her own may be one of her usual events with another value ("This
        // time, booked Seoul Table (Korean …)"): the words of noise twins occur in signal too.
        let twin = !exceptions.is_empty() && rng.random_bool(COUNTER_TWIN_SHARE);
        if twin {
            let t = exceptions[rng.random_range(0..exceptions.len())];
            let window = side_window(&wins, t.period, rng);
            let ask = Ask {
                t,
                entry: Some(e),
                role: Role::Counter,
                window,
                twin,
            };
            if let Some(d) = draw(ctx, &ask, rng)? {
                out.push(d);
                continue;
            }
        }
        let windows: Vec<(Date, Date)> = e
            .counter
            .iter()
            .map(|t| side_window(&wins, t.period, rng))
            .collect();
        let ask = |t: &'a EventTemplate| {
            let i = e
                .counter
                .iter()
                .position(|x| std::ptr::eq(x, t))
                .unwrap_or(0);
            Ask {
                t,
                entry: Some(e),
                role: Role::Counter,
                window: windows[i],
                twin: false,
            }
        };
        let what = format!("entry `{}` (counter-evidence)", e.id);
        out.push(draw_rotating(ctx, &mut rot, ask, rng, &what)?);
    }
    Ok(())
}

/// Evidence templates of `e` that can be a designed exception: a construction they list has
/// `counter` forms, and the entry has other values to carry.
fn exception_templates<'a>(ctx: &Ctx<'_>, e: &'a ProfileEntry) -> Vec<&'a EventTemplate> {
    if e.others.is_empty() {
        return Vec::new();
    }
    e.evidence
        .iter()
        .filter(|t| {
            t.twins
                .iter()
                .any(|&c| !ctx.constructions[c].counter.is_empty())
        })
        .collect()
}

/// A window for a template that may fall on either side of a shift: the template's period, else
/// a side drawn in proportion to its days.
fn side_window(
    wins: &[(Option<Period>, Date, Date)],
    period: Option<Period>,
    rng: &mut Xoshiro256PlusPlus,
) -> (Date, Date) {
    if let Some(&(_, a, b)) = wins.iter().find(|w| period.is_some() && w.0 == period) {
        return (a, b);
    }
    let days: Vec<i32> = wins.iter().map(|w| w.1.days_until(w.2) + 1).collect();
    let mut x = rng.random_range(0..days.iter().sum::<i32>().max(1));
    for (w, d) in wins.iter().zip(&days) {
        if x < *d {
            return (w.1, w.2);
        }
        x -= d;
    }
    (wins[0].1, wins[0].2)
}

/// Noise: the noise twins of evidence templates with `twins` ([`TWIN_SHARE`]), the entries'
/// hand-written decoys (the rest of [`DECOY_SHARE`]) and plain noise templates ([`NoisePool`]).
fn noise_events(
    ctx: &Ctx<'_>,
    persona: &Persona,
    signal: &[(&str, usize)],
    n: usize,
    rng: &mut Xoshiro256PlusPlus,
    out: &mut Vec<Draft>,
) -> Result<()> {
    let mut pool = NoisePool::new(ctx, persona, signal);
    let mut drawn = 0;
    while drawn < n {
        let Some(i) = pool.pick(rng) else {
            break;
        };
        let (t, entry, twin) = pool.templates[i];
        let window = match entry {
            Some(e) => side_window(&windows(persona, e), t.period, rng),
            None => (persona.start, persona.end),
        };
        let role = if entry.is_some() {
            Role::Decoy
        } else {
            Role::Noise
        };
        let ask = Ask {
            t,
            entry,
            role,
            window,
            twin,
        };
        match draw(ctx, &ask, rng)? {
            Some(d) => {
                out.push(d);
                drawn += 1;
            }
            // Nothing new to say: never drawn again, like a used `once` template.
            None => pool.spend(i),
        }
    }
    Ok(())
}

/// A noise template: the template, the entry it dresses as (none for plain noise), and whether
/// it is a noise twin of that entry's evidence.
type NoiseTemplate<'a> = (&'a EventTemplate, Option<&'a ProfileEntry>, bool);

/// Every noise template in three segments: `[0, plain)` plain noise, `[plain, hand)` hand-written
/// decoys, `[hand, len)` noise twins. Decoys and plain noise are dealt in shuffled rounds
/// ([`Deck`]); a twin is drawn in proportion to the signal events its template stands for, so
/// twins spread over templates as her own events do and the words of no template lean to noise.
struct NoisePool<'a> {
    templates: Vec<NoiseTemplate<'a>>,
    plain: usize,
    hand: usize,
    /// Cumulative weights of the twins, in order from `hand`.
    twin_weights: Vec<f64>,
    used: Vec<bool>,
    spent: Vec<bool>,
    decks: [Deck; 2],
}

impl<'a> NoisePool<'a> {
    /// `signal`: her events per entry.
    fn new(ctx: &Ctx<'_>, persona: &'a Persona, signal: &[(&str, usize)]) -> Self {
        let mut templates: Vec<NoiseTemplate<'a>> =
            persona.noise.iter().map(|t| (t, None, false)).collect();
        let inferable = || {
            persona
                .profile
                .iter()
                .filter(|e| e.source == Source::Inferable)
        };
        for e in inferable() {
            templates.extend(e.decoys.iter().map(|t| (t, Some(e), false)));
        }
        let hand = templates.len();
        let mut twin_weights: Vec<f64> = Vec::new();
        let mut total = 0.0;
        for e in inferable() {
            let events = signal.iter().find(|s| s.0 == e.id).map_or(0, |s| s.1);
            let per_template = events as f64 / e.evidence.len().max(1) as f64;
            let twinned = e.evidence.iter().filter(|t| {
                t.twins
                    .iter()
                    .any(|&c| !ctx.constructions[c].noise.is_empty())
            });
            for t in twinned {
                templates.push((t, Some(e), true));
                total += per_template;
                twin_weights.push(total);
            }
        }
        let used = vec![false; templates.len()];
        let spent = vec![false; templates.len()];
        Self {
            templates,
            plain: persona.noise.len(),
            hand,
            twin_weights,
            used,
            spent,
            decks: [Deck::default(), Deck::default()],
        }
    }

    /// The next noise template: TWIN_SHARE of the noise is twins of her evidence, DECOY_SHARE
    /// all dressed as signal, the rest plain phone chatter; an empty segment passes its share on,
    /// and a `once` template already used passes to the next one.
    fn pick(&mut self, rng: &mut Xoshiro256PlusPlus) -> Option<usize> {
        let (plain, hand, len) = (self.plain, self.hand, self.templates.len());
        let segments = [(plain, hand), (hand, len), (0, plain)];
        let x = rng.random_range(0.0..1.0);
        let first = if x < TWIN_SHARE {
            1
        } else if x < DECOY_SHARE {
            0
        } else {
            2
        };
        let &(lo, hi) = (0..3)
            .map(|k| &segments[(first + k) % 3])
            .find(|(lo, hi)| lo < hi)?;
        let total = self.twin_weights.last().copied().unwrap_or(0.0);
        let mut i = if lo == hand && total > 0.0 {
            let x = rng.random_range(0.0..total);
            hand + self
                .twin_weights
                .partition_point(|&c| c <= x)
                .min(self.twin_weights.len() - 1)
        } else {
            self.decks[usize::from(lo != plain)].deal(lo..hi, rng)
        };
        let blocked = |j: usize| (self.templates[j].0.once && self.used[j]) || self.spent[j];
        for _ in 0..len {
            if !blocked(i) {
                break;
            }
            i = (i + 1) % len;
        }
        if blocked(i) {
            return None;
        }
        self.used[i] = true;
        Some(i)
    }

    /// Marks template `i` as having nothing new to say: it is never picked again.
    fn spend(&mut self, i: usize) {
        self.spent[i] = true;
    }
}

/// Deals template indices of one pool segment in shuffled rounds, each template once per round:
/// hand-written decoys and plain noise repeat as little as the counts allow, so no template's
/// words pile up in the noise.
#[derive(Default)]
struct Deck {
    left: Vec<usize>,
}

impl Deck {
    fn deal(&mut self, range: std::ops::Range<usize>, rng: &mut Xoshiro256PlusPlus) -> usize {
        if self.left.is_empty() {
            self.left = range.collect();
            self.left.shuffle(rng);
        }
        self.left.pop().unwrap_or_default()
    }
}

/// The construction form an event is wrapped in, if any: a noise form for a twin, a signal form
/// for [`SIGNAL_FRAMED`] of her own events from a template with twins, a counter form for
/// [`COUNTER_FRAMED`] of her exceptions, none otherwise.
fn frame<'a>(
    ctx: &Ctx<'a>,
    ask: &Ask<'_>,
    rng: &mut Xoshiro256PlusPlus,
) -> Option<&'a Template<Var>> {
    let forms = |c: &'a Construction| match ask.role {
        Role::Decoy => &c.noise,
        Role::Counter => &c.counter,
        _ => &c.signal,
    };
    let (wrap, fit): (bool, Vec<usize>) = match ask.role {
        Role::Decoy | Role::Counter if ask.twin => (true, ask.t.twins.clone()),
        Role::Decoy => (false, Vec::new()),
        Role::Support => (
            !ask.t.twins.is_empty() && rng.random_bool(SIGNAL_FRAMED),
            ask.t.twins.clone(),
        ),
        Role::Counter => (
            rng.random_bool(COUNTER_FRAMED),
            (0..ctx.constructions.len()).collect(),
        ),
        Role::Noise => (false, Vec::new()),
    };
    if !wrap {
        return None;
    }
    let fitting: Vec<&Construction> = fit
        .iter()
        .map(|&i| &ctx.constructions[i])
        .filter(|c| !forms(c).is_empty())
        .collect();
    if fitting.is_empty() {
        return None;
    }
    let f = forms(fitting[rng.random_range(0..fitting.len())]);
    Some(&f[rng.random_range(0..f.len())])
}

/// The other value a noise twin of `e` carries in `window`: one of the entry's `others` that is
/// not the value in effect (it may be a shift's other side: someone else still on the cuisine
/// she left).
fn other_value<'e>(
    e: &'e ProfileEntry,
    window: (Date, Date),
    rng: &mut Xoshiro256PlusPlus,
) -> Result<(&'e Value, &'e str)> {
    let own = e.value_on(window.0);
    let fit: Vec<_> = e
        .others
        .iter()
        .filter(|o| !value_matches(&o.value, own))
        .collect();
    if fit.is_empty() {
        return Err(WorldError::Synthesis(format!(
            "entry `{}`: no other value for a noise twin in {} … {}",
            e.id, window.0, window.1
        )));
    }
    let o = fit[rng.random_range(0..fit.len())];
    Ok((&o.value, o.mention.as_str()))
}

/// Draws one event: a time in the window, records that fit the profile (for the user's own
/// evidence) and the time (for dated purchases, re-timed into their listing window), a phrasing,
/// and the guards of its role. Then the rules of a phone that did what its history says
/// ([`super::rules`]): what the text says she did with a dated record (bought it, flew or saw
/// it) falls in that act's days, a purchase is one the app's orders hold and is told once, and a
/// one-off act (a rating, a list started) is told once. `Ok(None)` when every attempt broke one
/// of those rules: the template has nothing new to say (its records are all bought, its ratings
/// given), and the caller draws from another.
fn draw(ctx: &Ctx<'_>, ask: &Ask<'_>, rng: &mut Xoshiro256PlusPlus) -> Result<Option<Draft>> {
    let t = ask.t;
    let own = matches!(ask.role, Role::Support | Role::Counter);
    let mut last = None;
    let mut spent = false;
    for _ in 0..ATTEMPTS {
        let carry_own = ask.role == Role::Decoy && ask.twin && rng.random_bool(TWIN_OWN_SHARE);
        let (value, mention) = match (ask.entry, ask.role) {
            (Some(e), _) if ask.twin && carry_own => {
                (e.value_on(ask.window.0), e.mention_on(ask.window.0))
            }
            (Some(e), _) if ask.twin => other_value(e, ask.window, rng)?,
            (Some(e), Role::Decoy) => decoy_value(e, ask.window.0),
            (Some(e), _) => (e.value_on(ask.window.0), e.mention_on(ask.window.0)),
            (None, _) => (&Value::Null, ""),
        };
        let mut time = random_time(rng, ask.window.0, ask.window.1, t.hours);
        let day = time.date;
        let admit = |b: &Binding, r: &Record| {
            (!own || ctx.rules.fits_profile(b, r, day))
                && ctx.rules.days_for(ctx.cat, b, r, ask.window).is_some()
        };
        let Ok(chosen) = choose(ctx.cat, &t.binds, value, &admit, &mut |n| {
            rng.random_range(0..n)
        }) else {
            continue;
        };
        let picks: Vec<usize> = ctx
            .vocab
            .iter()
            .map(|l| rng.random_range(0..l.len().max(1)))
            .collect();
        let wrap = frame(ctx, ask, rng);
        let phrasing = &t.texts[rng.random_range(0..t.texts.len())];
        let situated = situate(ctx, ask, phrasing, wrap, &chosen, rng);
        let one_with = situated.as_ref().is_some_and(|(_, with)| *with);
        let phrasing = situated.as_ref().map_or(phrasing, |(t, _)| t);
        let text_at = |when: DateTime| {
            let fill = Fill {
                chosen: &chosen,
                value,
                mention,
                when,
                vocab: ctx.vocab,
                picks: &picks,
                event: "",
                tail: "",
            };
            let text = match wrap {
                None => render(ctx.cat, phrasing, &t.binds, &fill),
                Some(form) => wrapped(ctx.cat, form, phrasing, &t.binds, &fill),
            };
            (text, render_at(ctx.cat, t, &fill))
        };
        let (mut text, mut location) = text_at(time);
        // The days the acts the text tells allow; the listing window for plain mentions.
        let acts = ctx.rules.acts(ctx.cat, &t.binds, &chosen, &text);
        let mut days = ask.window;
        for a in &acts {
            days = (days.0.max(a.window.0), days.1.min(a.window.1));
        }
        let purchases: Vec<(TableId, &str)> = acts
            .iter()
            .filter(|a| a.act == Act::Purchase)
            .map(|a| (a.table, a.id))
            .collect();
        let bought_before = purchases.iter().any(|(table, id)| {
            !owned(ctx.cat, *table, id)
                || ctx
                    .purchased
                    .borrow()
                    .contains(&(*table, (*id).to_string()))
        });
        if days.0 > days.1 || bought_before {
            spent = true;
            continue;
        }
        if time.date < days.0 || time.date > days.1 {
            time.date = days
                .0
                .add_days(rng.random_range(0..=days.0.days_until(days.1)));
            (text, location) = text_at(time);
        }
        if own
            && !t
                .binds
                .iter()
                .zip(&chosen)
                .all(|(b, r)| ctx.rules.fits_profile(b, r, time.date))
        {
            continue;
        }
        let entry_id = ask.entry.map_or("", |e| e.id.as_str());
        if own
            && !ctx
                .rules
                .text_fits(&text.to_lowercase(), time.date, entry_id)
        {
            continue;
        }
        // One "with" once: a record or value may say "with" too ("call with Mom").
        if one_with && text.split(' ').filter(|w| *w == "with").count() > 1 {
            continue;
        }
        // One town and one purpose: no "Landed in PDX … to visit Aisha in Seattle", no "… for a
        // maybe-someday trip for Dev's conference talk" (the audit's `place_conflict` and
        // `purpose_twice` rules).
        if towns_of(ctx, &text, &shown(phrasing, &chosen)).len() > 1 || purposes(&text) > 1 {
            continue;
        }
        // One person once: "Marco booked … after Marco's party" reads as two people.
        if ctx
            .people
            .iter()
            .any(|p| text.matches(p.as_str()).count() > 1)
        {
            continue;
        }
        // The clock and the words agree: no "after a long day" at 09:00.
        if !super::rules::fits_clock(&text, time.time.seconds() / 3600) {
            continue;
        }
        // A phrase drawn from the vocabulary may trip a guard (a companion who is the value a
        // counter-event must not name): draw again, and report the last failure if all do.
        if let Err(e) = check(ctx, ask, &text, &location, time, carry_own) {
            last = Some(e);
            continue;
        }
        let lower = text.to_lowercase();
        if let Some(o) = occasion(&lower) {
            if ctx.occasions.borrow().contains(&(t.app.clone(), o)) {
                spent = true;
                continue;
            }
        }
        let core = super::audit::core_text(&text, &ctx.decorations);
        let labels: Vec<String> = t
            .binds
            .iter()
            .zip(&chosen)
            .map(|(b, r)| ctx.cat.table(b.table).label(r).to_lowercase())
            .collect();
        let one_off = one_off_key(&core, &lower, &labels);
        if one_off
            .as_ref()
            .is_some_and(|k| ctx.one_offs.borrow().contains(&(t.app.clone(), k.clone())))
        {
            spent = true;
            continue;
        }
        if let Some(o) = occasion(&lower) {
            ctx.occasions.borrow_mut().insert((t.app.clone(), o));
        }
        if let Some(k) = one_off {
            ctx.one_offs.borrow_mut().insert((t.app.clone(), k));
        }
        for (table, id) in purchases {
            ctx.purchased.borrow_mut().insert((table, id.to_string()));
        }
        let id = ask.entry.map(|e| e.id.clone());
        return Ok(Some(Draft {
            time,
            app: t.app.clone(),
            location,
            text,
            supports: id.clone().filter(|_| ask.role == Role::Support),
            counters: id.filter(|_| ask.role == Role::Counter),
            category: match (ask.role, ask.entry) {
                (Role::Support | Role::Counter, Some(e)) => e.dimension.clone(),
                _ => "noise".into(),
            },
        }));
    }
    if let Some(e) = last {
        return Err(e);
    }
    if spent {
        return Ok(None);
    }
    let who = ask
        .entry
        .map_or("noise".to_string(), |e| format!("entry `{}`", e.id));
    Err(WorldError::Synthesis(format!(
        "{who}: no records fit the profile and the dates for \"{}\" in {} … {} ({ATTEMPTS} draws)",
        t.app, ask.window.0, ask.window.1
    )))
}

/// The capitalised words of the persona's `someone` list: the people noise twins are about.
fn people(persona: &Persona) -> Vec<String> {
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

/// The phrasing with one of its app's circumstances (" for Friday's catch-up") before its
/// trailing vocabulary phrase — for every event of the app, hers or not, so circumstances say
/// nothing about whose event it is; `None` when the template opts out, the app has none, or the
/// text opens with something other than an act ("Reminder: …", "Health recorded …"). A
/// circumstance that says "with" goes only where nothing else does (no "… with Dev with Sam"):
/// the flag says it was one, for the caller to check the rendered text.
fn situate(
    ctx: &Ctx<'_>,
    ask: &Ask<'_>,
    phrasing: &Template<Var>,
    wrap: Option<&Template<Var>>,
    chosen: &[&Record],
    rng: &mut Xoshiro256PlusPlus,
) -> Option<(Template<Var>, bool)> {
    let list = ctx.contexts.get(&ask.t.app)?;
    // A circumstance follows an act ("Booked …", "Texted …"), not a label ("Reminder: …").
    let opens_with_verb = match phrasing.segs.first() {
        Some(Seg::Text(t)) => t
            .split_whitespace()
            .next()
            .is_some_and(|w| super::rules::verb_like(&w.to_lowercase())),
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
    let fits: Vec<&Template<Var>> = list
        .iter()
        .filter(|c| !(says_with(c) && (companion || says_with(phrasing))))
        .filter(|c| {
            let said = literal(c);
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
    let with = says_with(c);
    let mut segs = phrasing.segs.clone();
    let at = match segs.last() {
        Some(Seg::Var(Var::Vocab(_), _)) => segs.len() - 1,
        _ => segs.len(),
    };
    segs.splice(at..at, c.segs.iter().cloned());
    Some((Template { segs }, with))
}

/// The words a template says whatever it is filled with (each placeholder as `X`).
fn literal(t: &Template<Var>) -> String {
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
fn shown<'r>(phrasing: &Template<Var>, chosen: &[&'r Record]) -> Vec<&'r Record> {
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
fn towns_of(ctx: &Ctx<'_>, text: &str, records: &[&Record]) -> Vec<usize> {
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
fn wrapped(
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

/// The value a decoy of `e` carries on `day`: for a shifted entry the other side's (someone
/// else still booking the cuisine she left, or already on the one she has not adopted yet), so
/// a reader counting mentions is misled and a careful one is not; otherwise the value in effect.
fn decoy_value(e: &ProfileEntry, day: Date) -> (&Value, &str) {
    match &e.shift {
        Some(s) if day < s.changed => (&e.value, e.mention.as_str()),
        Some(s) => (&s.from, s.from_mention.as_str()),
        None => (&e.value, e.mention.as_str()),
    }
}

/// The guards of an event's role, re-checked on the produced text.
fn check(
    ctx: &Ctx<'_>,
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
        if let Some(m) = ctx
            .guards
            .mentions
            .iter()
            .find(|m| mentions_lowered(&lower, m))
        {
            return Err(WorldError::Synthesis(format!(
                "noise \"{text}\" mentions profile value \"{m}\""
            )));
        }
    }
    check_leaks(&lower, &location.to_lowercase(), &ctx.guards, text)
}

/// The mention of the other side of an entry's shift on `day`.
fn other_side(e: &ProfileEntry, day: Date) -> Option<&str> {
    e.shift.as_ref().map(|s| {
        if day < s.changed {
            e.mention.as_str()
        } else {
            s.from_mention.as_str()
        }
    })
}

fn check_leaks(text_lower: &str, location_lower: &str, guards: &Guards, text: &str) -> Result<()> {
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
