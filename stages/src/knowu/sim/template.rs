//! KnowU-style task templates (`datasets/knowu/templates/*.yaml`). One template is one KnowU task
//! class; instantiated for each persona it needs sections of. A personalized template may carry
//! an explicit general twin. Proactive templates name the habit keys that decide the right
//! behaviour, the situation the phone starts in, and the action the habit asks for.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::world::phone::DataEdit;

pub use crate::knowu::interop::tasks::PREFFLOW_PREFIX;

/// One template file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateFile {
    /// Its templates.
    pub templates: Vec<Template>,
}

/// One KnowU task class.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Template {
    /// KnowU class name (`TakeoutRemarkPreferenceTask`); task ids are `<id>@<persona>`.
    pub id: String,
    /// `knowu` (default): a class of KnowU-Bench's task list, comparable with its results;
    /// `prefflow`: a class only prefflow has, whose id (and twin's) must start with `Prefflow`
    /// so it is never mistaken for a KnowU class, and which is kept apart from KnowU-comparable
    /// numbers and exports.
    #[serde(default)]
    pub origin: Origin,
    /// general | personalized | proactive.
    pub split: Split,
    /// easy | hard.
    pub difficulty: Difficulty,
    /// What the user says (personalized: vague; general: explicit). `{value}` is the
    /// preference's text, `{name}` the persona's name. Proactive templates leave it out: the
    /// instruction is the situation.
    #[serde(default)]
    pub instruction: String,
    /// Profile sections (dotted paths below `user_profile`) the template needs; a persona
    /// lacking one is skipped with that section named.
    #[serde(default)]
    pub requires: Vec<String>,
    /// What makes the task not fit a persona although she has the sections (a retiree has no
    /// team to tell she is off sick; someone who avoids ride-hailing gets no taxi plan): a
    /// persona whose profile says one of these is skipped, with the rule's `why` and the
    /// text that said it.
    #[serde(default)]
    pub unfit: Vec<Unfit>,
    /// What the preference is about; found in the persona's profile by meaning
    /// ([`super::matching`]).
    #[serde(default)]
    pub preference: Option<PreferenceSpec>,
    /// Places the task goes between, found among the persona's own `locations`, by name
    /// (`dest`, `origin`): `{dest:label}` / `{dest:address}` / `{dest:key}` fill in the place
    /// found. The first rule that applies to the persona decides; a persona with none of its
    /// places is skipped (a retiree's trip is never to a default "Work").
    #[serde(default)]
    pub places: std::collections::BTreeMap<String, Vec<PlaceRule>>,
    /// Personalized: when the persona's preference holds only under a condition (`X only if
    /// Y`) that the instruction does not state, and nothing else of it is checkable there, this
    /// sentence (`{when}`: the condition, as her profile words it) is added to the instruction,
    /// so the situation makes her condition hold and X is what she wants.
    #[serde(default)]
    pub on_condition: Option<String>,
    /// The explicit general twin of a personalized template.
    #[serde(default)]
    pub twin: Option<Twin>,
    /// General / personalized: app data the task sets up first, as KnowU's
    /// `initialize_task_hook` does (the contact to write to, the cart to clean up, the files to
    /// sort); `{value}`, `{pref}` and `{name}` are filled in.
    #[serde(default)]
    pub plant: Vec<DataEdit>,
    /// Phone actions (the JSON of `world::phone::Action`) that do it for this persona;
    /// `{value}` / `{name}` are filled in. Proactive: the action the habit asks for.
    pub solution: Vec<Value>,
    /// What an agent that never personalizes does instead (personalized templates).
    #[serde(default)]
    pub plain: Option<Vec<Value>>,
    /// The rule check that the effect exists (a predicate, `docs/tasks.md`).
    pub effect: Value,
    /// The record field whose text the preference part is judged on (personalized).
    #[serde(default)]
    pub judged: Option<Judged>,
    /// Proactive: KnowU's habit keys for this class (its metrics' `ROUTINE_HABIT_KEY_MAP`, the
    /// `habit_keys` of tasks.csv), which decide the need / noneed bucket.
    #[serde(default)]
    pub habit_keys: Vec<String>,
    /// Proactive: the keys the KnowU task itself checks to decide act vs stay silent, when they
    /// differ from `habit_keys` (WeekendSleeper checks `weekend_sleeper` only); default
    /// `habit_keys`.
    #[serde(default)]
    pub acts_on: Option<Vec<String>>,
    /// Proactive: what the habit says, for personas that hold it under another key: every group
    /// (alternatives separated by `|`) must occur in the habit's key or text.
    #[serde(default)]
    pub habit_means: Vec<String>,
    /// Proactive: whether the action needs the user's consent first (sending on their behalf).
    #[serde(default)]
    pub consent_required: bool,
    /// Proactive: the consent question the reference agent asks.
    #[serde(default)]
    pub question: Option<String>,
    /// Proactive: the situation.
    #[serde(default)]
    pub situation: Option<SituationSpec>,
}

/// Where a template's class comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// A KnowU-Bench class.
    #[default]
    Knowu,
    /// A class only prefflow has.
    Prefflow,
}

/// What a preference is about, matched against any persona's keys ([`super::matching`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreferenceSpec {
    /// Profile sections searched, in order (`preferences.diet`, `social_graph`).
    #[serde(rename = "in")]
    pub sections: Vec<String>,
    /// Key phrases, most specific first (`delivery remark`, `special notes`).
    pub about: Vec<String>,
    /// Only inside an entry (a mapping) one of whose values names one of these words, e.g. the
    /// social-graph contact `Mom`.
    #[serde(default)]
    pub entry: Vec<String>,
    /// Words a question about it contains (the simulated user answers those).
    #[serde(default)]
    pub keywords: Vec<String>,
}

impl Template {
    /// The keys deciding act vs silent: `acts_on`, else `habit_keys`.
    pub fn decisive_keys(&self) -> &[String] {
        self.acts_on.as_deref().unwrap_or(&self.habit_keys)
    }

    /// Whether the class is one of KnowU-Bench's.
    pub fn in_knowu(&self) -> bool {
        self.origin == Origin::Knowu
    }

    /// A prefflow-only class must say so in its name (and its twin's).
    fn check_origin(&self) -> Result<(), String> {
        let names = std::iter::once(&self.id).chain(self.twin.as_ref().map(|t| &t.id));
        match self.origin {
            Origin::Prefflow => match names.into_iter().find(|n| !n.starts_with(PREFFLOW_PREFIX)) {
                Some(n) => Err(format!(
                    "template `{}` has `origin: prefflow`, so class `{n}` must start with `{PREFFLOW_PREFIX}` (prefflow-only classes are named so they are never mistaken for KnowU's)",
                    self.id
                )),
                None => Ok(()),
            },
            Origin::Knowu => match names.into_iter().find(|n| n.starts_with(PREFFLOW_PREFIX)) {
                Some(n) => Err(format!(
                    "template `{}`: class `{n}` starts with `{PREFFLOW_PREFIX}` but the template has no `origin: prefflow`",
                    self.id
                )),
                None => Ok(()),
            },
        }
    }
}

/// The explicit twin of a personalized template (split general).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Twin {
    /// Its class name.
    pub id: String,
    /// Its difficulty.
    pub difficulty: Difficulty,
    /// The explicit instruction (`{value}` spelled out).
    pub instruction: String,
}

/// A record field judged for the preference.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Judged {
    /// `app.table`.
    pub table: String,
    /// The text field.
    pub field: String,
    /// `inserted` (default) or `updated`.
    #[serde(default = "inserted")]
    pub change: String,
    /// The field must equal the preference value (a choice among fixed options, such as a
    /// Files sort order, where `Modified (newest first)` is the opposite of `Modified (oldest
    /// first)` though it shares its words), not meet its parsed requirements.
    #[serde(default)]
    pub exact: bool,
    /// The record's scheduled time (a calendar event's start and duration fields): the
    /// preference's time windows and minute bounds are checked against that interval, not
    /// against times the text mentions ("avoids meetings between 9:00 - 11:30" fails a
    /// 10:00 meeting whatever its notes say).
    #[serde(default)]
    pub schedule: Option<Schedule>,
}

/// The fields holding a record's scheduled interval.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schedule {
    /// The start time field (`HH:MM`).
    pub start: String,
    /// The length field (minutes).
    pub minutes: String,
}

impl Judged {
    /// `change:app.table.field` (`exact-change:…` for an exact check; `…@start+minutes` with a
    /// schedule), as `knowu_tasks.judged` carries it.
    pub fn spec(&self) -> String {
        let exact = if self.exact { "exact-" } else { "" };
        let at = match &self.schedule {
            Some(s) => format!("@{}+{}", s.start, s.minutes),
            None => String::new(),
        };
        format!("{exact}{}:{}.{}{at}", self.change, self.table, self.field)
    }
}

fn inserted() -> String {
    "inserted".into()
}

/// The situation of a proactive template.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SituationSpec {
    /// The phone clock (`YYYY-MM-DDTHH:MM`).
    #[serde(default)]
    pub clock: Option<String>,
    /// What the phone shows.
    pub notification: String,
    /// App data the situation sets (battery level, an incoming message, a calendar event).
    #[serde(default)]
    pub app_data: Vec<DataEdit>,
    /// Move the clock to the habit's trigger day and time, as KnowU's routine tasks that call
    /// `resolve_routine_datetime` do (the clock above is the base: its date is the earliest day
    /// considered, its time the default).
    #[serde(default)]
    pub clock_from_habit: bool,
    /// The trigger keys `clock_from_habit` reads (empty: all): KnowU's ClockOut takes only the
    /// trigger's days and keeps its own time (`days`, `day_of_week`).
    #[serde(default)]
    pub clock_keys: Vec<String>,
}

/// One persona-fit rule of a template ([`Template::unfit`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unfit {
    /// The profile node searched (a dotted path below `user_profile`: `identity.occupation`,
    /// `preferences.travel`); every text under it counts.
    pub at: String,
    /// Only texts under keys containing one of these words (`avoid`); empty: every text.
    #[serde(default)]
    pub key: Vec<String>,
    /// Words or phrases that make the task unfit when a text says one (`retired`,
    /// `ride-hailing`); matched as whole words.
    pub says: Vec<String>,
    /// Why, for the `skipped` table (`no job to take sick leave from`).
    pub why: String,
}

/// One rule of a template's place ([`Template::places`]): for the personas it applies to
/// (every persona without `at`; else those whose profile at `at` says one of `says`), the
/// first of her `locations` whose key or label has one of `near`'s words, in `near`'s order.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlaceRule {
    /// The profile node the rule's condition reads (`identity.occupation`).
    #[serde(default)]
    pub at: Option<String>,
    /// Words under `at` that make the rule apply (`retired`), whole words.
    #[serde(default)]
    pub says: Vec<String>,
    /// Words naming the place in a location's key or label, most fitting first (`market`,
    /// `grocery`).
    pub near: Vec<String>,
}

/// Why templates could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    /// The directory or a file could not be read.
    #[error("{path}: cannot read: {source}")]
    Read {
        /// The path.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A file is not a template file.
    #[error("{path}: {message}; see docs/knowu.md for the template schema")]
    Parse {
        /// The file.
        path: String,
        /// The parser's message.
        message: String,
    },
}

/// Every template of the `*.yaml` files of `dir`, files in name order; `label` is the directory
/// as the pipeline wrote it, for messages.
pub fn load_dir(dir: &Path, label: &str) -> Result<Vec<Template>, TemplateError> {
    let read_err = |path: String, source| TemplateError::Read { path, source };
    let files =
        crate::files::sorted_files(dir, &["yaml"]).map_err(|e| read_err(label.to_string(), e))?;
    let mut out = Vec::new();
    for f in files {
        let name = format!(
            "{label}/{}",
            f.file_name().unwrap_or_default().to_string_lossy()
        );
        let text = std::fs::read_to_string(&f).map_err(|e| read_err(name.clone(), e))?;
        let file: TemplateFile = prefflow_engine::config::from_yaml(&text).map_err(|e| {
            let problem = prefflow_engine::input::yaml_problem(&e);
            TemplateError::Parse {
                path: problem.place(&name),
                message: problem.text(),
            }
        })?;
        for t in &file.templates {
            t.check_origin().map_err(|message| TemplateError::Parse {
                path: name.clone(),
                message,
            })?;
        }
        out.extend(file.templates);
    }
    Ok(out)
}

/// KnowU's three task splits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    /// An explicit instruction: everything needed is said.
    General,
    /// A vague instruction the persona's preferences complete (hybrid-scored).
    Personalized,
    /// No instruction: a situation the agent may act on, ask about, or leave alone.
    Proactive,
}

impl Split {
    /// The tasks.csv spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Split::General => "general",
            Split::Personalized => "personalized",
            Split::Proactive => "proactive",
        }
    }

    /// The split of a tasks.csv spelling.
    pub fn parse(s: &str) -> Option<Self> {
        [Split::General, Split::Personalized, Split::Proactive]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

/// KnowU's difficulty levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Difficulty {
    /// One app, one step of reasoning.
    Easy,
    /// Several apps or a judgement call.
    Hard,
}

impl Difficulty {
    /// The tasks.csv spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Difficulty::Easy => "easy",
            Difficulty::Hard => "hard",
        }
    }

    /// The difficulty of a tasks.csv spelling.
    pub fn parse(s: &str) -> Option<Self> {
        [Difficulty::Easy, Difficulty::Hard]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}
