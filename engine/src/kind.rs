//! Stage kinds: the unit of behaviour the engine schedules.
//!
//! A kind is a Rust type implementing [`Kind`] with typed, serde-deserialized parameters. The
//! engine only sees the object-safe [`DynKind`] view, so kinds from any crate can be registered by
//! name in a [`Registry`] and referenced from YAML.
//!
//! A kind's life in one run, per stage instance (a stage under one variant) that has work to do:
//! 1. [`Kind::prepare`] once, on a blocking thread, with every input table whole: it builds the
//!    [`Kind::State`] that every item of the instance shares (a parsed world, an index, compiled
//!    templates, a client), and that is dropped when the instance is done;
//! 2. then, per item (or once for a stage without `per_item`), [`Kind::run`] on the blocking pool
//!    for CPU-bound kinds, or [`Kind::run_async`] awaited on the engine's tokio runtime for
//!    I/O-bound kinds ([`Kind::EXECUTION`]); either reads the state as `ctx.state`.

use std::any::Any;
use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use polars::prelude::DataFrame;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::code::{CodeFingerprint, CrateCode};
use crate::error::StageError;
use crate::schema::{InputDef, OutputError, TableDef};
use crate::usage::UsageMeter;

pub use crate::tables::{InputTable, Tables};

/// Everything a stage sees while running: its inputs, where it runs, and its instance's
/// prepared state. Stages talk to each other only through these tables.
///
/// `S` is the kind's [`Kind::State`]; `()` (the default) for kinds without one and in
/// [`Kind::prepare`]. Every field is a reference or a copy, so a context is cheap to make.
pub struct StageContext<'a, S = ()> {
    /// The stage's name in the pipeline.
    pub stage: &'a str,
    /// The variant name (`""` when the stage is not swept).
    pub variant: &'a str,
    /// The item value for per-item stages (`None` in `prepare` and for whole stages).
    pub item: Option<&'a str>,
    /// A seed derived from the stage's cache key: stable across runs, distinct per item.
    pub seed: u64,
    /// 0 on the first attempt; retries count up.
    pub attempt: u32,
    /// Directory relative paths in params are resolved against.
    pub workdir: &'a Path,
    /// Upstream tables in the order of `inputs`. For a per-item stage the first one holds only
    /// this item's rows, except in `prepare`, which sees every table whole.
    pub inputs: &'a [InputTable],
    /// The run's store, for kinds that memoize expensive external calls (e.g. model requests)
    /// under their own key prefix, so a finished pipeline re-runs with no external calls.
    pub cache: &'a dyn crate::store::Store,
    /// When true, external calls must be served from `cache`; a miss is an error.
    pub offline: bool,
    /// What [`Kind::prepare`] built for this instance, shared by all its items.
    pub state: &'a S,
    /// Where the kind reports what its model calls cost (see [`crate::usage`]); the engine
    /// writes it into the result's manifest.
    pub usage: &'a UsageMeter,
}

impl<'a, S> StageContext<'a, S> {
    /// The same context with `state` as its prepared state.
    pub fn with_state<'b, T>(&'b self, state: &'b T) -> StageContext<'b, T>
    where
        'a: 'b,
    {
        StageContext {
            stage: self.stage,
            variant: self.variant,
            item: self.item,
            seed: self.seed,
            attempt: self.attempt,
            workdir: self.workdir,
            inputs: self.inputs,
            cache: self.cache,
            offline: self.offline,
            state,
            usage: self.usage,
        }
    }

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

/// How a kind's work is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Execution {
    /// CPU-bound work: [`Kind::run`] on tokio's blocking pool, at most `concurrency` items at
    /// once (default: one per core). The default.
    Blocking,
    /// I/O-bound work (model endpoints, remote devices): [`Kind::run_async`] awaited on the
    /// engine's runtime, so thousands of items can wait on the network without a thread each.
    /// Default `concurrency` is [`ASYNC_CONCURRENCY`]; resource pools bound it further.
    Async,
}

/// Items of an [`Execution::Async`] kind in flight at once when the stage sets no `concurrency`.
pub const ASYNC_CONCURRENCY: usize = 1024;

/// A stage kind with typed parameters. Implement this; register with [`Registry::register`].
///
/// The smallest kind sets `type State = ();` and implements [`Kind::run`]. A kind whose items
/// share expensive setup builds it in [`Kind::prepare`]; an I/O-bound kind sets
/// `const EXECUTION: Execution = Execution::Async` and implements [`Kind::run_async`].
pub trait Kind: Send + Sync + 'static {
    /// Parameters, deserialized from the stage's `params` (use `deny_unknown_fields`).
    type Params: DeserializeOwned + Send + Sync;
    /// What [`Kind::prepare`] builds once per instance; `()` for kinds that need nothing.
    type State: Send + Sync + 'static;
    /// The name used in YAML `kind:`.
    const NAME: &'static str;
    /// Bump to invalidate every cached result of this kind.
    const VERSION: &'static str;
    /// The tables `run` returns, each with the columns it promises to write: `Plan::build`
    /// checks what downstream kinds read against them, and every result is checked against
    /// them before it is committed (exactly these tables, exactly their columns; see
    /// [`crate::schema::check_tables`]). A table whose columns the params decide is
    /// [`TableDef::open`].
    const OUTPUT_DEFS: &'static [&'static TableDef];
    /// The tables the kind reads (required or optional, with the columns it uses), found among
    /// the stage's inputs as [`StageContext::input`] finds them; checked by `Plan::build`.
    const INPUTS: &'static [InputDef] = &[];
    /// False for kinds whose output depends on randomness beyond `ctx.seed` (recorded in manifests).
    const DETERMINISTIC: bool = true;
    /// One line for `prefflow kinds`.
    const SUMMARY: &'static str;
    /// Whether items call [`Kind::run`] on a blocking thread or await [`Kind::run_async`].
    const EXECUTION: Execution = Execution::Blocking;
    /// True for kinds that implement [`Kind::estimate`]: `plan` loads their inputs to ask.
    const ESTIMATES: bool = false;

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

    /// The part of the resolved params (`raw`; `params` is the same, typed) that determines
    /// the result: what the recipe and item keys hash instead of the whole params. The default
    /// is all of them. It exists for params that are a *catalog* an instance picks one entry
    /// from — a list of named endpoints and the name a sweep chose: return the params with
    /// only the picked entry, so adding an entry to the catalog re-runs no other variant's
    /// items. Leave out only what the result cannot depend on, or stale results are reused.
    fn key_params(&self, _params: &Self::Params, raw: &Value) -> Value {
        raw.clone()
    }

    /// Checks what serde cannot (limits, ranges) when the plan is built, so a value that would
    /// run for hours is a located error (exit 2) before anything runs. `field` names the
    /// parameter, `message` follows the word "parameter".
    fn check(&self, _params: &Self::Params) -> Result<(), ParamError> {
        Ok(())
    }

    /// What running the instance would ask of external models (requests, tokens, money per
    /// role and model), for `plan`, from the inputs known before the run (see
    /// [`crate::estimate`]). `None` (the default) for kinds that call no model. Must not call
    /// any model or write the store.
    fn estimate(
        &self,
        _params: &Self::Params,
        _ctx: &crate::estimate::EstimateContext<'_>,
    ) -> Result<Option<crate::estimate::Estimate>, StageError> {
        Ok(None)
    }

    /// Builds the instance's shared state, once, before its first item runs (and not at all when
    /// every result is cached). `ctx.inputs` are whole, `ctx.item` is `None`. An error fails the
    /// instance; a transient one is retried like an item's.
    ///
    /// The default serves kinds whose `State` is `()`.
    fn prepare(
        &self,
        _params: &Self::Params,
        _ctx: &StageContext<'_>,
    ) -> Result<Self::State, StageError> {
        let unit: Box<dyn Any> = Box::new(());
        unit.downcast::<Self::State>().map(|s| *s).map_err(|_| {
            StageError::Failed(format!(
                "kind `{}` declares a `State` but does not implement `prepare` (a bug in the kind)",
                Self::NAME
            ))
        })
    }

    /// Does the work of one item (or of the whole stage), on a blocking thread. Required for
    /// [`Execution::Blocking`] kinds.
    fn run(
        &self,
        _params: &Self::Params,
        _ctx: &StageContext<'_, Self::State>,
    ) -> Result<Tables, StageError> {
        Err(unimplemented_mode(Self::NAME, "run", "Blocking"))
    }

    /// Does the work of one item (or of the whole stage) as a future the engine awaits on its
    /// runtime. Required for [`Execution::Async`] kinds. It must not block: do CPU-heavy parts in
    /// `prepare`, or with `tokio::task::spawn_blocking`.
    fn run_async<'a>(
        &'a self,
        _params: &'a Self::Params,
        _ctx: &'a StageContext<'a, Self::State>,
    ) -> impl Future<Output = Result<Tables, StageError>> + Send + 'a {
        std::future::ready(Err(unimplemented_mode(Self::NAME, "run_async", "Async")))
    }
}

fn unimplemented_mode(kind: &str, method: &str, mode: &str) -> StageError {
    StageError::Failed(format!(
        "kind `{kind}` does not implement `{method}`, which its EXECUTION ({mode}) calls (a bug in the kind)"
    ))
}

/// A boxed future of a kind's result, as the object-safe layer hands it to the engine.
pub type TablesFuture<'a> = Pin<Box<dyn Future<Output = Result<Tables, StageError>> + Send + 'a>>;

/// The engine's object-safe view of a kind. Implemented for every [`Kind`].
pub trait DynKind: Send + Sync {
    /// See [`Kind::NAME`].
    fn name(&self) -> &'static str;
    /// See [`Kind::VERSION`].
    fn version(&self) -> &'static str;
    /// The names of the tables the kind writes, from [`Kind::OUTPUT_DEFS`].
    fn outputs(&self) -> Vec<&'static str> {
        self.output_defs().iter().map(|d| d.name).collect()
    }
    /// See [`Kind::OUTPUT_DEFS`].
    fn output_defs(&self) -> &'static [&'static TableDef];
    /// Checks a result of the kind against [`Kind::OUTPUT_DEFS`] before it is committed.
    fn check_output(&self, tables: &Tables) -> Result<(), OutputError> {
        let tables = tables.0.iter().map(|(name, df)| (name.as_str(), df));
        crate::schema::check_tables(self.name(), self.output_defs(), tables)
    }
    /// See [`Kind::INPUTS`].
    fn inputs(&self) -> &'static [InputDef];
    /// The definition of output table `table`, when the kind declares one.
    fn output_def(&self, table: &str) -> Option<&'static TableDef> {
        self.output_defs().iter().copied().find(|d| d.name == table)
    }
    /// See [`Kind::DETERMINISTIC`].
    fn deterministic(&self) -> bool;
    /// See [`Kind::SUMMARY`].
    fn summary(&self) -> &'static str;
    /// See [`Kind::EXECUTION`].
    fn execution(&self) -> Execution;
    /// Checks that `params` deserialize into the kind's parameter type and pass [`Kind::check`].
    fn check_params(&self, params: &Value) -> Result<(), ParamError>;
    /// See [`Kind::external_inputs`].
    fn external_inputs(&self, params: &Value) -> Vec<String>;
    /// See [`Kind::cached_output_is_valid`].
    fn cached_output_is_valid(&self, params: &Value, workdir: &Path) -> bool;
    /// See [`Kind::key_params`]; `params` unchanged when they do not fit the kind (the plan
    /// rejects those before any key is made).
    fn key_params(&self, params: &Value) -> Value;
    /// See [`Kind::ESTIMATES`].
    fn estimates(&self) -> bool {
        false
    }
    /// See [`Kind::estimate`].
    fn estimate(
        &self,
        params: &Value,
        ctx: &crate::estimate::EstimateContext<'_>,
    ) -> Result<Option<crate::estimate::Estimate>, StageError>;
    /// Deserializes `params` once and runs [`Kind::prepare`]: the result runs every item.
    fn prepare(
        self: Arc<Self>,
        params: &Value,
        ctx: &StageContext<'_>,
    ) -> Result<Arc<dyn PreparedKind>, StageError>;
    /// Prepares and runs once, blocking the calling thread (for tests and one-off calls; an
    /// async kind runs on a private runtime, so do not call this from inside one).
    fn run(&self, params: &Value, ctx: &StageContext<'_>) -> Result<Tables, StageError>;
    /// The code the kind is built from, part of its recipe key (see [`crate::code`]). Set when the
    /// kind is registered; empty for a kind used outside a [`Registry`].
    fn code(&self) -> Arc<CodeFingerprint> {
        Arc::default()
    }
}

/// An instance's kind with its typed parameters and prepared state: what runs the items.
pub trait PreparedKind: Send + Sync {
    /// See [`Kind::EXECUTION`].
    fn execution(&self) -> Execution;
    /// Runs [`Kind::run`] with the prepared state.
    fn run(&self, ctx: &StageContext<'_>) -> Result<Tables, StageError>;
    /// Runs [`Kind::run_async`] with the prepared state.
    fn run_async<'a>(&'a self, ctx: &'a StageContext<'a>) -> TablesFuture<'a>;
}

/// The typed [`PreparedKind`] of kind `K`.
struct Prepared<K: Kind> {
    kind: Arc<K>,
    params: K::Params,
    state: K::State,
}

impl<K: Kind> PreparedKind for Prepared<K> {
    fn execution(&self) -> Execution {
        K::EXECUTION
    }

    fn run(&self, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        self.kind.run(&self.params, &ctx.with_state(&self.state))
    }

    fn run_async<'a>(&'a self, ctx: &'a StageContext<'a>) -> TablesFuture<'a> {
        Box::pin(async move {
            let ctx = ctx.with_state(&self.state);
            self.kind.run_async(&self.params, &ctx).await
        })
    }
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
    fn output_defs(&self) -> &'static [&'static TableDef] {
        K::OUTPUT_DEFS
    }
    fn inputs(&self) -> &'static [InputDef] {
        K::INPUTS
    }
    fn deterministic(&self) -> bool {
        K::DETERMINISTIC
    }
    fn summary(&self) -> &'static str {
        K::SUMMARY
    }
    fn execution(&self) -> Execution {
        K::EXECUTION
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
    fn key_params(&self, params: &Value) -> Value {
        typed::<K::Params>(params)
            .map(|p| Kind::key_params(self, &p, params))
            .unwrap_or_else(|_| params.clone())
    }
    fn estimates(&self) -> bool {
        K::ESTIMATES
    }
    fn estimate(
        &self,
        params: &Value,
        ctx: &crate::estimate::EstimateContext<'_>,
    ) -> Result<Option<crate::estimate::Estimate>, StageError> {
        let params = typed::<K::Params>(params).map_err(|e| StageError::Input(e.message))?;
        Kind::estimate(self, &params, ctx)
    }
    fn prepare(
        self: Arc<Self>,
        params: &Value,
        ctx: &StageContext<'_>,
    ) -> Result<Arc<dyn PreparedKind>, StageError> {
        let params = typed::<K::Params>(params).map_err(|e| StageError::Input(e.message))?;
        let state = Kind::prepare(self.as_ref(), &params, ctx)?;
        Ok(Arc::new(Prepared {
            kind: self,
            params,
            state,
        }))
    }
    fn run(&self, params: &Value, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let p = typed::<K::Params>(params).map_err(|e| StageError::Input(e.message))?;
        let state = Kind::prepare(self, &p, ctx)?;
        let ctx = ctx.with_state(&state);
        match K::EXECUTION {
            Execution::Blocking => Kind::run(self, &p, &ctx),
            Execution::Async => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| StageError::Failed(format!("cannot start a runtime: {e}")))?
                .block_on(Kind::run_async(self, &p, &ctx)),
        }
    }
}

/// A registered kind with the code fingerprint of the crate that defines it: what plans hold.
struct Coded {
    kind: Arc<dyn DynKind>,
    code: Arc<CodeFingerprint>,
}

impl DynKind for Coded {
    fn name(&self) -> &'static str {
        self.kind.name()
    }
    fn version(&self) -> &'static str {
        self.kind.version()
    }
    fn output_defs(&self) -> &'static [&'static TableDef] {
        self.kind.output_defs()
    }
    fn inputs(&self) -> &'static [InputDef] {
        self.kind.inputs()
    }
    fn deterministic(&self) -> bool {
        self.kind.deterministic()
    }
    fn summary(&self) -> &'static str {
        self.kind.summary()
    }
    fn execution(&self) -> Execution {
        self.kind.execution()
    }
    fn check_params(&self, params: &Value) -> Result<(), ParamError> {
        self.kind.check_params(params)
    }
    fn external_inputs(&self, params: &Value) -> Vec<String> {
        self.kind.external_inputs(params)
    }
    fn cached_output_is_valid(&self, params: &Value, workdir: &Path) -> bool {
        self.kind.cached_output_is_valid(params, workdir)
    }
    fn key_params(&self, params: &Value) -> Value {
        self.kind.key_params(params)
    }
    fn estimates(&self) -> bool {
        self.kind.estimates()
    }
    fn estimate(
        &self,
        params: &Value,
        ctx: &crate::estimate::EstimateContext<'_>,
    ) -> Result<Option<crate::estimate::Estimate>, StageError> {
        self.kind.estimate(params, ctx)
    }
    fn prepare(
        self: Arc<Self>,
        params: &Value,
        ctx: &StageContext<'_>,
    ) -> Result<Arc<dyn PreparedKind>, StageError> {
        self.kind.clone().prepare(params, ctx)
    }
    fn run(&self, params: &Value, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        self.kind.run(params, ctx)
    }
    fn code(&self) -> Arc<CodeFingerprint> {
        self.code.clone()
    }
}

/// Stage kinds by name: the vocabulary a pipeline file may use.
#[derive(Clone)]
pub struct Registry {
    kinds: BTreeMap<&'static str, Arc<dyn DynKind>>,
    /// The crate whose kinds [`Registry::register`] is registering (see [`Registry::defined_in`]).
    defining: &'static CrateCode,
}

impl Default for Registry {
    fn default() -> Self {
        Self {
            kinds: BTreeMap::new(),
            defining: &crate::code::CODE,
        }
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Names the crate whose kinds the following [`Registry::register`] calls add: a crate that
    /// defines kinds calls this with its own [`CrateCode`] first, so their keys carry its code.
    /// Until then kinds count as the engine's.
    pub fn defined_in(&mut self, code: &'static CrateCode) -> &mut Self {
        self.defining = code;
        self
    }

    /// Adds a kind of the crate named by [`Registry::defined_in`]; a later registration under
    /// the same name replaces the earlier one.
    pub fn register<K: Kind>(&mut self, kind: K) {
        debug_assert!(
            defined_in(std::any::type_name::<K>(), self.defining.name),
            "kind `{}` ({}) is registered as code of `{}`: call `Registry::defined_in` with its \
             crate's `CODE` first",
            K::NAME,
            std::any::type_name::<K>(),
            self.defining.name
        );
        self.register_with_code(kind, self.defining.fingerprint());
    }

    /// Adds a kind with an explicit code fingerprint. [`Registry::register`] is the usual way;
    /// this one lets tests pretend the code changed.
    pub fn register_with_code<K: Kind>(&mut self, kind: K, code: CodeFingerprint) {
        let coded = Coded {
            kind: Arc::new(kind),
            code: Arc::new(code),
        };
        self.kinds.insert(K::NAME, Arc::new(coded));
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

/// Whether the type called `type_name` is defined in crate `crate_name` (`-` spelled `_`);
/// types of test crates and binaries count as anyone's.
fn defined_in(type_name: &str, crate_name: &str) -> bool {
    let first = type_name.split("::").next().unwrap_or_default();
    first == crate_name.replace('-', "_") || !first.starts_with("prefflow_")
}
