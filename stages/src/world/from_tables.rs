//! Rebuilding a [`World`] from `build_world`'s tables, so later stages (task generation,
//! validation, episodes) get the world only through tables, as every stage must.

use polars::prelude::*;

use super::app::Catalog;
use super::assemble::World;
use super::clock::DateTime;
use super::error::{Result, WorldError};
use super::history::{HistoryEvent, Label};
use super::persona::Persona;
use crate::tables::row::{Cell, RowError};
use crate::tables::world::{HistoryEventRow, SourceRow, HISTORY_EVENTS, SOURCES};

/// Rebuilds the world from the `sources` table (app and persona YAML texts) and the
/// `history_events` table. The history is taken as stored, never re-synthesized.
pub fn world_from_tables(sources: &DataFrame, history: &DataFrame) -> Result<World> {
    let (apps, persona) = read_sources(sources)?;
    let catalog = Catalog::from_sources(&apps)?;
    let (file, text) = persona.ok_or_else(|| bad(SOURCES.name, "has no persona row"))?;
    let persona = Persona::from_source(&file, &text, &catalog)?;
    let history = history_from_table(history)?;
    Ok(World::new(catalog, persona, history))
}

type Sources = (Vec<(String, String)>, Option<(String, String)>);

fn read_sources(df: &DataFrame) -> Result<Sources> {
    let rows = SourceRow::from_frame(df).map_err(row_err)?;
    let mut apps = Vec::new();
    let mut persona = None;
    for (i, row) in rows.into_iter().enumerate() {
        match row.kind.as_str() {
            "app" => apps.push((row.name, row.text)),
            "persona" => persona = Some((row.name, row.text)),
            // Carried for later stages (KnowU task generation), not part of the world model.
            "knowu_profile" => {}
            other => {
                return Err(bad(
                    SOURCES.name,
                    &format!("row {i} has unknown kind {other:?}"),
                ))
            }
        }
    }
    Ok((apps, persona))
}

/// Parses a `history_events` table back into events.
pub fn history_from_table(df: &DataFrame) -> Result<Vec<HistoryEvent>> {
    let t = HISTORY_EVENTS.name;
    let rows = HistoryEventRow::from_frame(&with_optional_columns(df)?).map_err(row_err)?;
    let mut out = Vec::with_capacity(rows.len());
    for (i, row) in rows.into_iter().enumerate() {
        let parsed = DateTime::parse(&row.time)
            .ok_or_else(|| bad(t, &format!("row {i}: bad time `{}`", row.time)))?;
        let label = match row.label.as_str() {
            "signal" => Label::Signal,
            "noise" => Label::Noise,
            other => return Err(bad(t, &format!("row {i}: bad label {other:?}"))),
        };
        out.push(HistoryEvent {
            event_id: row.event_id,
            time: parsed,
            utc_offset_minutes: row.utc_offset_minutes,
            app: row.app,
            location: row.location,
            text: row.text,
            label,
            category: row.category,
            supports: row.supports,
            counters: row.counters,
        });
    }
    Ok(out)
}

/// `df` with the columns older tables lack filled in: `utc_offset_minutes` (null: unknown) and
/// `counters` (empty: tables written before counter-evidence existed).
fn with_optional_columns(df: &DataFrame) -> Result<DataFrame> {
    let mut df = df.clone();
    let height = df.height();
    let fill = |e| WorldError::Table {
        table: HISTORY_EVENTS.name,
        source: e,
    };
    if df.column(HistoryEventRow::utc_offset_minutes).is_err() {
        let nulls: Vec<Option<i32>> = vec![None; height];
        df.with_column(<Option<i32> as Cell>::column(
            HistoryEventRow::utc_offset_minutes,
            nulls,
        ))
        .map_err(fill)?;
    }
    if df.column(HistoryEventRow::counters).is_err() {
        let empty: Vec<Vec<String>> = vec![Vec::new(); height];
        df.with_column(<Vec<String> as Cell>::column(
            HistoryEventRow::counters,
            empty,
        ))
        .map_err(fill)?;
    }
    Ok(df)
}

fn row_err(e: RowError) -> WorldError {
    bad(e.table, &e.to_string())
}

fn bad(table: &'static str, message: &str) -> WorldError {
    WorldError::Table {
        table,
        source: PolarsError::ComputeError(message.to_string().into()),
    }
}
