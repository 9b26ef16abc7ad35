//! The tools action space's specs: every operation is a typed function (`app.operation`), and
//! every table can be read with `app.list_<table>` / `app.get_<table>`. Specs carry types,
//! options, ranges and defaults so an LLM client can build function schemas from them. They
//! are built from the catalog alone, so the world can build them once and every phone share
//! them (`World::tools`); the phone runs the tools (`phone::tools`).

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::world::app::{App, Catalog, Operation, Table};
use crate::world::types::{FieldDef, FieldKind};

/// One parameter of a tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParamSpec {
    /// Argument name.
    pub name: String,
    /// `text`, `int`, `float`, `bool`, `date`, `time`, `datetime`, `enum`, `ref` or `object`.
    #[serde(rename = "type")]
    pub type_name: &'static str,
    /// Whether the caller must pass it.
    pub required: bool,
    /// What is used when it is left out.
    pub default: Option<Value>,
    /// Allowed values of an enum.
    pub options: Option<Vec<String>>,
    /// Inclusive numeric range.
    pub range: Option<(f64, f64)>,
    /// For refs: the `app.table` whose record ids are accepted.
    pub refers_to: Option<String>,
    /// For refs to a small table no operation adds to: the ids of its records in the episode's
    /// state, offered as the schema's `enum` so a model need not guess them (see [`with_choices`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub choices: Option<Vec<String>>,
    /// Human explanation.
    pub description: String,
}

/// One callable tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// `app.operation`, `app.list_<table>` or `app.get_<table>`.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Whether it pays, sends or books.
    pub irreversible: bool,
    /// Parameters.
    pub params: Vec<ParamSpec>,
}

impl ToolSpec {
    /// The name with `__` instead of `.`, as function-calling APIs require.
    pub fn function_name(&self) -> String {
        self.name.replace('.', "__")
    }

    /// A JSON Schema object for the parameters.
    pub fn json_schema(&self) -> Value {
        let mut props = Map::new();
        for p in &self.params {
            let mut s = Map::new();
            let ty = match p.type_name {
                "int" => "integer",
                "float" => "number",
                "bool" => "boolean",
                "object" => "object",
                _ => "string",
            };
            s.insert("type".into(), json!(ty));
            let mut desc = p.description.clone();
            if let Some(format) = date_format(p.type_name) {
                desc = format!("{desc} ({format})").trim().to_string();
            }
            if let Some(t) = &p.refers_to {
                desc = format!("{desc} (id of a {t} record)").trim().to_string();
            }
            s.insert("description".into(), json!(desc));
            if let Some(o) = p.options.as_ref().or(p.choices.as_ref()) {
                s.insert("enum".into(), json!(o));
            }
            if let Some((lo, hi)) = p.range {
                s.insert("minimum".into(), json!(lo));
                s.insert("maximum".into(), json!(hi));
            }
            if let Some(d) = &p.default {
                s.insert("default".into(), d.clone());
            }
            props.insert(p.name.clone(), Value::Object(s));
        }
        let required: Vec<&str> = self
            .params
            .iter()
            .filter(|p| p.required)
            .map(|p| p.name.as_str())
            .collect();
        json!({ "type": "object", "properties": props, "required": required })
    }
}

/// Every tool of every app: reads first, then operations.
pub fn tool_specs(cat: &Catalog) -> Vec<ToolSpec> {
    let mut out = Vec::new();
    for a in &cat.apps {
        for t in &a.tables {
            out.push(list_spec(cat, a, t));
            out.push(get_spec(a, t));
        }
        out.extend(a.operations.iter().map(|o| op_spec(cat, a, o)));
    }
    out
}

/// How a date or time parameter (by its type name) is written, for function schemas.
fn date_format(type_name: &str) -> Option<&'static str> {
    match type_name {
        "date" => Some("date, YYYY-MM-DD"),
        "time" => Some("time, HH:MM on a 24-hour clock"),
        "datetime" => Some("date and time, YYYY-MM-DDTHH:MM"),
        _ => None,
    }
}

/// How a value of `kind` is written, for descriptions: the formats a model must use for dates,
/// times and record ids, and the options of an enum.
fn format_of(cat: &Catalog, kind: &FieldKind) -> String {
    match kind {
        FieldKind::Date | FieldKind::Time | FieldKind::DateTime => {
            date_format(kind.type_name()).unwrap_or_default().into()
        }
        FieldKind::Enum(o) => format!("one of {}", o.join(", ")),
        FieldKind::Ref(t) => format!("id of a {} record", cat.table_name(*t)),
        FieldKind::Int(_) => "whole number".into(),
        FieldKind::Float(_) => "number".into(),
        FieldKind::Bool => "true or false".into(),
        FieldKind::Text => "text".into(),
    }
}

/// One field of a listed table in words: `date (date, YYYY-MM-DD)`, `seating (list; each one of
/// indoor, patio, bar)`.
fn field_words(cat: &Catalog, f: &FieldDef) -> String {
    let format = format_of(cat, &f.kind);
    if f.many {
        format!("{} (list; each {format})", f.name)
    } else {
        format!("{} ({format})", f.name)
    }
}

fn param(cat: &Catalog, f: &FieldDef) -> ParamSpec {
    let (options, range, refers_to) = match &f.kind {
        FieldKind::Enum(o) => (Some(o.clone()), None, None),
        FieldKind::Int(r) => (None, r.map(|(a, b)| (a as f64, b as f64)), None),
        FieldKind::Float(r) => (None, *r, None),
        FieldKind::Ref(t) => (None, None, Some(cat.table_name(*t))),
        _ => (None, None, None),
    };
    ParamSpec {
        name: f.name.clone(),
        type_name: f.kind.type_name(),
        required: f.required,
        default: f.default.clone(),
        options,
        range,
        refers_to,
        choices: None,
        description: f.description.clone(),
    }
}

fn op_spec(cat: &Catalog, a: &App, o: &Operation) -> ToolSpec {
    let description = if o.description.is_empty() {
        format!("{}: {}", a.name, o.title)
    } else {
        format!("{}: {}. {}", a.name, o.title, o.description)
    };
    ToolSpec {
        name: format!("{}.{}", a.id, o.name),
        description,
        irreversible: o.irreversible,
        params: o.fields.iter().map(|f| param(cat, f)).collect(),
    }
}

fn plain(
    name: &str,
    type_name: &'static str,
    required: bool,
    default: Option<Value>,
    description: &str,
) -> ParamSpec {
    ParamSpec {
        name: name.into(),
        type_name,
        required,
        default,
        options: None,
        range: None,
        refers_to: None,
        choices: None,
        description: description.into(),
    }
}

fn list_spec(cat: &Catalog, a: &App, t: &Table) -> ToolSpec {
    let fields: Vec<String> = t.fields.iter().map(|f| field_words(cat, f)).collect();
    let about = if t.description.is_empty() {
        String::new()
    } else {
        format!(" ({})", t.description)
    };
    ToolSpec {
        name: format!("{}.list_{}", a.id, t.name),
        description: format!(
            "{}: list {}{about}. Each record has an id and: {}",
            a.name,
            t.name,
            fields.join("; ")
        ),
        irreversible: false,
        params: vec![
            plain(
                "where",
                "object",
                false,
                Some(json!({})),
                "field → value filters on the fields above, written in their formats (dates YYYY-MM-DD, times HH:MM, record ids for refs); list fields match by membership",
            ),
            plain(
                "limit",
                "int",
                false,
                Some(json!(20)),
                "at most this many records (≤ 100)",
            ),
            plain(
                "offset",
                "int",
                false,
                Some(json!(0)),
                "skip this many records",
            ),
        ],
    }
}

fn get_spec(a: &App, t: &Table) -> ToolSpec {
    ToolSpec {
        name: format!("{}.get_{}", a.id, t.name),
        description: format!("{}: one {} record by id", a.name, t.name),
        irreversible: false,
        params: vec![plain("id", "text", true, None, "record id")],
    }
}
