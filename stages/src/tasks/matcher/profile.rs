//! What a question about each slot sounds like, derived from the task's own data — the slot's
//! `about` sentence, its field's name, description and options (from the reference solution's
//! call that takes its value, or the option the task made unavailable), its keywords, and the
//! kind of its value (a count, a time, a day, a span of days, a choice among named options,
//! free text) — and how well a piece of a message fits it.
//!
//! A piece fits a slot by **subject** (the slot's words, or words the lexicon says name the
//! same thing, weighted by how few of the task's slots share them), by **named values** (an
//! option of its field, the unavailable value it replaces) and by **form** (the kind of value
//! the question asks for against the kind the slot holds: "how many" fits a count, not a time).
//! The statements before the piece count at half weight. The best-fitting slot wins when the
//! fit is clear; ask-only slots win ties over inferable ones; a piece that fits two slots
//! equally, or none well enough, is matched to none.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::forms::{form, Form, Kind};
use crate::tasks::language::{concepts, content_stems, word_concepts};
use crate::tasks::model::{Slot, Source, TaskBundle};
use crate::tasks::values;
use crate::world::app::Catalog;
use crate::world::types::FieldKind;

/// The field a slot's value goes into, as far as the task says.
#[derive(Debug, Clone, Default)]
pub struct FieldInfo {
    /// The field's name (`party_size`).
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its kind, when the catalog is at hand.
    pub kind: Option<FieldKind>,
    /// Named options (an enum's options, in words).
    pub options: Vec<String>,
    /// Values the task made unavailable for it.
    pub unavailable: Vec<String>,
    /// A ref field's table name (`pharmacies`).
    pub table: String,
    /// The operation it is an argument of (`notes.create_note`): the message or record the
    /// value goes into.
    pub operation: String,
    /// The names of the operation's other fields (`seating`, `occasion` beside `party_size`): a
    /// question naming one of them as what it asks for is about that field, not this one.
    pub siblings: Vec<String>,
}

/// One slot as the matcher sees it.
#[derive(Debug, Clone)]
pub struct SlotProfile {
    /// The slot.
    pub slot_id: String,
    /// Its source.
    pub source: Source,
    /// Kinds of value it holds, with how sure.
    pub kinds: Vec<(Kind, f64)>,
    /// Its subject concepts (stems and synonym groups).
    pub terms: HashSet<String>,
    /// Named options of its field, as stem sequences.
    pub values: Vec<Vec<String>>,
    /// Words that name exactly one option (a record's distinctive name word).
    pub distinctive: HashSet<String>,
    /// An inferable slot's own value when it is a name ("Sunset Crew", "Errands"), as stems:
    /// a closed question proposing it confirms that slot ([`TaskMatcher::best`]).
    pub own_value: Vec<String>,
    /// Synonym groups of whole options ("business" → the group of "work", "everyone" →
    /// "public"): another name of an option names it.
    pub option_groups: HashSet<String>,
    /// The values the task made unavailable, as stem sequences (they name the slot only in
    /// a question about an alternative).
    pub unavailable: Vec<Vec<String>>,
    /// The unavailable values that are clock times, in minutes.
    pub unavailable_times: Vec<u32>,
    /// It replaces something unavailable (a fallback or a stop slot).
    pub alternative: bool,
    /// The stems of its own words (its `about` sentence, keywords and field name), without
    /// synonyms: a message a question names ("the description", "the group chat") is this
    /// slot's only when one of these is its noun ([`super::head`]).
    pub own_stems: HashSet<String>,
    /// What a count slot counts (the noun after "how many" in its `about` sentence, with its
    /// synonym groups): the one subject word that speaks for its value in a choice
    /// ("a single carton or a few?").
    pub counted: HashSet<String>,
    /// Stems of the head of its `about` sentence — the words before its first preposition or
    /// clause ("The *cake flavour* for Lena's party", "The *headline* of her review"): what a
    /// proposal of content must name to be about this slot.
    pub head: HashSet<String>,
    /// Stems of the names in its `about` sentence ("Lena", "Dana", "Portland"): they say whose
    /// or which thing the slot concerns, not what value it asks for.
    pub names: HashSet<String>,
    /// Stems of its field's name (`room_preference` → room, prefer).
    pub field_stems: Vec<String>,
    /// Synonym groups of its field's name (a cabin field → the group of class and fare): another
    /// name of the field names what it asks for ("which class of service").
    pub field_groups: HashSet<String>,
    /// Stems of the names of the other fields of its operation ([`FieldInfo::siblings`]).
    pub sibling_fields: Vec<Vec<String>>,
    /// Those names as said ("from account").
    pub sibling_names: Vec<String>,
    /// Its own field's name as said ("room preference").
    pub field_said: String,
    /// An inferable slot's words that only qualify what it is about ("Maya's *special
    /// occasion* restaurant"): a question naming one of them as what it asks for ("Which
    /// occasion…?") asks for something else.
    pub modifiers: HashSet<String>,
    /// What the user's decision it holds is about ([`super::slot_subject`]).
    pub subject: super::slot_subject::SlotSubject,
    /// Its `about` says "works" as a verb ("Which other time *works* if 19:30 is gone"): a
    /// question's "works" names it; for every other slot the verb of a proposal ("Does 3:30
    /// work?", "Which departure works for you?") names no work email or business cabin.
    pub work_verb: bool,
}

const PARTS_OF_DAY: [&str; 5] = ["morning", "afternoon", "evening", "night", "noon"];

fn value_kinds(v: &Value) -> Vec<(Kind, f64)> {
    match v {
        Value::Number(_) => vec![(Kind::Count, 1.0), (Kind::Person, 0.4)],
        Value::Bool(_) => vec![(Kind::YesNo, 1.0)],
        Value::String(s) => match values::parse(s) {
            Some(values::Value::Range(..)) => {
                vec![
                    (Kind::Dates, 1.0),
                    (Kind::Date, 0.8),
                    (Kind::When, 0.8),
                    (Kind::Duration, 0.3),
                ]
            }
            Some(values::Value::Date(_)) => vec![(Kind::Date, 1.0), (Kind::When, 0.8)],
            Some(values::Value::Time(_)) => vec![(Kind::Time, 1.0), (Kind::When, 0.8)],
            Some(values::Value::Count(_)) => vec![(Kind::Count, 1.0)],
            Some(values::Value::Money(_)) => vec![(Kind::Count, 0.6)],
            None if PARTS_OF_DAY.contains(&s.to_lowercase().as_str()) => {
                vec![(Kind::Time, 1.0), (Kind::Choice, 0.8), (Kind::When, 0.6)]
            }
            None if s.contains('_') && !s.contains(' ') => vec![(Kind::Choice, 0.8)],
            None => vec![],
        },
        _ => vec![],
    }
}

/// Kinds an `about` sentence names by its opening words.
fn about_kinds(about: &str) -> Vec<(Kind, f64)> {
    let a = about.to_lowercase();
    let starts = |p: &[&str]| p.iter().any(|x| a.starts_with(x));
    let mut out = Vec::new();
    if starts(&["how many", "nights"]) {
        out.push((Kind::Count, 1.0));
    }
    if starts(&["how long"]) || a.contains("in minutes") || a.contains("how many minutes") {
        out.push((Kind::Duration, 1.0));
        out.push((Kind::Count, 0.6));
    }
    if a.contains("nights") || a.contains(" stay") {
        // How long a stay is, or when it ends.
        out.push((Kind::Duration, 1.0));
        out.push((Kind::Date, 0.6));
        out.push((Kind::When, 0.6));
    }
    if starts(&["what time", "which other time"])
        || a.contains(" time ") && a.contains("which other")
    {
        out.push((Kind::Time, 1.0));
        out.push((Kind::When, 0.8));
    }
    if starts(&["where"]) {
        out.push((Kind::Place, 1.0));
    }
    if a.starts_with("what") && a.contains(" is for") {
        // "What the dinner is for": a purpose.
        out.push((Kind::Topic, 1.0));
    }
    if starts(&["which night", "which evening", "which weekend"]) {
        out.push((Kind::Date, 1.0));
        out.push((Kind::When, 0.8));
    }
    if starts(&["which day", "dates", "when"]) {
        out.push((Kind::Date, 1.0));
        out.push((Kind::When, 0.8));
    }
    if starts(&["who"]) {
        out.push((Kind::Person, 1.0));
        out.push((Kind::Count, 0.5));
    }
    if starts(&["whether"]) {
        out.push((Kind::YesNo, 1.0));
        out.push((Kind::Choice, 0.6));
    }
    if starts(&["which", "what kind"]) {
        out.push((Kind::Choice, 1.0));
    }
    if a.contains("topic") || a.contains(" is about") || starts(&["the topic"]) {
        // A topic is written as a title: "what to put in it" asks for it too.
        out.push((Kind::Topic, 1.0));
        out.push((Kind::Text, 0.8));
    }
    out.extend(free_text_kinds(&a));
    out
}

/// Free text when what a lower-cased `about` names is a message ("The *caption* for the photo",
/// "What she wants the post to *say*"), not when a message only stands beside it ("research
/// notes folder", "Which list the reminder goes on").
fn free_text_kinds(a: &str) -> Vec<(Kind, f64)> {
    let starts = |p: &[&str]| p.iter().any(|x| a.starts_with(x));
    let chooses = starts(&[
        "which",
        "where",
        "when",
        "how many",
        "what time",
        "whether",
        "who",
    ]);
    // The head noun is the last word of the head ("research notes *folder*").
    let named = if a.starts_with("what") {
        a.to_string()
    } else {
        let head = about_head_words(a);
        head.split_whitespace()
            .last()
            .unwrap_or_default()
            .to_string()
    };
    const TEXT: [&str; 11] = [
        "say",
        "message",
        "caption",
        "note",
        "headline",
        "takeaway",
        "highlight",
        "tell",
        "point",
        "title",
        "flavour",
    ];
    if !chooses && TEXT.iter().any(|w| named.contains(w)) {
        vec![(Kind::Text, 1.0), (Kind::Topic, 0.6)]
    } else {
        vec![]
    }
}

fn field_kinds(f: &FieldInfo) -> Vec<(Kind, f64)> {
    match &f.kind {
        Some(FieldKind::Int(_)) | Some(FieldKind::Float(_)) => {
            vec![(Kind::Count, 0.8), (Kind::Person, 0.4)]
        }
        Some(FieldKind::Time) => vec![(Kind::Time, 0.8), (Kind::When, 0.6)],
        Some(FieldKind::Date) | Some(FieldKind::DateTime) => {
            vec![(Kind::Date, 0.8), (Kind::When, 0.6)]
        }
        Some(FieldKind::Enum(_)) | Some(FieldKind::Ref(_)) => vec![(Kind::Choice, 0.8)],
        Some(FieldKind::Bool) => vec![(Kind::YesNo, 0.8)],
        Some(FieldKind::Text) => vec![(Kind::Text, 0.5)],
        None => vec![],
    }
}

fn merge(into: &mut Vec<(Kind, f64)>, more: Vec<(Kind, f64)>) {
    for (k, w) in more {
        match into.iter_mut().find(|(x, _)| *x == k) {
            Some(e) => e.1 = e.1.max(w),
            None => into.push((k, w)),
        }
    }
}

fn spoken_stems(v: &str) -> Vec<String> {
    content_stems(&v.replace('_', " "))
}

/// Stems of three or more letters that occur in exactly one option's name: people name a
/// record by part of its name ("the Walgreens" for "Walgreens Noriega").
fn distinctive_words(options: &[Vec<String>]) -> HashSet<String> {
    let mut count: HashMap<&str, usize> = HashMap::new();
    for o in options {
        let unique: HashSet<&str> = o.iter().map(String::as_str).collect();
        for w in unique {
            *count.entry(w).or_default() += 1;
        }
    }
    count
        .into_iter()
        .filter(|(w, n)| {
            *n == 1
                && w.chars().count() >= 3
                && w.chars().all(char::is_alphabetic)
                && !crate::tasks::language::lexicon().is_stop(w)
        })
        .map(|(w, _)| w.to_string())
        .collect()
}

impl SlotProfile {
    /// A slot's profile, with its field when known.
    pub fn new(slot: &Slot, field: Option<&FieldInfo>) -> Self {
        let substitute = slot.value.as_str().is_some_and(|s| {
            s.to_lowercase().starts_with("no other") || s.to_lowercase().starts_with("no ")
        });
        let mut kinds = slot_kinds(slot, field, substitute);
        let mut text = format!("{} {}", slot.about, slot.keywords.join(" "));
        if let Some(f) = field {
            text.push(' ');
            text.push_str(&f.name.replace('_', " "));
        }
        let options = Options::of(slot, field);
        let about_lower = slot.about.to_lowercase();
        // A fallback or stop slot (not the preference that became unavailable).
        let alternative = slot.source == Source::AskOnly
            && (substitute
                || field.is_some_and(|f| !f.unavailable.is_empty())
                || ["if ", "instead", "other", "another"]
                    .iter()
                    .any(|w| about_lower.contains(w)));
        if alternative {
            // "Is Bi-Rite OK instead?": a yes or no to a proposed alternative.
            merge(&mut kinds, vec![(Kind::YesNo, 0.8)]);
        }
        let own_stems = own_stems(&text, &kinds, field);
        let counted = about_lower
            .strip_prefix("how many ")
            .and_then(|rest| rest.split_whitespace().next())
            .filter(|w| !crate::tasks::language::lexicon().is_stop(w))
            .map(crate::tasks::language::text_concepts)
            .unwrap_or_default();
        // The unavailable value names the slot only in a question about an alternative
        // ([`TaskMatcher::named`]), not as its subject.
        let gone: HashSet<&String> = options.unavailable.iter().flatten().collect();
        let mut terms: HashSet<String> = word_concepts(&text).into_iter().flatten().collect();
        terms.retain(|s| !gone.contains(s));
        let field_stems = field.map_or_else(Vec::new, |f| spoken_stems(&f.name));
        let sibling_fields = field.map_or_else(Vec::new, |f| {
            f.siblings
                .iter()
                .map(|n| spoken_stems(n))
                .filter(|v| !v.is_empty() && *v != field_stems)
                .collect()
        });
        let field_groups = option_field_groups(field, &field_stems);
        let sibling_names = field.map_or_else(Vec::new, |f| {
            f.siblings
                .iter()
                .filter(|n| **n != f.name)
                .map(|n| n.replace('_', " ").to_lowercase())
                .collect()
        });
        // The slot's id names what it is (pickup, of "Maya's ride pickup spot").
        let id_stems = spoken_stems(&slot.slot_id);
        let modifiers = inferable_modifiers(slot, &field_stems, &id_stems);
        Self {
            subject: super::slot_subject::SlotSubject::of(slot, field.map(|f| f.name.as_str())),
            work_verb: super::text::words(&slot.about).iter().any(|w| w == "works"),
            modifiers,
            field_said: field.map_or_else(String::new, |f| f.name.replace('_', " ").to_lowercase()),
            sibling_names,
            field_groups,
            field_stems,
            sibling_fields,
            head: about_head(&slot.about),
            own_stems,
            counted,
            names: proper_names(&slot.about),
            slot_id: slot.slot_id.clone(),
            source: slot.source,
            kinds,
            terms,
            distinctive: distinctive_words(&options.values),
            own_value: own_value(slot),
            option_groups: options.groups,
            values: options.values,
            unavailable: options.unavailable,
            unavailable_times: options.unavailable_times,
            alternative,
        }
    }

    fn kind_fit(&self, f: &Form) -> f64 {
        let held = |k: &Kind| self.kinds.iter().find(|(x, _)| x == k).map(|(_, w)| *w);
        // "Should I tell him you'll have it by Friday?": a closed question proposing a value.
        if f.kinds.is_empty()
            || f.closed && f.concrete
            || f.kinds
                .iter()
                .all(|k| matches!(k, Kind::YesNo | Kind::Choice))
        {
            // No question word names a kind: the values it mentions may ("Is 8:30 OK?").
            let m = f.mentioned.iter().filter_map(held).fold(0.0, f64::max);
            if m > 0.0 {
                return m * 1.3;
            }
        }
        if f.kinds.is_empty() {
            return 0.0;
        }
        let best = f
            .kinds
            .iter()
            .filter(|k| **k != Kind::YesNo && **k != Kind::Choice)
            .filter_map(|k| self.kinds.iter().find(|(x, _)| x == k).map(|(_, w)| *w))
            .fold(0.0, f64::max);
        let specific = f.kinds.iter().any(|k| {
            !matches!(
                k,
                Kind::YesNo | Kind::Choice | Kind::Person | Kind::When | Kind::Place
            )
        });
        let weak = f
            .kinds
            .iter()
            .filter(|k| matches!(k, Kind::YesNo | Kind::Choice))
            .filter_map(|k| self.kinds.iter().find(|(x, _)| x == k).map(|(_, w)| *w))
            .fold(0.0, f64::max);
        if best > 0.0 {
            best * 1.5
        } else if specific && !self.kinds.is_empty() {
            -1.5
        } else {
            weak * 0.5
        }
    }
}

/// Every slot of a task, ready to match pieces.
#[derive(Debug, Clone)]
pub struct TaskMatcher {
    /// The profiles, in slot order.
    pub profiles: Vec<SlotProfile>,
    idf: HashMap<String, f64>,
    /// Stems of the task's instruction: the things of the task ("lemongrass and coconut milk").
    pub(super) instruction: HashSet<String>,
}

/// How well one piece fits one slot.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    /// Subject and named values in the piece itself.
    pub own: f64,
    /// Everything: own evidence, context, form.
    pub total: f64,
}

/// A fit at least this good matches.
const THRESHOLD: f64 = 1.2;
/// Two slots closer than this are a tie.
const MARGIN: f64 = 0.35;

impl TaskMatcher {
    /// From slots alone (kinds from values and `about` sentences).
    pub fn from_slots(slots: &[Slot]) -> Self {
        Self::build(slots, &HashMap::new(), "")
    }

    /// From a task and the catalog: each slot's field from the reference solution's call that
    /// takes it (or the unavailable option it replaces).
    pub fn for_task(bundle: &TaskBundle, catalog: &Catalog) -> Self {
        Self::build(
            &bundle.slots,
            &fields(bundle, catalog),
            &bundle.task.instruction,
        )
    }

    /// Builds the profiles; words of the instruction weigh less (the task's object — "box
    /// seats", "the Everlane sweater" — is shared by all its slots, not one slot's subject).
    fn build(slots: &[Slot], fields: &HashMap<String, FieldInfo>, instruction: &str) -> Self {
        let shared = concepts(&content_stems(instruction));
        let profiles: Vec<SlotProfile> = slots
            .iter()
            .map(|s| SlotProfile::new(s, fields.get(&s.slot_id)))
            .collect();
        let mut df: HashMap<String, usize> = HashMap::new();
        for p in &profiles {
            for t in &p.terms {
                *df.entry(t.clone()).or_default() += 1;
            }
        }
        let n = profiles.len().max(1) as f64;
        let idf = df
            .into_iter()
            .map(|(t, d)| {
                let base = (1.0 + n / d as f64).ln();
                let w = if t.starts_with('#') { base * 0.8 } else { base };
                let w = if shared.contains(&t) { w * 0.5 } else { w };
                (t, w)
            })
            .collect();
        Self {
            profiles,
            idf,
            instruction: content_stems(instruction).into_iter().collect(),
        }
    }

    /// How strongly the words of a text name the slot's subject: for each word, the best
    /// weight of a slot term it is (its stem) or shares a synonym group with, summed over words.
    pub(super) fn subject(&self, p: &SlotProfile, words: &[HashSet<String>]) -> f64 {
        words
            .iter()
            .map(|concepts| {
                concepts
                    .iter()
                    .filter(|c| p.terms.contains(*c))
                    .map(|c| self.idf.get(c).copied().unwrap_or(0.0))
                    .fold(0.0, f64::max)
            })
            .sum()
    }

    /// Named values of the slot in `text` (an option, a distinctive word of one, another name
    /// of one, or — in a question about an alternative — the value that became unavailable).
    /// A fallback's options name it only in a question offering a choice, a yes or no, or an
    /// alternative.
    pub(super) fn named(p: &SlotProfile, text: &str, stems: &[String], f: &Form) -> f64 {
        let alternative = f.alternative || f.alternative_in_context;
        let offers = alternative || f.kinds.contains(&Kind::YesNo) || f.closed;
        let seq = |v: &Vec<String>| stems.windows(v.len()).any(|w| w == v.as_slice());
        // "the CVS on 9th" for "cvs_9th_ave": an option's first two words.
        let prefix = |v: &Vec<String>| v.len() > 2 && seq(&v[..2].to_vec());
        let other_name = || {
            !p.option_groups.is_empty()
                && word_concepts(text)
                    .iter()
                    .flatten()
                    .any(|c| p.option_groups.contains(c))
        };
        let option = (!p.alternative || offers)
            && (p.values.iter().any(|v| seq(v) || prefix(v))
                || stems.iter().any(|s| p.distinctive.contains(s))
                || other_name());
        let gone = alternative
            && (p.unavailable.iter().any(seq)
                || values::times(text)
                    .iter()
                    .any(|t| p.unavailable_times.contains(t)));
        if option || gone {
            1.2
        } else {
            0.0
        }
    }

    /// Whether a count's noun ("how many *stops*") is what slot `p` counts: one of its terms,
    /// people (a table, tickets or portions are for people) or a unit things come in (bags,
    /// cartons). No noun fits every count slot.
    fn counts_it(p: &SlotProfile, counted: Option<&str>) -> bool {
        let Some(noun) = counted else {
            return true;
        };
        let c = crate::tasks::language::text_concepts(noun);
        let generic = crate::tasks::language::text_concepts("people passengers tickets cartons");
        c.iter()
            .any(|x| p.terms.contains(x) || x.starts_with('#') && generic.contains(x))
    }

    /// "How many *bowls* you'd like me to order", "how many *jugs* of milk", "how many
    /// *evenings* in Seattle": a count's noun the lexicon does not know is a unit of the value
    /// of slot `i` when `i` is the task's only count, no other slot of the task is about that
    /// noun (nor offers it), and the piece otherwise names `i`'s subject (`own`).
    fn counts_in_units(&self, i: usize, counted: Option<&str>, text: &str, lead_fit: f64) -> bool {
        let Some(noun) = counted else {
            return false;
        };
        // The subject besides the count's own words ("how many" names every count).
        let lower = format!(" {} ", text.to_lowercase());
        let besides = [
            " how many ",
            " how much ",
            " number of ",
            " many ",
            " much ",
        ]
        .iter()
        .fold(lower, |t, w| t.replace(w, " "));
        let own = self.subject(&self.profiles[i], &word_concepts(&besides)) + lead_fit;
        let c = crate::tasks::language::text_concepts(noun);
        let stems = content_stems(noun);
        let elsewhere = self.profiles.iter().enumerate().any(|(j, q)| {
            j != i
                && (c.iter().any(|x| q.terms.contains(x))
                    || q.values.iter().flatten().any(|v| stems.contains(v)))
        });
        own > 0.0 && !elsewhere && self.only_one_of_its_kind(i, &[Kind::Count])
    }

    /// How well a piece (with the lead of its sentence and the statements before it) fits
    /// each slot, in slot order.
    pub fn fits(&self, text: &str, lead: &str, context: &str) -> Vec<Fit> {
        let f = form(text, lead, context);
        let (text, lead, context) = (&idioms_out(text), &idioms_out(lead), &idioms_out(context));
        let stems = |t: &str| -> Vec<String> {
            crate::tasks::language::tokens(t)
                .into_iter()
                .map(|t| t.stem)
                .collect()
        };
        let (own_c, lead_c, ctx_c) = (
            word_concepts(text),
            word_concepts(lead),
            word_concepts(context),
        );
        let (own_s, lead_s, ctx_s) = (stems(text), stems(lead), stems(context));
        // The same without "work" as a proposal's verb (`SlotProfile::work_verb`).
        let (text_v, lead_v) = (verb_work_out(text), verb_work_out(lead));
        let (own_vc, lead_vc) = (word_concepts(&text_v), word_concepts(&lead_v));
        let (own_vs, lead_vs) = (stems(&text_v), stems(&lead_v));
        // "Green and Comfort are open — which suits you?": what the lead lists before a bare
        // choice is offered.
        let lead_form = Form {
            closed: f.closed || bare_choice(&f),
            ..f.clone()
        };
        self.profiles
            .iter()
            .enumerate()
            .map(|(i, p)| {
                // "Which departure works for you?" beside a cabin whose options include
                // "business": the verb names no work, unless the slot's own `about` says it
                // ("Which other time *works* if 19:30 is gone").
                let ((own_t, own_c, own_s), (lead_t, lead_c, lead_s)) = if p.work_verb {
                    ((text, &own_c, &own_s), (lead, &lead_c, &lead_s))
                } else {
                    ((&text_v, &own_vc, &own_vs), (&lead_v, &lead_vc, &lead_vs))
                };
                let own = self.subject(p, own_c) + Self::named(p, own_t, own_s, &f);
                let lead_fit =
                    0.7 * (self.subject(p, lead_c) + Self::named(p, lead_t, lead_s, &lead_form));
                let ctx = 0.5 * (self.subject(p, &ctx_c) + Self::named(p, context, &ctx_s, &f));
                let counting = f.kinds.contains(&Kind::Count)
                    || f.mentioned.contains(&Kind::Count)
                        && f.kinds
                            .iter()
                            .all(|k| matches!(k, Kind::YesNo | Kind::Choice));
                let kind = if !counting
                    || Self::counts_it(p, f.counted.as_deref())
                    || self.counts_in_units(i, f.counted.as_deref(), text, lead_fit)
                {
                    p.kind_fit(&f)
                } else {
                    // "How many stops?" is no count of passengers.
                    -1.5
                };
                let alt_fit = match (f.alternative, f.alternative_in_context, p.alternative) {
                    (true, _, true) => 1.0,
                    (true, _, false) if own < 1.0 => -0.6,
                    (false, true, true) => 0.5,
                    _ => 0.0,
                };
                Fit {
                    own: own + lead_fit,
                    total: own + lead_fit + ctx + kind + alt_fit,
                }
            })
            .collect()
    }

    /// Whether the piece asks for, or names a value of, a kind slot `i` holds (a bare yes/no
    /// or "which" is not enough: "How many tickets? Should I add it to your calendar?").
    pub fn kind_agrees(&self, i: usize, text: &str, lead: &str, context: &str) -> bool {
        let f = form(text, lead, context);
        let p = &self.profiles[i];
        let held = |k: &Kind| p.kinds.iter().any(|(x, w)| x == k && *w > 0.0);
        let specific: Vec<&Kind> = f
            .kinds
            .iter()
            .filter(|k| !matches!(k, Kind::YesNo | Kind::Choice))
            .collect();
        if specific.is_empty() {
            f.mentioned.iter().any(held)
        } else {
            specific.into_iter().any(held)
        }
    }

    /// The slot a piece asks about, if it clearly asks about one.
    pub fn best(&self, text: &str, lead: &str, context: &str) -> Option<usize> {
        let f = form(text, lead, context);
        // A slot the question's head rules out is never matched (`super::head`).
        let ruled_out: Vec<bool> = (0..self.profiles.len())
            .map(|i| self.head_rules_out(i, text, lead, context, &f))
            .collect();
        let fits: Vec<Fit> = self
            .fits(text, lead, context)
            .into_iter()
            .zip(&ruled_out)
            .map(|(fit, out)| {
                if *out {
                    Fit {
                        own: 0.0,
                        total: f64::NEG_INFINITY,
                    }
                } else {
                    fit
                }
            })
            .collect();
        let mut order: Vec<usize> = (0..fits.len()).collect();
        order.sort_by(|&a, &b| fits[b].total.total_cmp(&fits[a].total));
        let &top = order.first()?;
        if let Some(i) = self.proposed(text, &f) {
            return (!ruled_out[i]).then_some(i);
        }
        let confirms = confirms_a_value(text, lead);
        let alternatives = self.profiles.iter().filter(|p| p.alternative).count();
        let evidence = |i: usize| {
            fits[i].own > 0.0
                || f.alternative && self.profiles[i].alternative && alternatives == 1
                || fits[i].total - fits[i].own >= 1.0 && self.only_one_of_its_kind(i, &f.kinds)
                || confirms && self.only_one_of_its_kind(i, &f.mentioned)
                // "Is it the whole team, about eight of you?", "Would 4:15 suit you?",
                // "Friday again?": a value proposed, of a kind one slot alone holds.
                || f.closed && f.concrete && self.only_one_of_its_kind(i, &f.mentioned)
                // "Dr. Okafor has the 6th, the 14th and the 20th. Which suits you?": a bare
                // choice among values its lead lists, of a kind one slot alone holds.
                || !lead.is_empty() && bare_choice(&f) && self.only_one_of_its_kind(i, &f.mentioned)
                // "Is it four of you going?" beside passengers and checked bags: a count of
                // people, of the one count slot that counts people.
                || self.only_one_counting_people(i, &f)
        };
        // Of slots tied at the top, the first with evidence ("Is it four of you?" ties a bag
        // count and a passenger count; only the passengers count people).
        let tied = |j: &usize| fits[top].total - fits[*j].total < MARGIN;
        let top = match order.iter().take_while(|j| tied(j)).find(|&&j| evidence(j)) {
            Some(&j) if fits[j].total >= THRESHOLD => j,
            _ => return None,
        };
        order.retain(|&j| j != top);
        order.insert(0, top);
        if let Some(kinded) = self.of_the_asked_kind(top, &f, &fits) {
            // "Which nights — check-in and check-out?" beside a count of nights and the trip's
            // dates: the slot holding the kind asked, or none.
            return kinded;
        }
        let second = order.get(1).copied();
        match second {
            Some(s) if fits[top].total - fits[s].total < MARGIN => {
                let (a, b) = (&self.profiles[top], &self.profiles[s]);
                match (a.source, b.source) {
                    (Source::AskOnly, Source::Inferable) => Some(top),
                    (Source::Inferable, Source::AskOnly) if evidence(s) => Some(s),
                    // "Which night do you arrive?" beside the trip's dates and a count of
                    // nights: the one of the two holding the kind of value asked.
                    _ if self.holds_asked(top, &f) && !self.holds_asked(s, &f) => Some(top),
                    _ if self.holds_asked(s, &f) && !self.holds_asked(top, &f) && evidence(s) => {
                        Some(s)
                    }
                    _ => None,
                }
            }
            _ => Some(top),
        }
    }

    /// The head of a closed question is the value it proposes ("Do you want the caption shown
    /// to *everyone*?", "Should the reminder go in *Errands*?", "Is this a *work* dinner?"): when
    /// exactly one slot has a value named in the piece, and no other slot holds a kind of value
    /// the piece mentions (a time, a count), that slot is asked about, whatever other slot's
    /// noun stands beside it.
    fn proposed(&self, text: &str, f: &Form) -> Option<usize> {
        let asks_a_kind = f.kinds.iter().any(|k| {
            matches!(
                k,
                Kind::Count | Kind::Duration | Kind::Time | Kind::Date | Kind::Dates | Kind::When
            )
        });
        // "Oat milk latte — qty?" asks for a count; "Swap in Weruva, or hold off until Tiki
        // Cat is back?" is about the alternative, not the value it names.
        if !f.closed || asks_a_kind || f.alternative && self.profiles.iter().any(|p| p.alternative)
        {
            return None;
        }
        if text.contains(['"', '“', '”']) || text.contains(" '") || text.contains(" ‘") {
            // A quotation proposes free text, not a name.
            return None;
        }
        let stems: Vec<String> = crate::tasks::language::tokens(text)
            .into_iter()
            .map(|t| t.stem)
            .collect();
        let own = |p: &SlotProfile| {
            let v = &p.own_value;
            !v.is_empty() && stems.windows(v.len()).any(|w| w == v.as_slice())
        };
        // A whole name ("Sunset Yoga Collective") outweighs a word shared with another slot's
        // option.
        let whole = |p: &SlotProfile| {
            own(p)
                || p.values
                    .iter()
                    .any(|v| v.len() > 1 && stems.windows(v.len()).any(|w| w == v.as_slice()))
        };
        let wholes: Vec<usize> = (0..self.profiles.len())
            .filter(|&i| whole(&self.profiles[i]))
            .collect();
        let named: Vec<usize> = if wholes.len() == 1 {
            wholes
        } else {
            // "Would the 6th work for the reminder?": the verb names no work (as in `fits`).
            let text_v = verb_work_out(text);
            let stems_v: Vec<String> = if text_v == text {
                stems.clone()
            } else {
                crate::tasks::language::tokens(&text_v)
                    .into_iter()
                    .map(|t| t.stem)
                    .collect()
            };
            (0..self.profiles.len())
                .filter(|&i| {
                    let p = &self.profiles[i];
                    let (t, st) = if p.work_verb {
                        (text, &stems)
                    } else {
                        (text_v.as_str(), &stems_v)
                    };
                    Self::named(p, t, st, f) > 0.0 || own(p)
                })
                .collect()
        };
        let [i] = named[..] else {
            return None;
        };
        let holds = |p: &SlotProfile, k: &Kind| p.kinds.iter().any(|(x, w)| x == k && *w >= 0.8);
        let other_value = f.mentioned.iter().any(|k| {
            self.profiles
                .iter()
                .enumerate()
                .any(|(j, p)| j != i && holds(p, k))
        });
        (!other_value).then_some(i)
    }

    /// Whether slot `i` holds (weight ≥ 0.8) a typed kind the piece asks for: a count, a
    /// duration, a time, a day or days.
    fn holds_asked(&self, i: usize, f: &Form) -> bool {
        f.kinds.iter().any(|k| {
            matches!(
                k,
                Kind::Count | Kind::Duration | Kind::Time | Kind::Date | Kind::Dates
            ) && self.profiles[i]
                .kinds
                .iter()
                .any(|(x, w)| x == k && *w >= 0.8)
        })
    }

    /// When the best slot `top` holds none of the typed kinds a piece asks for (a day, a count,
    /// a time, a duration) but another slot holds one: that slot, if the piece also names it
    /// and fits it well enough (`Some(Some(j))`), else no slot (`Some(None)`). `None`: the kinds
    /// do not decide.
    fn of_the_asked_kind(&self, top: usize, f: &Form, fits: &[Fit]) -> Option<Option<usize>> {
        if self.holds_asked(top, f) {
            return None;
        }
        let holders: Vec<usize> = (0..self.profiles.len())
            .filter(|&j| j != top && fits[j].total.is_finite() && self.holds_asked(j, f))
            .collect();
        if holders.is_empty() {
            return None;
        }
        let named: Vec<usize> = holders
            .into_iter()
            .filter(|&j| fits[j].own > 0.0 && fits[j].total >= THRESHOLD)
            .collect();
        Some(match named[..] {
            [j] => Some(j),
            _ => None,
        })
    }

    /// Whether the piece counts people (`f.counted`) and slot `i` is the task's one count slot
    /// whose `about` counts people ("How many passengers…", "How many guests…") among several
    /// counts ("Maya's checked bags").
    fn only_one_counting_people(&self, i: usize, f: &Form) -> bool {
        let Some(noun) = f
            .counted
            .as_deref()
            .filter(|_| f.kinds.contains(&Kind::Count))
        else {
            return false;
        };
        static PEOPLE: std::sync::LazyLock<HashSet<String>> =
            std::sync::LazyLock::new(|| crate::tasks::language::text_concepts("people"));
        let is_people = |c: &HashSet<String>| c.iter().any(|x| PEOPLE.contains(x));
        let counts_people = |p: &SlotProfile| {
            p.kinds.iter().any(|(k, w)| *k == Kind::Count && *w >= 0.8) && is_people(&p.counted)
        };
        counts_people(&self.profiles[i])
            && is_people(&crate::tasks::language::text_concepts(noun))
            && self.profiles.iter().filter(|p| counts_people(p)).count() == 1
    }

    /// Whether slot `i` is the only slot of the task holding a kind the form asks for (a bare
    /// "How many?" with a passenger count and a bag count is about neither).
    fn only_one_of_its_kind(&self, i: usize, kinds: &[Kind]) -> bool {
        let me = &self.profiles[i];
        kinds.iter().any(|k| {
            let holds = |p: &SlotProfile| p.kinds.iter().any(|(x, w)| x == k && *w >= 0.8);
            holds(me) && self.profiles.iter().filter(|p| holds(p)).count() == 1
        })
    }
}

/// The kinds of value a slot holds: from its value, its `about` sentence, its field, and
/// whether its `about` or table names a place. A substitute ("no other brand") is a yes or no
/// or a choice, whatever its field holds.
fn slot_kinds(slot: &Slot, field: Option<&FieldInfo>, substitute: bool) -> Vec<(Kind, f64)> {
    let mut kinds = value_kinds(&slot.value);
    merge(&mut kinds, about_kinds(&slot.about));
    if substitute {
        kinds.retain(|(k, _)| *k == Kind::YesNo || *k == Kind::Choice);
        merge(&mut kinds, vec![(Kind::YesNo, 1.0), (Kind::Choice, 0.7)]);
    }
    if let Some(f) = field.filter(|_| !substitute) {
        merge(&mut kinds, field_kinds(f));
    }
    let about_alone = slot.about.split(" (").next().unwrap_or_default();
    let place_words = format!("{about_alone} {}", field.map_or("", |f| f.table.as_str()));
    if crate::tasks::language::names_a_place(&place_words) {
        merge(&mut kinds, vec![(Kind::Place, 1.0)]);
    }
    kinds
}

/// A slot's named values: its field's options (or the values of the kind of thing it is
/// about), the values the task made unavailable, and the synonym groups of whole options.
struct Options {
    values: Vec<Vec<String>>,
    unavailable: Vec<Vec<String>>,
    unavailable_times: Vec<u32>,
    groups: HashSet<String>,
}

impl Options {
    fn of(slot: &Slot, field: Option<&FieldInfo>) -> Self {
        let mut vals = Vec::new();
        let mut unavailable = Vec::new();
        let mut unavailable_times = Vec::new();
        if let Some(f) = field {
            unavailable.extend(f.unavailable.iter().map(|o| spoken_stems(o)));
            vals.extend(f.options.iter().map(|o| spoken_stems(o)));
            if slot.source == Source::AskOnly {
                // A fallback's options are the alternatives: the unavailable one is not one.
                vals.retain(|v| !unavailable.contains(v));
            }
            unavailable_times.extend(f.unavailable.iter().flat_map(|u| values::times(u)));
        }
        if vals.is_empty() {
            // A field without listed options: the values of the kind of thing its slot is about.
            let about_and_field =
                format!("{} {}", slot.about, field.map_or("", |f| f.name.as_str()));
            vals.extend(
                crate::tasks::language::class_values(&about_and_field)
                    .iter()
                    .map(|v| spoken_stems(v)),
            );
            if slot.source == Source::AskOnly {
                vals.retain(|v| !unavailable.contains(v));
            }
        }
        if let Some(v) = slot.value.as_str().filter(|v| PARTS_OF_DAY.contains(v)) {
            // "morning or evening": the other parts of the day are its options.
            vals.extend(
                PARTS_OF_DAY
                    .iter()
                    .filter(|p| **p != v)
                    .map(|p| spoken_stems(p)),
            );
        }
        let groups: HashSet<String> = field
            .map(|f| f.options.as_slice())
            .unwrap_or_default()
            .iter()
            .filter(|o| !unavailable.contains(&spoken_stems(o)))
            .flat_map(|o| crate::tasks::language::phrase_groups(&o.replace('_', " ")))
            .collect();
        vals.retain(|v| !v.is_empty());
        unavailable.retain(|v| !v.is_empty());
        Self {
            values: vals,
            unavailable,
            unavailable_times,
            groups,
        }
    }
}

/// An inferable slot's own value, when it is a name ("Sunset Crew", "Errands"): a question
/// proposing it confirms that slot, whatever else it names. (Ask-only values are never used:
/// knowing the answer must not credit a question.)
fn own_value(slot: &Slot) -> Vec<String> {
    slot.value
        .as_str()
        .filter(|v| {
            slot.source == Source::Inferable
                && v.split_whitespace().count() <= 4
                && values::parse(v).is_none()
                && !v.contains(',')
        })
        .map(spoken_stems)
        .unwrap_or_default()
}

/// The stems of a slot's own words, without synonyms; a free-text value is the message its
/// operation writes ("notes.create_note": the note), so that message is its own too.
fn own_stems(text: &str, kinds: &[(Kind, f64)], field: Option<&FieldInfo>) -> HashSet<String> {
    let free_text = kinds
        .iter()
        .any(|(k, w)| matches!(k, Kind::Text | Kind::Topic) && *w >= 0.8);
    let own_words = match field.filter(|_| free_text) {
        Some(f) => format!("{text} {}", f.operation.replace(['.', '_'], " ")),
        None => text.to_string(),
    };
    crate::tasks::language::tokens(&own_words)
        .into_iter()
        .filter(|t| !t.stop)
        .map(|t| t.stem)
        .collect()
}

/// Words that end the head of an `about` sentence (a preposition or a clause begins).
const HEAD_ENDS: [&str; 24] = [
    "for", "of", "from", "with", "to", "about", "at", "on", "in", "if", "that", "she", "he", "her",
    "his", "they", "when", "where", "during", "before", "after", "is", "are", "should",
];

/// Stems of the content words of an `about` sentence before its first preposition or clause.
fn about_head(about: &str) -> HashSet<String> {
    crate::tasks::language::tokens(about)
        .into_iter()
        .take_while(|t| !HEAD_ENDS.contains(&t.word.as_str()))
        .filter(|t| !t.stop)
        .map(|t| t.stem)
        .collect()
}

/// The words of an `about` sentence before its first preposition or clause, lower-cased.
fn about_head_words(about: &str) -> String {
    about
        .to_lowercase()
        .split_whitespace()
        .take_while(|w| !HEAD_ENDS.contains(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Stems of the capitalised words of an `about` sentence after its first word ("Lena's",
/// "Dana", "Portland"): names.
fn proper_names(about: &str) -> HashSet<String> {
    about
        .split_whitespace()
        .skip(1)
        .filter(|w| w.chars().next().is_some_and(char::is_uppercase))
        .flat_map(|w| {
            crate::tasks::language::tokens(w)
                .into_iter()
                .map(|t| t.stem)
        })
        .collect()
}

/// A text without the idioms in which "time" names no clock time ("like last time", "this
/// time"): their words are no slot's subject.
fn idioms_out(text: &str) -> String {
    const IDIOMS: [&str; 7] = [
        "last time",
        "this time",
        "next time",
        "every time",
        "first time",
        "same as before",
        "at a time",
    ];
    let mut out = text.to_string();
    for i in IDIOMS {
        while let Some(at) = out.to_lowercase().find(i) {
            out.replace_range(at..at + i.len(), " ");
        }
    }
    out
}

/// A text without "work" where it is the verb of a proposal ("Does 3:30 Tuesday *work*?",
/// "Would Friday *work for you*?", "which *works best*?"): it names no work email or trip. "Is
/// it for work?" keeps its noun.
fn verb_work_out(text: &str) -> String {
    let words: Vec<&str> = text.split(' ').collect();
    let core = |w: &str| {
        w.trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase()
    };
    let kept: Vec<&str> = words
        .iter()
        .enumerate()
        .filter(|(i, w)| {
            let c = core(w);
            if c != "work" && c != "works" {
                return true;
            }
            let before = i.checked_sub(1).map(|j| core(words[j])).unwrap_or_default();
            let after = words.get(i + 1).map(|n| core(n)).unwrap_or_default();
            let noun_before = matches!(
                before.as_str(),
                "for" | "to" | "at" | "from" | "after" | "before" | "my" | "your" | "her"
            );
            let verb = w.ends_with('?')
                || matches!(
                    after.as_str(),
                    "for" | "best" | "better" | "out" | "ok" | "okay"
                );
            noun_before || !verb
        })
        .map(|(_, w)| *w)
        .collect();
    kept.join(" ")
}

/// A choice that names no kind of value of its own ("Which suits you?", "Any preference?").
fn bare_choice(f: &Form) -> bool {
    f.kinds.contains(&Kind::Choice)
        && f.kinds
            .iter()
            .all(|k| matches!(k, Kind::Choice | Kind::YesNo))
}

/// Whether a question is about the value it names ("Is 8:00 a.m. OK?", "Should I book for
/// 4?", "Morning or after work?"): at most two words besides values, days and parts of the day.
fn confirms_a_value(text: &str, lead: &str) -> bool {
    // Besides the weekdays (`world::clock::WEEKDAYS`).
    const CALENDAR: [&str; 21] = [
        "next",
        "this",
        "last",
        "am",
        "pm",
        "a.m",
        "p.m",
        "tomorrow",
        "today",
        "tonight",
        "morning",
        "afternoon",
        "evening",
        "night",
        "noon",
        "week",
        "weekend",
        "day",
        "work",
        "time",
        "date",
    ];
    let t = format!("{lead} {text}");
    let words = crate::tasks::language::tokens(&t);
    let others = words
        .iter()
        .filter(|w| !w.stop)
        .filter(|w| {
            let x = w.word.trim_end_matches('.');
            !(CALENDAR.contains(&x)
                || crate::world::clock::WEEKDAYS.contains(&x)
                || values::number_word(x).is_some()
                || x.contains(':')
                || x.chars().next().is_some_and(|c| c.is_ascii_digit())
                || crate::tasks::values::parse(x).is_some())
        })
        .count();
    others <= 1
}

/// The names of a table's records (its title field), for a ref field's options.
fn record_names(catalog: &Catalog, t: crate::world::types::TableId) -> Vec<String> {
    let table = catalog.table(t);
    let Some(title) = table.title else {
        return Vec::new();
    };
    table
        .records
        .iter()
        .filter_map(|r| {
            r.values
                .get(title)
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect()
}

/// Each slot's field: the reference solution's call taking its value, else (for fallbacks
/// and stops) the option the task made unavailable.
pub fn fields(bundle: &TaskBundle, catalog: &Catalog) -> HashMap<String, FieldInfo> {
    let mut out = HashMap::new();
    let binds = bundle.slot_bindings();
    let unavailable = &bundle.task.hidden_context.unavailable;
    for s in &bundle.slots {
        // Unbound: a fallback or stop slot (ask-only), or the preference that became
        // unavailable (its value is the unavailable one), is about the unavailable argument.
        let (tool, arg) = match binds.get(&s.slot_id) {
            Some(b) => b.clone(),
            None => match unavailable
                .iter()
                .find(|u| s.source == Source::AskOnly || u.value == s.value)
            {
                Some(u) => (u.tool.clone(), u.arg.clone()),
                None => continue,
            },
        };
        let mut info = FieldInfo {
            name: arg.clone(),
            operation: tool.clone(),
            ..FieldInfo::default()
        };
        if let Some(op) = catalog.operation(&tool) {
            info.siblings = op
                .fields
                .iter()
                .filter(|f| f.name != arg)
                .map(|f| f.name.clone())
                .collect();
            if let Some(f) = op.field_idx(&arg).map(|i| &op.fields[i]) {
                info.description = f.description.clone();
                info.kind = Some(f.kind.clone());
                match &f.kind {
                    FieldKind::Enum(options) => info.options = options.clone(),
                    FieldKind::Ref(t) => {
                        info.options = record_names(catalog, *t);
                        info.table = catalog.table(*t).name.clone();
                    }
                    _ => {}
                }
            }
        }
        info.unavailable = unavailable
            .iter()
            .filter(|u| u.tool == tool && u.arg == arg)
            .map(|u| crate::world::types::display(&u.value))
            .collect();
        out.insert(s.slot_id.clone(), info);
    }
    out
}

/// The groups of a field of named options: a message field's groups (a text: card, note, post)
/// are too wide to name it, so only enum and ref fields have them.
fn option_field_groups(field: Option<&FieldInfo>, field_stems: &[String]) -> HashSet<String> {
    let has_options =
        field.is_some_and(|f| matches!(f.kind, Some(FieldKind::Enum(_)) | Some(FieldKind::Ref(_))));
    if !has_options {
        return HashSet::new();
    }
    concepts(field_stems)
        .into_iter()
        .filter(|c| c.starts_with('#'))
        .collect()
}

/// The words before an inferable slot's head noun that are neither its field's nor its id's
/// ("usual" in "her usual pickup spot"): they qualify which of several values is meant.
fn inferable_modifiers(
    slot: &Slot,
    field_stems: &[String],
    id_stems: &[String],
) -> HashSet<String> {
    if slot.source != Source::Inferable {
        return HashSet::new();
    }
    let head: Vec<String> = about_head_words(slot.about.split(" (").next().unwrap_or(""))
        .split_whitespace()
        .flat_map(content_stems)
        .collect();
    head.split_last()
        .map(|(_, rest)| {
            rest.iter()
                .filter(|s| !field_stems.contains(s) && !id_stems.contains(s))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}
