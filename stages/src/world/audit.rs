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
use super::clock::Date;
use super::history::{HistoryEvent, Label};
use super::persona::text::mentions_lowered;
use super::persona::{Persona, Source};
use super::rules::{attributes, choice_tables, is_avoid, occasion, purchasable, record_date};
use super::types::{value_matches, FieldKind, TableId};
use super::World;
use crate::episodes::retrieval::tokens;

pub use super::rules::{LISTING_DAYS, ONE_OFF_MARKERS};

/// Which rule found a contradiction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// A choice on or after a shift's change date that names a record of the earlier value.
    Shift,
    /// A choice (other than the entry's own evidence) that names a record the user avoids.
    Avoid,
    /// An event that names a dated record one buys or books (a show, a flight) long before it was
    /// listed.
    BeforeExists,
    /// The same app records a one-off occasion more than once.
    OneOffRepeated,
}

impl Rule {
    /// Every rule, in table order.
    pub const ALL: [Rule; 4] = [
        Rule::Shift,
        Rule::Avoid,
        Rule::BeforeExists,
        Rule::OneOffRepeated,
    ];

    /// The table spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Shift => "shift",
            Rule::Avoid => "avoid",
            Rule::BeforeExists => "before_exists",
            Rule::OneOffRepeated => "one_off_repeated",
        }
    }
}

/// One contradiction found by rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Contradiction {
    /// The rule.
    pub rule: Rule,
    /// The event (or `app:<app.table>/<id>` for an app record).
    pub event_id: String,
    /// What is wrong, readable on its own.
    pub detail: String,
}

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

/// Everything the audit measures.
#[derive(Debug, Clone, PartialEq)]
pub struct WorldAudit {
    /// History events.
    pub events: usize,
    /// Distinct event texts.
    pub distinct_texts: usize,
    /// Share of signal events whose exact text occurs at least five times.
    pub stamped_signal_share: f64,
    /// Per inferable entry, in profile order.
    pub entries: Vec<EntryEvidence>,
    /// Contradictions found by rule.
    pub contradictions: Vec<Contradiction>,
    /// Signal/noise separability; `None` when a class is missing.
    pub separability: Option<Separability>,
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
    WorldAudit {
        events: history.len(),
        distinct_texts,
        stamped_signal_share,
        entries: entry_evidence(&world.persona, history),
        contradictions: contradictions(&world.catalog, &world.persona, history),
        separability: separability(history, seed),
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
) -> Vec<Contradiction> {
    let lowered: Vec<String> = history.iter().map(|e| e.text.to_lowercase()).collect();
    let mut out = Vec::new();
    for p in persona
        .profile
        .iter()
        .filter(|p| p.source == Source::Inferable)
    {
        for (table, field) in attributes(cat, p) {
            if let Some(s) = &p.shift {
                let old = named_records(cat, table, |r| {
                    r.values
                        .get(field)
                        .is_some_and(|v| value_matches(v, &s.from))
                        && !r
                            .values
                            .get(field)
                            .is_some_and(|v| value_matches(v, &p.value))
                });
                for (e, text) in history.iter().zip(&lowered) {
                    if e.label != Label::Signal || e.time.date < s.changed {
                        continue;
                    }
                    if let Some(n) = old.iter().find(|n| mentions_lowered(text, &n.label)) {
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
                }
            }
            if let Some(s) = &p.shift {
                let old: Vec<&str> = named_records(cat, table, |r| {
                    r.values
                        .get(field)
                        .is_some_and(|v| value_matches(v, &s.from))
                        && !r
                            .values
                            .get(field)
                            .is_some_and(|v| value_matches(v, &p.value))
                })
                .iter()
                .map(|n| n.record.id.as_str())
                .collect();
                for (name, r, when, target) in referring_records(cat, table) {
                    if when.is_some_and(|d| d >= s.changed) && old.contains(&target) {
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
            }
            if is_avoid(p) {
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
                for (e, text) in history.iter().zip(&lowered) {
                    // The avoid-list's own evidence and designed exceptions name it on purpose.
                    if e.label != Label::Signal
                        || e.supports.contains(&p.id)
                        || e.counters.contains(&p.id)
                    {
                        continue;
                    }
                    if let Some(n) = avoided.iter().find(|n| mentions_lowered(text, &n.label)) {
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
                }
            }
        }
    }
    out.extend(before_exists(cat, history, &lowered));
    out.extend(one_offs_repeated(history, &lowered));
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

fn one_offs_repeated(history: &[HistoryEvent], lowered: &[String]) -> Vec<Contradiction> {
    let mut seen: HashMap<(String, String), &str> = HashMap::new();
    let mut out = Vec::new();
    for (e, text) in history.iter().zip(lowered) {
        let Some(o) = occasion(text) else { continue };
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

/// Multinomial naive Bayes (Laplace smoothing) over text tokens, trained on a seeded half of the
/// events and tested on the other half.
fn separability(history: &[HistoryEvent], seed: u64) -> Option<Separability> {
    let mut order: Vec<usize> = (0..history.len()).collect();
    order.shuffle(&mut Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5eed_a0d1));
    let (train, test) = order.split_at(order.len() / 2);
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
    let row = |section, key: &str, value: f64, detail: String| AuditRow {
        section,
        key: key.to_string(),
        value,
        detail,
    };
    let mut out = vec![
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
    ];
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

#[cfg(test)]
mod tests;
