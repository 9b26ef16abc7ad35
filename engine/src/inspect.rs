//! Looking without running: `plan` (what would run and why), `why` (what changed since the last
//! successful run), `show` lookups and `gc`.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::artifact::{
    blob_path, blobs_present, item_path, load_manifest, load_table, recipe_path, KeyParts,
    Manifest, TableEntry,
};
use crate::error::{Error, Result};
use crate::exec::{item_key_parts, key_parts};
use crate::keys::item_groups;
use crate::plan::{Instance, Plan};
use crate::record::{
    load_last_run, load_latest, most_recent_pipeline, pipelines, InstanceRecord, RunRecord, Status,
};
use crate::store::{Store, TMP_SUFFIX};

/// Item counts a run would see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemPlan {
    /// Items in the main input.
    pub total: usize,
    /// Items already committed.
    pub cached: usize,
}

/// What a run would do with one instance.
#[derive(Debug, Clone, PartialEq)]
pub enum PlanStatus {
    /// The result is in the store. `changes` lists differences from the last successful run
    /// (non-empty when an older cached result is reused, e.g. after reverting a parameter).
    Hit {
        /// Field-level differences from the last run's recipe.
        changes: Vec<String>,
    },
    /// It must run, for these reasons.
    Miss {
        /// Field-level reasons (`params.seed: 7 → 8`, `never run`, …).
        reasons: Vec<String>,
        /// Item counts for per-item stages.
        items: Option<ItemPlan>,
    },
    /// Unknown until an upstream instance runs (it may cut off early).
    AfterUpstream {
        /// The upstream instance that runs first.
        upstream: String,
    },
    /// Not needed for `--only`.
    NotSelected,
}

/// One line of `prefflow plan`.
#[derive(Debug, Clone)]
pub struct PlanLine {
    /// `stage` or `stage[variant]`.
    pub label: String,
    /// Stage name.
    pub stage: String,
    /// The verdict.
    pub status: PlanStatus,
}

/// Computes, without running anything, what `run` would execute.
pub fn dry_run(
    plan: &Plan,
    store: &dyn Store,
    workdir: &Path,
    only: &[String],
) -> Result<Vec<PlanLine>> {
    let selected = plan.select(only)?;
    let previous = load_latest(store, &plan.name)?;
    let mut known: Vec<Option<Arc<InstanceRecord>>> = vec![None; plan.instances.len()];
    let mut lines = Vec::new();
    for inst in &plan.instances {
        let status = if !selected[inst.id] {
            PlanStatus::NotSelected
        } else if let Some(b) = inst.bindings.iter().find(|b| known[b.instance].is_none()) {
            PlanStatus::AfterUpstream {
                upstream: plan.instances[b.instance].label(),
            }
        } else {
            let upstream: Vec<Arc<InstanceRecord>> = inst
                .bindings
                .iter()
                .filter_map(|b| known[b.instance].clone())
                .collect();
            let parts = key_parts(inst, &upstream, workdir);
            match load_manifest(store, &recipe_path(&parts.key()))? {
                Some(m)
                    if blobs_present(store, &m)?
                        && inst.kind.cached_output_is_valid(&inst.params, workdir) =>
                {
                    known[inst.id] = Some(Arc::new(simulated(inst, &m)));
                    let changes = match previous_parts(store, previous.as_ref(), inst)? {
                        Some(old) => diff_parts(&old, &parts),
                        None => Vec::new(),
                    };
                    PlanStatus::Hit { changes }
                }
                _ => PlanStatus::Miss {
                    reasons: miss_reasons(store, previous.as_ref(), inst, &parts)?,
                    items: item_plan(store, inst, &parts, &upstream)?,
                },
            }
        };
        lines.push(PlanLine {
            label: inst.label(),
            stage: inst.stage.clone(),
            status,
        });
    }
    Ok(lines)
}

fn simulated(inst: &Instance, m: &Manifest) -> InstanceRecord {
    InstanceRecord::from_manifest(
        &inst.stage,
        inst.variant.name(),
        inst.kind.name(),
        Status::Cached,
        m,
    )
}

/// The key parts of the last successful run of this instance, if known.
fn previous_parts(
    store: &dyn Store,
    previous: Option<&RunRecord>,
    inst: &Instance,
) -> Result<Option<KeyParts>> {
    let Some(key) = previous
        .and_then(|p| p.instance(&inst.stage, &inst.variant.name()))
        .and_then(|r| r.recipe_key.clone())
    else {
        return Ok(None);
    };
    Ok(load_manifest(store, &recipe_path(&key))?.map(|m| m.key))
}

fn miss_reasons(
    store: &dyn Store,
    previous: Option<&RunRecord>,
    inst: &Instance,
    parts: &KeyParts,
) -> Result<Vec<String>> {
    Ok(match previous_parts(store, previous, inst)? {
        None => vec!["never run (no earlier result for this stage and variant)".into()],
        Some(old) if old == *parts => vec!["result missing from the store (removed by gc?)".into()],
        Some(old) => {
            let d = diff_parts(&old, parts);
            if d.is_empty() {
                vec!["key changed".into()]
            } else {
                d
            }
        }
    })
}

fn item_plan(
    store: &dyn Store,
    inst: &Instance,
    parts: &KeyParts,
    upstream: &[Arc<InstanceRecord>],
) -> Result<Option<ItemPlan>> {
    let (Some(column), Some(binding), Some(up)) =
        (&inst.per_item, inst.bindings.first(), upstream.first())
    else {
        return Ok(None);
    };
    let Some(entry) = binding.tables.first().and_then(|t| up.tables.get(t)) else {
        return Ok(None);
    };
    let df = load_table(store, &entry.blob)?;
    let label = format!("{}.{}", binding.stage, binding.tables[0]);
    let Ok(groups) = item_groups(&df, column) else {
        return Ok(None);
    };
    let mut cached = 0;
    for g in &groups {
        let p = item_key_parts(parts, &label, column, g);
        if store.exists(&item_path(&p.key()))? {
            cached += 1;
        }
    }
    Ok(Some(ItemPlan {
        total: groups.len(),
        cached,
    }))
}

/// Field-level differences between two recipes, phrased for humans.
pub fn diff_parts(old: &KeyParts, new: &KeyParts) -> Vec<String> {
    let mut out = Vec::new();
    if old.engine != new.engine {
        out.push(format!("engine version: {} → {}", old.engine, new.engine));
    }
    if old.kind != new.kind {
        out.push(format!("kind: {} → {}", old.kind, new.kind));
    } else if old.kind_version != new.kind_version {
        out.push(format!(
            "kind `{}` version: {} → {}",
            new.kind, old.kind_version, new.kind_version
        ));
    }
    diff_values("params", &old.params, &new.params, &mut out);
    diff_maps("input", "data", &old.inputs, &new.inputs, &mut out);
    diff_maps("file", "content", &old.external, &new.external, &mut out);
    out
}

fn diff_maps(
    what: &str,
    noun: &str,
    old: &BTreeMap<String, String>,
    new: &BTreeMap<String, String>,
    out: &mut Vec<String>,
) {
    for (k, v) in new {
        match old.get(k) {
            None => out.push(format!("{what} `{k}`: added")),
            Some(o) if o != v => out.push(format!(
                "{what} `{k}`: {noun} changed ({} → {})",
                short(o),
                short(v)
            )),
            _ => {}
        }
    }
    for k in old.keys().filter(|k| !new.contains_key(*k)) {
        out.push(format!("{what} `{k}`: removed"));
    }
}

fn short(s: &str) -> &str {
    &s[..10.min(s.len())]
}

fn diff_values(path: &str, old: &Value, new: &Value, out: &mut Vec<String>) {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                let p = format!("{path}.{k}");
                match a.get(k) {
                    Some(o) => diff_values(&p, o, v, out),
                    None => out.push(format!("{p}: added ({v})")),
                }
            }
            for k in a.keys().filter(|k| !b.contains_key(*k)) {
                out.push(format!("{path}.{k}: removed"));
            }
        }
        (a, b) if a != b => out.push(format!("{path}: {a} → {b}")),
        _ => {}
    }
}

/// `prefflow why STAGE`: for each variant of the stage, what differs from its last successful run.
pub fn why(plan: &Plan, store: &dyn Store, workdir: &Path, stage: &str) -> Result<Vec<String>> {
    if !plan.stages.iter().any(|s| s.name == stage) {
        return Err(Error::Usage(format!(
            "no stage `{stage}` in pipeline `{}`{}",
            plan.name,
            crate::plan::suggest(stage, plan.stages.iter().map(|s| s.name.as_str()))
        )));
    }
    let lines = dry_run(plan, store, workdir, &[])?;
    let mut out = Vec::new();
    for line in lines.iter().filter(|l| l.stage == stage) {
        explain(&lines, line, 0, &mut out);
    }
    Ok(out)
}

fn explain(lines: &[PlanLine], line: &PlanLine, depth: usize, out: &mut Vec<String>) {
    let pad = "  ".repeat(depth);
    match &line.status {
        PlanStatus::Hit { changes } if changes.is_empty() => out.push(format!(
            "{pad}{}: up to date: nothing changed since its last successful run",
            line.label
        )),
        PlanStatus::Hit { changes } => {
            out.push(format!(
                "{pad}{}: cached from an earlier run; differs from the last successful run in:",
                line.label
            ));
            out.extend(changes.iter().map(|r| format!("{pad}  - {r}")));
        }
        PlanStatus::NotSelected => {}
        PlanStatus::Miss { reasons, items } => {
            let items = items
                .as_ref()
                .map(|i| format!(" ({} of {} items to run)", i.total - i.cached, i.total))
                .unwrap_or_default();
            out.push(format!("{pad}{}: will run{items} because:", line.label));
            out.extend(reasons.iter().map(|r| format!("{pad}  - {r}")));
        }
        PlanStatus::AfterUpstream { upstream } => {
            out.push(format!(
                "{pad}{}: depends on `{upstream}`, which runs first:",
                line.label
            ));
            if let Some(up) = lines.iter().find(|l| &l.label == upstream) {
                explain(lines, up, depth + 1, out);
            }
        }
    }
}

/// Which run record `show` reads: the named pipeline, else the most recent one.
pub fn record_for_show(store: &dyn Store, pipeline: Option<&str>) -> Result<RunRecord> {
    let name = match pipeline {
        Some(p) => p.to_string(),
        None => most_recent_pipeline(store)?.ok_or_else(|| {
            Error::Usage(
                "this store has no runs yet; run a pipeline first (prefflow run pipelines/…)"
                    .into(),
            )
        })?,
    };
    load_latest(store, &name)?.ok_or_else(|| {
        let known = pipelines(store).unwrap_or_default().join(", ");
        Error::Usage(format!(
            "no successful run of pipeline `{name}` in this store (known: {known})"
        ))
    })
}

/// The tables `show STAGE[.table] [--variant V]` refers to; `STAGE.*` means every table.
pub fn find_tables(
    record: &RunRecord,
    target: &str,
    variant: Option<&str>,
) -> Result<Vec<(String, String, TableEntry)>> {
    let (stage, table) = match target.split_once('.') {
        Some((s, t)) if t != "*" => (s, Some(t)),
        Some((s, _)) => (s, None),
        None => (target, None),
    };
    let all: Vec<&InstanceRecord> = record
        .instances
        .iter()
        .filter(|i| i.stage == stage)
        .collect();
    if all.is_empty() {
        let stages: Vec<&str> = record
            .instances
            .iter()
            .map(|i| i.stage.as_str())
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        return Err(Error::Usage(format!(
            "no stage `{stage}` with results in pipeline `{}`{}",
            record.pipeline,
            crate::plan::suggest(stage, stages.into_iter())
        )));
    }
    let chosen: Vec<&InstanceRecord> = match variant {
        Some(v) => all.iter().copied().filter(|i| i.variant == v).collect(),
        None if all.len() == 1 => all.clone(),
        None => {
            let names: Vec<String> = all.iter().map(|i| i.variant.clone()).collect();
            return Err(Error::Usage(format!(
                "stage `{stage}` has {} variants; pick one with --variant:\n  {}",
                all.len(),
                names.join("\n  ")
            )));
        }
    };
    let Some(inst) = chosen.first() else {
        let names: Vec<String> = all.iter().map(|i| i.variant.clone()).collect();
        return Err(Error::Usage(format!(
            "stage `{stage}` has no variant `{}`; variants: {}",
            variant.unwrap_or_default(),
            names.join(", ")
        )));
    };
    let tables: Vec<(String, String, TableEntry)> = inst
        .tables
        .iter()
        .filter(|(name, _)| table.is_none_or(|t| t == name.as_str()))
        .map(|(name, e)| (inst.label(), name.clone(), e.clone()))
        .collect();
    if tables.is_empty() {
        let names: Vec<&String> = inst.tables.keys().collect();
        return Err(Error::Usage(format!(
            "stage `{stage}` has no table `{}`; its tables: {}",
            table.unwrap_or_default(),
            names
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(tables)
}

/// The errors table of the last run of a pipeline.
pub fn last_errors(store: &dyn Store, pipeline: Option<&str>) -> Result<RunRecord> {
    let name = match pipeline {
        Some(p) => p.to_string(),
        None => most_recent_pipeline(store)?
            .ok_or_else(|| Error::Usage("this store has no runs yet".into()))?,
    };
    load_last_run(store, &name)?
        .ok_or_else(|| Error::Usage(format!("no run of pipeline `{name}` in this store")))
}

/// What `gc` removed (or would remove).
#[derive(Debug, Default)]
pub struct GcReport {
    /// Store keys removed.
    pub removed: Vec<String>,
    /// Bytes freed.
    pub bytes: u64,
    /// Objects kept.
    pub kept: usize,
}

/// Removes every artifact not reachable from the latest and last run of each pipeline.
pub fn gc(store: &dyn Store, dry_run: bool) -> Result<GcReport> {
    let mut keep: HashSet<String> = HashSet::new();
    for name in pipelines(store)? {
        for record in [load_latest(store, &name)?, load_last_run(store, &name)?]
            .into_iter()
            .flatten()
        {
            if let Some(b) = &record.errors_blob {
                keep.insert(blob_path(b));
            }
            for inst in &record.instances {
                let manifests = inst
                    .recipe_key
                    .iter()
                    .map(|k| recipe_path(k))
                    .chain(inst.item_keys.iter().map(|k| item_path(k)));
                for key in manifests {
                    if let Some(m) = load_manifest(store, &key)? {
                        keep.extend(m.tables.values().map(|t| blob_path(&t.blob)));
                        keep.extend(m.item_keys.iter().map(|k| item_path(k)));
                        keep.insert(key);
                    }
                }
            }
        }
    }
    // Item manifests kept above may point at blobs too.
    let item_keys: Vec<String> = keep
        .iter()
        .filter(|k| k.starts_with("items/"))
        .cloned()
        .collect();
    for key in item_keys {
        if let Some(m) = load_manifest(store, &key)? {
            keep.extend(m.tables.values().map(|t| blob_path(&t.blob)));
        }
    }
    let mut report = GcReport::default();
    for prefix in ["recipes", "items", "blobs", "tmp"] {
        for key in store.list(prefix)? {
            if keep.contains(&key) || (key.ends_with(TMP_SUFFIX) && writer_is_alive(&key)) {
                report.kept += 1;
                continue;
            }
            report.bytes += store.size(&key)?;
            if !dry_run {
                store.delete(&key)?;
            }
            report.removed.push(key);
        }
    }
    Ok(report)
}

/// Temporary files are named `.<name>.<pid>-<n>.tmp`; one whose writer still runs is in flight.
fn writer_is_alive(key: &str) -> bool {
    let name = key.rsplit('/').next().unwrap_or_default();
    let pid = name
        .rsplit('.')
        .nth(1)
        .and_then(|p| p.split('-').next())
        .unwrap_or_default();
    !pid.is_empty()
        && pid.chars().all(|c| c.is_ascii_digit())
        && Path::new(&format!("/proc/{pid}")).exists()
}
