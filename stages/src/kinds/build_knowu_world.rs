//! `build_knowu_world`: a KnowU-Bench persona (profile YAML + clean or noisy log JSON) and the
//! phone's apps → the same world tables `build_world` writes, so `generate_knowu_tasks` and
//! `run_episodes` run on KnowU users unchanged. Sweep `log` (clean vs `_noise_25pct`) for the
//! memory ablation.

use polars::prelude::*;
use prefflow_engine::schema::TableDef;
use prefflow_engine::{Kind, StageContext, StageError, Tables};
use serde::Deserialize;

use super::build_world::summary_table;
use super::support::input_error;
use crate::knowu::profile::KnowuProfile;
use crate::knowu::sim::world::{persona_apps, persona_stub, PROFILE_KIND};
use crate::tables::world::{KIND, NAME, TEXT};
use crate::world::app::Catalog;
use crate::world::summary::summarize;
use crate::world::tables;

/// Parameters of `build_knowu_world`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildKnowuWorldParams {
    /// KnowU profile YAML (`user_profile/<name>.yaml` or any file of that schema).
    pub profile: String,
    /// KnowU log JSON (`user_logs/<name>.json` clean, or `<name>_noise_25pct.json`).
    pub log: String,
    /// The phone's app directory (default `datasets/apps`).
    #[serde(default = "default_apps")]
    pub apps: String,
    /// KnowU-flavoured apps added to it (default `datasets/knowu/apps`).
    #[serde(default = "default_extra")]
    pub extra_apps: String,
}

fn default_apps() -> String {
    "datasets/apps".into()
}
fn default_extra() -> String {
    "datasets/knowu/apps".into()
}

/// Builds a KnowU persona's world.
pub struct BuildKnowuWorld;

impl Kind for BuildKnowuWorld {
    type Params = BuildKnowuWorldParams;
    type State = ();
    const NAME: &'static str = "build_knowu_world";
    const VERSION: &'static str = "2";
    const OUTPUT_DEFS: &'static [&'static TableDef] = &[
        &crate::tables::world::PROFILE_ENTRIES,
        &crate::tables::world::HISTORY_EVENTS,
        &crate::tables::world::APPS,
        &crate::tables::world::APP_RECORDS,
        &crate::tables::world::SOURCES,
        &crate::tables::world::SUMMARY,
    ];
    const SUMMARY: &'static str = "KnowU profile YAML + log JSON + app definitions → profile_entries, history_events, apps, app_records, sources (with the KnowU profile), summary (params: profile, log, apps, extra_apps)";

    fn external_inputs(&self, params: &Self::Params) -> Vec<String> {
        use crate::knowu::data::locate_str;
        vec![
            locate_str(&params.profile),
            locate_str(&params.log),
            params.apps.clone(),
            params.extra_apps.clone(),
        ]
    }

    fn run(&self, params: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let read = |p: &str| crate::knowu::data::read_text(&ctx.resolve(p), p);
        let (profile_text, log_text) = (read(&params.profile)?, read(&params.log)?);
        let persona = KnowuProfile::parse(&params.profile, &profile_text)?;
        let entries = persona.entries();
        let events = crate::knowu::log::parse(&params.log, &log_text)?;
        let dirs = [ctx.resolve(&params.apps), ctx.resolve(&params.extra_apps)];
        let apps =
            persona_apps(&[dirs[0].as_path(), dirs[1].as_path()], &persona).map_err(|e| {
                StageError::Input(format!("{} or {}: {e}", params.apps, params.extra_apps))
            })?;
        let catalog = Catalog::from_sources(&apps).map_err(input_error)?;
        let stub = persona_stub(&persona, &events);
        let mut kind = vec!["app"; apps.len()];
        let mut name: Vec<String> = apps.iter().map(|a| a.0.clone()).collect();
        let mut text: Vec<String> = apps.iter().map(|a| a.1.clone()).collect();
        kind.extend(["persona", PROFILE_KIND]);
        name.extend([
            format!("{}.json", persona.id),
            format!("{}.yaml", persona.id),
        ]);
        text.extend([stub, profile_text]);
        let sources = df!(KIND => kind, NAME => name, TEXT => text)?;
        // The stub must load as a persona, or every later stage would fail on it.
        crate::world::from_tables::world_from_tables(
            &sources,
            &tables::history_events(&events).map_err(input_error)?,
        )
        .map_err(|e| {
            StageError::Input(format!(
                "{}: the imported persona does not load: {e}",
                params.profile
            ))
        })?;
        Ok(Tables::new([
            (
                "profile_entries",
                tables::profile_table(&entries, &events).map_err(input_error)?,
            ),
            (
                "history_events",
                tables::history_events(&events).map_err(input_error)?,
            ),
            ("apps", tables::apps(&catalog).map_err(input_error)?),
            (
                "app_records",
                tables::app_records(&catalog).map_err(input_error)?,
            ),
            ("sources", sources),
            ("summary", summary_table(&summarize(&entries, &events))?),
        ]))
    }
}
