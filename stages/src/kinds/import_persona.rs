//! `import_persona`: a KnowU-Bench persona (profile YAML + activity log JSON) → the same
//! `profile_entries` / `history_events` tables `build_world` writes, so every later stage can
//! run on KnowU users as well as on synthesized ones.

use polars::prelude::*;
use prefflow_engine::schema::TableDef;
use prefflow_engine::{Kind, StageContext, StageError, Tables};
use serde::Deserialize;

use super::build_world::summary_table;
use super::support::input_error;
use crate::knowu::log;
use crate::knowu::profile::KnowuProfile;
use crate::world::summary::summarize;
use crate::world::tables;

/// Parameters of `import_persona`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportPersonaParams {
    /// KnowU profile YAML (`user_profile/<name>.yaml` or any file of that schema).
    pub profile: String,
    /// KnowU log JSON (`user_logs/<name>.json` or `<name>_noise_25pct.json`).
    pub log: String,
    /// Persona name written to the `persona` column (default: the profile's file stem).
    #[serde(default)]
    pub persona: Option<String>,
}

/// Imports one KnowU-Bench persona into the world's table contracts.
pub struct ImportPersona;

impl Kind for ImportPersona {
    type Params = ImportPersonaParams;
    type State = ();
    const NAME: &'static str = "import_persona";
    const VERSION: &'static str = "1";
    const OUTPUT_DEFS: &'static [&'static TableDef] = &[
        &crate::tables::world::PROFILE_ENTRIES,
        &crate::tables::world::HISTORY_EVENTS,
        &crate::tables::world::SUMMARY,
    ];
    const SUMMARY: &'static str = "KnowU profile YAML + log JSON → profile_entries, history_events, summary (params: profile, log, persona?)";

    fn external_inputs(&self, params: &Self::Params) -> Vec<String> {
        use crate::knowu::data::locate_str;
        vec![locate_str(&params.profile), locate_str(&params.log)]
    }

    fn run(&self, params: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let profile_text = read(ctx, &params.profile)?;
        let log_text = read(ctx, &params.log)?;
        let profile = KnowuProfile::parse(&params.profile, &profile_text)?;
        let events = log::parse(&params.log, &log_text)?;
        let persona = params.persona.clone().unwrap_or(profile.id.clone());
        let profile_entries = profile.entries();
        let entries = tables::profile_table(&profile_entries, &events).map_err(input_error)?;
        let history = tables::history_events(&events).map_err(input_error)?;
        let summary = summary_table(&summarize(&profile_entries, &events))?;
        Ok(Tables::new([
            ("profile_entries", with_persona(entries, &persona)?),
            ("history_events", with_persona(history, &persona)?),
            ("summary", summary),
        ]))
    }
}

/// Reads a parameter's file, naming the path as the pipeline wrote it on failure.
fn read(ctx: &StageContext<'_>, path: &str) -> Result<String, StageError> {
    crate::knowu::data::read_text(&ctx.resolve(path), path)
}

/// Appends a constant `persona` column, so tables of several personas can be concatenated.
fn with_persona(mut df: DataFrame, persona: &str) -> Result<DataFrame, StageError> {
    let column = Column::new_scalar(
        crate::tables::world::PERSONA.into(),
        Scalar::from(PlSmallStr::from(persona)),
        df.height(),
    );
    df.with_column(column)?;
    Ok(df)
}
