//! The tools action space at run time: which tool a name refers to, the read tools (`list`,
//! `get`) over an episode's state, and a spec list's ref parameters narrowed to the episode's
//! records. The specs themselves are built from the catalog alone (`world::tool_specs`).

use serde_json::{Map, Value};

use crate::world::app::{Catalog, Effect, Table};
use crate::world::tool_specs::ToolSpec;
use crate::world::types::{value_matches, TableId};

use super::overlay::Overlay;

/// What a tool name refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolRef {
    /// An operation (app index, op index).
    Op(usize, usize),
    /// Listing a table.
    List(TableId),
    /// Reading one record.
    Get(TableId),
}

/// Resolves `app.name` or `app__name`.
pub(crate) fn resolve(cat: &Catalog, name: &str) -> Option<ToolRef> {
    let (app, rest) = name.split_once('.').or_else(|| name.split_once("__"))?;
    let ai = cat.app_idx(app)?;
    let a = &cat.apps[ai];
    if let Some(oi) = a.op_idx(rest) {
        return Some(ToolRef::Op(ai, oi));
    }
    let table = |t: &str| {
        a.tables.iter().position(|x| x.name == t).map(|ti| TableId {
            app: ai as u16,
            table: ti as u16,
        })
    };
    if let Some(t) = rest.strip_prefix("list_") {
        return table(t).map(ToolRef::List);
    }
    rest.strip_prefix("get_").and_then(table).map(ToolRef::Get)
}

/// Tables of at most this many records have their ids listed in the schemas of the parameters
/// that refer to them.
pub const SMALL_TABLE: usize = 20;

/// `specs` with [`ParamSpec::choices`](crate::world::tool_specs::ParamSpec::choices) filled from `state` for every ref parameter whose table
/// holds at most [`SMALL_TABLE`] records and is the target of no insert effect (an id an
/// operation creates during the episode could not be in a list fixed at its start).
pub(crate) fn with_choices(cat: &Catalog, state: &Overlay, specs: &[ToolSpec]) -> Vec<ToolSpec> {
    let grown: Vec<TableId> = cat
        .apps
        .iter()
        .flat_map(|a| &a.operations)
        .flat_map(|o| &o.effects)
        .filter_map(|e| match e {
            Effect::Insert { table, .. } => Some(*table),
            _ => None,
        })
        .collect();
    let mut ids: std::collections::HashMap<String, Option<Vec<String>>> = Default::default();
    let mut choices = |table: &str| -> Option<Vec<String>> {
        ids.entry(table.to_string())
            .or_insert_with(|| {
                let t = cat.table_id(table, None).filter(|t| !grown.contains(t))?;
                let records: Vec<String> = state.records(cat, t).map(|r| r.id.clone()).collect();
                (records.len() <= SMALL_TABLE).then_some(records)
            })
            .clone()
    };
    specs
        .iter()
        .map(|spec| {
            let mut spec = spec.clone();
            for p in &mut spec.params {
                if let Some(table) = &p.refers_to {
                    p.choices = choices(table);
                }
            }
            spec
        })
        .collect()
}

/// Runs a list read.
pub(crate) fn list(
    cat: &Catalog,
    state: &Overlay,
    t: TableId,
    args: &Map<String, Value>,
) -> Result<String, String> {
    if let Some(k) = args
        .keys()
        .find(|k| !["where", "limit", "offset"].contains(&k.as_str()))
    {
        return Err(format!(
            "unknown argument `{k}`; list tools take where, limit, offset"
        ));
    }
    let table = cat.table(t);
    let filters = filters(table, args.get("where"))?;
    let limit = uint_arg(args, "limit", 20)?.min(100);
    let offset = uint_arg(args, "offset", 0)?;
    let matching = state.records(cat, t).filter(|r| {
        filters.iter().all(|(fi, want)| match fi {
            None => r.id == want.as_str().unwrap_or_default(),
            Some(fi) => value_matches(&r.values[*fi], want),
        })
    });
    let mut total = 0;
    let mut records = Vec::new();
    for r in matching {
        if total >= offset && records.len() < limit {
            records.push(table.record_view(r));
        }
        total += 1;
    }
    /// `{"total": …, "records": […]}`, written straight from the records.
    #[derive(serde::Serialize)]
    struct Listing<'a> {
        total: usize,
        records: Vec<crate::world::app::RecordJson<'a>>,
    }
    serde_json::to_string(&Listing { total, records }).map_err(|e| e.to_string())
}

fn filters<'a>(
    table: &Table,
    w: Option<&'a Value>,
) -> Result<Vec<(Option<usize>, &'a Value)>, String> {
    let Some(w) = w else { return Ok(Vec::new()) };
    let obj = w
        .as_object()
        .ok_or("`where` must be an object of field → value")?;
    obj.iter()
        .map(|(k, v)| match k.as_str() {
            "id" => Ok((None, v)),
            _ => table
                .field_idx(k)
                .map(|fi| (Some(fi), v))
                .ok_or_else(|| format!("`{}` has no field `{k}`", table.name)),
        })
        .collect()
}

fn uint_arg(args: &Map<String, Value>, name: &str, default: usize) -> Result<usize, String> {
    match args.get(name) {
        None => Ok(default),
        Some(v) => v
            .as_u64()
            .map(|n| n as usize)
            .ok_or_else(|| format!("`{name}` must be a non-negative integer")),
    }
}

/// Runs a get read.
pub(crate) fn get(
    cat: &Catalog,
    state: &Overlay,
    t: TableId,
    args: &Map<String, Value>,
) -> Result<String, String> {
    if let Some(k) = args.keys().find(|k| k.as_str() != "id") {
        return Err(format!("unknown argument `{k}`; get tools take id"));
    }
    let id = args
        .get("id")
        .and_then(Value::as_str)
        .ok_or("missing `id` (text)")?;
    let r = state
        .get(cat, t, id)
        .ok_or_else(|| format!("{} has no record \"{id}\"", cat.table_name(t)))?;
    serde_json::to_string(&cat.table(t).record_view(r)).map_err(|e| e.to_string())
}
