//! The world as polars DataFrames, the form stages exchange. Times are ISO-8601 text
//! (`YYYY-MM-DDTHH:MM:SS`, sortable as text); `supports` and `evidence` are `List[str]`
//! columns (one list of ids per row), so joins need no string splitting.

use std::collections::HashMap;

use polars::prelude::{DataFrame, PolarsResult};
use serde_json::Value;

use super::app::Catalog;
use super::assemble::World;
use super::error::{Result, WorldError};
use super::history::HistoryEvent;
use super::persona::ProfileEntry;
use super::types::display;
use crate::tables::world::{
    AppRecordRow, AppRow, HistoryEventRow, ProfileEntryRow, APPS, APP_RECORDS, HISTORY_EVENTS,
    PROFILE_ENTRIES,
};

fn frame(table: &'static str, df: PolarsResult<DataFrame>) -> Result<DataFrame> {
    df.map_err(|source| WorldError::Table { table, source })
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
    let rows: Vec<ProfileEntryRow> = entries
        .iter()
        .map(|e| ProfileEntryRow {
            id: e.id.clone(),
            dimension: e.dimension.clone(),
            key: e.key.clone(),
            value: display(&e.value),
            value_json: e.value.to_string(),
            mention: e.mention.clone(),
            source: e.source.as_str().to_string(),
            shift_from: e.shift.as_ref().map(|s| display(&s.from)),
            shift_from_mention: e.shift.as_ref().map(|s| s.from_mention.clone()),
            shift_changed: e.shift.as_ref().map(|s| s.changed.to_string()),
            evidence: evidence.get(e.id.as_str()).cloned().unwrap_or_default(),
        })
        .collect();
    frame(PROFILE_ENTRIES.name, ProfileEntryRow::to_frame(&rows))
}

/// One row per history event: event_id, time, utc_offset_minutes (null unless imported), app,
/// location, text, label, category, supports, counters.
pub fn history_events(events: &[HistoryEvent]) -> Result<DataFrame> {
    let rows: Vec<HistoryEventRow> = events
        .iter()
        .map(|e| HistoryEventRow {
            event_id: e.event_id.clone(),
            time: e.time.to_string(),
            utc_offset_minutes: e.utc_offset_minutes,
            app: e.app.clone(),
            location: e.location.clone(),
            text: e.text.clone(),
            label: e.label.as_str().to_string(),
            category: e.category.clone(),
            supports: e.supports.clone(),
            counters: e.counters.clone(),
        })
        .collect();
    frame(HISTORY_EVENTS.name, HistoryEventRow::to_frame(&rows))
}

/// One row per app: app, name, category, description, tables, operations, records.
pub fn apps(cat: &Catalog) -> Result<DataFrame> {
    let rows: Vec<AppRow> = cat
        .apps
        .iter()
        .map(|x| AppRow {
            app: x.id.clone(),
            name: x.name.clone(),
            category: x.category.clone(),
            description: x.description.clone(),
            tables: x.tables.len() as u32,
            operations: x.operations.len() as u32,
            records: x.tables.iter().map(|t| t.records.len()).sum::<usize>() as u32,
        })
        .collect();
    frame(APPS.name, AppRow::to_frame(&rows))
}

/// One row per seed record: app, table, record_id, fields_json (the record as a JSON object,
/// id included).
pub fn app_records(cat: &Catalog) -> Result<DataFrame> {
    let mut rows = Vec::new();
    for a in &cat.apps {
        for t in &a.tables {
            for r in &t.records {
                rows.push(AppRecordRow {
                    app: a.id.clone(),
                    table: t.name.clone(),
                    record_id: r.id.clone(),
                    fields_json: t.record_json(r).to_string(),
                });
            }
        }
    }
    frame(APP_RECORDS.name, AppRecordRow::to_frame(&rows))
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
        let documented: Vec<&str> = PROFILE_ENTRIES
            .columns
            .iter()
            .filter(|c| c.only.is_none())
            .map(|c| c.name)
            .collect();
        assert_eq!(documented.len(), 11);
        assert_eq!(
            p.get_column_names()
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>(),
            documented
        );
        assert_eq!(PROFILE_ENTRIES.violations(&p), []);
        let h = history_events(&w.history).unwrap();
        assert_eq!(h.height(), 3051);
        assert_eq!(HISTORY_EVENTS.violations(&h), []);
        assert!(matches!(
            h.column(HistoryEventRow::supports).unwrap().dtype(),
            DataType::List(_)
        ));
        assert_eq!(HistoryEventRow::from_frame(&h).unwrap().len(), 3051);
        assert_eq!(
            AppRow::from_frame(&apps(&w.catalog).unwrap())
                .unwrap()
                .len(),
            26
        );
        assert_eq!(
            app_records(&w.catalog).unwrap().height(),
            w.catalog.record_count()
        );
    }

    #[test]
    fn list_columns_and_json_round_trip() {
        let w = default_world();
        let p = ProfileEntryRow::from_frame(&profile_entries(w).unwrap()).unwrap();
        let row = w
            .persona
            .profile
            .iter()
            .position(|e| e.id == "din_cuisine")
            .unwrap();
        assert_eq!(p[row].id, "din_cuisine");
        assert_eq!(p[row].evidence.len(), w.evidence_of("din_cuisine").count());
        assert_eq!(p[row].shift_from.as_deref(), Some("japanese"));
        let r = AppRecordRow::from_frame(&app_records(&w.catalog).unwrap()).unwrap();
        let first = parse_fields(&r[0].fields_json).unwrap();
        assert_eq!(first["id"], serde_json::json!(r[0].record_id));
    }
}
