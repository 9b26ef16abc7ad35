//! The persona YAML schema exactly as written (serde types with spans); lowered by `load.rs`.

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::Spanned;

/// One `datasets/personas/<id>.yaml` file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPersona {
    pub persona: Spanned<String>,
    pub name: String,
    pub age: u32,
    pub city: String,
    pub occupation: String,
    #[serde(default)]
    pub summary: String,
    pub history: RawWindow,
    pub now: Spanned<String>,
    pub places: IndexMap<String, Spanned<RawPlace>>,
    #[serde(default)]
    pub routines: Vec<String>,
    pub profile: Vec<Spanned<RawEntry>>,
    #[serde(default)]
    pub situational: Vec<Spanned<RawSituational>>,
    #[serde(default)]
    pub noise: Vec<Spanned<RawTemplate>>,
    /// Named lists of phrases (`{vocab.with}` picks one per event): companions, moments, asides.
    #[serde(default)]
    pub vocab: IndexMap<String, Vec<Spanned<String>>>,
    /// Circumstances of an event, per app (`dinespot: [" for Friday's catch-up", …]`): one is
    /// added to each of her own events from that app (and to their noise twins), so one habit is
    /// told in many situations.
    #[serde(default)]
    pub contexts: IndexMap<String, Vec<Spanned<RawContext>>>,
    /// Public holidays in the history window (`YYYY-MM-DD`): no workday falls on one.
    #[serde(default)]
    pub holidays: Vec<Spanned<String>>,
    /// Named surface constructions (someone else's, browsing, a one-off) that evidence templates
    /// list under `twins`.
    #[serde(default)]
    pub constructions: IndexMap<String, Spanned<RawConstruction>>,
    /// Towns away from home that texts and records name, each with its other names (airport
    /// codes, short forms): an event names at most one.
    #[serde(default)]
    pub towns: IndexMap<String, Vec<String>>,
}

/// One construction: forms wrapping an event (`{event}`) for noise twins and for her own events.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConstruction {
    #[serde(default)]
    pub noise: Vec<Spanned<String>>,
    #[serde(default)]
    pub signal: Vec<Spanned<String>>,
    /// Forms for her own designed exceptions (counter-evidence).
    #[serde(default)]
    pub counter: Vec<Spanned<String>>,
}

/// A named place: the label events show, and the hours events there usually happen.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPlace {
    pub label: String,
    pub hours: Option<Spanned<(u32, u32)>>,
    /// The days events there happen on (`workdays`, `weekends`, or `[tue, thu]`); any by default.
    pub days: Option<Spanned<RawDays>>,
}

/// Days of the week, as a name (`any`, `workdays`, `weekends`) or a list of day abbreviations
/// (`[sat, sun]`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum RawDays {
    /// `any`, `workdays` (Monday to Friday, not a holiday) or `weekends`.
    Named(String),
    /// Day abbreviations: `mon` … `sun`.
    List(Vec<String>),
}

/// One circumstance of an app's events: a phrase, or a phrase with the days it can be told on
/// and the scene of the acts it fits.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum RawContext {
    /// A phrase that fits any act of the app on any day.
    Plain(String),
    /// A typed phrase.
    Typed(RawTypedContext),
}

/// A circumstance with its days and scene: " after standup" happens on a workday; " once Jordan
/// approved expenses" fits only an act of the `expenses` scene.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTypedContext {
    pub text: String,
    pub days: Option<RawDays>,
    /// The scene of the acts it fits (a template's `scene`); any act when absent.
    pub scene: Option<String>,
}

impl RawContext {
    /// The phrase.
    pub fn text(&self) -> &str {
        match self {
            RawContext::Plain(t) => t,
            RawContext::Typed(t) => &t.text,
        }
    }
}

/// The history window.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWindow {
    pub start: Spanned<String>,
    pub end: Spanned<String>,
}

/// A hidden profile entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEntry {
    pub id: Spanned<String>,
    pub dimension: Spanned<String>,
    pub key: String,
    pub value: Spanned<Value>,
    pub mention: Option<Spanned<String>>,
    pub source: Option<Spanned<String>>,
    pub shift: Option<Spanned<RawShift>>,
    pub weight: Option<f64>,
    #[serde(default)]
    pub note: String,
    #[serde(default)]
    pub bind: IndexMap<String, Spanned<RawBind>>,
    #[serde(default)]
    pub evidence: Vec<Spanned<RawTemplate>>,
    /// Designed minority counter-evidence: exceptions a careful reader outweighs.
    #[serde(default)]
    pub counter: Vec<Spanned<RawTemplate>>,
    /// Noise that looks like this entry's signal: its apps, records and even its value in a
    /// non-preference context (someone else's booking, browsing alternatives).
    #[serde(default)]
    pub decoys: Vec<Spanned<RawTemplate>>,
    /// Other values of the entry's kind for noise twins: a scalar (its mention derived from the
    /// entry's) or `{ value, mention }`.
    #[serde(default)]
    pub others: Vec<Spanned<Value>>,
}

/// An earlier value and the day the preference changed.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawShift {
    pub from: Spanned<Value>,
    pub from_mention: Option<String>,
    pub changed: Spanned<String>,
}

/// A named draw of one app record, filtered by field values.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawBind {
    pub from: Spanned<String>,
    #[serde(default, rename = "where")]
    pub filter: IndexMap<String, Spanned<Value>>,
}

/// A history-event template (evidence or noise).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTemplate {
    pub app: Spanned<String>,
    pub at: Spanned<String>,
    pub text: Spanned<String>,
    /// Further phrasings of the same event; each event picks one of `text` and these.
    #[serde(default)]
    pub phrasings: Vec<Spanned<String>>,
    /// The event happens at most once in the history (a birthday dinner, a renewal).
    #[serde(default)]
    pub once: bool,
    pub hours: Option<Spanned<(u32, u32)>>,
    pub period: Option<Spanned<String>>,
    #[serde(default)]
    pub bind: IndexMap<String, Spanned<RawBind>>,
    /// Constructions that fit this evidence event (noise twins and framed signal).
    #[serde(default)]
    pub twins: Vec<Spanned<String>>,
    /// Whether the app's `contexts` are added to this template's events (default true; `false`
    /// for texts a circumstance does not fit).
    #[serde(default)]
    pub context: Option<bool>,
    /// The days its events happen on (else its place's, else any): a commute on a workday, "a
    /// 10 km run on Sunday morning" on a Sunday.
    pub days: Option<Spanned<RawDays>>,
    /// The scene of its act (`expenses`, …): circumstances of a scene join only its acts.
    pub scene: Option<String>,
}

/// An ask-only fact about one situation.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSituational {
    pub id: Spanned<String>,
    pub key: String,
    pub value: Value,
    #[serde(default)]
    pub about: String,
    #[serde(default)]
    pub leaks: Vec<String>,
}
