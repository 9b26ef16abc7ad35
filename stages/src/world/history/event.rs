//! What history synthesis produces, and the knobs that steer it: the events (signal or noise)
//! and their parameters. Every module of the synthesis and its callers share these.

use serde::{Deserialize, Serialize};

use crate::world::clock::DateTime;

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
