//! The typed field system shared by entity tables and operation forms: what a field may hold,
//! how a JSON value is checked (and normalized) against it, and how values are displayed.

use serde_json::Value;

use super::clock::{Date, DateTime, Time};

/// Identifies one entity table in the catalog: app index and table index. `Copy` and hashable
/// so the phone's overlay can key its deltas by it cheaply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableId {
    /// Index into `Catalog::apps`.
    pub app: u16,
    /// Index into `App::tables`.
    pub table: u16,
}

/// What a field holds.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    /// Free text.
    Text,
    /// A whole number, optionally bounded (inclusive).
    Int(Option<(i64, i64)>),
    /// A real number, optionally bounded (inclusive).
    Float(Option<(f64, f64)>),
    /// Yes/no.
    Bool,
    /// `YYYY-MM-DD`.
    Date,
    /// `HH:MM`.
    Time,
    /// `YYYY-MM-DDTHH:MM`.
    DateTime,
    /// One of a fixed list of strings.
    Enum(Vec<String>),
    /// The id of a record in another (or the same) table.
    Ref(TableId),
}

impl FieldKind {
    /// The name used in YAML `type:`; also used in messages and tool schemas.
    pub fn type_name(&self) -> &'static str {
        match self {
            FieldKind::Text => "text",
            FieldKind::Int(_) => "int",
            FieldKind::Float(_) => "float",
            FieldKind::Bool => "bool",
            FieldKind::Date => "date",
            FieldKind::Time => "time",
            FieldKind::DateTime => "datetime",
            FieldKind::Enum(_) => "enum",
            FieldKind::Ref(_) => "ref",
        }
    }
}

/// One declared field of a table or an operation form.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldDef {
    /// The field name.
    pub name: String,
    /// Its type.
    pub kind: FieldKind,
    /// Whether it holds a list of values of `kind` (entity fields only).
    pub many: bool,
    /// Operation fields: the caller must supply it (it has no default).
    pub required: bool,
    /// The value used when the caller (or an insert effect) leaves the field out.
    pub default: Option<Value>,
    /// Human explanation shown in forms and tool schemas.
    pub description: String,
}

/// Why a value does not fit a field; the loader maps these to problem kinds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueError {
    /// Wrong JSON shape for the type.
    Type(String),
    /// An enum value not among the options.
    NotAnOption(String),
    /// A number outside the range.
    OutOfRange(String),
}

impl std::fmt::Display for ValueError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ValueError::Type(m) | ValueError::NotAnOption(m) | ValueError::OutOfRange(m) => {
                f.write_str(m)
            }
        }
    }
}

/// Checks `v` against the field and returns its normalized form (floats for float fields,
/// `HH:MM` times, `YYYY-MM-DDTHH:MM` datetimes). `Ref` fields only get a shape check here; the
/// caller checks that the id exists.
pub fn check_value(def: &FieldDef, v: &Value) -> Result<Value, ValueError> {
    check_value_owned(def, v.clone())
}

/// [`check_value`] taking ownership, so an already-normalized value is returned without a copy.
pub fn check_value_owned(def: &FieldDef, v: Value) -> Result<Value, ValueError> {
    if !def.many {
        return check_scalar_owned(&def.kind, v);
    }
    match v {
        Value::Array(items) => items
            .into_iter()
            .map(|i| check_scalar_owned(&def.kind, i))
            .collect::<Result<_, _>>()
            .map(Value::Array),
        other => Err(ValueError::Type(format!(
            "expected a list of {}, got {}",
            def.kind.type_name(),
            short(&other)
        ))),
    }
}

/// Checks one scalar against a kind; see [`check_value`].
pub fn check_scalar(kind: &FieldKind, v: &Value) -> Result<Value, ValueError> {
    check_scalar_owned(kind, v.clone())
}

fn check_scalar_owned(kind: &FieldKind, v: Value) -> Result<Value, ValueError> {
    let mismatch =
        |v: &Value| ValueError::Type(format!("expected {}, got {}", kind.type_name(), short(v)));
    let when =
        |what: &str, v: &Value| ValueError::Type(format!("expected {what}, got {}", short(v)));
    match kind {
        FieldKind::Text | FieldKind::Ref(_) if v.is_string() => Ok(v),
        FieldKind::Bool if v.is_boolean() => Ok(v),
        FieldKind::Text | FieldKind::Ref(_) | FieldKind::Bool => Err(mismatch(&v)),
        FieldKind::Int(range) => {
            let n = v.as_i64().ok_or_else(|| mismatch(&v))?;
            in_range(n as f64, range.map(|(a, b)| (a as f64, b as f64)))?;
            Ok(v)
        }
        FieldKind::Float(range) => {
            let x = v.as_f64().ok_or_else(|| mismatch(&v))?;
            in_range(x, *range)?;
            Ok(if v.is_f64() { v } else { Value::from(x) })
        }
        FieldKind::Date => {
            let d = v
                .as_str()
                .and_then(Date::parse)
                .ok_or_else(|| when("a date YYYY-MM-DD", &v))?;
            Ok(canonical(v, 10, || d.to_string()))
        }
        FieldKind::Time => {
            let t = v
                .as_str()
                .and_then(Time::parse)
                .ok_or_else(|| when("a time HH:MM", &v))?;
            Ok(canonical(v, 5, || t.hhmm()))
        }
        FieldKind::DateTime => {
            let dt = v
                .as_str()
                .and_then(DateTime::parse)
                .ok_or_else(|| when("a datetime YYYY-MM-DDTHH:MM", &v))?;
            Ok(canonical(v, 16, || {
                format!("{}T{}", dt.date, dt.time.hhmm())
            }))
        }
        FieldKind::Enum(options) => {
            let s = v.as_str().ok_or_else(|| mismatch(&v))?;
            if options.iter().any(|o| o == s) {
                Ok(v)
            } else {
                Err(ValueError::NotAnOption(format!(
                    "\"{s}\" is not one of {}",
                    options.join(", ")
                )))
            }
        }
    }
}

/// A parsed date/time string is canonical when it has the canonical length and a `T` separator
/// where one belongs; then it is reused instead of re-formatted.
fn canonical(v: Value, len: usize, format: impl FnOnce() -> String) -> Value {
    match v.as_str() {
        Some(s) if s.len() == len && (len != 16 || s.as_bytes()[10] == b'T') => v,
        _ => Value::String(format()),
    }
}

fn in_range(x: f64, range: Option<(f64, f64)>) -> Result<(), ValueError> {
    match range {
        Some((lo, hi)) if x < lo || x > hi => Err(ValueError::OutOfRange(format!(
            "{x} is outside the range [{lo}, {hi}]"
        ))),
        _ => Ok(()),
    }
}

/// Whether a stored value satisfies a wanted value: list values match by membership, numbers
/// by numeric equality, everything else by equality. Used by bindings and list filters.
pub fn value_matches(have: &Value, want: &Value) -> bool {
    match have {
        Value::Array(items) => items.iter().any(|i| scalar_eq(i, want)),
        _ => scalar_eq(have, want),
    }
}

fn scalar_eq(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// A value as a short string for messages (long values are cut).
pub fn short(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(40) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

/// Writes a value as plain text for screens and templates: strings unquoted, lists joined with
/// ", ", null as empty, `true`/`false` as `yes`/`no`.
pub fn write_display(v: &Value, out: &mut String) {
    match v {
        Value::Null => {}
        Value::String(s) => out.push_str(s),
        Value::Bool(b) => out.push_str(if *b { "yes" } else { "no" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_display(item, out);
            }
        }
        Value::Object(_) => out.push_str(&v.to_string()),
    }
}

/// [`write_display`] into a fresh string.
pub fn display(v: &Value) -> String {
    let mut s = String::new();
    write_display(v, &mut s);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn def(kind: FieldKind, many: bool) -> FieldDef {
        FieldDef {
            name: "f".into(),
            kind,
            many,
            required: false,
            default: None,
            description: String::new(),
        }
    }

    #[test]
    fn scalars_are_checked_and_normalized() {
        assert_eq!(
            check_value(&def(FieldKind::Float(None), false), &json!(3)),
            Ok(json!(3.0))
        );
        assert_eq!(
            check_value(&def(FieldKind::Time, false), &json!("19:00:00")),
            Ok(json!("19:00"))
        );
        assert!(matches!(
            check_value(&def(FieldKind::Int(Some((1, 12))), false), &json!(13)),
            Err(ValueError::OutOfRange(_))
        ));
        assert!(matches!(
            check_value(&def(FieldKind::Int(None), false), &json!("2")),
            Err(ValueError::Type(_))
        ));
        let e = FieldKind::Enum(vec!["indoor".into(), "patio".into()]);
        assert!(matches!(
            check_value(&def(e.clone(), false), &json!("roof")),
            Err(ValueError::NotAnOption(_))
        ));
        assert_eq!(
            check_value(&def(e, true), &json!(["patio"])),
            Ok(json!(["patio"]))
        );
        assert!(check_value(&def(FieldKind::Date, false), &json!("2025-02-30")).is_err());
    }

    #[test]
    fn display_is_plain_text() {
        assert_eq!(display(&json!(["a", 1, true])), "a, 1, yes");
        assert_eq!(display(&Value::Null), "");
    }
}
