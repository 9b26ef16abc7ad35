//! How many events of each kind, and on which days: the counts per entry, counter shares and
//! the day windows of shifted entries.

use rand::rngs::Xoshiro256PlusPlus;
use rand::RngExt;

use super::ask::{COUNTER_SHARE, MIN_WITH_COUNTER};
use super::event::HistoryParams;
use crate::world::clock::{Date, DateTime, Time};
use crate::world::error::{Result, WorldError};
use crate::world::persona::{Days, EventTemplate, Period, Persona, ProfileEntry};

pub(super) fn split_counts(
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

pub(super) fn sides(e: &ProfileEntry) -> usize {
    if e.shift.is_some() {
        2
    } else {
        1
    }
}

/// Fewest events of an entry: `min` supporting ones per side of a shift, and room for one
/// counter-event that stays within 20% when the entry has counter templates.
pub(super) fn minimum(e: &ProfileEntry, min: usize) -> usize {
    let base = min * sides(e);
    if e.counter.is_empty() {
        base
    } else {
        (base * 5).div_ceil(4).max(MIN_WITH_COUNTER)
    }
}

/// Counter-events among an entry's `n` events: [`COUNTER_SHARE`], kept within 10–20%.
pub(super) fn counter_count(e: &ProfileEntry, n: usize) -> usize {
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
pub(super) fn allocate(
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

/// A day in `[from, to]` that `days` allows (`None` when none does) and a time within the
/// template's hour window.
pub(super) fn random_time(
    rng: &mut Xoshiro256PlusPlus,
    (from, to): (Date, Date),
    hours: (u32, u32),
    days: Days,
    holidays: &[Date],
) -> Option<DateTime> {
    let date = random_day(rng, (from, to), days, holidays)?;
    let secs = rng.random_range(hours.0 * 3600..hours.1 * 3600);
    Some(DateTime {
        date,
        time: Time::from_seconds(secs / 60 * 60),
    })
}

/// A day in `[from, to]` that `days` allows, `None` when none does.
pub(super) fn random_day(
    rng: &mut Xoshiro256PlusPlus,
    (from, to): (Date, Date),
    days: Days,
    holidays: &[Date],
) -> Option<Date> {
    if days == Days::ANY {
        let span = from.days_until(to).max(0);
        return Some(from.add_days(rng.random_range(0..=span)));
    }
    let fit = days.within(from, to, holidays);
    (!fit.is_empty()).then(|| fit[rng.random_range(0..fit.len())])
}

/// The day windows of an entry: the whole history, or each side of its shift.
pub(super) fn windows(persona: &Persona, e: &ProfileEntry) -> Vec<(Option<Period>, Date, Date)> {
    match &e.shift {
        None => vec![(None, persona.start, persona.end)],
        Some(s) => vec![
            (Some(Period::Before), persona.start, s.changed.add_days(-1)),
            (Some(Period::After), s.changed, persona.end),
        ],
    }
}

/// Templates that fit one side of a shift.
pub(super) fn for_period(
    templates: &[EventTemplate],
    period: Option<Period>,
) -> Vec<&EventTemplate> {
    templates
        .iter()
        .filter(|t| period.is_none() || t.period.is_none() || t.period == period)
        .collect()
}

/// A window for a template that may fall on either side of a shift: the template's period, else
/// a side drawn in proportion to its days.
pub(super) fn side_window(
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

/// How many of an entry's `supporting` events fall on each side of its shift: in proportion to
/// the days of each side, at least `min` on each.
pub(super) fn per_window(
    persona: &Persona,
    e: &ProfileEntry,
    supporting: usize,
    min: usize,
) -> Vec<usize> {
    match &e.shift {
        None => vec![supporting],
        Some(s) => {
            let before_days = persona.start.days_until(s.changed) as f64;
            let total_days = persona.start.days_until(persona.end) as f64 + 1.0;
            let before = ((supporting as f64 * before_days / total_days).round() as usize)
                .clamp(min, supporting - min);
            vec![before, supporting - before]
        }
    }
}
