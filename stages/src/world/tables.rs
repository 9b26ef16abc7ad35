//! The world as polars DataFrames, the form stages exchange. Times are ISO-8601 text
//! (`YYYY-MM-DDTHH:MM:SS`, sortable as text); `supports` and `evidence` are `List[str]`
//! columns (one list of ids per row), so joins need no string splitting.

use std::collections::HashMap;

use polars::prelude::{Column, DataFrame, NamedFrom, Series};
use serde_json::Value;

use super::app::Catalog;
use super::error::{Result, WorldError};
use super::history::HistoryEvent;
use super::persona::ProfileEntry;
use super::types::display;
use super::World;

fn frame(table: &'static str, height: usize, columns: Vec<Column>) -> Result<DataFrame> {
    DataFrame::new(height, columns).map_err(|source| WorldError::Table { table, source })
}

fn text<S: AsRef<str>>(name: &str, values: impl Iterator<Item = S>) -> Column {
    Column::new(
        name.into(),
        values
            .map(|s| s.as_ref().to_string())
            .collect::<Vec<String>>(),
    )
}

fn list(name: &str, values: impl Iterator<Item = Vec<String>>) -> Column {
    let series: Vec<Series> = values.map(|v| Series::new("".into(), v)).collect();
    Column::new(name.into(), series)
}

/// One row per profile entry: id, dimension, key, value (display text), value_json, mention,
/// source, shift_from, shift_from_mention, shift_changed (null when no shift), evidence (ids of
/// supporting events).
pub fn profile_entries(world: &World) -> Result<DataFrame> {
    profile_table(&world.persona.profile, &world.history)
}

/// [`profile_entries`] for any entries and history (e.g. an imported KnowU persona).
pub fn profile_table(entries: &[ProfileEntry], history: &[HistoryEvent]) -> Result<DataFrame> {
    let mut evidence: HashMap<&str, Vec<String>> = HashMap::new();
    for e in history {
        for s in &e.supports {
            evidence
                .entry(s.as_str())
                .or_default()
                .push(e.event_id.clone());
        }
    }
    let shift_from: Vec<Option<String>> = entries
        .iter()
        .map(|e| e.shift.as_ref().map(|s| display(&s.from)))
        .collect();
    let shift_from_mention: Vec<Option<String>> = entries
        .iter()
        .map(|e| e.shift.as_ref().map(|s| s.from_mention.clone()))
        .collect();
    let shift_changed: Vec<Option<String>> = entries
        .iter()
        .map(|e| e.shift.as_ref().map(|s| s.changed.to_string()))
        .collect();
    let columns = vec![
        text("id", entries.iter().map(|e| &e.id)),
        text("dimension", entries.iter().map(|e| &e.dimension)),
        text("key", entries.iter().map(|e| &e.key)),
        text("value", entries.iter().map(|e| display(&e.value))),
        text("value_json", entries.iter().map(|e| e.value.to_string())),
        text("mention", entries.iter().map(|e| &e.mention)),
        text("source", entries.iter().map(|e| e.source.as_str())),
        Column::new("shift_from".into(), shift_from),
        Column::new("shift_from_mention".into(), shift_from_mention),
        Column::new("shift_changed".into(), shift_changed),
        list(
            "evidence",
            entries
                .iter()
                .map(|e| evidence.get(e.id.as_str()).cloned().unwrap_or_default()),
        ),
    ];
    frame("profile_entries", entries.len(), columns)
}

/// One row per history event: event_id, time, utc_offset_minutes (null unless imported), app,
/// location, text, label, category, supports, counters.
pub fn history_events(events: &[HistoryEvent]) -> Result<DataFrame> {
    let columns = vec![
        text("event_id", events.iter().map(|e| &e.event_id)),
        text("time", events.iter().map(|e| e.time.to_string())),
        Column::new(
            "utc_offset_minutes".into(),
            events
                .iter()
                .map(|e| e.utc_offset_minutes)
                .collect::<Vec<Option<i32>>>(),
        ),
        text("app", events.iter().map(|e| &e.app)),
        text("location", events.iter().map(|e| &e.location)),
        text("text", events.iter().map(|e| &e.text)),
        text("label", events.iter().map(|e| e.label.as_str())),
        text("category", events.iter().map(|e| &e.category)),
        list("supports", events.iter().map(|e| e.supports.clone())),
        list("counters", events.iter().map(|e| e.counters.clone())),
    ];
    frame("history_events", events.len(), columns)
}

/// One row per app: app, name, category, description, tables, operations, records.
pub fn apps(cat: &Catalog) -> Result<DataFrame> {
    let a = &cat.apps;
    let count = |f: &dyn Fn(&crate::world::app::App) -> usize| {
        a.iter().map(|x| f(x) as u32).collect::<Vec<u32>>()
    };
    let columns = vec![
        text("app", a.iter().map(|x| &x.id)),
        text("name", a.iter().map(|x| &x.name)),
        text("category", a.iter().map(|x| &x.category)),
        text("description", a.iter().map(|x| &x.description)),
        Column::new("tables".into(), count(&|x| x.tables.len())),
        Column::new("operations".into(), count(&|x| x.operations.len())),
        Column::new(
            "records".into(),
            count(&|x| x.tables.iter().map(|t| t.records.len()).sum()),
        ),
    ];
    frame("apps", a.len(), columns)
}

/// One row per seed record: app, table, record_id, fields_json (the record as a JSON object,
/// id included).
pub fn app_records(cat: &Catalog) -> Result<DataFrame> {
    let mut cols: [Vec<String>; 4] = Default::default();
    for a in &cat.apps {
        for t in &a.tables {
            for r in &t.records {
                cols[0].push(a.id.clone());
                cols[1].push(t.name.clone());
                cols[2].push(r.id.clone());
                cols[3].push(t.record_json(r).to_string());
            }
        }
    }
    let height = cols[0].len();
    let [app, table, id, json] = cols;
    let columns = vec![
        Column::new("app".into(), app),
        Column::new("table".into(), table),
        Column::new("record_id".into(), id),
        Column::new("fields_json".into(), json),
    ];
    frame("app_records", height, columns)
}

/// Parses a `fields_json` cell back into a JSON object (for consumers of `app_records`).
pub fn parse_fields(cell: &str) -> Option<Value> {
    serde_json::from_str(cell).ok()
}

#[cfg(test)]
mod tests {
    use polars::prelude::*;

    use super::*;
    use crate::world::dataset_tests::default_world;

    #[test]
    fn tables_have_one_row_per_item_and_the_documented_columns() {
        let w = default_world();
        let p = profile_entries(w).unwrap();
        assert_eq!(p.height(), w.persona.profile.len());
        assert_eq!(
            p.get_column_names()
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>(),
            [
                "id",
                "dimension",
                "key",
                "value",
                "value_json",
                "mention",
                "source",
                "shift_from",
                "shift_from_mention",
                "shift_changed",
                "evidence"
            ]
        );
        let h = history_events(&w.history).unwrap();
        assert_eq!(h.height(), 3051);
        assert!(matches!(
            h.column("supports").unwrap().dtype(),
            DataType::List(_)
        ));
        assert_eq!(apps(&w.catalog).unwrap().height(), 26);
        assert_eq!(
            app_records(&w.catalog).unwrap().height(),
            w.catalog.record_count()
        );
    }

    #[test]
    fn list_columns_and_json_round_trip() {
        let w = default_world();
        let p = profile_entries(w).unwrap();
        let row = w
            .persona
            .profile
            .iter()
            .position(|e| e.id == "din_cuisine")
            .unwrap();
        let ev = p
            .column("evidence")
            .unwrap()
            .list()
            .unwrap()
            .get_as_series(row)
            .unwrap();
        assert_eq!(ev.len(), w.evidence_of("din_cuisine").count());
        assert_eq!(
            p.column("shift_from").unwrap().str().unwrap().get(row),
            Some("japanese")
        );
        let r = app_records(&w.catalog).unwrap();
        let first = parse_fields(
            r.column("fields_json")
                .unwrap()
                .str()
                .unwrap()
                .get(0)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            first["id"],
            serde_json::json!(r
                .column("record_id")
                .unwrap()
                .str()
                .unwrap()
                .get(0)
                .unwrap())
        );
    }
}
