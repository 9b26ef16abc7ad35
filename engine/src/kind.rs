//! Stage kinds: the unit of behaviour the engine schedules.
//!
//! A kind is a Rust type implementing [`Kind`] with typed, serde-deserialized parameters. The
//! engine only sees the object-safe [`DynKind`] view, so kinds from any crate can be registered by
//! name in a [`Registry`] and referenced from YAML.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use indexmap::IndexMap;
use polars::prelude::DataFrame;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::StageError;

/// Named output tables of one stage (or one item of a per-item stage).
#[derive(Debug, Clone, Default)]
pub struct Tables(pub IndexMap<String, DataFrame>);

impl Tables {
    /// Tables from `(name, frame)` pairs.
    pub fn new(tables: impl IntoIterator<Item = (impl Into<String>, DataFrame)>) -> Self {
        Self(tables.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// A single table, the common case.
    pub fn single(name: &str, df: DataFrame) -> Self {
        Self::new([(name, df)])
    }

    /// The table called `name`.
    pub fn get(&self, name: &str) -> Option<&DataFrame> {
        self.0.get(name)
    }
}

/// One upstream table handed to a stage.
#[derive(Debug, Clone)]
pub struct InputTable {
    /// The upstream stage.
    pub stage: String,
    /// The table's name within that stage.
    pub table: String,
    /// The data; for the main input of a per-item stage, only this item's rows.
    pub df: DataFrame,
}

impl InputTable {
    /// `stage.table`, the name users write in `inputs`.
    pub fn label(&self) -> String {
        format!("{}.{}", self.stage, self.table)
    }
}

/// Everything a stage sees while running: its inputs and where it runs. Stages talk to each other
/// only through these tables.
pub struct StageContext<'a> {
    /// The stage's name in the pipeline.
    pub stage: &'a str,
    /// The variant name (`""` when the stage is not swept).
    pub variant: &'a str,
    /// The item value for per-item stages.
    pub item: Option<&'a str>,
    /// A seed derived from the stage's cache key: stable across runs, distinct per item.
    pub seed: u64,
    /// 0 on the first attempt; retries count up.
    pub attempt: u32,
    /// Directory relative paths in params are resolved against.
    pub workdir: &'a Path,
    /// Upstream tables in the order of `inputs`.
    pub inputs: &'a [InputTable],
    /// The run's store, for kinds that memoize expensive external calls (e.g. model requests)
    /// under their own key prefix, so a finished pipeline re-runs with no external calls.
    pub cache: &'a dyn crate::store::Store,
    /// When true, external calls must be served from `cache`; a miss is an error.
    pub offline: bool,
}

impl StageContext<'_> {
    /// An input by `stage.table`, by `stage` (when it has one table) or by table name.
    pub fn input(&self, name: &str) -> Result<&DataFrame, StageError> {
        let by_label = self.inputs.iter().find(|t| t.label() == name);
        let by_stage = || {
            let mut of_stage = self.inputs.iter().filter(|t| t.stage == name);
            match (of_stage.next(), of_stage.next()) {
                (Some(only), None) => Some(only),
                _ => None,
            }
        };
        let by_table = || self.inputs.iter().find(|t| t.table == name);
        by_label
            .or_else(by_stage)
            .or_else(by_table)
            .map(|t| &t.df)
            .ok_or_else(|| {
                let known: Vec<String> = self.inputs.iter().map(InputTable::label).collect();
                StageError::Failed(format!(
                    "stage `{}` needs input `{name}`, but its inputs are [{}]; add it to `inputs`",
                    self.stage,
                    known.join(", ")
                ))
            })
    }

    /// Resolves a path from params against the working directory.
    pub fn resolve(&self, path: &str) -> PathBuf {
        self.workdir.join(path)
    }
}

/// A stage kind with typed parameters. Implement this; register with [`Registry::register`].
pub trait Kind: Send + Sync + 'static {
    /// Parameters, deserialized from the stage's `params` (use `deny_unknown_fields`).
    type Params: DeserializeOwned + Send + Sync;
    /// The name used in YAML `kind:`.
    const NAME: &'static str;
    /// Bump to invalidate every cached result of this kind.
    const VERSION: &'static str;
    /// Names of the tables `run` returns.
    const OUTPUTS: &'static [&'static str];
    /// False for kinds whose output depends on randomness beyond `ctx.seed` (recorded in manifests).
    const DETERMINISTIC: bool = true;
    /// One line for `prefflow kinds`.
    const SUMMARY: &'static str;

    /// Files or directories (relative to the working directory) whose content is part of the cache
    /// key, so editing a dataset re-runs the stages that read it.
    fn external_inputs(&self, _params: &Self::Params) -> Vec<String> {
        Vec::new()
    }

    /// For kinds with side effects outside the store (exports): whether a cached result is still
    /// in place. Returning false makes the engine run the stage again.
    fn cached_output_is_valid(&self, _params: &Self::Params, _workdir: &Path) -> bool {
        true
    }

    /// Checks what serde cannot (limits, ranges) when the plan is built, so a value that would
    /// run for hours is a located error (exit 2) before anything runs. `field` names the
    /// parameter, `message` follows the word "parameter".
    fn check(&self, _params: &Self::Params) -> Result<(), ParamError> {
        Ok(())
    }

    /// Does the work.
    fn run(&self, params: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError>;
}

/// The engine's object-safe view of a kind. Implemented for every [`Kind`].
pub trait DynKind: Send + Sync {
    /// See [`Kind::NAME`].
    fn name(&self) -> &'static str;
    /// See [`Kind::VERSION`].
    fn version(&self) -> &'static str;
    /// See [`Kind::OUTPUTS`].
    fn outputs(&self) -> &'static [&'static str];
    /// See [`Kind::DETERMINISTIC`].
    fn deterministic(&self) -> bool;
    /// See [`Kind::SUMMARY`].
    fn summary(&self) -> &'static str;
    /// Checks that `params` deserialize into the kind's parameter type and pass [`Kind::check`].
    fn check_params(&self, params: &Value) -> Result<(), ParamError>;
    /// See [`Kind::external_inputs`].
    fn external_inputs(&self, params: &Value) -> Vec<String>;
    /// See [`Kind::cached_output_is_valid`].
    fn cached_output_is_valid(&self, params: &Value, workdir: &Path) -> bool;
    /// Deserializes `params` and runs the kind.
    fn run(&self, params: &Value, ctx: &StageContext<'_>) -> Result<Tables, StageError>;
}

/// Why parameters do not fit a kind, and which one (a dotted path) is at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamError {
    /// The offending parameter's path, when serde could tell.
    pub field: Option<String>,
    /// What is wrong, phrased to follow "parameter".
    pub message: String,
}

fn typed<P: DeserializeOwned>(params: &Value) -> Result<P, ParamError> {
    serde_path_to_error::deserialize(params.clone()).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.inner().to_string();
        let named = ["unknown field `", "missing field `"].iter().find_map(|p| {
            inner
                .split_once(p)
                .and_then(|(_, rest)| rest.split_once('`'))
                .map(|(f, _)| f.to_string())
        });
        let field = if path == "." {
            named
        } else {
            Some(path.clone())
        };
        let message = match &field {
            Some(f) if path != "." => format!("`{f}`: {inner}"),
            _ => inner,
        };
        ParamError { field, message }
    })
}

impl<K: Kind> DynKind for K {
    fn name(&self) -> &'static str {
        K::NAME
    }
    fn version(&self) -> &'static str {
        K::VERSION
    }
    fn outputs(&self) -> &'static [&'static str] {
        K::OUTPUTS
    }
    fn deterministic(&self) -> bool {
        K::DETERMINISTIC
    }
    fn summary(&self) -> &'static str {
        K::SUMMARY
    }
    fn check_params(&self, params: &Value) -> Result<(), ParamError> {
        typed::<K::Params>(params).and_then(|p| Kind::check(self, &p))
    }
    fn external_inputs(&self, params: &Value) -> Vec<String> {
        typed::<K::Params>(params)
            .map(|p| Kind::external_inputs(self, &p))
            .unwrap_or_default()
    }
    fn cached_output_is_valid(&self, params: &Value, workdir: &Path) -> bool {
        typed::<K::Params>(params)
            .map(|p| Kind::cached_output_is_valid(self, &p, workdir))
            .unwrap_or(false)
    }
    fn run(&self, params: &Value, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let p = typed::<K::Params>(params).map_err(|e| StageError::Input(e.message))?;
        Kind::run(self, &p, ctx)
    }
}

/// Stage kinds by name: the vocabulary a pipeline file may use.
#[derive(Clone, Default)]
pub struct Registry {
    kinds: BTreeMap<&'static str, Arc<dyn DynKind>>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// A registry holding the engine's generic kinds (`read_table`, `query`, `write_table`, `probe`).
    pub fn with_generic_kinds() -> Self {
        let mut registry = Self::new();
        crate::kinds::register(&mut registry);
        registry
    }

    /// Adds a kind; a later registration under the same name replaces the earlier one.
    pub fn register<K: Kind>(&mut self, kind: K) {
        self.kinds.insert(K::NAME, Arc::new(kind));
    }

    /// The kind called `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn DynKind>> {
        self.kinds.get(name).cloned()
    }

    /// All kinds, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn DynKind>> {
        self.kinds.values()
    }

    /// Known kind names, for "did you mean" hints.
    pub fn names(&self) -> Vec<&'static str> {
        self.kinds.keys().copied().collect()
    }
}
