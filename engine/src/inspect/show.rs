//! `prefflow show`: which run record and which of its tables a target names, the last run's
//! errors, and what the runs' model calls cost (`show runs`).

use std::collections::HashSet;

use crate::artifact::{load_manifest, recipe_path, TableEntry};
use crate::error::{Error, Result};
use crate::record::{
    load_last_run, load_latest, most_recent_pipeline, pipelines, InstanceRecord, RunRecord,
};
use crate::store::Store;
use crate::usage::{Usage, UsageCounts};

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

/// One row of `prefflow show runs`: what a pipeline's model calls cost, for one role and model.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageRow {
    /// The pipeline.
    pub pipeline: String,
    /// The run the row describes (`run_id` of its record).
    pub run_id: String,
    /// `spent`: what the pipeline's last run paid (cached results cost nothing);
    /// `results`: what its latest successful results cost when they were computed, i.e. what
    /// the published numbers cost.
    pub scope: &'static str,
    /// The caller's role (`agent`, `user`, `judge`, `completion`, …).
    pub role: String,
    /// The model.
    pub model: String,
    /// The counts.
    pub counts: UsageCounts,
}

/// The usage of every pipeline in the store (or of `pipeline`), summed by model and role over
/// its instances: what its last run spent and what its latest results cost. Pipelines whose
/// kinds call no models have no rows.
pub fn run_usage(store: &dyn Store, pipeline: Option<&str>) -> Result<Vec<UsageRow>> {
    let names = match pipeline {
        Some(p) => vec![p.to_string()],
        None => pipelines(store)?,
    };
    let mut rows = Vec::new();
    for name in names {
        if let Some(last) = load_last_run(store, &name)? {
            let mut spent = Usage::default();
            for inst in &last.instances {
                spent.merge(&inst.usage);
            }
            push_rows(&mut rows, &last, "spent", &spent);
        } else if pipeline.is_some() {
            return Err(Error::Usage(format!(
                "no run of pipeline `{name}` in this store"
            )));
        }
        if let Some(latest) = load_latest(store, &name)? {
            let mut cost = Usage::default();
            for inst in latest.instances.iter().filter(|i| i.status.succeeded()) {
                let Some(key) = &inst.recipe_key else {
                    continue;
                };
                if let Some(m) = load_manifest(store, &recipe_path(key))? {
                    cost.merge(&m.usage);
                }
            }
            push_rows(&mut rows, &latest, "results", &cost);
        }
    }
    Ok(rows)
}

/// The rows of one scope grouped by model (each model's roles together), so comparing models
/// reads down one block each.
fn push_rows(rows: &mut Vec<UsageRow>, record: &RunRecord, scope: &'static str, usage: &Usage) {
    let mut by_model: std::collections::BTreeMap<&str, Vec<(&str, &UsageCounts)>> =
        Default::default();
    for (role, models) in &usage.0 {
        for (model, counts) in models.iter().filter(|(_, c)| !c.is_empty()) {
            by_model.entry(model).or_default().push((role, counts));
        }
    }
    for (model, roles) in by_model {
        for (role, counts) in roles {
            rows.push(UsageRow {
                pipeline: record.pipeline.clone(),
                run_id: record.run_id.clone(),
                scope,
                role: role.to_string(),
                model: model.to_string(),
                counts: *counts,
            });
        }
    }
}
