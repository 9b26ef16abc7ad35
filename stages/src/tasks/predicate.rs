//! The predicate language: a small, declarative check over an episode's final state, its diff,
//! the operations it called, the questions it asked and its final answer (see `docs/tasks.md`).
//!
//! Predicates are JSON (YAML in templates), one operator key per object:
//!
//! ```yaml
//! { inserted: dinespot.reservations, where: { restaurant.cuisine: thai, party_size: { $slot: party_size } } }
//! { not: { inserted: shopnest.orders } }
//! { called: dashbite.place_order, args: { spice: hot } }
//! { answer_mentions: skyway.flights, field: number, where: { airline: Alaska Airlines } }
//! { any: [ { asked: seating }, { answer_contains: [patio] } ] }
//! ```
//!
//! Values may name a slot (`{$slot: id}`) or interpolate slots into text
//! (`{$fmt: "… {slot.id} …"}`), so a reviewer's fix of a slot value fixes every check using it.

use serde_json::{json, Map, Value};

use super::error::PredicateError;

/// A value in a predicate: a literal, a slot's value, or text with slot values filled in.
#[derive(Debug, Clone, PartialEq)]
pub enum ValueRef {
    /// A constant.
    Lit(Value),
    /// The value of the named slot.
    Slot(String),
    /// A text in which `{slot.<id>}` is replaced by the slot's value.
    Fmt(String),
}

/// How a field's value is tested.
#[derive(Debug, Clone, PartialEq)]
pub enum Test {
    /// Equal (list fields: contains the value; numbers compare numerically).
    Eq(ValueRef),
    /// Not equal (and present).
    Ne(ValueRef),
    /// Equal to one of these.
    OneOf(Vec<ValueRef>),
    /// The value's text contains this, ignoring case.
    Contains(ValueRef),
    /// A number ≥ this.
    Min(f64),
    /// A number ≤ this.
    Max(f64),
}

/// One `field.path: test` line of a `where` or `args` map. The path walks through `ref`
/// fields: `restaurant.cuisine` reads the reservation's restaurant's cuisine.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    /// Field names, first on the subject, then on each referenced record.
    pub path: Vec<String>,
    /// The test on the value at the end of the path.
    pub test: Test,
}

/// Which records a record predicate looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Records the episode inserted.
    Inserted,
    /// Records the episode updated (their new values).
    Updated,
    /// Records the episode deleted (their old values).
    Deleted,
    /// Any record of the final state.
    Exists,
}

impl Change {
    const ALL: [(Change, &'static str); 4] = [
        (Change::Inserted, "inserted"),
        (Change::Updated, "updated"),
        (Change::Deleted, "deleted"),
        (Change::Exists, "exists"),
    ];

    /// The operator key.
    pub fn key(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(c, _)| *c == self)
            .map(|(_, k)| *k)
            .unwrap_or("exists")
    }
}

/// A machine-checkable criterion.
#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    /// Some record of `table` (`app.table`) with this change satisfies every condition.
    Record {
        /// Which records.
        change: Change,
        /// `app.table`.
        table: String,
        /// All must hold.
        conditions: Vec<Condition>,
    },
    /// Some successful call of `tool` (`app.operation`) had arguments (defaults included)
    /// satisfying every condition.
    Called {
        /// `app.operation`.
        tool: String,
        /// All must hold.
        args: Vec<Condition>,
    },
    /// The final answer contains all (or any) of these texts, ignoring case.
    AnswerContains {
        /// One suffices instead of all.
        any: bool,
        /// The texts.
        texts: Vec<ValueRef>,
    },
    /// The final answer equals this, ignoring case, surrounding space and a final period.
    AnswerEquals(ValueRef),
    /// The answer names at least one record of `table` (by `field`), and every record it names
    /// satisfies the conditions (so listing every option does not pass).
    AnswerMentions {
        /// `app.table`.
        table: String,
        /// The field whose text identifies a record in the answer.
        field: String,
        /// All must hold for every named record.
        conditions: Vec<Condition>,
    },
    /// The agent told the user these texts (all, or any): in its final answer or in any
    /// `ask_user` message, ignoring case, spacing and final punctuation. "She is told the table
    /// is gone" holds whether the agent said so while asking or at the end.
    Told {
        /// One suffices instead of all.
        any: bool,
        /// The texts.
        texts: Vec<ValueRef>,
    },
    /// An information request of the episode was matched to the slot (the interaction judge's
    /// requests; by default the scripted matcher: a question naming one of its keywords).
    Asked(String),
    /// Every part holds.
    All(Vec<Predicate>),
    /// Some part holds.
    Any(Vec<Predicate>),
    /// The part does not hold.
    Not(Box<Predicate>),
}

/// Operator keys, for messages.
const OPERATORS: &str = "inserted, updated, deleted, exists, called, answer_contains, answer_contains_any, answer_equals, answer_mentions, told, told_any, asked, all, any, not";

impl TryFrom<Value> for Predicate {
    type Error = PredicateError;
    fn try_from(v: Value) -> Result<Self, Self::Error> {
        Predicate::parse(&v)
    }
}

impl From<Predicate> for Value {
    fn from(p: Predicate) -> Value {
        p.to_json()
    }
}

impl serde::Serialize for Predicate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for Predicate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Predicate::parse(&v).map_err(serde::de::Error::custom)
    }
}

impl Predicate {
    /// Parses a predicate from its JSON form.
    pub fn parse(v: &Value) -> Result<Self, PredicateError> {
        parse_at(v, "$")
    }

    /// The canonical JSON form (what tables store).
    pub fn to_json(&self) -> Value {
        match self {
            Predicate::Record {
                change,
                table,
                conditions,
            } => with_conditions(json!({ change.key(): table }), "where", conditions),
            Predicate::Called { tool, args } => {
                with_conditions(json!({ "called": tool }), "args", args)
            }
            Predicate::AnswerContains { any, texts } => {
                let key = if *any {
                    "answer_contains_any"
                } else {
                    "answer_contains"
                };
                json!({ key: texts.iter().map(ValueRef::to_json).collect::<Vec<_>>() })
            }
            Predicate::AnswerEquals(v) => json!({ "answer_equals": v.to_json() }),
            Predicate::Told { any, texts } => {
                let key = if *any { "told_any" } else { "told" };
                json!({ key: texts.iter().map(ValueRef::to_json).collect::<Vec<_>>() })
            }
            Predicate::AnswerMentions {
                table,
                field,
                conditions,
            } => with_conditions(
                json!({ "answer_mentions": table, "field": field }),
                "where",
                conditions,
            ),
            Predicate::Asked(slot) => json!({ "asked": slot }),
            Predicate::All(ps) => {
                json!({ "all": ps.iter().map(Predicate::to_json).collect::<Vec<_>>() })
            }
            Predicate::Any(ps) => {
                json!({ "any": ps.iter().map(Predicate::to_json).collect::<Vec<_>>() })
            }
            Predicate::Not(p) => json!({ "not": p.to_json() }),
        }
    }

    /// Every slot id the predicate refers to (`$slot`, `{slot.x}`, `asked`), in order.
    pub fn slot_refs(&self) -> Vec<String> {
        let mut out = Vec::new();
        slot_refs_in(&self.to_json(), &mut out);
        self.visit(&mut |p| {
            if let Predicate::Asked(s) = p {
                if !out.contains(s) {
                    out.push(s.clone());
                }
            }
        });
        out
    }

    /// Calls `f` on this predicate and every nested one.
    pub fn visit(&self, f: &mut dyn FnMut(&Predicate)) {
        f(self);
        match self {
            Predicate::All(ps) | Predicate::Any(ps) => ps.iter().for_each(|p| p.visit(f)),
            Predicate::Not(p) => p.visit(f),
            _ => {}
        }
    }
}

fn with_conditions(mut head: Value, key: &str, conditions: &[Condition]) -> Value {
    if !conditions.is_empty() {
        let map: Map<String, Value> = conditions
            .iter()
            .map(|c| (c.path.join("."), c.test.to_json()))
            .collect();
        if let Some(obj) = head.as_object_mut() {
            obj.insert(key.into(), Value::Object(map));
        }
    }
    head
}

fn parse_at(v: &Value, path: &str) -> Result<Predicate, PredicateError> {
    let obj = v.as_object().ok_or_else(|| {
        PredicateError::new(path, format!("expected an object with one of {OPERATORS}"))
    })?;
    let op = operator(obj, path)?;
    only_allowed_keys(obj, op, path)?;
    operand(obj, op, path)
}

/// Rejects keys an operator does not take besides itself (`where`, `args`, `field`).
fn only_allowed_keys(obj: &Map<String, Value>, op: &str, path: &str) -> Result<(), PredicateError> {
    let allowed: &[&str] = match op {
        "inserted" | "updated" | "deleted" | "exists" => &["where"],
        "called" => &["args"],
        "answer_mentions" => &["field", "where"],
        _ => &[],
    };
    if let Some(extra) = obj
        .keys()
        .find(|k| *k != op && !allowed.contains(&k.as_str()))
    {
        let hint = if allowed.is_empty() {
            format!("`{op}` takes no other keys")
        } else {
            format!("`{op}` also takes only {}", allowed.join(", "))
        };
        return Err(PredicateError::new(
            path,
            format!("unknown key `{extra}`; {hint}"),
        ));
    }
    Ok(())
}

/// The predicate of operator `op` from its operand (and its sibling keys).
fn operand(obj: &Map<String, Value>, op: &str, path: &str) -> Result<Predicate, PredicateError> {
    let arg = &obj[op];
    let sub = format!("{path}.{op}");
    Ok(match op {
        "inserted" | "updated" | "deleted" | "exists" => Predicate::Record {
            change: Change::ALL
                .iter()
                .find(|(_, k)| *k == op)
                .map(|(c, _)| *c)
                .unwrap_or(Change::Exists),
            table: dotted_name(arg, &sub, "app.table")?,
            conditions: conditions(obj.get("where"), &format!("{path}.where"))?,
        },
        "called" => Predicate::Called {
            tool: dotted_name(arg, &sub, "app.operation")?,
            args: conditions(obj.get("args"), &format!("{path}.args"))?,
        },
        "answer_contains" | "answer_contains_any" => Predicate::AnswerContains {
            any: op == "answer_contains_any",
            texts: value_list(arg, &sub)?,
        },
        "answer_equals" => Predicate::AnswerEquals(value_ref(arg, &sub)?),
        "told" | "told_any" => Predicate::Told {
            any: op == "told_any",
            texts: value_list(arg, &sub)?,
        },
        "answer_mentions" => Predicate::AnswerMentions {
            table: dotted_name(arg, &sub, "app.table")?,
            field: obj
                .get("field")
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| {
                    PredicateError::new(path, "`answer_mentions` needs `field: <field name>`")
                })?,
            conditions: conditions(obj.get("where"), &format!("{path}.where"))?,
        },
        "asked" => Predicate::Asked(
            arg.as_str()
                .map(str::to_string)
                .ok_or_else(|| PredicateError::new(&sub, "expected a slot id"))?,
        ),
        "all" | "any" => {
            let items = arg.as_array().filter(|a| !a.is_empty()).ok_or_else(|| {
                PredicateError::new(&sub, "expected a non-empty list of predicates")
            })?;
            let ps = items
                .iter()
                .enumerate()
                .map(|(i, p)| parse_at(p, &format!("{sub}[{i}]")))
                .collect::<Result<Vec<_>, _>>()?;
            if op == "all" {
                Predicate::All(ps)
            } else {
                Predicate::Any(ps)
            }
        }
        _ => Predicate::Not(Box::new(parse_at(arg, &sub)?)),
    })
}

fn operator<'a>(obj: &'a Map<String, Value>, path: &str) -> Result<&'a str, PredicateError> {
    let ops: Vec<&str> = obj
        .keys()
        .map(String::as_str)
        .filter(|k| OPERATORS.split(", ").any(|o| o == *k))
        .collect();
    match ops.as_slice() {
        [one] => Ok(one),
        [] => Err(PredicateError::new(
            path,
            format!(
                "no operator among the keys [{}]; use one of {OPERATORS}",
                key_list(obj)
            ),
        )),
        many => Err(PredicateError::new(
            path,
            format!(
                "several operators ({}); wrap them in `all:` or `any:`",
                many.join(", ")
            ),
        )),
    }
}

fn key_list(obj: &Map<String, Value>) -> String {
    obj.keys().cloned().collect::<Vec<_>>().join(", ")
}

fn dotted_name(v: &Value, path: &str, shape: &str) -> Result<String, PredicateError> {
    match v.as_str() {
        Some(s) if s.split('.').count() == 2 && !s.starts_with('.') && !s.ends_with('.') => {
            Ok(s.to_string())
        }
        _ => Err(PredicateError::new(
            path,
            format!("expected `{shape}`, got {v}"),
        )),
    }
}

fn conditions(v: Option<&Value>, path: &str) -> Result<Vec<Condition>, PredicateError> {
    let Some(v) = v else { return Ok(Vec::new()) };
    let map = v
        .as_object()
        .ok_or_else(|| PredicateError::new(path, "expected a map of `field.path: value`"))?;
    map.iter()
        .map(|(k, test)| {
            let here = format!("{path}.{k}");
            let segments: Vec<String> = k.split('.').map(str::to_string).collect();
            if segments.iter().any(String::is_empty) {
                return Err(PredicateError::new(&here, "empty field name in path"));
            }
            Ok(Condition {
                path: segments,
                test: parse_test(test, &here)?,
            })
        })
        .collect()
}

fn parse_test(v: &Value, path: &str) -> Result<Test, PredicateError> {
    let Some(obj) = v.as_object() else {
        return Ok(Test::Eq(ValueRef::Lit(v.clone())));
    };
    if obj.contains_key("$slot") || obj.contains_key("$fmt") {
        return Ok(Test::Eq(value_ref(v, path)?));
    }
    let (key, arg) =
        match obj.iter().next() {
            Some(kv) if obj.len() == 1 => kv,
            _ => return Err(PredicateError::new(
                path,
                "a test object takes exactly one of one_of, not, contains, min, max, $slot, $fmt",
            )),
        };
    let sub = format!("{path}.{key}");
    let number = |a: &Value| {
        a.as_f64()
            .ok_or_else(|| PredicateError::new(&sub, format!("expected a number, got {a}")))
    };
    Ok(match key.as_str() {
        "one_of" => Test::OneOf(value_list(arg, &sub)?),
        "not" => Test::Ne(value_ref(arg, &sub)?),
        "contains" => Test::Contains(value_ref(arg, &sub)?),
        "min" => Test::Min(number(arg)?),
        "max" => Test::Max(number(arg)?),
        other => {
            return Err(PredicateError::new(
                path,
                format!(
                    "unknown test `{other}`; use one_of, not, contains, min, max, $slot or $fmt"
                ),
            ))
        }
    })
}

fn value_list(v: &Value, path: &str) -> Result<Vec<ValueRef>, PredicateError> {
    let items = v
        .as_array()
        .filter(|a| !a.is_empty())
        .ok_or_else(|| PredicateError::new(path, "expected a non-empty list"))?;
    items
        .iter()
        .enumerate()
        .map(|(i, x)| value_ref(x, &format!("{path}[{i}]")))
        .collect()
}

/// Parses a value that may be `{$slot: id}` or `{$fmt: text}`.
pub fn value_ref(v: &Value, path: &str) -> Result<ValueRef, PredicateError> {
    let Some(obj) = v.as_object() else {
        return Ok(ValueRef::Lit(v.clone()));
    };
    match (obj.len(), obj.get("$slot"), obj.get("$fmt")) {
        (1, Some(Value::String(s)), None) => Ok(ValueRef::Slot(s.clone())),
        (1, None, Some(Value::String(s))) => Ok(ValueRef::Fmt(s.clone())),
        _ => Err(PredicateError::new(
            path,
            format!("expected a literal, {{$slot: id}} or {{$fmt: text}}, got {v}"),
        )),
    }
}

impl ValueRef {
    /// The JSON form.
    pub fn to_json(&self) -> Value {
        match self {
            ValueRef::Lit(v) => v.clone(),
            ValueRef::Slot(s) => json!({ "$slot": s }),
            ValueRef::Fmt(s) => json!({ "$fmt": s }),
        }
    }
}

impl Test {
    fn to_json(&self) -> Value {
        match self {
            Test::Eq(v) => v.to_json(),
            Test::Ne(v) => json!({ "not": v.to_json() }),
            Test::OneOf(vs) => {
                json!({ "one_of": vs.iter().map(ValueRef::to_json).collect::<Vec<_>>() })
            }
            Test::Contains(v) => json!({ "contains": v.to_json() }),
            Test::Min(x) => json!({ "min": number(*x) }),
            Test::Max(x) => json!({ "max": number(*x) }),
        }
    }
}

/// A bound as JSON: whole numbers stay integers, so authored checks round-trip unchanged.
fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

/// Collects the slot ids a JSON value refers to: `{$slot: id}` objects and `{slot.id}`
/// placeholders inside `{$fmt: …}` texts.
pub fn slot_refs_in(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let (1, Some(Value::String(s))) = (m.len(), m.get("$slot")) {
                push_unique(out, s);
            } else if let (1, Some(Value::String(s))) = (m.len(), m.get("$fmt")) {
                for id in fmt_slots(s) {
                    push_unique(out, id);
                }
            } else {
                m.values().for_each(|x| slot_refs_in(x, out));
            }
        }
        Value::Array(items) => items.iter().for_each(|x| slot_refs_in(x, out)),
        _ => {}
    }
}

fn push_unique(out: &mut Vec<String>, s: &str) {
    if !out.iter().any(|o| o == s) {
        out.push(s.to_string());
    }
}

/// The slot ids of the `{slot.id}` placeholders in a text.
pub fn fmt_slots(text: &str) -> impl Iterator<Item = &str> {
    text.split("{slot.")
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(id, _)| id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_json() {
        let v = json!({ "all": [
            { "inserted": "dinespot.reservations", "where": { "restaurant.cuisine": "thai", "party_size": { "$slot": "party" }, "time": { "one_of": ["19:00", "19:30"] } } },
            { "not": { "inserted": "shopnest.orders" } },
            { "called": "dashbite.place_order", "args": { "tip_percent": { "min": 18 } } },
            { "answer_mentions": "skyway.flights", "field": "number", "where": { "stops": 0 } },
            { "answer_contains_any": ["patio", { "$fmt": "no {slot.seat}" }] },
            { "told_any": ["not available", "sold out"] },
            { "told": [{ "$slot": "seat" }] },
            { "asked": "party" }
        ]});
        let p = Predicate::parse(&v).unwrap();
        assert_eq!(p.to_json(), v);
        assert_eq!(p.slot_refs(), vec!["party".to_string(), "seat".to_string()]);
    }

    #[test]
    fn errors_name_the_place_and_the_fix() {
        let cases = [
            (
                json!({ "inserted": "reservations" }),
                "$.inserted",
                "app.table",
            ),
            (
                json!({ "inserted": "a.b", "called": "a.c" }),
                "$",
                "several operators",
            ),
            (
                json!({ "all": [{ "asked": "x" }, { "bogus": 1 }] }),
                "$.all[1]",
                "no operator",
            ),
            (
                json!({ "inserted": "a.b", "where": { "x": { "between": 1 } } }),
                "$.where.x",
                "unknown test",
            ),
            (
                json!({ "inserted": "a.b", "args": {} }),
                "$",
                "unknown key `args`",
            ),
            (json!({ "answer_mentions": "a.b" }), "$", "needs `field"),
            (
                json!({ "answer_contains": [] }),
                "$.answer_contains",
                "non-empty",
            ),
        ];
        for (v, path, needle) in cases {
            let e = Predicate::parse(&v).unwrap_err();
            assert_eq!(e.path, path, "{v}: {e}");
            assert!(e.message.contains(needle), "{v}: {e}");
        }
    }
}
