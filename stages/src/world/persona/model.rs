//! The validated persona: identity, places, the hidden profile (with shifts and evidence
//! templates), ask-only situational facts and noise templates.

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value;

use crate::world::clock::{Date, DateTime};
use crate::world::template::Template;
use crate::world::types::TableId;

/// The 13 profile dimensions of iPrefBench (§C.2); authored personas must use these.
pub const DIMENSIONS: [&str; 13] = [
    "dining",
    "food",
    "shopping",
    "travel",
    "transport",
    "schedule",
    "communication",
    "social",
    "entertainment",
    "health_fitness",
    "finance",
    "home",
    "work",
];

/// One simulated user.
#[derive(Debug, Clone)]
pub struct Persona {
    /// Stable id (file stem).
    pub id: String,
    /// Full name.
    pub name: String,
    /// Age in years.
    pub age: u32,
    /// Home city.
    pub city: String,
    /// Job.
    pub occupation: String,
    /// A few sentences for the user simulator.
    pub summary: String,
    /// First day of history.
    pub start: Date,
    /// Last day of history (inclusive).
    pub end: Date,
    /// The episode clock's default.
    pub now: DateTime,
    /// Named places (`home`, `work`, …) and the location label events show.
    pub places: IndexMap<String, String>,
    /// Free-text routines for the user simulator.
    pub routines: Vec<String>,
    /// The hidden profile.
    pub profile: Vec<ProfileEntry>,
    /// Ask-only facts that must never appear in history.
    pub situational: Vec<SituationalFact>,
    pub(crate) noise: Vec<EventTemplate>,
    /// Phrase lists templates draw from (`{vocab.<name>}`), in file order.
    pub(crate) vocab: Vec<Vec<Template<Var>>>,
    /// The names of the `vocab` lists, in the same order.
    pub(crate) vocab_names: Vec<String>,
    /// Circumstances per app, one added to each of her own events from that app.
    pub(crate) contexts: IndexMap<String, Vec<Context>>,
    /// Public holidays: no workday falls on one.
    pub(crate) holidays: Vec<Date>,
    /// Ways to wrap an event as someone else's, mere browsing or a one-off (noise twins), or as
    /// plainly hers (signal), in file order; evidence templates name the ones that fit them.
    pub(crate) constructions: Vec<Construction>,
    /// Towns away from home, each as its names (the town first, then airport codes and short
    /// forms): a circumstance may not name a town other than the one its event is about
    /// (`rules::towns_named`).
    pub(crate) towns: Vec<Vec<String>>,
}

/// A surface construction shared by noise and signal, so that no phrase tells the two apart: a
/// noise twin of an evidence event wraps it in a `noise` form ("For Marco: booked …") and carries
/// another value; a share of her own events wraps in a `signal` form ("For Sam and me: booked …").
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Construction {
    /// The name templates list under `twins`.
    pub name: String,
    /// Forms that make the event not hers (someone else's, not bought, a one-off).
    pub noise: Vec<Template<Var>>,
    /// Forms that keep the event hers.
    pub signal: Vec<Template<Var>>,
    /// Forms that fit her own designed exceptions (counter-evidence is a one-off too), so the
    /// words of noise forms occur in signal.
    pub counter: Vec<Template<Var>>,
}

/// Another value of an entry's kind (a different size, cuisine, seat), carried by noise twins.
#[derive(Debug, Clone, PartialEq)]
pub struct OtherValue {
    /// The value (bindings filter with it in place of `$value`).
    pub value: Value,
    /// The phrase that shows it (in place of `{mention}`).
    pub mention: String,
}

/// Whether history can reveal an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// History evidences it.
    Inferable,
    /// Only the user can say it.
    AskOnly,
    /// Imported profiles (KnowU) that do not say.
    Unspecified,
}

impl Source {
    /// The YAML/table spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Inferable => "inferable",
            Source::AskOnly => "ask_only",
            Source::Unspecified => "unspecified",
        }
    }
}

/// One fact about the user.
#[derive(Debug, Clone)]
pub struct ProfileEntry {
    /// Unique id, referenced by history `supports` and by task slots.
    pub id: String,
    /// One of [`DIMENSIONS`] (imported personas may use their own).
    pub dimension: String,
    /// What the fact is about, e.g. `favourite_cuisine`.
    pub key: String,
    /// The current value.
    pub value: Value,
    /// The phrase that reveals the current value in history text.
    pub mention: String,
    /// Inferable or ask-only.
    pub source: Source,
    /// An earlier value, if the preference changed during the history window.
    pub shift: Option<Shift>,
    /// Relative share of signal events beyond the minimum.
    pub weight: f64,
    /// Author's note for reviewers.
    pub note: String,
    pub(crate) evidence: Vec<EventTemplate>,
    /// Designed counter-evidence templates (events labelled signal, listed in `counters`).
    pub(crate) counter: Vec<EventTemplate>,
    /// Noise templates that look like this entry's evidence.
    pub(crate) decoys: Vec<EventTemplate>,
    /// Other values of the entry's kind that noise twins of its evidence carry: someone else's
    /// choice, a browsed alternative, a one-off.
    pub others: Vec<OtherValue>,
}

/// A preference change: `from` held until the day before `changed`.
#[derive(Debug, Clone, PartialEq)]
pub struct Shift {
    /// The earlier value.
    pub from: Value,
    /// The phrase that reveals the earlier value.
    pub from_mention: String,
    /// The first day the current value holds.
    pub changed: Date,
}

/// A situational, ask-only fact (e.g. the party size of one dinner).
#[derive(Debug, Clone)]
pub struct SituationalFact {
    /// Unique id, referenced by task slots.
    pub id: String,
    /// What it is about.
    pub key: String,
    /// The value the user would give.
    pub value: Value,
    /// Human description of the situation.
    pub about: String,
    /// Phrases that would leak the value; none may appear in history.
    pub leaks: Vec<String>,
}

/// Which side of a shift a template is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    /// Before the change date (earlier value).
    Before,
    /// On or after the change date (current value).
    After,
}

/// A placeholder in an event template.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Var {
    /// The value in effect at the event's time.
    Value,
    /// The mention in effect at the event's time.
    Mention,
    /// A bound record's label (its title field, else id).
    Label(usize),
    /// A bound record's field.
    Field(usize, usize),
    /// A bound record's id.
    Id(usize),
    /// The event's day of the week (`Monday` …).
    Weekday,
    /// The event's part of the day (`morning`, `afternoon`, `evening`, `night`).
    Daypart,
    /// One phrase of a persona vocabulary list, picked per event.
    Vocab(usize),
    /// The wrapped event's text without its trailing vocabulary phrase (only in a
    /// construction's forms).
    Event,
    /// The wrapped event's trailing vocabulary phrase (" with Priya", " on Tuesday"), where a
    /// form places it (dropped otherwise).
    Tail,
}

/// What a binding filter compares against.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Want {
    /// A constant.
    Lit(Value),
    /// The value in effect.
    Value,
    /// A field (or id, `None`) of an earlier binding's record.
    Bound(usize, Option<usize>),
}

/// A named draw of one app record.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Binding {
    pub name: String,
    pub table: TableId,
    /// Field index (`None` = id) and wanted value; list fields match by membership.
    pub filters: Vec<(Option<usize>, Want)>,
}

/// Where an event happened.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum At {
    /// A fixed label (from `places`).
    Label(String),
    /// A template over bindings.
    Template(Template<Var>),
}

/// A history-event template.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EventTemplate {
    pub app: String,
    pub at: At,
    /// Phrasings of the event; one is picked per event (the first is `text`).
    pub texts: Vec<Template<Var>>,
    /// At most one event from this template.
    pub once: bool,
    /// Hour window [from, to).
    pub hours: (u32, u32),
    pub period: Option<Period>,
    pub binds: Vec<Binding>,
    /// Constructions (indices into [`Persona::constructions`]) that fit this evidence event:
    /// its noise twins wrap in their noise forms, a share of its events in their signal forms.
    pub twins: Vec<usize>,
    /// Whether the app's contexts ([`Persona::contexts`]) are added to its events.
    pub context: bool,
    /// The days its events happen on.
    pub days: Days,
    /// The scene of its act: circumstances of a scene join only its acts.
    pub scene: Option<String>,
}

/// One circumstance of an app's events ([`Persona::contexts`]), typed like a companion: the
/// days it can be told on and the scene of the acts it fits.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Context {
    /// The phrase (" after standup").
    pub text: Template<Var>,
    /// The days an event it joins falls on.
    pub days: Days,
    /// The scene of the acts it fits ([`EventTemplate::scene`]); any act when `None`.
    pub scene: Option<String>,
}

/// The days of the week an event may fall on, so work is told on workdays and "a run on Sunday
/// morning" on a Sunday: bit 0 is Monday … bit 6 Sunday; `workday` also refuses the persona's
/// holidays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Days {
    /// Allowed days of the week, bit 0 = Monday.
    pub mask: u8,
    /// Whether a public holiday is refused.
    pub workday: bool,
}

impl Days {
    /// Every day.
    pub const ANY: Days = Days {
        mask: 0x7f,
        workday: false,
    };
    /// Monday to Friday, not a holiday.
    pub const WORKDAYS: Days = Days {
        mask: 0x1f,
        workday: true,
    };

    /// The days both allow.
    pub fn and(self, other: Days) -> Days {
        Days {
            mask: self.mask & other.mask,
            workday: self.workday || other.workday,
        }
    }

    /// Whether `day` is one of them.
    pub fn allows(self, day: Date, holidays: &[Date]) -> bool {
        self.mask & (1 << day.weekday()) != 0 && !(self.workday && holidays.contains(&day))
    }

    /// The days of `[from, to]` it allows.
    pub fn within(self, from: Date, to: Date, holidays: &[Date]) -> Vec<Date> {
        (0..=from.days_until(to).max(-1))
            .map(|i| from.add_days(i))
            .filter(|d| self.allows(*d, holidays))
            .collect()
    }
}

impl Persona {
    /// Looks a profile entry up by id.
    pub fn entry(&self, id: &str) -> Option<&ProfileEntry> {
        self.profile.iter().find(|e| e.id == id)
    }

    /// Number of noise templates.
    pub fn noise_template_count(&self) -> usize {
        self.noise.len()
    }
}

impl ProfileEntry {
    /// The value in effect on `day`.
    pub fn value_on(&self, day: Date) -> &Value {
        match &self.shift {
            Some(s) if day < s.changed => &s.from,
            _ => &self.value,
        }
    }

    /// The mention in effect on `day`.
    pub fn mention_on(&self, day: Date) -> &str {
        match &self.shift {
            Some(s) if day < s.changed => &s.from_mention,
            _ => &self.mention,
        }
    }

    /// Number of evidence templates.
    pub fn evidence_template_count(&self) -> usize {
        self.evidence.len()
    }

    /// Number of counter-evidence templates.
    pub fn counter_template_count(&self) -> usize {
        self.counter.len()
    }
}
