//! Lowering of seed records: ids, declared fields, defaults for omitted fields, type checks, and
//! the deferred check that every ref value names an existing record.

use crate::world::hash::FastMap;

use indexmap::IndexMap;
use serde_json::Value;
use serde_saphyr::Spanned;

use super::fields::value_problem_kind;
use super::model::{Catalog, Record, Table};
use super::sink::{PendingRef, Sink};
use crate::world::error::{Problem, ProblemKind};
use crate::world::types::{check_value, FieldKind};
use crate::world::yaml::at;

type RawRecord = Spanned<IndexMap<String, Spanned<Value>>>;

/// Whether a string may serve as an id of an app, table, field or operation.
pub(crate) fn is_name(s: &str) -> bool {
    let mut cs = s.chars();
    cs.next().is_some_and(|c| c.is_ascii_lowercase())
        && cs.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Whether a string may serve as a record id.
pub(crate) fn is_record_id(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Lowers all seed records of one table, reporting duplicates.
pub(crate) fn lower_records(
    table: &Table,
    file: &str,
    raws: &[RawRecord],
    sink: &mut Sink,
) -> (Vec<Record>, FastMap<String, usize>) {
    let mut records = Vec::with_capacity(raws.len());
    let mut index = FastMap::with_capacity_and_hasher(raws.len(), Default::default());
    for raw in raws {
        let Some(rec) = lower_record(table, file, raw, sink) else {
            continue;
        };
        if index.contains_key(&rec.id) {
            sink.push(Problem::new(
                ProblemKind::DuplicateId,
                at(file, raw),
                format!(
                    "table `{}` has two records with id \"{}\"",
                    table.name, rec.id
                ),
                "give each record a unique id",
            ));
            continue;
        }
        index.insert(rec.id.clone(), records.len());
        records.push(rec);
    }
    (records, index)
}

fn lower_record(table: &Table, file: &str, raw: &RawRecord, sink: &mut Sink) -> Option<Record> {
    let id = match raw.value.get("id").map(|v| &v.value) {
        Some(Value::String(s)) if is_record_id(s) => s.clone(),
        _ => {
            sink.push(Problem::new(
                ProblemKind::MissingValue,
                at(file, raw),
                format!("a record of `{}` has no valid `id`", table.name),
                "add `id: some-id` (letters, digits, - and _)",
            ));
            return None;
        }
    };
    for (key, v) in &raw.value {
        if key != "id" && table.field_idx(key).is_none() {
            sink.push(Problem::new(
                ProblemKind::UnknownRecordField,
                at(file, v),
                format!(
                    "record \"{id}\" sets `{key}`, which `{}` does not declare",
                    table.name
                ),
                "remove it or declare the field",
            ));
        }
    }
    let mut values = Vec::with_capacity(table.fields.len());
    for f in &table.fields {
        let v = match raw.value.get(&f.name) {
            Some(v) => match check_value(f, &v.value) {
                Ok(norm) => {
                    if let FieldKind::Ref(t) = f.kind {
                        sink.refs.push(PendingRef {
                            table: t,
                            value: norm.clone(),
                            at: at(file, v),
                            what: format!("`{}` of record \"{id}\"", f.name),
                        });
                    }
                    norm
                }
                Err(e) => {
                    sink.push(Problem::new(
                        value_problem_kind(&e),
                        at(file, v),
                        format!("`{}` of record \"{id}\": {e}", f.name),
                        "use a value the field accepts",
                    ));
                    Value::Null
                }
            },
            None => match &f.default {
                Some(d) => d.clone(),
                None => {
                    let msg = format!(
                        "record \"{id}\" of `{}` lacks `{}`, which has no default",
                        table.name, f.name
                    );
                    sink.push(Problem::new(
                        ProblemKind::MissingValue,
                        at(file, raw),
                        msg,
                        "set the field, or give it a default in the table",
                    ));
                    Value::Null
                }
            },
        };
        values.push(v);
    }
    Some(Record { id, values })
}

/// Checks every deferred ref value against the loaded records.
pub(crate) fn check_pending_refs(cat: &Catalog, sink: &mut Sink) {
    for p in std::mem::take(&mut sink.refs) {
        let ids: Vec<&Value> = match &p.value {
            Value::Array(items) => items.iter().collect(),
            single => vec![single],
        };
        for id in ids.into_iter().filter_map(Value::as_str) {
            if cat.table(p.table).record(id).is_none() {
                let msg = format!(
                    "{} names \"{id}\", which is not a record of {}",
                    p.what,
                    cat.table_name(p.table)
                );
                sink.push(Problem::new(
                    ProblemKind::DanglingRef,
                    p.at.clone(),
                    msg,
                    "use the id of an existing seed record",
                ));
            }
        }
    }
}
