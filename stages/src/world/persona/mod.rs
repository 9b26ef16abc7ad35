//! Persona as data: `datasets/personas/*.yaml` declares a user (identity, places, routines), a
//! hidden profile whose entries carry evidence templates, ask-only situational facts, and noise
//! templates. Loading validates all of it against the app catalog.

mod bind;
mod load;
mod model;
mod raw;
pub mod text;

use std::path::Path;

pub(crate) use bind::{choose, render, render_at, Fill};
pub(crate) use load::leak_phrases;
pub(crate) use model::{Binding, Construction, Context, Days, EventTemplate, Period, Var, Want};
pub use model::{OtherValue, Persona, ProfileEntry, Shift, SituationalFact, Source, DIMENSIONS};

use super::app::Catalog;
use super::error::Result;

impl Persona {
    /// Loads and validates a persona file against `cat`.
    pub fn load(path: &Path, cat: &Catalog) -> Result<Persona> {
        let text = super::yaml::read(path)?;
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Persona::from_source(&file, &text, cat)
    }

    /// Parses and validates persona YAML text (`file` labels locations).
    pub fn from_source(file: &str, text: &str, cat: &Catalog) -> Result<Persona> {
        load::from_source(file, text, cat)
    }
}

#[cfg(test)]
mod tests;
