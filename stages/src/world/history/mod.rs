//! History synthesis: a deterministic, seeded stream of natural-language phone-activity events
//! that evidences every inferable profile entry (≥ `min_per_entry` events each, per side of a
//! shift), mixes in noise that evidences nothing, and never reveals an ask-only value. Every
//! guarantee is re-checked on the produced text, so a violation is an error, not silent data.

mod ask;
mod constraints;
mod context;
mod draw;
mod event;
mod plan;
mod select;
mod situate;

use rand::rngs::Xoshiro256PlusPlus;
use rand::SeedableRng;

pub use ask::{
    COUNTER_FRAMED, COUNTER_SHARE, COUNTER_TWIN_SHARE, DECOY_SHARE, MIN_WITH_COUNTER,
    SIGNAL_FRAMED, TWIN_OWN_SHARE, TWIN_SHARE,
};
pub use event::{HistoryEvent, HistoryParams, Label};

use super::app::Catalog;
use super::error::Result;
use super::persona::{Persona, ProfileEntry, Source};
use ask::Draft;
use context::Ctx;
use plan::{allocate, split_counts};
use select::{entry_events, noise_events};

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
