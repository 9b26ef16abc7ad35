//! Evaluating typed operation expressions against episode state, with staged writes visible so
//! later effects can read what earlier effects of the same submission wrote.

use serde_json::Value;

use crate::world::app::{Catalog, Expr, ExprPath, Record, Root};
use crate::world::clock::DateTime;
use crate::world::template::Template;
use crate::world::types::{write_display, TableId};

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

/// Everything an expression can read.
pub(crate) struct Scope<'a> {
    pub cat: &'a Catalog,
    pub state: &'a Overlay,
    pub staged: &'a [Write],
    pub args: &'a [Value],
    pub now: DateTime,
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

    /// Evaluates a path.
    pub fn path(&self, p: &ExprPath) -> Result<Value, String> {
        let mut v = match p.root {
            Root::Arg(i) => self.args.get(i).cloned().unwrap_or(Value::Null),
            Root::Now => Value::String(format!("{}T{}", self.now.date, self.now.time.hhmm())),
            Root::Today => Value::String(self.now.date.to_string()),
            Root::Inserted => Value::String(self.inserted.unwrap_or_default().to_string()),
        };
        for &(t, f) in &p.steps {
            let id = v
                .as_str()
                .ok_or_else(|| format!("expected a record id, got {v}"))?;
            let r = self
                .record(t, id)
                .ok_or_else(|| format!("{} has no record \"{id}\"", self.cat.table_name(t)))?;
            v = r.values.get(f).cloned().unwrap_or(Value::Null);
        }
        Ok(v)
    }

    /// Evaluates an expression.
    pub fn expr(&self, e: &Expr) -> Result<Value, String> {
        match e {
            Expr::Lit(v) => Ok(v.clone()),
            Expr::Path(p) => self.path(p),
            Expr::Text(t) => self.text(t).map(Value::String),
        }
    }

    /// Renders a template; an unreadable placeholder is an error.
    pub fn text(&self, t: &Template<ExprPath>) -> Result<String, String> {
        let mut err = None;
        let s = t.render(|p, out| match self.path(p) {
            Ok(v) => write_display(&self.display_ref(p, v), out),
            Err(e) => err = Some(e),
        });
        err.map_or(Ok(s), Err)
    }

    /// For a path that ends on a ref id, the referenced record's label reads better than the id.
    fn display_ref(&self, p: &ExprPath, v: Value) -> Value {
        let target = match (p.root, p.steps.last()) {
            (_, Some(&(t, f))) => match &self.cat.table(t).fields[f].kind {
                crate::world::types::FieldKind::Ref(r) => Some(*r),
                _ => None,
            },
            _ => None,
        };
        match (target, v.as_str()) {
            (Some(t), Some(id)) => self
                .record(t, id)
                .map_or(v.clone(), |r| Value::String(self.cat.table(t).label(r))),
            _ => v,
        }
    }
}
