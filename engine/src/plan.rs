//! From a parsed pipeline file to a validated, fully resolved plan.
//!
//! Everything that can be checked without running anything is checked here, and every problem is
//! reported with its location: unknown kinds, bad references, cycles, bad sweeps, unresolved
//! `${params.*}`, and parameters that do not fit the kind's parameter type. The result is a list
//! of stage *instances* (a stage × a sweep variant) in dependency order, each with concrete JSON
//! parameters; execution never looks at YAML again.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;

use indexmap::IndexMap;
use petgraph::algo::{tarjan_scc, toposort};
use petgraph::graph::{DiGraph, NodeIndex};
use serde_json::Value;

use crate::config::{at, InputRef, PipelineFile, StageSpec};
use crate::error::{ConfigError, Error, Location, Result};
use crate::kind::{DynKind, Execution, Registry, ASYNC_CONCURRENCY};
use crate::params::{get_path, interpolate, set_path, Override};
use crate::schema::InputDef;
use crate::subset::ItemSubset;
use crate::sweep::{Sweep, Variant};
use crate::when::When;

/// A validated pipeline, ready to execute.
pub struct Plan {
    /// The pipeline's name.
    pub name: String,
    /// The file it came from, as given.
    pub file: std::path::PathBuf,
    /// Resource pools and their sizes.
    pub resources: IndexMap<String, u32>,
    /// Stage-level view, in dependency order (for `dag`).
    pub stages: Vec<StagePlan>,
    /// Stage × variant instances, in dependency order (shared with the tasks that run them).
    pub instances: Vec<Arc<Instance>>,
}

/// One stage as declared, for the stage-level graph.
#[derive(Debug, Clone)]
pub struct StagePlan {
    /// Stage name.
    pub name: String,
    /// Its kind.
    pub kind: String,
    /// Upstream stage names (deduplicated, in `inputs` order).
    pub upstream: Vec<String>,
    /// Sweep dimensions this stage declares itself.
    pub sweep_dims: Vec<String>,
    /// Per-item column, if any.
    pub per_item: Option<String>,
}

/// One runnable unit: a stage under one variant.
#[derive(Clone)]
pub struct Instance {
    /// Position in [`Plan::instances`].
    pub id: usize,
    /// Stage name.
    pub stage: String,
    /// The variant (empty when nothing upstream or here is swept).
    pub variant: Variant,
    /// The kind implementation.
    pub kind: Arc<dyn DynKind>,
    /// Fully resolved parameters.
    pub params: Value,
    /// Where each input comes from.
    pub bindings: Vec<Binding>,
    /// Per-item column, if any.
    pub per_item: Option<String>,
    /// Maximum items in flight for this instance.
    pub concurrency: usize,
    /// Retries for transient failures.
    pub retries: u32,
    /// First retry delay in milliseconds.
    pub backoff_ms: u64,
    /// Resource pools each running item holds a slot of.
    pub pools: Vec<String>,
    /// The stage's condition (`when:`), if any.
    pub when: Option<When>,
    /// Set on a variant a `--set` pin took out of the run, and on everything downstream of it
    /// (gathers excepted): the instance is used only when its result is complete in the store,
    /// else it is left out like a disabled one. The text says which `--set` pinned it.
    pub cached_only: Option<String>,
    /// Which of its items a per-item instance plays (`run --tasks/--sample/--limit`), when
    /// not all: part of the instance's key, never of its items' keys, so a subset shares
    /// every item with the full run.
    pub subset: Option<Arc<dyn ItemSubset>>,
}

impl Instance {
    /// `stage` or `stage[variant]`, for messages.
    pub fn label(&self) -> String {
        let v = self.variant.name();
        if v.is_empty() {
            self.stage.clone()
        } else {
            format!("{}[{v}]", self.stage)
        }
    }
}

/// An input of an instance: which upstream instance, and which of its tables.
#[derive(Debug, Clone)]
pub struct Binding {
    /// As written in `inputs`.
    pub reference: String,
    /// Upstream instance id.
    pub instance: usize,
    /// Upstream stage name.
    pub stage: String,
    /// The tables taken from it.
    pub tables: Vec<String>,
    /// Set on `gather` stages: the upstream variant's name, so each variant's tables have their
    /// own place in the cache key.
    pub gathered_variant: Option<String>,
}

struct Checked<'a> {
    name: &'a str,
    spec: &'a StageSpec,
    kind: Arc<dyn DynKind>,
    refs: Vec<(InputRef, Vec<String>)>,
    sweep: Sweep,
}

impl Plan {
    /// Validates `file` against `registry`, applies `overrides`, expands sweeps.
    pub fn build(file: &PipelineFile, registry: &Registry, overrides: &[Override]) -> Result<Plan> {
        let path = file.path.as_path();
        let spec = &file.spec;
        let mut errors = Vec::new();

        let (pipeline_params, stage_overrides) = apply_overrides(file, overrides)?;
        let mut checked = check_stages(file, registry, &mut errors);
        pin_overridden_dimensions(&mut checked, overrides, &stage_overrides);
        let order = match stage_order(file, &checked) {
            Ok(order) => order,
            Err(e) => {
                errors.push(e);
                Vec::new()
            }
        };
        check_dimension_clashes(path, &checked, &mut errors);
        if !errors.is_empty() {
            return Err(Error::Config(sorted(errors)));
        }

        let params = (&pipeline_params, &stage_overrides);
        let instances = expand_instances(path, &checked, &order, params, &mut errors);
        if !errors.is_empty() {
            return Err(Error::Config(sorted(dedup(errors))));
        }
        Ok(Plan {
            name: spec.pipeline.value.clone(),
            file: file.path.clone(),
            resources: spec
                .resources
                .iter()
                .map(|(k, v)| (k.clone(), v.value))
                .collect(),
            stages: stage_plans(&checked, &order),
            instances,
        })
    }

    /// Instances of `stage`.
    pub fn instances_of<'a>(&'a self, stage: &'a str) -> impl Iterator<Item = &'a Instance> + 'a {
        self.instances
            .iter()
            .map(|i| i.as_ref())
            .filter(move |i| i.stage == stage)
    }

    /// Attaches `subset` to every per-item instance `applies` picks (see [`crate::subset`]);
    /// returns the labels of those instances, so the caller can say which stages play a subset.
    pub fn with_subset(
        &mut self,
        subset: Arc<dyn ItemSubset>,
        applies: impl Fn(&Instance) -> bool,
    ) -> Vec<String> {
        let mut labels = Vec::new();
        for inst in &mut self.instances {
            if inst.per_item.is_some() && applies(inst) {
                Arc::make_mut(inst).subset = Some(subset.clone());
                labels.push(inst.label());
            }
        }
        labels
    }

    /// Which instances to run for `--only` (the named stages and everything they need); all when
    /// `only` is empty.
    pub fn select(&self, only: &[String]) -> Result<Vec<bool>> {
        if only.is_empty() {
            return Ok(vec![true; self.instances.len()]);
        }
        let mut wanted = vec![false; self.instances.len()];
        for name in only {
            if !self.stages.iter().any(|s| &s.name == name) {
                return Err(Error::Usage(format!(
                    "--only `{name}`: no such stage in pipeline `{}`{}",
                    self.name,
                    suggest(name, self.stages.iter().map(|s| s.name.as_str()))
                )));
            }
        }
        for inst in self.instances.iter().rev() {
            if only.contains(&inst.stage) {
                wanted[inst.id] = true;
            }
            if wanted[inst.id] {
                for b in &inst.bindings {
                    wanted[b.instance] = true;
                }
            }
        }
        Ok(wanted)
    }
}

/// Every instance of the stages in `order`: one per combination of the stage's sweep points
/// and its upstream instances, with its params resolved (errors collected in `errors`).
fn expand_instances(
    path: &Path,
    checked: &HashMap<&str, Checked<'_>>,
    order: &[&str],
    (pipeline_params, stage_overrides): (&IndexMap<String, Value>, &StageOverrides),
    errors: &mut Vec<ConfigError>,
) -> Vec<Arc<Instance>> {
    let dim_order: Vec<String> = order
        .iter()
        .flat_map(|s| checked[s].sweep.dims.clone())
        .collect();
    let mut instances: Vec<Arc<Instance>> = Vec::new();
    let mut by_stage: HashMap<&str, Vec<usize>> = HashMap::new();
    for stage in order {
        let c = &checked[stage];
        for (variant, upstream_ids, kept) in combinations(c, &by_stage, &instances, &dim_order) {
            let resolved = resolve_params(
                path,
                c,
                &variant,
                pipeline_params,
                stage_overrides.get(*stage),
            );
            let params = match resolved {
                Ok(p) => p,
                Err(e) => {
                    errors.push(e);
                    continue;
                }
            };
            let id = instances.len();
            let inst = Instance {
                id,
                stage: stage.to_string(),
                cached_only: cached_only(c, kept, &upstream_ids, &instances),
                bindings: bindings(c, &upstream_ids, &instances),
                ..instance_of(c, variant, params)
            };
            instances.push(Arc::new(inst));
            by_stage.entry(stage).or_default().push(id);
        }
    }
    instances
}

/// An instance of stage `c` (its id, stage name, bindings and pin filled in by the caller):
/// what its spec says about items, concurrency, retries, pools and `when:`.
fn instance_of(c: &Checked<'_>, variant: Variant, params: Value) -> Instance {
    Instance {
        id: 0,
        stage: String::new(),
        variant,
        kind: c.kind.clone(),
        params,
        bindings: Vec::new(),
        per_item: c.spec.per_item.as_ref().map(|p| p.value.clone()),
        concurrency: c
            .spec
            .concurrency
            .as_ref()
            .map(|c| c.value.max(1) as usize)
            .unwrap_or_else(|| default_concurrency(c.kind.execution())),
        retries: c.spec.retries.unwrap_or(0),
        backoff_ms: c.spec.retry_backoff_ms.unwrap_or(200),
        pools: c.spec.resources.iter().map(|r| r.value.clone()).collect(),
        when: c.spec.when.as_ref().map(|w| w.value.clone()),
        cached_only: None,
        subset: None,
    }
}

/// The stages in `order` as `dag` draws them.
fn stage_plans(checked: &HashMap<&str, Checked<'_>>, order: &[&str]) -> Vec<StagePlan> {
    order
        .iter()
        .map(|s| StagePlan {
            name: s.to_string(),
            kind: checked[s].kind.name().to_string(),
            upstream: dedup_names(checked[s].refs.iter().map(|(r, _)| r.stage.clone())),
            sweep_dims: checked[s].sweep.dims.clone(),
            per_item: checked[s].spec.per_item.as_ref().map(|p| p.value.clone()),
        })
        .collect()
}

/// Items in flight per instance when the stage sets no `concurrency`: one per core for
/// CPU-bound kinds; for async kinds, as many as resource pools allow.
fn default_concurrency(execution: Execution) -> usize {
    match execution {
        Execution::Blocking => std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2),
        Execution::Async => ASYNC_CONCURRENCY,
    }
}

type StageOverrides = HashMap<String, Vec<Override>>;

/// Splits `--set` overrides into pipeline params (applied now) and per-stage param overrides.
fn apply_overrides(
    file: &PipelineFile,
    overrides: &[Override],
) -> Result<(IndexMap<String, Value>, StageOverrides)> {
    let spec = &file.spec;
    let mut params: IndexMap<String, Value> = spec
        .params
        .iter()
        .map(|(k, v)| (k.clone(), v.value.clone()))
        .collect();
    let mut per_stage: StageOverrides = HashMap::new();
    for o in overrides {
        let first = o.path[0].as_str();
        let is_param = params.contains_key(first);
        let is_stage = spec.stages.contains_key(first);
        if first == "params" && o.path.len() > 1 {
            let name = &o.path[1];
            let Some(slot) = params.get_mut(name) else {
                return Err(unknown_override(o, file));
            };
            set_nested(slot, &o.path[2..], o.value.clone());
        } else if is_param && is_stage {
            return Err(Error::Usage(format!(
                "--set `{}`: `{first}` is both a pipeline param and a stage; write params.{} or {first}.params.…",
                o.raw,
                o.path.join(".")
            )));
        } else if is_param {
            if let Some(slot) = params.get_mut(first) {
                set_nested(slot, &o.path[1..], o.value.clone());
            }
        } else if is_stage && o.path.len() > 1 {
            let rest = if o.path[1] == "params" && o.path.len() > 2 {
                &o.path[2..]
            } else {
                &o.path[1..]
            };
            per_stage
                .entry(first.to_string())
                .or_default()
                .push(Override {
                    path: rest.to_vec(),
                    value: o.value.clone(),
                    raw: o.raw.clone(),
                });
        } else {
            return Err(unknown_override(o, file));
        }
    }
    Ok((params, per_stage))
}

/// `--set` on a swept parameter pins the sweep to that one value ("run just this variant").
/// The other points are kept as *cached-only* variants ([`Sweep::kept`]): they never run, and
/// a gathered stage still sees their results when they are complete in the store (else they
/// are left out, and `plan` and the run summary say so) — pinning one model of a comparison
/// keeps the other models' columns instead of dropping them (and `gc` keeps their results).
fn pin_overridden_dimensions(
    checked: &mut HashMap<&str, Checked>,
    overrides: &[Override],
    per_stage: &StageOverrides,
) {
    for (name, c) in checked.iter_mut() {
        for (i, dim) in c.sweep.dims.clone().iter().enumerate() {
            let pinned = if let Some(param) = dim.strip_prefix("params.") {
                overrides.iter().rev().find(|o| {
                    let p = o.path.join(".");
                    p == param || p == *dim
                })
            } else {
                per_stage
                    .get(*name)
                    .and_then(|os| os.iter().rev().find(|o| o.path.join(".") == *dim))
            };
            let Some(o) = pinned else {
                continue;
            };
            let mut unique: Vec<Variant> = Vec::new();
            let mut kept: Vec<Variant> = std::mem::take(&mut c.sweep.kept);
            for point in c.sweep.points.drain(..) {
                if point.0[i].1 != o.value && !kept.contains(&point) {
                    kept.push(point.clone());
                }
                let mut pinned = point;
                pinned.0[i].1 = o.value.clone();
                if !unique.contains(&pinned) {
                    unique.push(pinned);
                }
            }
            kept.retain(|k| !unique.contains(k));
            c.sweep.points = unique;
            c.sweep.kept = kept;
            c.sweep.pinned_by = Some(match &c.sweep.pinned_by {
                Some(before) => format!("{before} {}", o.raw),
                None => o.raw.clone(),
            });
        }
    }
}

fn set_nested(slot: &mut Value, path: &[String], value: Value) {
    if path.is_empty() {
        *slot = value;
    } else {
        set_path(slot, path, value);
    }
}

fn unknown_override(o: &Override, file: &PipelineFile) -> Error {
    let params: Vec<&str> = file.spec.params.keys().map(String::as_str).collect();
    let stages: Vec<&str> = file.spec.stages.keys().map(String::as_str).collect();
    Error::Usage(format!(
        "--set `{}`: `{}` is neither a pipeline param [{}] nor a stage [{}] of {}",
        o.raw,
        o.path[0],
        params.join(", "),
        stages.join(", "),
        file.path.display()
    ))
}

fn check_stages<'a>(
    file: &'a PipelineFile,
    registry: &Registry,
    errors: &mut Vec<ConfigError>,
) -> HashMap<&'a str, Checked<'a>> {
    let path = file.path.as_path();
    let spec = &file.spec;
    let mut checked = HashMap::new();
    let mut outputs_of: HashMap<&str, Vec<&'static str>> = HashMap::new();
    for (name, stage) in &spec.stages {
        if let Some(kind) = registry.get(&stage.value.kind.value) {
            outputs_of.insert(name.as_str(), kind.outputs());
        }
    }
    for (name, stage) in &spec.stages {
        let stage_spec = &stage.value;
        let Some(kind) = registry.get(&stage_spec.kind.value) else {
            errors.push(unknown_kind(path, name, stage_spec, registry));
            continue;
        };
        check_when(path, name, stage_spec, errors);
        let refs = check_inputs(path, name, stage_spec, spec, &outputs_of, errors);
        check_per_item(path, name, stage_spec, &refs, errors);
        let declared = Declared {
            path,
            name,
            stage: stage_spec,
            kind: kind.as_ref(),
            registry,
            spec,
        };
        declared.check(&refs, errors);
        check_pools(path, name, stage_spec, spec, errors);
        let sweep = match &stage_spec.sweep {
            Some(s) => Sweep::parse(path, s).unwrap_or_else(|e| {
                errors.push(e);
                Sweep::default()
            }),
            None => Sweep::default(),
        };
        checked.insert(
            name.as_str(),
            Checked {
                name,
                spec: stage_spec,
                kind,
                refs,
                sweep,
            },
        );
    }
    checked
}

/// A stage's kind that no registered kind is: the known ones, and the closest.
fn unknown_kind(path: &Path, name: &str, stage: &StageSpec, registry: &Registry) -> ConfigError {
    ConfigError::new(
        at(path, &stage.kind),
        format!("stage `{name}`: unknown kind `{}`", stage.kind.value),
        Some(format!(
            "known kinds: {}{}",
            registry.names().join(", "),
            suggest(&stage.kind.value, registry.names().into_iter())
        )),
    )
}

/// A stage's `when:` must be a condition.
fn check_when(path: &Path, name: &str, stage: &StageSpec, errors: &mut Vec<ConfigError>) {
    if let Some(when) = &stage.when {
        if let Some((message, hint)) = when.value.problem() {
            errors.push(ConfigError::new(
                at(path, when),
                format!("stage `{name}`: {message}"),
                Some(hint),
            ));
        }
    }
}

/// Every resource pool a stage uses is declared at the top level.
fn check_pools(
    path: &Path,
    name: &str,
    stage: &StageSpec,
    spec: &crate::config::PipelineSpec,
    errors: &mut Vec<ConfigError>,
) {
    for pool in &stage.resources {
        if !spec.resources.contains_key(&pool.value) {
            errors.push(ConfigError::new(
                at(path, pool),
                format!(
                    "stage `{name}` uses resource pool `{}`, which is not declared",
                    pool.value
                ),
                Some(format!(
                    "declare it at the top level: resources: {{ {}: 4 }}",
                    pool.value
                )),
            ));
        }
    }
}

fn check_inputs(
    path: &Path,
    name: &str,
    stage: &StageSpec,
    spec: &crate::config::PipelineSpec,
    outputs_of: &HashMap<&str, Vec<&'static str>>,
    errors: &mut Vec<ConfigError>,
) -> Vec<(InputRef, Vec<String>)> {
    let mut refs = Vec::new();
    for input in &stage.inputs {
        let Some(r) = InputRef::parse(&input.value) else {
            errors.push(ConfigError::new(
                at(path, input),
                format!("stage `{name}`: bad input reference `{}`", input.value),
                Some("write `stage` or `stage.table`".into()),
            ));
            continue;
        };
        if !spec.stages.contains_key(&r.stage) {
            errors.push(ConfigError::new(
                at(path, input),
                format!("stage `{name}`: input `{}` names no stage", input.value),
                Some(format!(
                    "stages are: {}{}",
                    spec.stages.keys().cloned().collect::<Vec<_>>().join(", "),
                    suggest(&r.stage, spec.stages.keys().map(String::as_str))
                )),
            ));
            continue;
        }
        let Some(outputs) = outputs_of.get(r.stage.as_str()) else {
            continue;
        };
        let tables = match &r.table {
            Some(t) if outputs.contains(&t.as_str()) => vec![t.clone()],
            Some(t) => {
                errors.push(ConfigError::new(
                    at(path, input),
                    format!("stage `{name}`: stage `{}` has no table `{t}`", r.stage),
                    Some(format!("its tables are: {}", outputs.join(", "))),
                ));
                continue;
            }
            None => outputs.iter().map(|s| s.to_string()).collect(),
        };
        refs.push((r, tables));
    }
    refs
}

/// A stage, with what it needs to check the tables its kind declares it reads
/// ([`crate::Kind::INPUTS`]) against its `inputs`.
struct Declared<'a> {
    path: &'a Path,
    name: &'a str,
    stage: &'a StageSpec,
    kind: &'a dyn DynKind,
    registry: &'a Registry,
    spec: &'a crate::config::PipelineSpec,
}

impl Declared<'_> {
    /// A required table must be bound, and every column the kind reads must be one the upstream
    /// kind declares it writes, with the same type.
    fn check(&self, refs: &[(InputRef, Vec<String>)], errors: &mut Vec<ConfigError>) {
        for input in self.kind.inputs() {
            match find_input(refs, input.table) {
                Some((r, table)) => self.check_columns(input, r, &table, errors),
                None if input.required => errors.push(self.missing(input.table, refs)),
                None => {}
            }
        }
    }

    fn missing(&self, table: &str, refs: &[(InputRef, Vec<String>)]) -> ConfigError {
        let bound: Vec<String> = refs
            .iter()
            .flat_map(|(r, tables)| tables.iter().map(move |t| format!("{}.{t}", r.stage)))
            .collect();
        let place = self
            .stage
            .inputs
            .first()
            .map_or_else(|| at(self.path, &self.stage.kind), |i| at(self.path, i));
        let bound = if bound.is_empty() {
            "none".to_string()
        } else {
            bound.join(", ")
        };
        ConfigError::new(
            place,
            format!(
                "stage `{}`: kind `{}` reads table `{table}`, which none of its inputs provides (inputs: {bound})",
                self.name,
                self.kind.name(),
            ),
            Some(format!(
                "add the stage that writes `{table}` to `inputs`, e.g. `inputs: [<stage>.{table}, …]` (see `prefflow tables`)"
            )),
        )
    }

    fn check_columns(
        &self,
        input: &InputDef,
        r: &InputRef,
        table: &str,
        errors: &mut Vec<ConfigError>,
    ) {
        let producer = self
            .spec
            .stages
            .get(&r.stage)
            .and_then(|s| self.registry.get(&s.value.kind.value));
        let Some(producer) = producer else {
            return;
        };
        let Some(written) = producer.output_def(table).filter(|d| !d.open) else {
            return;
        };
        let place = self
            .stage
            .inputs
            .iter()
            .find(|i| InputRef::parse(&i.value).as_ref() == Some(r))
            .map_or_else(|| at(self.path, &self.stage.kind), |i| at(self.path, i));
        for column in input.columns {
            let wanted = input.def.and_then(|d| d.column(column));
            let problem = match (written.column(column), wanted) {
                (None, _) => format!("does not write column `{column}`"),
                (Some(w), Some(c)) if w.dtype != c.dtype => format!(
                    "writes column `{column}` as {}, but `{}` reads it as {}",
                    w.dtype.name(),
                    self.kind.name(),
                    c.dtype.name()
                ),
                _ => continue,
            };
            errors.push(ConfigError::new(
                place.clone(),
                format!(
                    "stage `{}`: kind `{}` reads `{}.{table}`, but stage `{}` (kind `{}`) {problem}",
                    self.name,
                    self.kind.name(),
                    r.stage,
                    r.stage,
                    producer.name(),
                ),
                Some("bind a stage that writes it (see `prefflow tables`), or fix `inputs`".into()),
            ));
        }
    }
}

/// The bound table a kind's `ctx.input(table)` would find: by table name, or an upstream stage
/// of that name with one table.
fn find_input<'r>(
    refs: &'r [(InputRef, Vec<String>)],
    table: &str,
) -> Option<(&'r InputRef, String)> {
    refs.iter().find_map(|(r, tables)| {
        if tables.iter().any(|t| t == table) {
            Some((r, table.to_string()))
        } else if r.stage == table && tables.len() == 1 {
            tables.first().map(|t| (r, t.clone()))
        } else {
            None
        }
    })
}

fn check_per_item(
    path: &Path,
    name: &str,
    stage: &StageSpec,
    refs: &[(InputRef, Vec<String>)],
    errors: &mut Vec<ConfigError>,
) {
    let Some(column) = &stage.per_item else {
        return;
    };
    match refs.first() {
        None if stage.inputs.is_empty() => errors.push(ConfigError::new(
            at(path, column),
            format!("stage `{name}`: per_item needs an input to map over"),
            Some("list the table whose rows are the items first in `inputs`".into()),
        )),
        Some((r, tables)) if tables.len() != 1 => errors.push(ConfigError::new(
            at(path, column),
            format!(
                "stage `{name}`: per_item maps over the first input, but `{}` has {} tables",
                r.stage,
                tables.len()
            ),
            Some(format!(
                "name one table, e.g. `{}.{}`",
                r.stage,
                tables.first().cloned().unwrap_or_default()
            )),
        )),
        _ => {}
    }
}

fn stage_order<'a>(
    file: &'a PipelineFile,
    checked: &HashMap<&'a str, Checked<'a>>,
) -> Result<Vec<&'a str>, ConfigError> {
    let mut graph: DiGraph<&str, ()> = DiGraph::new();
    let mut nodes: HashMap<&str, NodeIndex> = HashMap::new();
    for name in file.spec.stages.keys() {
        nodes.insert(name.as_str(), graph.add_node(name.as_str()));
    }
    // Edges in the file's order: the topological order depends on it, and `checked` (a hash
    // map) would give a different one in every process.
    for (name, c) in file
        .spec
        .stages
        .keys()
        .filter_map(|name| checked.get_key_value(name.as_str()))
    {
        for (r, _) in &c.refs {
            if let Some(&from) = nodes.get(r.stage.as_str()) {
                graph.update_edge(from, nodes[name], ());
            }
        }
    }
    match toposort(&graph, None) {
        Ok(order) => Ok(order
            .into_iter()
            .map(|n| graph[n])
            .filter(|n| checked.contains_key(n))
            .collect()),
        Err(cycle) => {
            let start = graph[cycle.node_id()];
            let members: Vec<&str> = tarjan_scc(&graph)
                .into_iter()
                .find(|scc| {
                    scc.iter().any(|n| graph[*n] == start)
                        && (scc.len() > 1 || graph.contains_edge(scc[0], scc[0]))
                })
                .map(|scc| scc.into_iter().map(|n| graph[n]).collect())
                .unwrap_or_else(|| vec![start]);
            let mut members = members;
            members.sort_by_key(|m| file.spec.stages.get_index_of(*m));
            let first = members[0];
            let loc = file.spec.stages[first]
                .value
                .inputs
                .first()
                .map(|i| at(&file.path, i))
                .unwrap_or_else(|| at(&file.path, &file.spec.stages[first]));
            Err(ConfigError::new(
                loc,
                format!("dependency cycle between stages: {}", members.join(" → ")),
                Some("a stage cannot depend on its own output; remove one of these inputs".into()),
            ))
        }
    }
}

fn check_dimension_clashes(
    path: &Path,
    checked: &HashMap<&str, Checked>,
    errors: &mut Vec<ConfigError>,
) {
    let mut owner: HashMap<&str, &str> = HashMap::new();
    let mut names: Vec<&&str> = checked.keys().collect();
    names.sort();
    for name in names {
        let c = &checked[*name];
        for dim in &c.sweep.dims {
            if let Some(other) = owner.insert(dim, c.name) {
                let loc = c
                    .spec
                    .sweep
                    .as_ref()
                    .map(|s| at(path, s))
                    .unwrap_or_else(|| Location::file(path));
                errors.push(ConfigError::new(
                    loc,
                    format!(
                        "sweep dimension `{dim}` is declared by both `{other}` and `{}`",
                        c.name
                    ),
                    Some("variant names must be unambiguous; sweep it in one stage only".into()),
                ));
            }
        }
    }
}

/// One combination a stage runs under: its variant, its upstream instances as (input index,
/// instance), and whether the variant is one a `--set` pin keeps only when cached.
type Combination = (Variant, Vec<(usize, usize)>, bool);

/// Every combination this stage runs under.
fn combinations(
    c: &Checked,
    by_stage: &HashMap<&str, Vec<usize>>,
    instances: &[Arc<Instance>],
    order: &[String],
) -> Vec<Combination> {
    let mut combos: Vec<(Variant, Vec<(usize, usize)>)> = vec![(Variant::default(), Vec::new())];
    for (i, (r, _)) in c.refs.iter().enumerate() {
        let upstream = by_stage.get(r.stage.as_str()).cloned().unwrap_or_default();
        if c.spec.gather {
            // One combination holding every upstream variant of this input.
            for (_, ids) in &mut combos {
                ids.extend(upstream.iter().map(|&u| (i, u)));
            }
            continue;
        }
        combos = combos
            .iter()
            .flat_map(|(variant, ids)| {
                upstream.iter().filter_map(move |&u| {
                    let up = &instances[u].variant;
                    variant.compatible(up).then(|| {
                        let mut ids = ids.clone();
                        ids.push((i, u));
                        (variant.merge(up, order), ids)
                    })
                })
            })
            .collect();
    }
    if c.sweep.points.is_empty() {
        return combos.into_iter().map(|(v, ids)| (v, ids, false)).collect();
    }
    let points =
        (c.sweep.points.iter().map(|p| (p, false))).chain(c.sweep.kept.iter().map(|p| (p, true)));
    let points: Vec<(&Variant, bool)> = points.collect();
    combos
        .iter()
        .flat_map(|(variant, ids)| {
            points
                .iter()
                .map(move |(p, kept)| (variant.merge(p, order), ids.clone(), *kept))
        })
        .collect()
}

/// Why an instance is cached-only: its own sweep point was pinned away by `--set`, or (for a
/// stage that does not gather) an upstream instance it reads is cached-only.
fn cached_only(
    c: &Checked,
    kept: bool,
    upstream_ids: &[(usize, usize)],
    instances: &[Arc<Instance>],
) -> Option<String> {
    if kept {
        let by = c.sweep.pinned_by.clone().unwrap_or_default();
        return Some(format!("`--set {by}` pins the sweep of `{}`", c.name));
    }
    if c.spec.gather {
        return None;
    }
    upstream_ids
        .iter()
        .find_map(|&(_, u)| instances[u].cached_only.clone())
}

fn bindings(
    c: &Checked,
    upstream_ids: &[(usize, usize)],
    instances: &[Arc<Instance>],
) -> Vec<Binding> {
    upstream_ids
        .iter()
        .map(|&(i, instance)| {
            let (r, tables) = &c.refs[i];
            Binding {
                reference: match &r.table {
                    Some(t) => format!("{}.{t}", r.stage),
                    None => r.stage.clone(),
                },
                instance,
                stage: r.stage.clone(),
                tables: tables.clone(),
                gathered_variant: c.spec.gather.then(|| instances[instance].variant.name()),
            }
        })
        .collect()
}

fn resolve_params(
    path: &Path,
    c: &Checked,
    variant: &Variant,
    pipeline_params: &IndexMap<String, Value>,
    overrides: Option<&Vec<Override>>,
) -> Result<Value, ConfigError> {
    let spec = c.spec;
    let mut params = Value::Object(
        spec.params
            .iter()
            .map(|(k, v)| (k.clone(), v.value.clone()))
            .collect(),
    );
    for o in overrides.into_iter().flatten() {
        set_path(&mut params, &o.path, o.value.clone());
    }
    // A dimension `params.NAME` sweeps a pipeline param as this stage (and its dependents) see
    // it; any other dimension is a path into the stage's own params.
    let mut pipeline_params = pipeline_params.clone();
    for (dim, v) in &variant.0 {
        if let Some(name) = dim.strip_prefix("params.") {
            let path: Vec<String> = name.split('.').map(str::to_string).collect();
            let mut root = Value::Object(pipeline_params.clone().into_iter().collect());
            set_path(&mut root, &path, v.clone());
            if let Value::Object(map) = root {
                pipeline_params = map.into_iter().collect();
            }
        } else if c.sweep.dims.contains(dim) {
            let dotted: Vec<String> = dim.split('.').map(str::to_string).collect();
            set_path(&mut params, &dotted, v.clone());
        }
    }
    let lookup = |name: &str| {
        let mut parts = name.split('.');
        let first = parts.next()?;
        let rest: Vec<String> = parts.map(str::to_string).collect();
        get_path(pipeline_params.get(first)?, &rest).cloned()
    };
    let params = interpolate(&params, &lookup).map_err(|missing| {
        let loc = locate_param(path, spec, &missing);
        ConfigError::new(
            loc,
            format!(
                "stage `{}`: `${{params.{missing}}}` is not a pipeline param",
                c.name
            ),
            Some(format!(
                "declare it under top-level `params:` (declared: {})",
                pipeline_params
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        )
    })?;
    c.kind.check_params(&params).map_err(|err| {
        let field = err.field.clone().unwrap_or_default();
        ConfigError::new(
            locate_param(path, spec, &field),
            format!(
                "stage `{}` (kind `{}`): parameter {}",
                c.name,
                c.kind.name(),
                err.message
            ),
            Some(
                crate::input::unknown_field_fix(&err.message).unwrap_or_else(|| {
                    format!("see `prefflow kinds` for `{}`'s parameters", c.kind.name())
                }),
            ),
        )
    })?;
    Ok(params)
}

/// Best location for a parameter problem: the parameter itself, else the stage's `kind:` line.
fn locate_param(path: &Path, spec: &StageSpec, field: &str) -> Location {
    let top = field.split('.').next().unwrap_or_default();
    if let Some(v) = spec.params.get(top) {
        return at(path, v);
    }
    // A `${params.x}` reference: find the param that mentions it.
    if let Some((_, v)) = spec
        .params
        .iter()
        .find(|(_, v)| v.value.to_string().contains(&format!("params.{field}")))
    {
        return at(path, v);
    }
    at(path, &spec.kind)
}

/// " (did you mean `x`?)" when a close name exists.
pub fn suggest<'a>(wrong: &str, candidates: impl Iterator<Item = &'a str>) -> String {
    crate::input::closest(wrong, candidates)
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default()
}

fn sorted(mut errors: Vec<ConfigError>) -> Vec<ConfigError> {
    errors.sort_by_key(|e| (e.location.line, e.location.column));
    errors
}

fn dedup(errors: Vec<ConfigError>) -> Vec<ConfigError> {
    let mut seen = BTreeSet::new();
    errors
        .into_iter()
        .filter(|e| seen.insert(e.to_string()))
        .collect()
}

fn dedup_names(names: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pipeline whose stages all read one table: any order of the fan-out is a valid
    /// topological order, so only a deterministic walk gives the same one every time.
    fn fan_out() -> PipelineFile {
        let mut yaml = String::from(
            "pipeline: fan\nstages:\n  src:\n    kind: read_table\n    params: { path: rows.csv }\n",
        );
        for i in 0..12 {
            yaml.push_str(&format!("  s{i}:\n    kind: probe\n    inputs: [src]\n"));
        }
        PipelineFile::parse(Path::new("fan.yaml"), &yaml).expect("pipeline")
    }

    /// `dag`, `plan` and `run` list stages and instances in the plan's order: the same file
    /// must give the same order in every process, not one that depends on hash seeds.
    #[test]
    fn the_stage_order_is_the_same_every_time() {
        let file = fan_out();
        let registry = Registry::with_generic_kinds();
        let order = |_| {
            let plan = Plan::build(&file, &registry, &[]).expect("plan");
            plan.stages
                .iter()
                .map(|s| s.name.clone())
                .collect::<Vec<_>>()
        };
        let first = order(0);
        assert_eq!(first.len(), 13);
        for n in 1..20 {
            assert_eq!(order(n), first, "build {n} ordered the stages differently");
        }
    }
}
