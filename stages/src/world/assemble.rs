//! The world as one value: the app catalog, the persona and its synthesized history. Immutable
//! once built; episodes run on a copy-on-write overlay of it (see `phone`).

use std::path::Path;
use std::sync::{Arc, OnceLock};

use super::app::Catalog;
use super::clock::DateTime;
use super::error::Result;
use super::history::{synthesize, HistoryEvent, HistoryParams};
use super::persona::Persona;
use super::tool_specs::{tool_specs, ToolSpec};

/// Apps + app data + persona + history.
#[derive(Debug, Clone)]
pub struct World {
    /// Every app with its seed records.
    pub catalog: Catalog,
    /// The simulated user (hidden profile included).
    pub persona: Persona,
    /// The visible history, in time order.
    pub history: Vec<HistoryEvent>,
    /// The catalog's tool specs, built on first use and shared by every episode: ~220 specs
    /// took a quarter of a millisecond to build for each episode.
    tools: OnceLock<Arc<[ToolSpec]>>,
}

impl World {
    /// Loads `apps_dir/*.yaml` and the persona file, then synthesizes the history.
    pub fn build(apps_dir: &Path, persona_path: &Path, params: &HistoryParams) -> Result<World> {
        let catalog = Catalog::load_dir(apps_dir)?;
        let persona = Persona::load(persona_path, &catalog)?;
        let history = synthesize(&catalog, &persona, params)?;
        Ok(World::new(catalog, persona, history))
    }

    /// The world of these parts.
    pub fn new(catalog: Catalog, persona: Persona, history: Vec<HistoryEvent>) -> World {
        World {
            catalog,
            persona,
            history,
            tools: OnceLock::new(),
        }
    }

    /// Every tool of the catalog (the phone's tools mode), built once per world.
    pub fn tools(&self) -> Arc<[ToolSpec]> {
        self.tools
            .get_or_init(|| tool_specs(&self.catalog).into())
            .clone()
    }

    /// The default episode clock (the persona's `now`).
    pub fn now(&self) -> DateTime {
        self.persona.now
    }

    /// The events that evidence a profile entry.
    pub fn evidence_of<'a>(
        &'a self,
        entry_id: &'a str,
    ) -> impl Iterator<Item = &'a HistoryEvent> + 'a {
        self.history
            .iter()
            .filter(move |e| e.supports.iter().any(|s| s == entry_id))
    }
}
