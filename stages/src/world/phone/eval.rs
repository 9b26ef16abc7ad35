//! Evaluating typed operation expressions against episode state, with staged writes visible so
//! later effects can read what earlier effects of the same submission wrote.

use std::borrow::Cow;

use serde_json::Value;

use crate::world::app::{Catalog, Expr, ExprPath, Record, Root};
use crate::world::clock::DateTime;
use crate::world::template::Template;
use crate::world::types::{write_display, FieldKind, TableId};

use super::overlay::Overlay;

/// One pending write of an operation.
#[derive(Debug, Clone)]
pub(crate) enum Write {
    /// A new record.
    Insert(TableId, Record),
    /// A replaced record.
    Put(TableId, Record),
    /// A removed record.
    Delete(TableId, String),
}

/// The pinned clock as the text values `$now` and `$today` evaluate to, formatted once per
/// episode rather than once per expression.
#[derive(Debug, Clone)]
pub(crate) struct ClockText {
    pub now: Value,
    pub today: Value,
}

impl ClockText {
    /// Formats a clock.
    pub fn new(t: DateTime) -> Self {
        Self {
            now: Value::String(format!("{}T{}", t.date, t.time.hhmm())),
            today: Value::String(t.date.to_string()),
        }
    }
}

/// Everything an expression can read.
pub(crate) struct Scope<'a> {
    pub cat: &'a Catalog,
    pub state: &'a Overlay,
    pub staged: &'a [Write],
    pub args: &'a [Value],
    pub clock: &'a ClockText,
    pub inserted: Option<&'a str>,
}

impl Scope<'_> {
    /// A record as the submission sees it: staged writes first (latest wins), then state.
    pub fn record(&self, t: TableId, id: &str) -> Option<&Record> {
        for w in self.staged.iter().rev() {
            match w {
                Write::Insert(wt, r) | Write::Put(wt, r) if *wt == t && r.id == id => {
                    return Some(r)
                }
                Write::Delete(wt, wid) if *wt == t && wid == id => return None,
                _ => {}
            }
        }
        self.state.get(self.cat, t, id)
    }

    /// Evaluates a path, borrowing whatever it reads.
    pub fn path_ref(&self, p: &ExprPath) -> Result<Cow<'_, Value>, String> {
        let mut v: Cow<'_, Value> = match p.root {
            Root::Arg(i) => self
                .args
                .get(i)
                .map_or(Cow::Owned(Value::Null), Cow::Borrowed),
            Root::Now => Cow::Borrowed(&self.clock.now),
            Root::Today => Cow::Borrowed(&self.clock.today),
            Root::Inserted => {
                Cow::Owned(Value::String(self.inserted.unwrap_or_default().to_string()))
            }
        };
        for &(t, f) in &p.steps {
            let id = v
                .as_str()
                .ok_or_else(|| format!("expected a record id, got {v}"))?;
            let r = self
                .record(t, id)
                .ok_or_else(|| format!("{} has no record \"{id}\"", self.cat.table_name(t)))?;
            v = r
                .values
                .get(f)
                .map_or(Cow::Owned(Value::Null), Cow::Borrowed);
        }
        Ok(v)
    }

    /// Evaluates a path into an owned value.
    pub fn path(&self, p: &ExprPath) -> Result<Value, String> {
        self.path_ref(p).map(Cow::into_owned)
    }

    /// Evaluates an expression.
    pub fn expr(&self, e: &Expr) -> Result<Value, String> {
        match e {
            Expr::Lit(v) => Ok(v.clone()),
            Expr::Path(p) => self.path(p),
            Expr::Text(t) => self.text(t).map(Value::String),
        }
    }

    /// Evaluates an expression, borrowing where possible.
    pub fn expr_ref<'s>(&'s self, e: &'s Expr) -> Result<Cow<'s, Value>, String> {
        match e {
            Expr::Lit(v) => Ok(Cow::Borrowed(v)),
            Expr::Path(p) => self.path_ref(p),
            Expr::Text(t) => self.text(t).map(|s| Cow::Owned(Value::String(s))),
        }
    }

    /// Renders a template; an unreadable placeholder is an error.
    pub fn text(&self, t: &Template<ExprPath>) -> Result<String, String> {
        let mut err = None;
        let s = t.render(|p, out| match self.path_ref(p) {
            Ok(v) => self.write_ref(p, &v, out),
            Err(e) => err = Some(e),
        });
        err.map_or(Ok(s), Err)
    }

    /// Writes a value; for a path that ends on a ref id, the referenced record's label reads
    /// better than the id.
    fn write_ref(&self, p: &ExprPath, v: &Value, out: &mut String) {
        let target = p
            .steps
            .last()
            .and_then(|&(t, f)| match &self.cat.table(t).fields[f].kind {
                FieldKind::Ref(r) => Some(*r),
                _ => None,
            });
        match (target, v.as_str()) {
            (Some(t), Some(id)) => match self.record(t, id) {
                Some(r) => out.push_str(&self.cat.table(t).label(r)),
                None => write_display(v, out),
            },
            _ => write_display(v, out),
        }
    }
}
