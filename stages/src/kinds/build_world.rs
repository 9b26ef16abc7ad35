//! `build_world`: apps + persona → profile, history, apps, app records (and the sources later
//! stages rebuild the world from).

use prefflow_engine::schema::TableDef;
use std::path::Path;

use polars::prelude::*;
use prefflow_engine::{Kind, ParamError, StageContext, StageError, Tables};
use serde::Deserialize;

use super::support::input_error;
use crate::tables::world::{SourceRow, SummaryRow, WorldAuditRow};
use crate::world::audit::{self, WorldAudit};
use crate::world::summary::{summary, WorldSummary};
use crate::world::{tables, HistoryParams, World};

/// Parameters of `build_world`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildWorldParams {
    /// Persona YAML file.
    pub persona: String,
    /// Directory of app YAML files.
    #[serde(default = "default_apps")]
    pub apps: String,
    /// History events to synthesize.
    #[serde(default = "default_events")]
    pub events: usize,
    /// Fraction of noise events.
    #[serde(default = "default_noise")]
    pub noise: f64,
    /// Synthesis seed.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Minimum evidence events per inferable entry.
    #[serde(default = "default_min")]
    pub min_per_entry: usize,
    /// Raises the limit on `events` (default 1,000,000; see README, "Limits").
    #[serde(default)]
    pub max_events: Option<u64>,
}

fn default_apps() -> String {
    "datasets/apps".into()
}
fn default_events() -> usize {
    HistoryParams::default().events
}
fn default_noise() -> f64 {
    HistoryParams::default().noise
}
fn default_seed() -> u64 {
    HistoryParams::default().seed
}
fn default_min() -> usize {
    HistoryParams::default().min_per_entry
}

/// Builds the world the benchmark runs in, deterministically from its seed.
pub struct BuildWorld;

impl Kind for BuildWorld {
    type Params = BuildWorldParams;
    type State = ();
    const NAME: &'static str = "build_world";
    const VERSION: &'static str = "4";
    const OUTPUT_DEFS: &'static [&'static TableDef] = &[
        &crate::tables::world::PROFILE_ENTRIES,
        &crate::tables::world::HISTORY_EVENTS,
        &crate::tables::world::APPS,
        &crate::tables::world::APP_RECORDS,
        &crate::tables::world::SOURCES,
        &crate::tables::world::SUMMARY,
        &crate::tables::world::AUDIT,
    ];
    const SUMMARY: &'static str = "persona + app definitions → profile_entries, history_events, apps, app_records, sources, summary, audit (params: persona, apps, events, noise, seed, max_events)";

    fn external_inputs(&self, params: &Self::Params) -> Vec<String> {
        vec![params.persona.clone(), params.apps.clone()]
    }

    fn check(&self, params: &Self::Params) -> Result<(), ParamError> {
        crate::limits::EVENTS.check(params.events as u64, params.max_events)
    }

    fn run(&self, params: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let history = HistoryParams {
            events: params.events,
            noise: params.noise,
            seed: params.seed,
            min_per_entry: params.min_per_entry,
        };
        let apps_dir = ctx.resolve(&params.apps);
        let persona_path = ctx.resolve(&params.persona);
        let world = World::build(&apps_dir, &persona_path, &history).map_err(input_error)?;
        let out = Tables::new([
            (
                "profile_entries",
                tables::profile_entries(&world).map_err(input_error)?,
            ),
            (
                "history_events",
                tables::history_events(&world.history).map_err(input_error)?,
            ),
            ("apps", tables::apps(&world.catalog).map_err(input_error)?),
            (
                "app_records",
                tables::app_records(&world.catalog).map_err(input_error)?,
            ),
            ("sources", sources_table(&apps_dir, &persona_path)?),
            ("summary", summary_table(&summary(&world))?),
            ("audit", audit_table(&audit::audit(&world, params.seed))?),
        ]);
        Ok(out)
    }
}

/// The YAML texts the world was built from, so later stages rebuild it from tables alone.
fn sources_table(apps_dir: &Path, persona: &Path) -> Result<DataFrame, StageError> {
    let mut rows = Vec::new();
    let files = crate::files::sorted_files(apps_dir, &["yaml"])
        .map_err(|e| StageError::Input(format!("{}: {e}", apps_dir.display())))?;
    let read = |p: &Path| {
        std::fs::read_to_string(p).map_err(|e| StageError::Input(format!("{}: {e}", p.display())))
    };
    let row = |kind: &str, p: &Path| -> Result<SourceRow, StageError> {
        Ok(SourceRow {
            kind: kind.to_string(),
            name: file_name(p),
            text: read(p)?,
        })
    };
    for f in &files {
        rows.push(row("app", f)?);
    }
    rows.push(row("persona", persona)?);
    Ok(SourceRow::to_frame(&rows)?)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The summary as rows of (section, key, count), printable with `prefflow show world.summary`.
pub(crate) fn summary_table(s: &WorldSummary) -> Result<DataFrame, StageError> {
    let mut rows: Vec<(&str, String, u64)> = vec![
        ("total", "apps".into(), s.apps as u64),
        ("total", "records".into(), s.records as u64),
        ("total", "events".into(), s.events as u64),
        ("total", "signal".into(), s.signal as u64),
        ("total", "noise".into(), s.noise as u64),
        ("total", "profile_entries".into(), s.entries as u64),
        ("total", "situational_facts".into(), s.situational as u64),
    ];
    let sections = [
        ("records_per_app", &s.records_per_app),
        ("events_per_app", &s.events_per_app),
        ("events_per_month", &s.events_per_month),
        ("entries_per_dimension", &s.entries_per_dimension),
    ];
    for (section, map) in sections {
        rows.extend(map.iter().map(|(k, v)| (section, k.clone(), *v as u64)));
    }
    let rows: Vec<SummaryRow> = rows
        .into_iter()
        .map(|(section, key, count)| SummaryRow {
            section: section.to_string(),
            key,
            count,
        })
        .collect();
    Ok(SummaryRow::to_frame(&rows)?)
}

/// The audit as rows of (section, key, value, detail), printable with `prefflow show world.audit`.
pub(crate) fn audit_table(a: &WorldAudit) -> Result<DataFrame, StageError> {
    let rows: Vec<WorldAuditRow> = audit::rows(a)
        .into_iter()
        .map(|r| WorldAuditRow {
            section: r.section.to_string(),
            key: r.key,
            value: r.value,
            detail: r.detail,
        })
        .collect();
    Ok(WorldAuditRow::to_frame(&rows)?)
}
