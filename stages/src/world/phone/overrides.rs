//! Per-task environment control (iPrefBench §B.3): app data edits, appended history events and
//! profile edits, applied to the episode overlay only so they vanish with it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::world::app::{Catalog, Record};
use crate::world::assemble::World;
use crate::world::history::HistoryEvent;
use crate::world::types::TableId;

use super::exec::check_arg;
use super::overlay::Overlay;

/// Everything a task changes before the episode starts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Overrides {
    /// App data edits, applied in order.
    pub app_data: Vec<DataEdit>,
    /// Extra history events (e.g. evidence of a changed preference).
    pub history: Vec<HistoryEvent>,
    /// Profile entries whose value changes for this task.
    pub profile: Vec<ProfileEdit>,
}

/// One change to app data; `table` is `app.table`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum DataEdit {
    /// Add a record (fields not given take defaults; fields without a default are required).
    Insert {
        /// `app.table`.
        table: String,
        /// The new record's id.
        id: String,
        /// Field values.
        #[serde(default)]
        values: Map<String, Value>,
    },
    /// Change fields of a record.
    Update {
        /// `app.table`.
        table: String,
        /// The record.
        id: String,
        /// New field values.
        values: Map<String, Value>,
    },
    /// Remove a record (e.g. make a preferred option unavailable).
    Delete {
        /// `app.table`.
        table: String,
        /// The record.
        id: String,
    },
}

/// A replacement value for a profile entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileEdit {
    /// Profile entry id.
    pub id: String,
    /// The value for this task.
    pub value: Value,
}

/// Why overrides could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OverrideError {
    /// `table` is not `app.table` of a loaded app.
    #[error("override edit #{index}: unknown table `{table}`")]
    UnknownTable {
        /// Position in `app_data`.
        index: usize,
        /// The name given.
        table: String,
    },
    /// The record to update or delete does not exist, or an inserted id is taken.
    #[error("override edit #{index}: {message}")]
    BadRecord {
        /// Position in `app_data`.
        index: usize,
        /// What is wrong.
        message: String,
    },
    /// A value does not fit its field.
    #[error("override edit #{index}: {message}")]
    BadValue {
        /// Position in `app_data`.
        index: usize,
        /// What is wrong.
        message: String,
    },
    /// A profile edit names no entry.
    #[error("profile override: no entry `{0}`")]
    UnknownEntry(String),
}

/// Applies overrides to a fresh overlay.
pub(crate) fn apply(
    world: &World,
    ov: &Overrides,
    state: &mut Overlay,
) -> Result<(), OverrideError> {
    for (index, edit) in ov.app_data.iter().enumerate() {
        apply_edit(&world.catalog, index, edit, state)?;
    }
    for p in &ov.profile {
        if world.persona.entry(&p.id).is_none() {
            return Err(OverrideError::UnknownEntry(p.id.clone()));
        }
        state.profile.insert(p.id.clone(), p.value.clone());
    }
    state.history.extend(ov.history.iter().cloned());
    state.history.sort_by_key(|e| e.time);
    Ok(())
}

fn table_of(cat: &Catalog, index: usize, name: &str) -> Result<TableId, OverrideError> {
    name.contains('.')
        .then(|| cat.table_id(name, None))
        .flatten()
        .ok_or_else(|| OverrideError::UnknownTable {
            index,
            table: name.to_string(),
        })
}

fn apply_edit(
    cat: &Catalog,
    index: usize,
    edit: &DataEdit,
    state: &mut Overlay,
) -> Result<(), OverrideError> {
    let bad = |message: String| OverrideError::BadRecord { index, message };
    match edit {
        DataEdit::Insert { table, id, values } => {
            let t = table_of(cat, index, table)?;
            if state.exists(cat, t, id) || !crate::world::app::is_record_id(id) {
                return Err(bad(format!(
                    "cannot insert \"{id}\" into {table}: id taken or malformed"
                )));
            }
            let fields = &cat.table(t).fields;
            let mut rec = Record {
                id: id.clone(),
                values: fields
                    .iter()
                    .map(|f| f.default.clone().unwrap_or(Value::Null))
                    .collect(),
            };
            set_values(cat, state, t, index, &mut rec, values)?;
            if let Some(f) = fields.iter().zip(&rec.values).find(|(_, v)| v.is_null()) {
                return Err(OverrideError::BadValue {
                    index,
                    message: format!("insert into {table} lacks `{}`", f.0.name),
                });
            }
            state.insert(t, rec);
        }
        DataEdit::Update { table, id, values } => {
            let t = table_of(cat, index, table)?;
            let mut rec = state
                .get(cat, t, id)
                .cloned()
                .ok_or_else(|| bad(format!("{table} has no record \"{id}\"")))?;
            set_values(cat, state, t, index, &mut rec, values)?;
            state.put(t, rec);
        }
        DataEdit::Delete { table, id } => {
            let t = table_of(cat, index, table)?;
            if !state.exists(cat, t, id) {
                return Err(bad(format!("{table} has no record \"{id}\"")));
            }
            state.delete(cat, t, id);
        }
    }
    Ok(())
}

fn set_values(
    cat: &Catalog,
    state: &Overlay,
    t: TableId,
    index: usize,
    rec: &mut Record,
    values: &Map<String, Value>,
) -> Result<(), OverrideError> {
    let table = cat.table(t);
    for (k, v) in values {
        let fi = table.field_idx(k).ok_or_else(|| OverrideError::BadValue {
            index,
            message: format!("{} has no field `{k}`", cat.table_name(t)),
        })?;
        let f = &table.fields[fi];
        rec.values[fi] = if f.many {
            crate::world::types::check_value(f, v).map_err(|e| OverrideError::BadValue {
                index,
                message: format!("{k}: {e}"),
            })?
        } else {
            check_arg(cat, state, f, v)
                .map_err(|message| OverrideError::BadValue { index, message })?
        };
    }
    Ok(())
}
