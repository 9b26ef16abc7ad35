//! What one draw is asked for and what it yields: an event's role, the ask (template, entry,
//! role, day window) and the draft before ids are assigned; and the shares that set how many
//! events of each role are asked for.

use crate::world::clock::{Date, DateTime};
use crate::world::persona::{EventTemplate, ProfileEntry};

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
pub(super) const ATTEMPTS: usize = 64;

/// What an event is to the entry it was drawn for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
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
pub(super) struct Draft {
    pub(super) time: DateTime,
    pub(super) app: String,
    pub(super) location: String,
    pub(super) text: String,
    pub(super) supports: Option<String>,
    pub(super) counters: Option<String>,
    pub(super) category: String,
}

/// One event to draw: the template, the entry it is drawn for, its role and its day window (one
/// side of a shift at most, so the value in effect is fixed).
pub(super) struct Ask<'a> {
    pub(super) t: &'a EventTemplate,
    pub(super) entry: Option<&'a ProfileEntry>,
    pub(super) role: Role,
    pub(super) window: (Date, Date),
    /// A noise twin of the evidence template `t`: wrapped in a noise construction, carrying
    /// another value.
    pub(super) twin: bool,
}
