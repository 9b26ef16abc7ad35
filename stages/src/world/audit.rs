//! The world audit: measurements a careful researcher would take before trusting a synthesized
//! history. How varied the text is, how much evidence each profile entry has and how much of it
//! agrees, which events contradict the profile or the app data by rule, and how easily a
//! bag-of-words classifier tells signal from noise. `build_world` writes it as the `audit`
//! table (`prefflow show world.audit`); the world tests assert its targets.

use std::collections::{BTreeMap, HashMap, HashSet};

use rand::rngs::Xoshiro256PlusPlus;
use rand::seq::SliceRandom;
use rand::SeedableRng;

use super::app::{Catalog, Record};
use super::assemble::World;
use super::clock::Date;
use super::history::{HistoryEvent, Label};
use super::persona::text::mentions_lowered;
use super::persona::{Persona, ProfileEntry, Source};
use super::rules::{
    act_on, act_window, attributes, choice_tables, is_avoid, occasion, one_off_key, owned,
    purchasable, purposes, record_date, record_towns, towns_named, Act,
};
use super::types::{value_matches, FieldKind, TableId};
use crate::text::tokens;

pub use super::core_text::{core_text, decorations, DECORATION_LISTS};
pub use super::rules::{LISTING_DAYS, ONE_OFF_MARKERS};
pub use finding::{Contradiction, Rule};

/// The evidence behind one inferable profile entry.
#[derive(Debug, Clone, PartialEq)]
pub struct EntryEvidence {
    /// The entry id.
    pub entry: String,
    /// Events that support it.
    pub supporting: usize,
    /// Events designed to disagree with it (a minority a careful reader outweighs).
    pub counter: usize,
    /// Share of its events (supporting + counter) that agree with the value in effect.
    pub agreement: f64,
}

/// How well a bag-of-words classifier separates signal from noise.
#[derive(Debug, Clone, PartialEq)]
pub struct Separability {
    /// Mean of the per-class recalls on the held-out half (0.5 = chance).
    pub balanced_accuracy: f64,
    /// Recall on signal events.
    pub signal_recall: f64,
    /// Recall on noise events.
    pub noise_recall: f64,
    /// Events trained on.
    pub train: usize,
    /// Events tested on.
    pub test: usize,
}

/// How well the best single surface feature separates signal from noise: one n-gram of up to
/// three words, raw or with capitalised words and numbers abstracted (`for <Cap>`), anywhere
/// or at the start or end of the text (`for <Cap> $`). Catches the tricks a bag of words misses,
/// such as one phrase in a fixed position.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleSeparability {
    /// Balanced accuracy of the rule chosen on the training half, on the held-out half.
    pub balanced_accuracy: f64,
    /// The feature (`^` marks the start, `$` the end).
    pub feature: String,
    /// Whether the feature's presence predicts noise (else signal).
    pub predicts_noise: bool,
    /// The rule's balanced accuracy on the half it was chosen on.
    pub train_balanced_accuracy: f64,
}

/// Everything the audit measures.
#[derive(Debug, Clone, PartialEq)]
pub struct WorldAudit {
    /// History events.
    pub events: usize,
    /// Distinct event texts.
    pub distinct_texts: usize,
    /// Share of signal events whose exact text occurs at least five times.
    pub stamped_signal_share: f64,
    /// Distinct core texts ([`core_text`]: without decorations, companions, weekdays, "this
    /// time").
    pub distinct_cores: usize,
    /// Share of signal events whose core text occurs at least five times.
    pub stamped_core_share: f64,
    /// Per inferable entry, in profile order.
    pub entries: Vec<EntryEvidence>,
    /// Contradictions found by rule.
    pub contradictions: Vec<Contradiction>,
    /// Signal/noise separability by naive Bayes on a seeded half; `None` when a class is missing.
    pub separability: Option<Separability>,
    /// Signal/noise separability by a class-balanced logistic regression on word uni- and
    /// bigrams, 5-fold cross-validated; `None` when a class is missing.
    pub logistic: Option<Separability>,
    /// The best single-feature rule's separability; `None` when a class is missing.
    pub rule: Option<RuleSeparability>,
    /// The word uni- and bigrams the logistic regression (trained on every event) weighs most,
    /// [`TOP_GRAMS`] per class, noise first: where a remaining separability comes from.
    pub top_grams: Vec<(String, f64)>,
}

impl WorldAudit {
    /// Distinct texts over events (1 when there are no events).
    pub fn distinct_ratio(&self) -> f64 {
        if self.events == 0 {
            1.0
        } else {
            self.distinct_texts as f64 / self.events as f64
        }
    }

    /// Distinct core texts over events (1 when there are no events).
    pub fn core_ratio(&self) -> f64 {
        if self.events == 0 {
            1.0
        } else {
            self.distinct_cores as f64 / self.events as f64
        }
    }

    /// Contradictions found by one rule.
    pub fn count(&self, rule: Rule) -> usize {
        self.contradictions
            .iter()
            .filter(|c| c.rule == rule)
            .count()
    }
}

/// Audits a built world; `seed` chooses the classifier's training half.
pub fn audit(world: &World, seed: u64) -> WorldAudit {
    let history = &world.history;
    let (distinct_texts, stamped_signal_share) = text_variety(history);
    let decorations = decorations(&world.catalog, &world.persona);
    let (distinct_cores, stamped_core_share) = core_variety(history, &decorations);
    WorldAudit {
        events: history.len(),
        distinct_texts,
        stamped_signal_share,
        distinct_cores,
        stamped_core_share,
        entries: entry_evidence(&world.persona, history),
        contradictions: contradictions(&world.catalog, &world.persona, history, &decorations),
        separability: separability(history, seed),
        logistic: logistic_separability(history, seed),
        rule: rule_separability(history, seed),
        top_grams: logistic_top_grams(history, seed),
    }
}

fn text_variety(history: &[HistoryEvent]) -> (usize, f64) {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for e in history {
        *counts.entry(e.text.as_str()).or_default() += 1;
    }
    let signal: Vec<&HistoryEvent> = history
        .iter()
        .filter(|e| e.label == Label::Signal)
        .collect();
    let stamped = signal
        .iter()
        .filter(|e| counts.get(e.text.as_str()).is_some_and(|&n| n >= 5))
        .count();
    let share = if signal.is_empty() {
        0.0
    } else {
        stamped as f64 / signal.len() as f64
    };
    (counts.len(), share)
}

fn entry_evidence(persona: &Persona, history: &[HistoryEvent]) -> Vec<EntryEvidence> {
    let mut supporting: HashMap<&str, usize> = HashMap::new();
    let mut counter: HashMap<&str, usize> = HashMap::new();
    for e in history {
        for s in &e.supports {
            *supporting.entry(s.as_str()).or_default() += 1;
        }
        for s in &e.counters {
            *counter.entry(s.as_str()).or_default() += 1;
        }
    }
    persona
        .profile
        .iter()
        .filter(|p| p.source == Source::Inferable)
        .map(|p| {
            let s = supporting.get(p.id.as_str()).copied().unwrap_or(0);
            let c = counter.get(p.id.as_str()).copied().unwrap_or(0);
            EntryEvidence {
                entry: p.id.clone(),
                supporting: s,
                counter: c,
                agreement: if s + c == 0 {
                    0.0
                } else {
                    s as f64 / (s + c) as f64
                },
            }
        })
        .collect()
}

/// A record a rule looks for in event text, with its lower-cased label.
struct Named<'c> {
    label: String,
    record: &'c Record,
}

fn named_records<'c>(
    cat: &'c Catalog,
    table: TableId,
    keep: impl Fn(&Record) -> bool,
) -> Vec<Named<'c>> {
    let t = cat.table(table);
    t.records
        .iter()
        .filter(|r| keep(r))
        .map(|r| Named {
            label: t.label(r).to_lowercase(),
            record: r,
        })
        .filter(|n| n.label.chars().filter(|c| c.is_alphanumeric()).count() >= 4)
        .collect()
}

fn contradictions(
    cat: &Catalog,
    persona: &Persona,
    history: &[HistoryEvent],
    decorations: &[String],
) -> Vec<Contradiction> {
    let lowered: Vec<String> = history.iter().map(|e| e.text.to_lowercase()).collect();
    let mut out = Vec::new();
    for p in persona
        .profile
        .iter()
        .filter(|p| p.source == Source::Inferable)
    {
        for (table, field) in attributes(cat, p) {
            out.extend(shift_findings(cat, p, table, field, history, &lowered));
            if is_avoid(p) {
                out.extend(avoid_findings(cat, p, table, field, history, &lowered));
            }
        }
    }
    out.extend(before_exists(cat, history, &lowered));
    out.extend(dated_purchases(cat, history));
    out.extend(one_offs_repeated(cat, history, &lowered, decorations));
    out.extend(places_and_purposes(cat, &persona.towns, history, &lowered));
    out.extend(days::calendar_findings(persona, history));
    out
}

/// A shifted entry's earlier value named after its change date: by her events, or by her choices
/// in the app data.
fn shift_findings(
    cat: &Catalog,
    p: &ProfileEntry,
    table: TableId,
    field: usize,
    history: &[HistoryEvent],
    lowered: &[String],
) -> Vec<Contradiction> {
    let Some(s) = &p.shift else {
        return Vec::new();
    };
    let old = shifted_from(cat, p, s, table, field);
    let mut out = Vec::new();
    for (e, n) in signal_naming(history, lowered, &old, |e| e.time.date >= s.changed) {
        out.push(Contradiction {
            rule: Rule::Shift,
            event_id: e.event_id.clone(),
            detail: format!(
                "{} after `{}` changed to {} on {}: \"{}\" names {} ({})",
                e.time.date,
                p.id,
                super::types::display(&p.value),
                s.changed,
                e.text,
                n.record.id,
                super::types::display(&s.from)
            ),
        });
    }
    let old_ids: Vec<&str> = old.iter().map(|n| n.record.id.as_str()).collect();
    for (name, r, when, target) in referring_records(cat, table) {
        if when.is_some_and(|d| d >= s.changed) && old_ids.contains(&target) {
            out.push(Contradiction {
                rule: Rule::Shift,
                event_id: format!("app:{name}/{}", r.id),
                detail: format!(
                    "app data: {name} `{}` on {} refers to {target} ({}) after `{}` changed to {} on {}",
                    r.id,
                    when.map(|d| d.to_string()).unwrap_or_default(),
                    super::types::display(&s.from),
                    p.id,
                    super::types::display(&p.value),
                    s.changed
                ),
            });
        }
    }
    out
}

/// The records of `table` whose `field` holds a shift's earlier value and not the current one.
fn shifted_from<'c>(
    cat: &'c Catalog,
    p: &ProfileEntry,
    s: &super::persona::Shift,
    table: TableId,
    field: usize,
) -> Vec<Named<'c>> {
    named_records(cat, table, |r| {
        r.values
            .get(field)
            .is_some_and(|v| value_matches(v, &s.from))
            && !r
                .values
                .get(field)
                .is_some_and(|v| value_matches(v, &p.value))
    })
}

/// Her signal events that `keep` admits and that name one of `named`, each with the first
/// record it names: how the shift and avoid rules find the events that contradict an entry.
fn signal_naming<'h, 'n, 'c>(
    history: &'h [HistoryEvent],
    lowered: &'h [String],
    named: &'n [Named<'c>],
    keep: impl Fn(&HistoryEvent) -> bool + 'h,
) -> impl Iterator<Item = (&'h HistoryEvent, &'n Named<'c>)> + 'h
where
    'n: 'h,
{
    history
        .iter()
        .zip(lowered)
        .filter(move |(e, _)| e.label == Label::Signal && keep(e))
        .filter_map(move |(e, text)| {
            let n = named.iter().find(|n| mentions_lowered(text, &n.label))?;
            Some((e, n))
        })
}

/// A value she avoids named by a choice: in the app data, or by her events other than the
/// avoid-list's own evidence and designed exceptions.
fn avoid_findings(
    cat: &Catalog,
    p: &ProfileEntry,
    table: TableId,
    field: usize,
    history: &[HistoryEvent],
    lowered: &[String],
) -> Vec<Contradiction> {
    let mut out = Vec::new();
    let avoided = named_records(cat, table, |r| {
        r.values
            .get(field)
            .is_some_and(|v| value_matches(v, &p.value))
    });
    for (name, r, _, target) in referring_records(cat, table) {
        if avoided.iter().any(|n| n.record.id == target) {
            out.push(Contradiction {
                rule: Rule::Avoid,
                event_id: format!("app:{name}/{}", r.id),
                detail: format!(
                    "app data: {name} `{}` refers to {target}, a {} the user avoids (`{}`)",
                    r.id,
                    super::types::display(&p.value),
                    p.id
                ),
            });
        }
    }
    // The avoid-list's own evidence and designed exceptions name it on purpose.
    let other = |e: &HistoryEvent| !e.supports.contains(&p.id) && !e.counters.contains(&p.id);
    for (e, n) in signal_naming(history, lowered, &avoided, other) {
        out.push(Contradiction {
            rule: Rule::Avoid,
            event_id: e.event_id.clone(),
            detail: format!(
                "\"{}\" names {}, a {} the user avoids (`{}`)",
                e.text,
                n.record.id,
                super::types::display(&p.value),
                p.id
            ),
        });
    }
    out
}

/// Events that say two things an appended circumstance may not: two towns (in words, or through
/// a record they name that is in or goes to a town) and two purposes.
fn places_and_purposes(
    cat: &Catalog,
    towns: &[Vec<String>],
    history: &[HistoryEvent],
    lowered: &[String],
) -> Vec<Contradiction> {
    let placed: Vec<(String, Vec<usize>)> = cat
        .apps
        .iter()
        .flat_map(|a| &a.tables)
        .flat_map(|t| {
            t.records
                .iter()
                .map(move |r| (t.label(r).to_lowercase(), r))
        })
        .filter(|(l, _)| l.chars().filter(|c| c.is_alphanumeric()).count() >= 4)
        .map(|(l, r)| (l, record_towns(r, towns)))
        .filter(|(_, t)| !t.is_empty())
        .collect();
    let mut out = Vec::new();
    for (e, text) in history.iter().zip(lowered) {
        let mut here = towns_named(&e.text, towns);
        for (_, t) in placed.iter().filter(|(l, _)| mentions_lowered(text, l)) {
            here.extend(t);
        }
        here.sort_unstable();
        here.dedup();
        if here.len() > 1 {
            let names: Vec<&str> = here.iter().map(|&i| towns[i][0].as_str()).collect();
            out.push(Contradiction {
                rule: Rule::PlaceConflict,
                event_id: e.event_id.clone(),
                detail: format!("\"{}\" is about {}", e.text, names.join(" and ")),
            });
        }
        if purposes(&e.text) > 1 {
            out.push(Contradiction {
                rule: Rule::PurposeTwice,
                event_id: e.event_id.clone(),
                detail: format!("\"{}\" says why twice", e.text),
            });
        }
    }
    out
}

/// The user's own choices that refer to a record of `target` (a reservation's restaurant): the
/// table's name, the record, its date and the id referred to. Only tables of choices count
/// ([`choice_tables`]): a public trending list or her own two-star review of a steakhouse is
/// no choice of one.
fn referring_records(cat: &Catalog, target: TableId) -> Vec<(String, &Record, Option<Date>, &str)> {
    let mut out = Vec::new();
    for id in choice_tables(cat) {
        let t = cat.table(id);
        let Some(f) = t
            .fields
            .iter()
            .position(|f| f.kind == FieldKind::Ref(target) && !f.many)
        else {
            continue;
        };
        for r in &t.records {
            if let Some(to) = r.values.get(f).and_then(|v| v.as_str()) {
                out.push((cat.table_name(id), r, record_date(cat, id, r), to));
            }
        }
    }
    out
}

fn before_exists(
    cat: &Catalog,
    history: &[HistoryEvent],
    lowered: &[String],
) -> Vec<Contradiction> {
    // (record, its date, the app it is bought in)
    let mut dated: Vec<(Named<'_>, Date, &str)> = Vec::new();
    for id in purchasable(cat) {
        let app = cat.apps[id.app as usize].id.as_str();
        for n in named_records(cat, id, |_| true) {
            if let Some(d) = record_date(cat, id, n.record) {
                dated.push((n, d, app));
            }
        }
    }
    let mut out = Vec::new();
    for (e, text) in history.iter().zip(lowered) {
        let hit = dated.iter().find(|(n, d, app)| {
            e.app == *app
                && i64::from(e.time.date.days_until(*d)) > LISTING_DAYS
                && mentions_lowered(text, &n.label)
        });
        if let Some((n, d, _)) = hit {
            out.push(Contradiction {
                rule: Rule::BeforeExists,
                event_id: e.event_id.clone(),
                detail: format!(
                    "{}: \"{}\" names {} dated {d}, more than {LISTING_DAYS} days later",
                    e.time.date, e.text, n.record.id
                ),
            });
        }
    }
    out
}

fn one_offs_repeated(
    cat: &Catalog,
    history: &[HistoryEvent],
    lowered: &[String],
    decorations: &[String],
) -> Vec<Contradiction> {
    let labels: Vec<String> = cat
        .apps
        .iter()
        .flat_map(|a| &a.tables)
        .flat_map(|t| t.records.iter().map(|r| t.label(r).to_lowercase()))
        .filter(|l| l.chars().filter(|c| c.is_alphanumeric()).count() >= 4)
        .collect();
    let mut seen: HashMap<(String, String), &str> = HashMap::new();
    let mut out = Vec::new();
    for (e, text) in history.iter().zip(lowered) {
        let core = core_text(&e.text, decorations);
        let key = occasion(text).or_else(|| one_off_key(&core, text, &labels));
        let Some(o) = key else { continue };
        match seen.get(&(e.app.clone(), o.clone())) {
            Some(first) => out.push(Contradiction {
                rule: Rule::OneOffRepeated,
                event_id: e.event_id.clone(),
                detail: format!(
                    "{} records \"{o}\" again (first in {first}): \"{}\"",
                    e.app, e.text
                ),
            }),
            None => {
                seen.insert((e.app.clone(), o), e.event_id.as_str());
            }
        }
    }
    out
}

/// What events say she did with dated records one buys (flights, shows), against their dates
/// and her orders in the app data ([`act_on`]): a completion before the record's date or a
/// purchase on or after it, a completion days after it, a purchase the app holds no order of,
/// and the same record bought twice.
fn dated_purchases(cat: &Catalog, history: &[HistoryEvent]) -> Vec<Contradiction> {
    let mut dated: Vec<(Named<'_>, Date, TableId)> = Vec::new();
    for id in purchasable(cat) {
        for n in named_records(cat, id, |_| true) {
            if let Some(d) = record_date(cat, id, n.record) {
                dated.push((n, d, id));
            }
        }
    }
    let mut bought: HashMap<(TableId, &str), &str> = HashMap::new();
    let mut done: HashMap<(TableId, &str), &str> = HashMap::new();
    let mut out = Vec::new();
    for e in history {
        let lower = e.text.to_lowercase();
        for (n, d, table) in &dated {
            if !mentions_lowered(&lower, &n.label) {
                continue;
            }
            let act = act_on(&e.text, &n.label);
            let (lo, hi) = act_window(act, *d);
            let say = |rule: Rule, what: String| Contradiction {
                rule,
                event_id: e.event_id.clone(),
                detail: format!("{}: \"{}\" {what}", e.time.date, e.text),
            };
            let early = act == Act::Completed && e.time.date < lo;
            let late = matches!(act, Act::Purchase | Act::Completed) && e.time.date > hi;
            if early || late {
                out.push(say(
                    Rule::CompletedBeforeDate,
                    format!(
                        "tells a {} of {} dated {d}",
                        if act == Act::Completed {
                            "completion"
                        } else {
                            "purchase"
                        },
                        n.record.id
                    ),
                ));
            }
            if act == Act::Completed {
                match done.get(&(*table, n.record.id.as_str())) {
                    Some(first) => out.push(say(
                        Rule::RepeatedCompletion,
                        format!("tells {} used again (first in {first})", n.record.id),
                    )),
                    None => {
                        done.insert((*table, n.record.id.as_str()), e.event_id.as_str());
                    }
                }
            }
            if act == Act::Purchase {
                if !owned(cat, *table, &n.record.id) {
                    out.push(say(
                        Rule::PurchaseAbsent,
                        format!(
                            "says she bought {}, but {} holds no order of it",
                            n.record.id,
                            cat.table_name(*table)
                        ),
                    ));
                }
                match bought.get(&(*table, n.record.id.as_str())) {
                    Some(first) => out.push(say(
                        Rule::RepeatedPurchase,
                        format!("buys {} again (first in {first})", n.record.id),
                    )),
                    None => {
                        bought.insert((*table, n.record.id.as_str()), e.event_id.as_str());
                    }
                }
            }
        }
    }
    out
}

/// A seeded split of `n` events into a training half and a test half (both classifiers use it).
fn halves(n: usize, seed: u64) -> (Vec<usize>, Vec<usize>) {
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5eed_a0d1));
    let test = order.split_off(n / 2);
    (order, test)
}

/// Multinomial naive Bayes (Laplace smoothing) over text tokens, trained on a seeded half of the
/// events and tested on the other half.
fn separability(history: &[HistoryEvent], seed: u64) -> Option<Separability> {
    let (train, test) = halves(history.len(), seed);
    let (train, test) = (&train[..], &test[..]);
    let class = |i: usize| usize::from(history[i].label == Label::Noise);
    let mut words: [HashMap<String, f64>; 2] = Default::default();
    let mut totals = [0.0f64; 2];
    let mut docs = [0.0f64; 2];
    let mut vocab: HashSet<String> = HashSet::new();
    for &i in train {
        let c = class(i);
        docs[c] += 1.0;
        for w in tokens(&history[i].text) {
            *words[c].entry(w.clone()).or_default() += 1.0;
            totals[c] += 1.0;
            vocab.insert(w);
        }
    }
    if docs[0] == 0.0 || docs[1] == 0.0 {
        return None;
    }
    let v = vocab.len() as f64;
    let prior = [docs[0].ln(), docs[1].ln()];
    let mut hits = [0usize; 2];
    let mut seen = [0usize; 2];
    for &i in test {
        let c = class(i);
        seen[c] += 1;
        let score = |k: usize| {
            prior[k]
                + tokens(&history[i].text)
                    .filter(|w| vocab.contains(w))
                    .map(|w| {
                        ((words[k].get(&w).copied().unwrap_or(0.0) + 1.0) / (totals[k] + v)).ln()
                    })
                    .sum::<f64>()
        };
        let guess = usize::from(score(1) > score(0));
        if guess == c {
            hits[c] += 1;
        }
    }
    if seen[0] == 0 || seen[1] == 0 {
        return None;
    }
    let recall = |k: usize| hits[k] as f64 / seen[k] as f64;
    Some(Separability {
        balanced_accuracy: (recall(0) + recall(1)) / 2.0,
        signal_recall: recall(0),
        noise_recall: recall(1),
        train: train.len(),
        test: test.len(),
    })
}

/// The surface features of one text, as ids into `ids` (assigned in first-seen order, so the
/// choice among equally good features is deterministic): word n-grams of one to three words,
/// raw and with shapes (a capitalised word after the first → `<Cap>`, a number → `<num>`),
/// anywhere and as the first or last one or two words.
fn surface_features(text: &str, ids: &mut HashMap<String, usize>) -> Vec<usize> {
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let raw: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    let shape: Vec<String> = words
        .iter()
        .enumerate()
        .map(|(i, w)| {
            if w.chars().all(|c| c.is_ascii_digit()) {
                "<num>".to_string()
            } else if i > 0 && w.starts_with(char::is_uppercase) {
                "<Cap>".to_string()
            } else {
                w.to_lowercase()
            }
        })
        .collect();
    let mut names: Vec<String> = Vec::new();
    for (tag, seq) in [("", &raw), ("~", &shape)] {
        for n in 1..=3.min(seq.len()) {
            for gram in seq.windows(n) {
                names.push(format!("{tag}{}", gram.join(" ")));
            }
            if n <= 2 {
                names.push(format!("{tag}^ {}", seq[..n].join(" ")));
                names.push(format!("{tag}{} $", seq[seq.len() - n..].join(" ")));
            }
        }
    }
    intern(names, ids)
}

/// The best single-feature rule (present → one class), chosen on the seeded training half by
/// balanced accuracy and measured on the other half.
fn rule_separability(history: &[HistoryEvent], seed: u64) -> Option<RuleSeparability> {
    let mut ids: HashMap<String, usize> = HashMap::new();
    let features: Vec<Vec<usize>> = history
        .iter()
        .map(|e| surface_features(&e.text, &mut ids))
        .collect();
    let class = |i: usize| usize::from(history[i].label == Label::Noise);
    let (train, test) = halves(history.len(), seed);
    // Per feature, the events of each class that have it; and the class sizes.
    let count = |rows: &[usize]| {
        let mut with = vec![[0usize; 2]; ids.len()];
        let mut size = [0usize; 2];
        for &i in rows {
            size[class(i)] += 1;
            for &f in &features[i] {
                with[f][class(i)] += 1;
            }
        }
        (with, size)
    };
    let (with, size) = count(&train);
    if size[0] == 0 || size[1] == 0 {
        return None;
    }
    // Balanced accuracy of "present → noise"; "present → signal" scores 1 minus it.
    let ba = |w: [usize; 2], n: [usize; 2]| {
        0.5 + (w[1] as f64 / n[1] as f64 - w[0] as f64 / n[0] as f64) / 2.0
    };
    let (best, train_ba) =
        (0..ids.len())
            .map(|f| (f, ba(with[f], size)))
            .fold((0, 0.5), |(bf, bb), (f, b)| {
                if (b - 0.5).abs() > (bb - 0.5f64).abs() {
                    (f, b)
                } else {
                    (bf, bb)
                }
            });
    let (test_with, test_size) = count(&test);
    if test_size[0] == 0 || test_size[1] == 0 {
        return None;
    }
    let predicts_noise = train_ba >= 0.5;
    let test_ba = ba(test_with[best], test_size);
    let name = ids
        .iter()
        .find(|(_, &i)| i == best)
        .map(|(n, _)| n.trim_start_matches('~').to_string())
        .unwrap_or_default();
    Some(RuleSeparability {
        balanced_accuracy: if predicts_noise {
            test_ba
        } else {
            1.0 - test_ba
        },
        feature: name,
        predicts_noise,
        train_balanced_accuracy: if predicts_noise {
            train_ba
        } else {
            1.0 - train_ba
        },
    })
}

/// Distinct core texts, and the share of signal events whose core occurs at least five times.
fn core_variety(history: &[HistoryEvent], decorations: &[String]) -> (usize, f64) {
    let cores: Vec<String> = history
        .iter()
        .map(|e| core_text(&e.text, decorations))
        .collect();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for c in &cores {
        *counts.entry(c.as_str()).or_default() += 1;
    }
    let signal: Vec<usize> = (0..history.len())
        .filter(|&i| history[i].label == Label::Signal)
        .collect();
    let stamped = signal
        .iter()
        .filter(|&&i| counts.get(cores[i].as_str()).is_some_and(|&n| n >= 5))
        .count();
    let share = if signal.is_empty() {
        0.0
    } else {
        stamped as f64 / signal.len() as f64
    };
    (counts.len(), share)
}

/// Folds of the cross-validated logistic regression.
pub const LR_FOLDS: usize = 5;

/// Word unigrams and bigrams of a text (lower-cased words of letters and digits), as ids.
fn word_grams(text: &str, ids: &mut HashMap<String, usize>) -> Vec<usize> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let mut names: Vec<String> = words.clone();
    names.extend(words.windows(2).map(|w| format!("{} {}", w[0], w[1])));
    intern(names, ids)
}

/// The ids of `names` in `ids` (new names get the next id), sorted and without repeats: an
/// event's feature set.
fn intern(names: Vec<String>, ids: &mut HashMap<String, usize>) -> Vec<usize> {
    let mut out: Vec<usize> = names
        .into_iter()
        .map(|g| {
            let next = ids.len();
            *ids.entry(g).or_insert(next)
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// A class-balanced logistic regression on word uni- and bigrams (L2, strength 1 per event as
/// scikit-learn's default `C = 1`), trained by stochastic gradient descent; returns the weights
/// and the bias.
fn train_logistic(
    features: &[Vec<usize>],
    noise: &[bool],
    rows: &[usize],
    dims: usize,
    seed: u64,
) -> (Vec<f64>, f64) {
    const EPOCHS: usize = 20;
    let n = rows.len().max(1) as f64;
    let n_noise = rows.iter().filter(|&&i| noise[i]).count().max(1) as f64;
    let n_signal = (n - n_noise).max(1.0);
    let weight = |is_noise: bool| {
        if is_noise {
            n / (2.0 * n_noise)
        } else {
            n / (2.0 * n_signal)
        }
    };
    let lambda = 1.0 / n;
    let mut v = vec![0.0f64; dims];
    let mut scale = 1.0f64;
    let mut bias = 0.0f64;
    let mut order = rows.to_vec();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut t = 0.0f64;
    let eta0 = 0.5;
    for _ in 0..EPOCHS {
        order.shuffle(&mut rng);
        for &i in &order {
            let eta = eta0 / (1.0 + eta0 * lambda * t);
            t += 1.0;
            let z = bias + scale * features[i].iter().map(|&j| v[j]).sum::<f64>();
            let p = 1.0 / (1.0 + (-z).exp());
            let y = if noise[i] { 1.0 } else { 0.0 };
            let g = weight(noise[i]) * (p - y);
            scale *= 1.0 - eta * lambda;
            if scale < 1e-9 {
                v.iter_mut().for_each(|x| *x *= scale);
                scale = 1.0;
            }
            for &j in &features[i] {
                v[j] -= eta * g / scale;
            }
            bias -= eta * g;
        }
    }
    (v.into_iter().map(|x| x * scale).collect(), bias)
}

/// Gram ids, each event's gram set and whether it is noise: what the logistic regression reads.
/// `None` when a class is missing.
type GramFeatures = (HashMap<String, usize>, Vec<Vec<usize>>, Vec<bool>);

fn gram_features(history: &[HistoryEvent]) -> Option<GramFeatures> {
    let mut ids: HashMap<String, usize> = HashMap::new();
    let features: Vec<Vec<usize>> = history
        .iter()
        .map(|e| word_grams(&e.text, &mut ids))
        .collect();
    let noise: Vec<bool> = history.iter().map(|e| e.label == Label::Noise).collect();
    if noise.iter().all(|&x| x) || noise.iter().all(|&x| !x) {
        return None;
    }
    Some((ids, features, noise))
}

/// Balanced accuracy of a class-balanced logistic regression on word uni- and bigrams, averaged
/// over [`LR_FOLDS`] seeded folds (each event is tested once, by a model that never saw it); the
/// balanced class weights put the threshold at 0.5. `None` when a class is missing.
fn logistic_separability(history: &[HistoryEvent], seed: u64) -> Option<Separability> {
    let (ids, features, noise) = gram_features(history)?;
    let mut order: Vec<usize> = (0..history.len()).collect();
    order.shuffle(&mut Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x10_61_57_1c));
    let mut hits = [0usize; 2];
    let mut seen = [0usize; 2];
    let mut per_fold = Vec::with_capacity(LR_FOLDS);
    for k in 0..LR_FOLDS {
        let test: Vec<usize> = order.iter().skip(k).step_by(LR_FOLDS).copied().collect();
        let train: Vec<usize> = order
            .iter()
            .enumerate()
            .filter(|(p, _)| p % LR_FOLDS != k)
            .map(|(_, &i)| i)
            .collect();
        let (w, b) = train_logistic(&features, &noise, &train, ids.len(), seed + k as u64);
        let mut fh = [0usize; 2];
        let mut fs = [0usize; 2];
        for &i in &test {
            let c = usize::from(noise[i]);
            let z = b + features[i].iter().map(|&j| w[j]).sum::<f64>();
            fs[c] += 1;
            if usize::from(z > 0.0) == c {
                fh[c] += 1;
            }
        }
        if fs[0] > 0 && fs[1] > 0 {
            per_fold.push((fh[0] as f64 / fs[0] as f64 + fh[1] as f64 / fs[1] as f64) / 2.0);
        }
        for c in 0..2 {
            hits[c] += fh[c];
            seen[c] += fs[c];
        }
    }
    if per_fold.is_empty() || seen[0] == 0 || seen[1] == 0 {
        return None;
    }
    Some(Separability {
        balanced_accuracy: per_fold.iter().sum::<f64>() / per_fold.len() as f64,
        signal_recall: hits[0] as f64 / seen[0] as f64,
        noise_recall: hits[1] as f64 / seen[1] as f64,
        train: history.len() - history.len() / LR_FOLDS,
        test: history.len() / LR_FOLDS,
    })
}

/// The grams [`logistic_top_grams`] reports per class.
pub const TOP_GRAMS: usize = 12;

/// The [`TOP_GRAMS`] word uni- and bigrams with the largest weight towards noise, then those
/// towards signal, of a class-balanced logistic regression trained on every event (weights
/// positive for noise). Empty when a class is missing.
fn logistic_top_grams(history: &[HistoryEvent], seed: u64) -> Vec<(String, f64)> {
    let Some((ids, features, noise)) = gram_features(history) else {
        return Vec::new();
    };
    let rows: Vec<usize> = (0..history.len()).collect();
    let (w, _) = train_logistic(&features, &noise, &rows, ids.len(), seed);
    let mut grams: Vec<(String, f64)> = ids.into_iter().map(|(g, j)| (g, w[j])).collect();
    grams.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let n = grams.len();
    let take = TOP_GRAMS.min(n / 2);
    let mut out: Vec<(String, f64)> = grams[..take].to_vec();
    out.extend(grams[n - take..].iter().rev().cloned());
    out
}

/// One row of the `audit` table.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRow {
    /// `total`, `separability`, `contradictions`, `entry_events`, `entry_counter`,
    /// `entry_agreement` or `contradiction`.
    pub section: &'static str,
    /// The metric, entry id or rule.
    pub key: String,
    /// The measurement.
    pub value: f64,
    /// A readable note (the offending event for a contradiction).
    pub detail: String,
}

/// The audit as rows of (section, key, value, detail), the `audit` table's layout.
pub fn rows(a: &WorldAudit) -> Vec<AuditRow> {
    let mut out = total_rows(a);
    out.extend(separability_rows(a));
    let mut by_rule: BTreeMap<Rule, usize> = Rule::ALL.iter().map(|r| (*r, 0)).collect();
    for c in &a.contradictions {
        *by_rule.entry(c.rule).or_default() += 1;
    }
    out.push(row(
        "contradictions",
        "total",
        a.contradictions.len() as f64,
        "target 0".into(),
    ));
    for (r, n) in by_rule {
        out.push(row("contradictions", r.as_str(), n as f64, String::new()));
    }
    for e in &a.entries {
        out.push(row(
            "entry_events",
            &e.entry,
            e.supporting as f64,
            String::new(),
        ));
        out.push(row(
            "entry_counter",
            &e.entry,
            e.counter as f64,
            String::new(),
        ));
        out.push(row("entry_agreement", &e.entry, e.agreement, String::new()));
    }
    for c in &a.contradictions {
        out.push(row(
            "contradiction",
            c.rule.as_str(),
            1.0,
            format!("{}: {}", c.event_id, c.detail),
        ));
    }
    out
}

/// The `total` rows: how many events, how varied their texts and cores.
fn total_rows(a: &WorldAudit) -> Vec<AuditRow> {
    vec![
        row("total", "events", a.events as f64, String::new()),
        row(
            "total",
            "distinct_texts",
            a.distinct_texts as f64,
            String::new(),
        ),
        row(
            "total",
            "distinct_ratio",
            a.distinct_ratio(),
            "distinct texts / events (target ≥ 0.70)".into(),
        ),
        row(
            "total",
            "stamped_signal_share",
            a.stamped_signal_share,
            "signal events whose exact text occurs ≥ 5 times".into(),
        ),
        row(
            "total",
            "distinct_cores",
            a.distinct_cores as f64,
            String::new(),
        ),
        row(
            "total",
            "core_ratio",
            a.core_ratio(),
            "distinct core texts / events: without companions, day and time phrases, asides, \"this time\", \"again\" (target ≥ 0.70)".into(),
        ),
        row(
            "total",
            "stamped_core_share",
            a.stamped_core_share,
            "signal events whose core text occurs ≥ 5 times".into(),
        ),
    ]
}

/// The `separability` and `separability_gram` rows: how well words tell signal from noise.
fn separability_rows(a: &WorldAudit) -> Vec<AuditRow> {
    let mut out = Vec::new();
    match &a.separability {
        Some(s) => out.extend([
            row(
                "separability",
                "balanced_accuracy",
                s.balanced_accuracy,
                format!(
                    "multinomial naive Bayes on text words, trained on {} events, tested on {} (target ≤ 0.70)",
                    s.train, s.test
                ),
            ),
            row("separability", "signal_recall", s.signal_recall, String::new()),
            row("separability", "noise_recall", s.noise_recall, String::new()),
        ]),
        None => out.push(row(
            "separability",
            "balanced_accuracy",
            f64::NAN,
            "not measured: the history lacks signal or noise".into(),
        )),
    }
    out.push(match &a.logistic {
        Some(s) => row(
            "separability",
            "logistic_balanced_accuracy",
            s.balanced_accuracy,
            format!(
                "class-balanced logistic regression on word uni- and bigrams, {LR_FOLDS}-fold cross-validated, threshold 0.5 (signal recall {:.3}, noise recall {:.3}; target ≤ 0.75)",
                s.signal_recall, s.noise_recall
            ),
        ),
        None => row(
            "separability",
            "logistic_balanced_accuracy",
            f64::NAN,
            "not measured: the history lacks signal or noise".into(),
        ),
    });
    out.push(match &a.rule {
        Some(r) => row(
            "separability",
            "rule_balanced_accuracy",
            r.balanced_accuracy,
            format!(
                "the best single n-gram rule: `{}` → {} (chosen on the training half at {:.3}; target ≤ 0.70)",
                r.feature,
                if r.predicts_noise { "noise" } else { "signal" },
                r.train_balanced_accuracy
            ),
        ),
        None => row(
            "separability",
            "rule_balanced_accuracy",
            f64::NAN,
            "not measured: the history lacks signal or noise".into(),
        ),
    });
    for (gram, weight) in &a.top_grams {
        out.push(row(
            "separability_gram",
            gram,
            *weight,
            format!(
                "logistic weight towards {} (trained on every event)",
                if *weight > 0.0 { "noise" } else { "signal" }
            ),
        ));
    }
    out
}

/// One audit row.
fn row(section: &'static str, key: &str, value: f64, detail: String) -> AuditRow {
    AuditRow {
        section,
        key: key.to_string(),
        value,
        detail,
    }
}

pub mod days;
pub mod finding;

#[cfg(test)]
mod tests;
