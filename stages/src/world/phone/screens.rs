//! GUI screens as data: each screen is built into a [`View`] (title plus lines, some of which are
//! tappable elements with ids) and rendered as a text accessibility tree. Building a view is pure,
//! so taps are resolved against exactly what the agent saw.

use serde_json::Value;

use crate::world::app::Catalog;
use crate::world::types::{display, FieldDef, FieldKind, TableId};

use super::overlay::Overlay;

/// Records per list page.
pub(crate) const PAGE: usize = 8;
/// Ref fields with at most this many candidates list them on the form.
const MAX_LISTED_OPTIONS: usize = 25;

/// A screen in the navigation stack.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Screen {
    /// The app grid.
    Home,
    /// An app's start screen: its tables and operations.
    App { app: usize },
    /// A page of a table's records, seen from app `app`.
    List {
        app: usize,
        table: TableId,
        offset: usize,
    },
    /// One record, seen from app `app` (whose operations it offers).
    Detail {
        app: usize,
        table: TableId,
        id: String,
    },
    /// An operation form; `values` are the current field values (`Null` = not yet set).
    Form {
        app: usize,
        op: usize,
        values: Vec<Value>,
    },
    /// The confirmation after a successful submission.
    Done { message: String },
}

/// What tapping an element does.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Target {
    /// Open an app.
    App(usize),
    /// Open a table list.
    Table(TableId),
    /// Open an operation form, optionally prefilling a ref field.
    Form(usize, usize, Option<(usize, String)>),
    /// Open a record.
    Record(TableId, String),
    /// A form field (edit it with type/select).
    Field(usize),
    /// Submit the form.
    Submit,
    /// Close the confirmation.
    Dismiss,
}

/// One line of a screen.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Line {
    /// Plain text.
    Text(String),
    /// A tappable element.
    Elem(String, Target),
}

/// A built screen.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct View {
    pub title: String,
    pub lines: Vec<Line>,
}

impl View {
    /// The target of element `id` (1-based, in line order).
    pub fn target(&self, id: u32) -> Option<&Target> {
        self.lines
            .iter()
            .filter_map(|l| {
                if let Line::Elem(_, t) = l {
                    Some(t)
                } else {
                    None
                }
            })
            .nth((id as usize).checked_sub(1)?)
    }

    /// The accessibility-tree text.
    pub fn render(&self) -> String {
        let mut out = format!("screen: {}", self.title);
        let mut n = 0;
        for l in &self.lines {
            match l {
                Line::Text(t) => {
                    out.push_str("\n  ");
                    out.push_str(t);
                }
                Line::Elem(label, _) => {
                    n += 1;
                    out.push_str(&format!("\n  [{n}] {label}"));
                }
            }
        }
        out
    }
}

/// Builds the view of a screen.
pub(crate) fn view(cat: &Catalog, state: &Overlay, s: &Screen) -> View {
    match s {
        Screen::Home => home(cat),
        Screen::App { app } => app_view(cat, state, *app),
        Screen::List { table, offset, .. } => list_view(cat, state, *table, *offset),
        Screen::Detail { app, table, id } => detail_view(cat, state, *app, *table, id),
        Screen::Form { app, op, values } => form_view(cat, state, *app, *op, values),
        Screen::Done { message } => View {
            title: "Done".into(),
            lines: vec![
                Line::Text(message.clone()),
                Line::Elem("button \"OK\"".into(), Target::Dismiss),
            ],
        },
    }
}

fn home(cat: &Catalog) -> View {
    let lines = cat
        .apps
        .iter()
        .enumerate()
        .map(|(i, a)| {
            Line::Elem(
                format!("app \"{}\" ({})", a.name, a.category),
                Target::App(i),
            )
        })
        .collect();
    View {
        title: "Home".into(),
        lines,
    }
}

fn app_view(cat: &Catalog, state: &Overlay, ai: usize) -> View {
    let a = &cat.apps[ai];
    let mut lines = vec![Line::Text(a.description.clone())];
    for (ti, t) in a.tables.iter().enumerate() {
        let id = TableId {
            app: ai as u16,
            table: ti as u16,
        };
        lines.push(Line::Elem(
            format!(
                "tab \"{}\" ({} items)",
                t.name.replace('_', " "),
                state.count(cat, id)
            ),
            Target::Table(id),
        ));
    }
    for (oi, o) in a.operations.iter().enumerate() {
        lines.push(Line::Elem(
            format!("button \"{}\"", o.title),
            Target::Form(ai, oi, None),
        ));
    }
    View {
        title: a.name.clone(),
        lines,
    }
}

/// `label · summary values` for list rows.
fn row(cat: &Catalog, state: &Overlay, t: TableId, r: &crate::world::app::Record) -> String {
    let table = cat.table(t);
    let mut s = table.label(r);
    for &fi in &table.summary {
        s.push_str(" · ");
        s.push_str(&value_text(cat, state, &table.fields[fi], &r.values[fi]));
    }
    s
}

fn list_view(cat: &Catalog, state: &Overlay, t: TableId, offset: usize) -> View {
    let total = state.count(cat, t);
    let mut lines: Vec<Line> = state
        .records(cat, t)
        .skip(offset)
        .take(PAGE)
        .map(|r| {
            Line::Elem(
                format!("item \"{}\"", row(cat, state, t, r)),
                Target::Record(t, r.id.clone()),
            )
        })
        .collect();
    let shown = if total == 0 {
        "empty".to_string()
    } else {
        format!(
            "{}–{} of {total}",
            (offset + 1).min(total),
            (offset + PAGE).min(total)
        )
    };
    if offset + PAGE < total {
        lines.push(Line::Text("(scroll down for more)".into()));
    }
    View {
        title: format!(
            "{} › {} ({shown})",
            cat.apps[t.app as usize].name,
            cat.table(t).name.replace('_', " ")
        ),
        lines,
    }
}

fn detail_view(cat: &Catalog, state: &Overlay, ai: usize, t: TableId, id: &str) -> View {
    let table = cat.table(t);
    let Some(r) = state.get(cat, t, id) else {
        return View {
            title: "Not found".into(),
            lines: vec![Line::Text(format!(
                "This {} item no longer exists.",
                table.name
            ))],
        };
    };
    let mut lines = Vec::new();
    for (f, v) in table.fields.iter().zip(&r.values) {
        let text = format!(
            "{}: {}",
            f.name.replace('_', " "),
            value_text(cat, state, f, v)
        );
        match (&f.kind, v.as_str()) {
            (FieldKind::Ref(target), Some(rid)) if !f.many && state.exists(cat, *target, rid) => {
                lines.push(Line::Elem(
                    format!("link \"{text}\""),
                    Target::Record(*target, rid.to_string()),
                ))
            }
            _ => lines.push(Line::Text(text)),
        }
    }
    for (oi, o) in cat.apps[ai]
        .operations
        .iter()
        .enumerate()
        .filter(|(_, o)| o.entity == Some(t))
    {
        let prefill = o
            .fields
            .iter()
            .position(|f| f.kind == FieldKind::Ref(t))
            .map(|fi| (fi, id.to_string()));
        lines.push(Line::Elem(
            format!("button \"{}\"", o.title),
            Target::Form(ai, oi, prefill),
        ));
    }
    View {
        title: format!("{} › {}", cat.apps[ai].name, table.label(r)),
        lines,
    }
}

fn form_view(cat: &Catalog, state: &Overlay, ai: usize, oi: usize, values: &[Value]) -> View {
    let op = &cat.apps[ai].operations[oi];
    let mut lines = Vec::new();
    if !op.description.is_empty() {
        lines.push(Line::Text(op.description.clone()));
    }
    for (fi, (f, v)) in op.fields.iter().zip(values).enumerate() {
        let shown = if v.is_null() {
            "—".to_string()
        } else {
            value_text(cat, state, f, v)
        };
        lines.push(Line::Elem(
            format!(
                "field \"{}\" [{}]: {shown}",
                f.name.replace('_', " "),
                field_hint(cat, state, f)
            ),
            Target::Field(fi),
        ));
    }
    let label = if op.irreversible {
        format!("button \"{}\" (submits; cannot be undone)", op.title)
    } else {
        format!("button \"{}\" (submits)", op.title)
    };
    lines.push(Line::Elem(label, Target::Submit));
    View {
        title: format!("{} › {}", cat.apps[ai].name, op.title),
        lines,
    }
}

/// Type, constraints and choices of a form field, as shown to the agent.
fn field_hint(cat: &Catalog, state: &Overlay, f: &FieldDef) -> String {
    let req = if f.required { ", required" } else { "" };
    let kind = match &f.kind {
        FieldKind::Enum(o) => format!("choose: {}", o.join(" | ")),
        FieldKind::Bool => "choose: yes | no".into(),
        FieldKind::Int(Some((a, b))) => format!("number {a}–{b}"),
        FieldKind::Float(Some((a, b))) => format!("number {a}–{b}"),
        FieldKind::Int(None) | FieldKind::Float(None) => "number".into(),
        FieldKind::Date => "date YYYY-MM-DD".into(),
        FieldKind::Time => "time HH:MM".into(),
        FieldKind::DateTime => "date and time YYYY-MM-DDTHH:MM".into(),
        FieldKind::Text => "text".into(),
        FieldKind::Ref(t) => ref_choices(cat, state, *t),
    };
    format!("{kind}{req}")
}

fn ref_choices(cat: &Catalog, state: &Overlay, t: TableId) -> String {
    let table = cat.table(t);
    if state.count(cat, t) > MAX_LISTED_OPTIONS {
        return format!("choose a {} by name or id", table.name);
    }
    let names: Vec<String> = state.records(cat, t).map(|r| table.label(r)).collect();
    format!("choose: {}", names.join(" | "))
}

/// A value as shown on screens: refs by their record's label.
pub(crate) fn value_text(cat: &Catalog, state: &Overlay, f: &FieldDef, v: &Value) -> String {
    let FieldKind::Ref(t) = f.kind else {
        return display(v);
    };
    let label = |id: &Value| {
        id.as_str()
            .and_then(|id| state.get(cat, t, id))
            .map_or_else(|| display(id), |r| cat.table(t).label(r))
    };
    match v {
        Value::Array(items) => items.iter().map(label).collect::<Vec<_>>().join(", "),
        single => label(single),
    }
}
