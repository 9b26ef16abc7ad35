//! The app YAML schema exactly as written (serde types with source spans). The loader lowers it
//! into the validated model in `model.rs`; nothing outside the loader sees these types.

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::Spanned;

/// One `datasets/apps/<id>.yaml` file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawApp {
    pub app: Spanned<String>,
    pub name: String,
    pub category: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub entities: IndexMap<String, Spanned<RawTable>>,
    #[serde(default)]
    pub operations: IndexMap<String, Spanned<RawOperation>>,
}

/// An entity table with its schema and seed records.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTable {
    #[serde(default)]
    pub description: String,
    pub title: Option<Spanned<String>>,
    #[serde(default)]
    pub summary: Vec<Spanned<String>>,
    pub fields: IndexMap<String, Spanned<RawField>>,
    #[serde(default)]
    pub records: Vec<Spanned<IndexMap<String, Spanned<Value>>>>,
}

/// A field of a table or an operation form.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawField {
    #[serde(rename = "type")]
    pub ty: Spanned<String>,
    pub options: Option<Spanned<Vec<String>>>,
    pub range: Option<Spanned<(f64, f64)>>,
    pub to: Option<Spanned<String>>,
    #[serde(default)]
    pub many: bool,
    #[serde(default)]
    pub required: bool,
    pub default: Option<Spanned<Value>>,
    #[serde(default)]
    pub description: String,
}

/// An operation: a form whose submission changes app state.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOperation {
    pub title: Option<String>,
    #[serde(default)]
    pub description: String,
    pub entity: Option<Spanned<String>>,
    #[serde(default)]
    pub irreversible: bool,
    #[serde(default)]
    pub fields: IndexMap<String, Spanned<RawField>>,
    #[serde(default)]
    pub checks: Vec<Spanned<RawCheck>>,
    #[serde(default)]
    pub effects: Vec<Spanned<RawEffect>>,
    pub result: Option<Spanned<String>>,
}

/// A precondition on submitted values; exactly one of `in`, `equals`, `min`, `max`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCheck {
    pub value: Spanned<String>,
    #[serde(rename = "in")]
    pub in_list: Option<Spanned<String>>,
    pub equals: Option<Spanned<Value>>,
    pub min: Option<Spanned<Value>>,
    pub max: Option<Spanned<Value>>,
    pub message: Spanned<String>,
}

/// One state change; exactly one of `insert`, `update`, `delete`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEffect {
    pub insert: Option<Spanned<String>>,
    pub update: Option<Spanned<String>>,
    pub delete: Option<Spanned<String>>,
    pub record: Option<Spanned<String>>,
    #[serde(default)]
    pub values: IndexMap<String, Spanned<Value>>,
}
