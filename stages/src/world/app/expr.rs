//! Lowering of operation expressions (`$arg.field`, `"text {arg.field}"`, literals) into typed
//! [`Expr`]s, and the type-compatibility rule for storing an expression in a field.

use serde_json::Value;

use super::model::{Catalog, Expr, Path, Root};
use crate::world::template::{self, Template};
use crate::world::types::{FieldDef, FieldKind, TableId};

/// The static type of an expression: its kind and whether it is a list. Literals have no
/// static type; they are checked against the target field directly.
pub(crate) type Ty = (FieldKind, bool);

/// What expressions in one operation can see.
pub(crate) struct ExprScope<'a> {
    pub cat: &'a Catalog,
    pub fields: &'a [FieldDef],
    /// The table of the most recent insert effect so far, the type of `$inserted`.
    pub inserted: Option<TableId>,
}

impl ExprScope<'_> {
    fn arg(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }

    /// Lowers a dotted path (without `$`) and infers its type.
    pub fn path(&self, dotted: &str) -> Result<(Path, Ty), String> {
        let mut parts = dotted.split('.');
        let head = parts.next().unwrap_or_default();
        let (root, mut ty): (Root, Ty) = match head {
            "now" => (Root::Now, (FieldKind::DateTime, false)),
            "today" => (Root::Today, (FieldKind::Date, false)),
            "inserted" => match self.inserted {
                Some(t) => (Root::Inserted, (FieldKind::Ref(t), false)),
                None => return Err("`$inserted` is used before any insert effect".into()),
            },
            name => match self.arg(name) {
                Some(i) => (Root::Arg(i), (self.fields[i].kind.clone(), false)),
                None => {
                    return Err(format!(
                        "`{name}` is not a field of this operation (nor now, today, inserted)"
                    ))
                }
            },
        };
        let mut steps = Vec::new();
        for part in parts {
            let (FieldKind::Ref(t), false) = &ty else {
                return Err(format!(
                    "cannot read `.{part}` in `{dotted}`: only a single ref value has fields"
                ));
            };
            if part == "id" {
                continue;
            }
            let table = self.cat.table(*t);
            let f = table.field_idx(part).ok_or_else(|| {
                format!(
                    "`{}` has no field `{part}` (in `{dotted}`)",
                    self.cat.table_name(*t)
                )
            })?;
            steps.push((*t, f));
            ty = (table.fields[f].kind.clone(), table.fields[f].many);
        }
        Ok((Path { root, steps }, ty))
    }

    /// Lowers a template whose placeholders are paths.
    pub fn template(&self, src: &str) -> Result<Template<Path>, String> {
        template::parse(src)?
            .resolve(|p: Vec<String>| self.path(&p.join(".")).map(|(path, _)| path))
    }

    /// Lowers a YAML value: `"$path"` is a path, a string with `{…}` a template, anything else
    /// a literal.
    pub fn expr(&self, v: &Value) -> Result<(Expr, Option<Ty>), String> {
        match v {
            Value::String(s) if is_path(s) => {
                let (p, ty) = self.path(&s[1..])?;
                Ok((Expr::Path(p), Some(ty)))
            }
            Value::String(s) if s.contains('{') => Ok((
                Expr::Text(self.template(s)?),
                Some((FieldKind::Text, false)),
            )),
            other => Ok((Expr::Lit(other.clone()), None)),
        }
    }
}

/// Whether a string is a `$path` expression: `$` followed by a letter (so `"$$"` stays text).
pub(crate) fn is_path(s: &str) -> bool {
    s.strip_prefix('$')
        .and_then(|r| r.chars().next())
        .is_some_and(|c| c.is_ascii_alphabetic())
}

/// Whether a value of type `src` may be stored in `dst`; `Err` explains why not. Text fields
/// accept any scalar (shown as text); float fields accept ints; enums need an option subset.
pub(crate) fn assignable(cat: &Catalog, src: &Ty, dst: &FieldDef) -> Result<(), String> {
    let (sk, smany) = src;
    if *smany != dst.many {
        return Err(format!(
            "a {} cannot be stored in {} field `{}`",
            plural(*smany),
            plural(dst.many),
            dst.name
        ));
    }
    let ok = match (sk, &dst.kind) {
        (_, FieldKind::Text) => true,
        (FieldKind::Int(_) | FieldKind::Float(_), FieldKind::Float(_)) => true,
        (FieldKind::Int(_), FieldKind::Int(_)) => true,
        (FieldKind::Enum(s), FieldKind::Enum(d)) => {
            let missing: Vec<&String> = s.iter().filter(|o| !d.contains(o)).collect();
            if !missing.is_empty() {
                return Err(format!(
                    "options {missing:?} are not options of `{}`",
                    dst.name
                ));
            }
            true
        }
        (FieldKind::Ref(a), FieldKind::Ref(b)) if a != b => {
            return Err(format!(
                "a ref to {} cannot be stored in a ref to {}",
                cat.table_name(*a),
                cat.table_name(*b)
            ));
        }
        (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "a {} value cannot be stored in {} field `{}`",
            sk.type_name(),
            dst.kind.type_name(),
            dst.name
        ))
    }
}

fn plural(many: bool) -> &'static str {
    if many {
        "list"
    } else {
        "single value"
    }
}
