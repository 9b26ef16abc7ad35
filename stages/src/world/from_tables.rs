//! Rebuilding a [`World`] from `build_world`'s tables, so later stages (task generation,
//! validation, episodes) get the world only through tables, as every stage must.

use polars::prelude::*;

use super::app::Catalog;
use super::clock::DateTime;
use super::error::{Result, WorldError};
use super::history::{HistoryEvent, Label};
use super::persona::Persona;
use super::World;

/// Rebuilds the world from the `sources` table (app and persona YAML texts) and the
/// `history_events` table. The history is taken as stored, never re-synthesized.
pub fn world_from_tables(sources: &DataFrame, history: &DataFrame) -> Result<World> {
    let (apps, persona) = read_sources(sources)?;
    let catalog = Catalog::from_sources(&apps)?;
    let (file, text) = persona.ok_or_else(|| bad("sources", "has no persona row"))?;
    let persona = Persona::from_source(&file, &text, &catalog)?;
    let history = history_from_table(history)?;
    Ok(World::new(catalog, persona, history))
}

type Sources = (Vec<(String, String)>, Option<(String, String)>);

fn read_sources(df: &DataFrame) -> Result<Sources> {
    let kind = str_col(df, "sources", "kind")?;
    let name = str_col(df, "sources", "name")?;
    let text = str_col(df, "sources", "text")?;
    let mut apps = Vec::new();
    let mut persona = None;
    for i in 0..df.height() {
        let row = (
            name.get(i).unwrap_or_default().to_string(),
            text.get(i).unwrap_or_default().to_string(),
        );
        match kind.get(i) {
            Some("app") => apps.push(row),
            Some("persona") => persona = Some(row),
            // Carried for later stages (KnowU task generation), not part of the world model.
            Some("knowu_profile") => {}
            other => {
                return Err(bad(
                    "sources",
                    &format!("row {i} has unknown kind {other:?}"),
                ))
            }
        }
    }
    Ok((apps, persona))
}

/// Parses a `history_events` table back into events.
pub fn history_from_table(df: &DataFrame) -> Result<Vec<HistoryEvent>> {
    let t = "history_events";
    let (id, time, app) = (
        str_col(df, t, "event_id")?,
        str_col(df, t, "time")?,
        str_col(df, t, "app")?,
    );
    let (location, text, label) = (
        str_col(df, t, "location")?,
        str_col(df, t, "text")?,
        str_col(df, t, "label")?,
    );
    let category = str_col(df, t, "category")?;
    let offset = df
        .column("utc_offset_minutes")
        .ok()
        .and_then(|c| c.cast(&DataType::Int32).ok());
    let offset = offset.as_ref().and_then(|c| c.i32().ok());
    let supports = df
        .column("supports")
        .map_err(|e| table_err(t, e))?
        .list()
        .map_err(|e| table_err(t, e))?;
    // Tables written before counter-evidence existed have no `counters` column.
    let counters = df.column("counters").ok().and_then(|c| c.list().ok());
    let list_at = |ca: &ListChunked, i: usize| -> Vec<String> {
        ca.get_as_series(i)
            .and_then(|s| {
                s.str()
                    .ok()
                    .map(|ca| ca.iter().flatten().map(str::to_string).collect())
            })
            .unwrap_or_default()
    };
    let mut out = Vec::with_capacity(df.height());
    for i in 0..df.height() {
        let when = time.get(i).unwrap_or_default();
        let parsed =
            DateTime::parse(when).ok_or_else(|| bad(t, &format!("row {i}: bad time `{when}`")))?;
        let label = match label.get(i) {
            Some("signal") => Label::Signal,
            Some("noise") => Label::Noise,
            other => return Err(bad(t, &format!("row {i}: bad label {other:?}"))),
        };
        let supports = list_at(supports, i);
        out.push(HistoryEvent {
            event_id: id.get(i).unwrap_or_default().to_string(),
            time: parsed,
            utc_offset_minutes: offset.and_then(|o| o.get(i)),
            app: app.get(i).unwrap_or_default().to_string(),
            location: location.get(i).unwrap_or_default().to_string(),
            text: text.get(i).unwrap_or_default().to_string(),
            label,
            category: category.get(i).unwrap_or_default().to_string(),
            supports,
            counters: counters.map(|c| list_at(c, i)).unwrap_or_default(),
        });
    }
    Ok(out)
}

fn str_col<'a>(df: &'a DataFrame, table: &'static str, name: &str) -> Result<&'a StringChunked> {
    df.column(name)
        .and_then(|c| c.str())
        .map_err(|e| table_err(table, e))
}

fn table_err(table: &'static str, source: PolarsError) -> WorldError {
    WorldError::Table { table, source }
}

fn bad(table: &'static str, message: &str) -> WorldError {
    WorldError::Table {
        table,
        source: PolarsError::ComputeError(message.to_string().into()),
    }
}
