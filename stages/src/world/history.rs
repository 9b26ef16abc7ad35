//! History synthesis: a deterministic, seeded stream of natural-language phone-activity events
//! that evidences every inferable profile entry (≥ `min_per_entry` events each, per side of a
//! shift), mixes in noise that evidences nothing, and never reveals an ask-only value. Every
//! guarantee is re-checked on the produced text, so a violation is an error, not silent data.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::app::Catalog;
use super::clock::{Date, DateTime, Time};
use super::error::{Result, WorldError};
use super::persona::text::mentions_lowered;
use super::persona::{
    choose, leak_phrases, render, render_at, EventTemplate, Period, Persona, ProfileEntry, Source,
};

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

/// An event before ids are assigned.
struct Draft {
    time: DateTime,
    app: String,
    location: String,
    text: String,
    supports: Option<String>,
    category: String,
}

/// Lower-cased phrases to test texts against, computed once.
struct Guards {
    leaks: Vec<String>,
    mentions: Vec<String>,
}

/// Synthesizes the history of `persona`.
pub fn synthesize(
    cat: &Catalog,
    persona: &Persona,
    params: &HistoryParams,
) -> Result<Vec<HistoryEvent>> {
    let entries: Vec<(usize, &ProfileEntry)> = persona
        .profile
        .iter()
        .enumerate()
        .filter(|(_, e)| e.source == Source::Inferable)
        .collect();
    let (n_signal, n_noise) = split_counts(persona, params, &entries)?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(params.seed);
    let counts = allocate(&entries, n_signal, params.min_per_entry, &mut rng);
    let guards = guards(persona);
    let mut drafts = Vec::with_capacity(params.events);
    for (&(_, entry), &count) in entries.iter().zip(&counts) {
        signal_events(
            cat,
            persona,
            entry,
            count,
            params.min_per_entry,
            &guards,
            &mut rng,
            &mut drafts,
        )?;
    }
    for _ in 0..n_noise {
        drafts.push(noise_event(cat, persona, &guards, &mut rng)?);
    }
    Ok(finish(drafts))
}

fn split_counts(
    persona: &Persona,
    params: &HistoryParams,
    entries: &[(usize, &ProfileEntry)],
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
        .map(|(_, e)| params.min_per_entry * sides(e))
        .sum();
    if n_signal < needed {
        return Err(WorldError::Synthesis(format!("{n_signal} signal events cannot give {} inferable entries {} events each ({needed} needed); raise `events` or lower `noise`", entries.len(), params.min_per_entry)));
    }
    if n_signal > 0 && entries.is_empty() {
        return Err(WorldError::Synthesis(
            "signal events requested but the persona has no inferable entries".into(),
        ));
    }
    if n_noise > 0 && persona.noise_template_count() == 0 {
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

/// Events per entry: the minimum, plus the remainder drawn in proportion to entry weights.
fn allocate(
    entries: &[(usize, &ProfileEntry)],
    n_signal: usize,
    min: usize,
    rng: &mut Xoshiro256PlusPlus,
) -> Vec<usize> {
    let mut counts: Vec<usize> = entries.iter().map(|(_, e)| min * sides(e)).collect();
    let mut cumulative = Vec::with_capacity(entries.len());
    let mut total = 0.0;
    for (_, e) in entries {
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

#[allow(clippy::too_many_arguments)]
fn signal_events(
    cat: &Catalog,
    persona: &Persona,
    e: &ProfileEntry,
    count: usize,
    min: usize,
    guards: &Guards,
    rng: &mut Xoshiro256PlusPlus,
    out: &mut Vec<Draft>,
) -> Result<()> {
    let windows: Vec<(Option<Period>, Date, Date, usize)> = match &e.shift {
        None => vec![(None, persona.start, persona.end, count)],
        Some(s) => {
            let before_days = persona.start.days_until(s.changed) as f64;
            let total_days = persona.start.days_until(persona.end) as f64 + 1.0;
            let before = ((count as f64 * before_days / total_days).round() as usize)
                .clamp(min, count - min);
            vec![
                (
                    Some(Period::Before),
                    persona.start,
                    s.changed.add_days(-1),
                    before,
                ),
                (Some(Period::After), s.changed, persona.end, count - before),
            ]
        }
    };
    for (period, from, to, n) in windows {
        let templates: Vec<&EventTemplate> = e
            .evidence
            .iter()
            .filter(|t| period.is_none() || t.period.is_none() || t.period == period)
            .collect();
        if templates.is_empty() {
            return Err(WorldError::Synthesis(format!(
                "entry `{}` has no evidence template for this period",
                e.id
            )));
        }
        let offset = rng.random_range(0..templates.len());
        for i in 0..n {
            let t = templates[(offset + i) % templates.len()];
            let time = random_time(rng, from, to, t.hours);
            out.push(render_signal(cat, e, t, time, guards, rng)?);
        }
    }
    Ok(())
}

fn render_signal(
    cat: &Catalog,
    e: &ProfileEntry,
    t: &EventTemplate,
    time: DateTime,
    guards: &Guards,
    rng: &mut Xoshiro256PlusPlus,
) -> Result<Draft> {
    let (value, mention) = (e.value_on(time.date), e.mention_on(time.date));
    let chosen = choose(cat, &t.binds, value, &mut |n| rng.random_range(0..n)).map_err(|b| {
        WorldError::Synthesis(format!(
            "entry `{}`: binding {b} matches no record for {value}",
            e.id
        ))
    })?;
    let text = render(cat, &t.text, &t.binds, &chosen, value, mention);
    let location = render_at(cat, t, &chosen, value, mention);
    let lower = text.to_lowercase();
    if !mentions_lowered(&lower, &mention.to_lowercase()) {
        return Err(WorldError::Synthesis(format!(
            "entry `{}`: \"{text}\" does not mention \"{mention}\"",
            e.id
        )));
    }
    if let Some(other) = e.shift.as_ref().map(|s| {
        if time.date < s.changed {
            &e.mention
        } else {
            &s.from_mention
        }
    }) {
        if mentions_lowered(&lower, &other.to_lowercase()) {
            return Err(WorldError::Synthesis(format!(
                "entry `{}`: \"{text}\" mentions the other side of its shift",
                e.id
            )));
        }
    }
    check_leaks(&lower, &location.to_lowercase(), guards, &text)?;
    Ok(Draft {
        time,
        app: t.app.clone(),
        location,
        text,
        supports: Some(e.id.clone()),
        category: e.dimension.clone(),
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

fn noise_event(
    cat: &Catalog,
    persona: &Persona,
    guards: &Guards,
    rng: &mut Xoshiro256PlusPlus,
) -> Result<Draft> {
    let t = &persona.noise[rng.random_range(0..persona.noise.len())];
    let time = random_time(rng, persona.start, persona.end, t.hours);
    let chosen = choose(cat, &t.binds, &Value::Null, &mut |n| rng.random_range(0..n))
        .map_err(|_| WorldError::Synthesis("a noise binding matches no record".into()))?;
    let text = render(cat, &t.text, &t.binds, &chosen, &Value::Null, "");
    let location = render_at(cat, t, &chosen, &Value::Null, "");
    let lower = text.to_lowercase();
    if let Some(m) = guards.mentions.iter().find(|m| mentions_lowered(&lower, m)) {
        return Err(WorldError::Synthesis(format!(
            "noise \"{text}\" mentions profile value \"{m}\""
        )));
    }
    check_leaks(&lower, &location.to_lowercase(), guards, &text)?;
    Ok(Draft {
        time,
        app: t.app.clone(),
        location,
        text,
        supports: None,
        category: "noise".into(),
    })
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
            label: if d.supports.is_some() {
                Label::Signal
            } else {
                Label::Noise
            },
            category: d.category,
            supports: d.supports.into_iter().collect(),
            counters: Vec::new(),
        })
        .collect()
}

#[cfg(test)]
mod tests;
