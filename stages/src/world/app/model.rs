//! The validated app model: every name is resolved to an index, every default and seed value
//! is type-checked, and every expression is typed. The phone runs on this model only.

use crate::world::hash::FastMap;

use serde_json::Value;

use crate::world::template::Template;
use crate::world::types::{FieldDef, TableId};

/// All apps of a world, with name indexes for tools and cross-app references.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// The apps, in file-name order.
    pub apps: Vec<App>,
    pub(crate) app_index: FastMap<String, usize>,
}

/// One mock app.
#[derive(Debug, Clone)]
pub struct App {
    /// Stable id, equal to the file stem (e.g. `dinespot`).
    pub id: String,
    /// Display name (e.g. `DineSpot`).
    pub name: String,
    /// Functional category (e.g. `dining`), for summaries and home-screen grouping.
    pub category: String,
    /// What the app is for.
    pub description: String,
    /// Entity tables.
    pub tables: Vec<Table>,
    /// Operations.
    pub operations: Vec<Operation>,
    pub(crate) table_index: FastMap<String, usize>,
    pub(crate) op_index: FastMap<String, usize>,
}

/// An entity table: schema plus immutable seed records.
#[derive(Debug, Clone)]
pub struct Table {
    /// Table name, unique within its app.
    pub name: String,
    /// What the table holds.
    pub description: String,
    /// Field shown as a record's label (`None`: the id).
    pub title: Option<usize>,
    /// Fields shown in list rows.
    pub summary: Vec<usize>,
    /// Declared fields (the record id is implicit and not listed).
    pub fields: Vec<FieldDef>,
    /// Seed records.
    pub records: Vec<Record>,
    pub(crate) field_index: FastMap<String, usize>,
    pub(crate) id_index: FastMap<String, usize>,
}

/// One record: its id and one value per declared field, in field order. Positional storage keeps
/// records small and copies cheap.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Unique within its table.
    pub id: String,
    /// Values aligned with `Table::fields`.
    pub values: Vec<Value>,
}

/// An operation (a form) and what submitting it does.
#[derive(Debug, Clone)]
pub struct Operation {
    /// Name, unique within its app; the tool name is `<app>.<name>`.
    pub name: String,
    /// Button/form title.
    pub title: String,
    /// What it does.
    pub description: String,
    /// The table (of any app) on whose detail pages this app offers the form; its first ref
    /// field to that table is prefilled with the record shown.
    pub entity: Option<TableId>,
    /// Whether it pays, sends or books — something a careful agent confirms first.
    pub irreversible: bool,
    /// Form fields.
    pub fields: Vec<FieldDef>,
    /// Preconditions checked before any effect.
    pub checks: Vec<Check>,
    /// State changes, applied in order.
    pub effects: Vec<Effect>,
    /// Message shown after success.
    pub result: Option<Template<Path>>,
    pub(crate) field_index: FastMap<String, usize>,
}

/// Where a path starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Root {
    /// The operation argument at this index.
    Arg(usize),
    /// The pinned clock, `YYYY-MM-DDTHH:MM`.
    Now,
    /// The pinned clock's date.
    Today,
    /// The id of the record inserted by the most recent insert effect.
    Inserted,
}

/// A typed path such as `$restaurant.name`: a root followed by hops through ref fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path {
    /// The start.
    pub root: Root,
    /// Each hop reads field `.1` of the record (in table `.0`) whose id the previous step gave.
    pub steps: Vec<(TableId, usize)>,
}

/// A value computed when an operation runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A constant.
    Lit(Value),
    /// A path (`$arg`, `$arg.field`, `$now`, `$today`, `$inserted`).
    Path(Path),
    /// A string template over paths (`"Dinner at {restaurant.name}"`).
    Text(Template<Path>),
}

/// A precondition test.
#[derive(Debug, Clone, PartialEq)]
pub enum CheckTest {
    /// The value must be an element of the list the path yields.
    In(Path),
    /// The value must equal this.
    Equals(Expr),
    /// The value must be ≥ this.
    Min(Expr),
    /// The value must be ≤ this.
    Max(Expr),
}

/// A precondition with the message shown when it fails.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// What is tested.
    pub value: Path,
    /// How.
    pub test: CheckTest,
    /// Error message when it fails.
    pub message: Template<Path>,
}

/// A declarative change to app state.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Add a record; omitted fields take the table's defaults.
    Insert {
        /// Target table (any app).
        table: TableId,
        /// Field index and value expression.
        values: Vec<(usize, Expr)>,
    },
    /// Change fields of the record whose id `record` yields.
    Update {
        /// Target table.
        table: TableId,
        /// The record id: a `$path` to a ref, or a literal id (e.g. a settings singleton).
        record: Expr,
        /// Field index and value expression.
        values: Vec<(usize, Expr)>,
    },
    /// Remove the record whose id `record` yields.
    Delete {
        /// Target table.
        table: TableId,
        /// The record id (as for `Update`).
        record: Expr,
    },
}

impl Catalog {
    /// Looks an app up by id.
    pub fn app(&self, id: &str) -> Option<&App> {
        self.app_index.get(id).map(|&i| &self.apps[i])
    }

    /// The index of an app by id.
    pub fn app_idx(&self, id: &str) -> Option<usize> {
        self.app_index.get(id).copied()
    }

    /// Resolves `app.table` (or `table` within `local_app`) to a [`TableId`].
    pub fn table_id(&self, path: &str, local_app: Option<usize>) -> Option<TableId> {
        let (app, table) = match path.split_once('.') {
            Some((a, t)) => (self.app_idx(a)?, t),
            None => (local_app?, path),
        };
        let t = *self.apps[app].table_index.get(table)?;
        Some(TableId {
            app: app as u16,
            table: t as u16,
        })
    }

    /// Looks an operation up by its tool name, `app.operation`.
    pub fn operation(&self, tool: &str) -> Option<&Operation> {
        let (app, op) = tool.split_once('.')?;
        self.app(app)?.operation(op)
    }

    /// The table behind an id. Ids only come from this catalog, so indexing cannot fail.
    pub fn table(&self, id: TableId) -> &Table {
        &self.apps[id.app as usize].tables[id.table as usize]
    }

    /// `app.table` for messages and diffs.
    pub fn table_name(&self, id: TableId) -> String {
        format!("{}.{}", self.apps[id.app as usize].id, self.table(id).name)
    }

    /// Total seed records over all apps.
    pub fn record_count(&self) -> usize {
        self.apps
            .iter()
            .flat_map(|a| &a.tables)
            .map(|t| t.records.len())
            .sum()
    }
}

impl App {
    /// Looks a table up by name.
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.table_index.get(name).map(|&i| &self.tables[i])
    }

    /// Looks an operation up by name.
    pub fn operation(&self, name: &str) -> Option<&Operation> {
        self.op_index.get(name).map(|&i| &self.operations[i])
    }

    /// The index of an operation by name.
    pub fn op_idx(&self, name: &str) -> Option<usize> {
        self.op_index.get(name).copied()
    }
}

impl Table {
    /// The index of a field by name.
    pub fn field_idx(&self, name: &str) -> Option<usize> {
        self.field_index.get(name).copied()
    }

    /// A seed record by id.
    pub fn record(&self, id: &str) -> Option<&Record> {
        self.id_index.get(id).map(|&i| &self.records[i])
    }

    /// The position of a seed record by id.
    pub fn record_pos(&self, id: &str) -> Option<usize> {
        self.id_index.get(id).copied()
    }

    /// A record's value for a named field.
    pub fn get<'r>(&self, record: &'r Record, field: &str) -> Option<&'r Value> {
        self.field_idx(field).and_then(|i| record.values.get(i))
    }

    /// A record written as the JSON object `{id, field: value, …}` without building it first:
    /// `list` tools render up to 100 records per call, and judges replay every call, so
    /// cloning each record into a JSON value and then printing it was a tenth of judging.
    /// Serializes to the same text as [`Table::record_json`].
    pub fn record_view<'a>(&'a self, record: &'a Record) -> RecordJson<'a> {
        RecordJson {
            table: self,
            record,
        }
    }

    /// A record as a JSON object `{id, field: value, …}`, for tools, tables and diffs.
    pub fn record_json(&self, record: &Record) -> Value {
        let mut m = serde_json::Map::with_capacity(self.fields.len() + 1);
        m.insert("id".into(), Value::String(record.id.clone()));
        for (f, v) in self.fields.iter().zip(&record.values) {
            m.insert(f.name.clone(), v.clone());
        }
        Value::Object(m)
    }

    /// A record's label: its title field, else its id.
    pub fn label(&self, record: &Record) -> String {
        match self.title.and_then(|i| record.values.get(i)) {
            Some(v) => crate::world::types::display(v),
            None => record.id.clone(),
        }
    }
}

impl Operation {
    /// The index of a form field by name.
    pub fn field_idx(&self, name: &str) -> Option<usize> {
        self.field_index.get(name).copied()
    }
}

/// A record of a table, serialized as `{id, field: value, …}` (see [`Table::record_view`]).
pub struct RecordJson<'a> {
    table: &'a Table,
    record: &'a Record,
}

impl serde::Serialize for RecordJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.table.fields.len() + 1))?;
        map.serialize_entry("id", &self.record.id)?;
        for (field, value) in self.table.fields.iter().zip(&self.record.values) {
            map.serialize_entry(&field.name, value)?;
        }
        map.end()
    }
}
