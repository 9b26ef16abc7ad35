//! Evaluating predicates against an episode: the phone's final state, its diff against the
//! initial state, the operations called, the questions asked and the final answer.

use std::collections::HashSet;

use serde_json::Value;

use super::matcher;
use super::model::Slot;
use super::predicate::{Change, Condition, Predicate, Test, ValueRef};
use crate::world::app::{Catalog, Operation};
use crate::world::phone::{Phone, WorldDiff};
use crate::world::types::{display, value_matches, FieldKind, TableId};

/// One finished (or untouched) episode, ready to be judged.
pub struct Episode<'a, 'w> {
    phone: &'a Phone<'w>,
    slots: &'a [Slot],
    diff: WorldDiff,
    /// Slots some information request was matched to (what `asked:` reads).
    asked: HashSet<String>,
}

/// Where the first segment of a condition path is declared, so hops know the ref targets.
#[derive(Clone, Copy)]
enum Schema<'c> {
    Table(TableId),
    Op(&'c Operation),
}

impl<'a, 'w> Episode<'a, 'w> {
    /// Judges `phone` as it is now, with `slots` supplying `$slot` values; `asked:` reads the
    /// scripted matcher's requests over the episode's questions.
    pub fn new(phone: &'a Phone<'w>, slots: &'a [Slot]) -> Self {
        let asked = matcher::asked_slots(phone.asks().iter().map(|a| a.question.as_str()), slots);
        Self::with_asked(phone, slots, asked)
    }

    /// Like [`Episode::new`], with the slots the interaction judge matched requests to, so an
    /// `asked:` criterion and the interaction scores can never disagree.
    pub fn with_asked(phone: &'a Phone<'w>, slots: &'a [Slot], asked: HashSet<String>) -> Self {
        Self {
            phone,
            slots,
            diff: phone.diff(),
            asked,
        }
    }

    fn cat(&self) -> &'a Catalog {
        self.phone.state().catalog()
    }

    /// Whether the predicate holds.
    pub fn check(&self, p: &Predicate) -> bool {
        match p {
            Predicate::Record {
                change,
                table,
                conditions,
            } => self.record(*change, table, conditions),
            Predicate::Called { tool, args } => self.called(tool, args),
            Predicate::AnswerContains { any, texts } => {
                self.contains_texts(self.answer().as_deref(), *any, texts)
            }
            Predicate::Told { any, texts } => {
                let said = self.told();
                self.contains_texts(Some(&said), *any, texts)
            }
            Predicate::AnswerEquals(want) => match (self.answer(), self.resolve(want)) {
                (Some(a), Some(w)) => normalize(&a) == normalize(&display(&w)),
                _ => false,
            },
            Predicate::AnswerMentions {
                table,
                field,
                conditions,
            } => self.answer_mentions(table, field, conditions),
            Predicate::Asked(slot) => self.asked(slot),
            Predicate::All(ps) => ps.iter().all(|p| self.check(p)),
            Predicate::Any(ps) => ps.iter().any(|p| self.check(p)),
            Predicate::Not(p) => !self.check(p),
        }
    }

    /// Whether a record of `table` with this change satisfies every condition. Diff records
    /// are borrowed, and the current records of an `exists` check are turned into JSON one at
    /// a time until one holds: judges check every criterion of every episode, and cloning or
    /// converting whole tables per predicate dominated judging.
    fn record(&self, change: Change, table: &str, conditions: &[Condition]) -> bool {
        let (Some(t), Some((app, name))) =
            (self.cat().table_id(table, None), table.split_once('.'))
        else {
            return false;
        };
        let holds = |r: &Value| self.all_hold(Schema::Table(t), r, conditions);
        let diff = self.diff.table(app, name);
        match change {
            Change::Inserted => diff.is_some_and(|d| d.inserted.iter().any(holds)),
            Change::Updated => diff.is_some_and(|d| d.updated.iter().any(|u| holds(&u.after))),
            Change::Deleted => diff.is_some_and(|d| d.deleted.iter().any(holds)),
            Change::Exists => {
                let state = self.phone.state();
                let schema = self.cat().table(t);
                state
                    .records(app, name)
                    .is_some_and(|mut rs| rs.any(|r| holds(&schema.record_json(r))))
            }
        }
    }

    fn called(&self, tool: &str, args: &[Condition]) -> bool {
        let Some(op) = self.cat().operation(tool) else {
            return false;
        };
        self.phone
            .operations()
            .iter()
            .filter(|o| o.tool == tool)
            .any(|o| self.all_hold(Schema::Op(op), &Value::Object(o.args.clone()), args))
    }

    fn answer(&self) -> Option<String> {
        self.phone.answer().map(str::to_string)
    }

    /// Everything the agent said to the user: its questions and its final answer.
    fn told(&self) -> String {
        let mut said: Vec<&str> = self
            .phone
            .asks()
            .iter()
            .map(|a| a.question.as_str())
            .collect();
        said.extend(self.phone.answer());
        said.join("\n")
    }

    /// Whether `text` contains all (or any) of `texts`, compared through [`normalize`].
    fn contains_texts(&self, text: Option<&str>, any: bool, texts: &[ValueRef]) -> bool {
        let Some(text) = text.map(normalize) else {
            return false;
        };
        let found = |t: &ValueRef| {
            self.resolve(t)
                .map(|v| text_contains(&text, &display(&v)))
                .unwrap_or(false)
        };
        if any {
            texts.iter().any(found)
        } else {
            texts.iter().all(found)
        }
    }

    fn answer_mentions(&self, table: &str, field: &str, conditions: &[Condition]) -> bool {
        let (Some(answer), Some(t), Some((app, name))) = (
            self.answer(),
            self.cat().table_id(table, None),
            table.split_once('.'),
        ) else {
            return false;
        };
        let answer = normalize(&answer);
        let named: Vec<Value> = self
            .phone
            .state()
            .records_json(app, name)
            .unwrap_or_default()
            .into_iter()
            .filter(|r| {
                let name = r.get(field).map(display).unwrap_or_default();
                // Record names are matched literally: a name is not a value or a paraphrase.
                !normalize(&name).is_empty() && answer.contains(&normalize(&name))
            })
            .collect();
        !named.is_empty()
            && named
                .iter()
                .all(|r| self.all_hold(Schema::Table(t), r, conditions))
    }

    fn asked(&self, slot: &str) -> bool {
        self.asked.contains(slot)
    }

    fn all_hold(&self, schema: Schema<'_>, subject: &Value, conditions: &[Condition]) -> bool {
        conditions.iter().all(|c| {
            self.lookup(schema, subject, &c.path)
                .is_some_and(|have| self.test(&have, &c.test))
        })
    }

    /// Follows a field path from `subject` through ref fields; `None` if any step is missing.
    fn lookup(&self, schema: Schema<'_>, subject: &Value, path: &[String]) -> Option<Value> {
        let cat = self.cat();
        let (first, rest) = path.split_first()?;
        let mut value = subject.get(first)?.clone();
        let mut target = ref_target(cat, schema, first);
        for seg in rest {
            let t = target?;
            let id = value.as_str()?;
            let app = &cat.apps[t.app as usize].id;
            let table = cat.table(t);
            let record = self.phone.state().get(app, &table.name, id)?;
            value = table.get(record, seg)?.clone();
            target = ref_target(cat, Schema::Table(t), seg);
        }
        Some(value)
    }

    fn test(&self, have: &Value, test: &Test) -> bool {
        let eq = |want: &ValueRef| self.resolve(want).is_some_and(|w| value_matches(have, &w));
        match test {
            Test::Eq(w) => eq(w),
            Test::Ne(w) => !eq(w),
            Test::OneOf(ws) => ws.iter().any(eq),
            Test::Contains(w) => self
                .resolve(w)
                .is_some_and(|w| text_contains(&normalize(&display(have)), &display(&w))),
            Test::Min(x) => have.as_f64().is_some_and(|h| h >= *x),
            Test::Max(x) => have.as_f64().is_some_and(|h| h <= *x),
        }
    }

    /// A predicate value with slot references filled in.
    pub fn resolve(&self, v: &ValueRef) -> Option<Value> {
        resolve_ref(v, self.slots)
    }
}

/// A predicate value with slot references filled in from `slots`; `None` if a slot is missing.
pub fn resolve_ref(v: &ValueRef, slots: &[Slot]) -> Option<Value> {
    match v {
        ValueRef::Lit(v) => Some(v.clone()),
        ValueRef::Slot(id) => slots
            .iter()
            .find(|s| &s.slot_id == id)
            .map(|s| s.value.clone()),
        ValueRef::Fmt(text) => render_fmt(text, slots).map(Value::String),
    }
}

/// Replaces every `{slot.<id>}` in `text` by the slot's value as text.
pub fn render_fmt(text: &str, slots: &[Slot]) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{slot.") {
        out.push_str(&rest[..start]);
        let after = &rest[start + "{slot.".len()..];
        let (id, tail) = after.split_once('}')?;
        let slot = slots.iter().find(|s| s.slot_id == id)?;
        out.push_str(&display(&slot.value));
        rest = tail;
    }
    out.push_str(rest);
    Some(out)
}

/// Fills slot references (`{$slot: id}`, `{$fmt: text}`) anywhere in a JSON value; `Err` names
/// the first unknown slot.
pub fn resolve_json(v: &Value, slots: &[Slot]) -> Result<Value, String> {
    match v {
        Value::Object(m) => {
            if let Ok(r) = super::predicate::value_ref(v, "$") {
                if !matches!(r, ValueRef::Lit(_)) {
                    return resolve_ref(&r, slots).ok_or_else(|| format!("unknown slot in {v}"));
                }
            }
            m.iter()
                .map(|(k, x)| resolve_json(x, slots).map(|x| (k.clone(), x)))
                .collect::<Result<_, _>>()
                .map(Value::Object)
        }
        Value::Array(items) => items
            .iter()
            .map(|x| resolve_json(x, slots))
            .collect::<Result<_, _>>()
            .map(Value::Array),
        _ => Ok(v.clone()),
    }
}

fn ref_target(cat: &Catalog, schema: Schema<'_>, field: &str) -> Option<TableId> {
    let def = match schema {
        Schema::Table(t) => {
            let table = cat.table(t);
            &table.fields[table.field_idx(field)?]
        }
        Schema::Op(op) => &op.fields[op.field_idx(field)?],
    };
    match def.kind {
        FieldKind::Ref(t) => Some(t),
        _ => None,
    }
}

/// Text as the predicates compare it: lower-cased, typographic quotes folded to plain ones,
/// runs of whitespace (newlines included) collapsed to one space, and trailing punctuation
/// dropped — so "Best,\nMaya" matches "Best, Maya" and "Sunday works for me!" matches
/// "Sunday works for me.".
pub fn normalize(s: &str) -> String {
    let folded = s
        .replace(['’', '‘'], "'")
        .replace(['“', '”'], "\"")
        .to_lowercase();
    folded
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .trim_end_matches(['.', '!', '?', ',', ';', ':', '…'])
        .trim()
        .to_string()
}

/// Whether normalized `haystack` contains `needle`: literally once normalized, or as the same
/// structured value (a date, date range, time, count or amount of money: "Oct 17–20" states
/// "2025-10-17 to 2025-10-20"), or — for free text of three or more key terms — with every key
/// term, in any order and inflection, negation kept ([`super::values::text_states`]).
fn text_contains(haystack: &str, needle: &str) -> bool {
    haystack.contains(&normalize(needle)) || super::values::text_states(haystack, needle)
}
