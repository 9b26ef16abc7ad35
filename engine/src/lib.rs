//! # prefflow-engine
//!
//! A generic, declarative pipeline engine: YAML → validated [`plan::Plan`] → DAG of stage
//! instances → content-addressed Parquet artifacts in a [`store::Store`].
//!
//! It knows nothing about agents, phones or benchmarks. Domain crates add stage kinds by
//! implementing [`kind::Kind`] and registering them in a [`kind::Registry`].
//!
//! The flow, module by module:
//! - [`config`] parses the pipeline file with source locations;
//! - [`params`] resolves `${params.x}` and `--set` overrides; [`sweep`] expands grids to variants;
//! - [`schema`] declares the tables kinds read and write; [`plan`] validates everything and produces stage instances in dependency order;
//! - [`subset`] lets a run play only some items of its per-item stages;
//! - [`code`] fingerprints the sources kinds are built from (part of every key);
//! - [`estimate`] holds what `plan` estimates a run would ask of external models;
//! - [`decision`] decides, per instance and item, whether a cached result can be used;
//! - [`exec`] runs them, reusing results by recipe key ([`artifact`], [`keys`]);
//! - [`cluster`] hands per-item work to Slurm job arrays over a shared store;
//! - [`record`] keeps what each run produced, for `show`, `why` and `gc` ([`inspect`]).

#![deny(missing_docs)]

pub mod artifact;
pub mod cluster;
pub mod code;
pub mod config;
pub mod decision;
pub mod error;
pub mod estimate;
pub mod exec;
pub mod input;
pub mod inspect;
pub mod keys;
pub mod kind;
pub mod kinds;
pub mod params;
pub mod plan;
pub mod progress;
pub mod record;
pub mod retry;
pub mod schema;
pub mod store;
pub mod subset;
pub mod sweep;
pub mod tables;
pub mod usage;
pub mod when;

pub use code::CrateCode;
pub use error::{ConfigError, Error, Location, Result, StageError};
pub use kind::{Execution, InputTable, Kind, ParamError, Registry, StageContext, Tables};
pub use usage::{Usage, UsageCounts};
