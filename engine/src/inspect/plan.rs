//! `prefflow plan`: what `run` would execute, and why, without running anything.
//!
//! Every verdict comes from [`crate::decision`], the same step `run` takes.

use std::path::Path;
use std::sync::Arc;

use crate::artifact::load_table;
use crate::decision::{decide, decide_items, disabled, Decision, ItemsError, Verdict};
use crate::error::{Error, Result};
use crate::estimate::{Estimate, EstimateContext};
use crate::plan::{Instance, Plan};
use crate::record::{load_latest, InstanceRecord, Status};
use crate::store::Store;

/// Item counts a run would see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemPlan {
    /// Items in the main input.
    pub total: usize,
    /// Items already committed with all their tables.
    pub cached: usize,
    /// Items whose manifest survives but whose tables are gone: they run again.
    pub incomplete: usize,
    /// With an item subset: the items of the main input it was taken from (`total` of them
    /// are played), and the subset as the user asked for it.
    pub subset_of: Option<(usize, String)>,
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
    /// Will not run: its `when:` condition (or an upstream instance's) does not hold.
    Disabled {
        /// Why, e.g. `when: env PREFFLOW_LLM_BASE_URL is not set`.
        reason: String,
    },
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
    /// Why the instance runs only if cached (a `--set` pinned its sweep point away), if so.
    pub cached_only: Option<String>,
    /// What running it would ask of external models, for kinds that say
    /// ([`crate::Kind::estimate`]); `Err` says why no estimate could be made.
    pub estimate: Option<std::result::Result<Estimate, String>>,
}

/// Computes, without running anything, what `run` would execute, and — for kinds that call
/// models — what it would cost ([`PlanLine::estimate`]).
pub fn dry_run(
    plan: &Plan,
    store: &dyn Store,
    workdir: &Path,
    only: &[String],
) -> Result<Vec<PlanLine>> {
    let selected = plan.select(only)?;
    let previous = load_latest(store, &plan.name)?;
    let mut known: Vec<Option<Arc<InstanceRecord>>> = vec![None; plan.instances.len()];
    let mut estimates: Vec<Option<Estimate>> = vec![None; plan.instances.len()];
    let mut lines = Vec::new();
    for inst in &plan.instances {
        let upstream_known: Vec<Option<&InstanceRecord>> = inst
            .bindings
            .iter()
            .map(|b| known[b.instance].as_deref())
            .collect();
        let mut items_to_run: Option<Vec<String>> = None;
        let status = if !selected[inst.id] {
            PlanStatus::NotSelected
        } else if let Some(reason) = disabled(inst, &upstream_known) {
            let off = InstanceRecord::empty(
                &inst.stage,
                inst.variant.name(),
                inst.kind.name(),
                Status::Disabled,
            );
            known[inst.id] = Some(Arc::new(off));
            PlanStatus::Disabled { reason }
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
            let decision = decide(store, workdir, inst, &upstream, previous.as_ref())?;
            let (variant, kind) = (inst.variant.name(), inst.kind.name());
            match &decision.verdict {
                Verdict::Hit(m) => {
                    known[inst.id] = Some(Arc::new(InstanceRecord::from_manifest(
                        &inst.stage,
                        variant,
                        kind,
                        Status::Cached,
                        m,
                    )));
                    PlanStatus::Hit {
                        changes: decision.reasons,
                    }
                }
                Verdict::Disabled(reason) => {
                    let off = InstanceRecord::empty(&inst.stage, variant, kind, Status::Disabled);
                    known[inst.id] = Some(Arc::new(off));
                    PlanStatus::Disabled {
                        reason: reason.clone(),
                    }
                }
                Verdict::Miss => {
                    let items = item_plan(store, inst, &decision, &upstream)?;
                    let items = items.map(|(counts, to_run)| {
                        items_to_run = Some(to_run);
                        counts
                    });
                    PlanStatus::Miss {
                        items,
                        reasons: decision.reasons,
                    }
                }
            }
        };
        let runs = matches!(
            status,
            PlanStatus::Miss { .. } | PlanStatus::AfterUpstream { .. }
        );
        let estimate = (runs && inst.kind.estimates()).then(|| {
            let mut ids: Vec<usize> = inst.bindings.iter().map(|b| b.instance).collect();
            ids.sort_unstable();
            ids.dedup();
            let upstream: Vec<Estimate> =
                ids.iter().filter_map(|&i| estimates[i].clone()).collect();
            estimate(
                store,
                workdir,
                inst,
                &known,
                items_to_run.as_deref(),
                &status,
                &upstream,
            )
        });
        if let Some(Ok(e)) = &estimate {
            estimates[inst.id] = Some(e.clone());
        }
        lines.push(PlanLine {
            label: inst.label(),
            stage: inst.stage.clone(),
            status,
            cached_only: inst.cached_only.clone(),
            estimate,
        });
    }
    Ok(lines)
}

/// The kind's estimate of `inst`, from the inputs whose upstream results are known, the items
/// to run (when known) and the estimates of upstream instances that run first.
fn estimate(
    store: &dyn Store,
    workdir: &Path,
    inst: &Instance,
    known: &[Option<Arc<InstanceRecord>>],
    items: Option<&[String]>,
    status: &PlanStatus,
    upstream: &[Estimate],
) -> std::result::Result<Estimate, String> {
    let mut blobs = Vec::new();
    for b in &inst.bindings {
        let Some(up) = known[b.instance].as_ref() else {
            continue;
        };
        for t in &b.tables {
            if let Some(entry) = up.tables.get(t) {
                blobs.push(crate::exec::InputBlob {
                    stage: b.stage.clone(),
                    table: t.clone(),
                    blob: entry.blob.clone(),
                });
            }
        }
    }
    let inputs = crate::exec::load_inputs(store, blobs).map_err(|e| e.to_string())?;
    let cached_items = match status {
        PlanStatus::Miss { items: Some(i), .. } => i.cached,
        _ => 0,
    };
    let variant = inst.variant.name();
    let ctx = EstimateContext {
        stage: &inst.stage,
        variant: &variant,
        workdir,
        cache: store,
        inputs: &inputs,
        items,
        cached_items,
        upstream,
    };
    match inst.kind.estimate(&inst.params, &ctx) {
        Ok(Some(e)) => Ok(e),
        Ok(None) => Ok(Estimate::default()),
        Err(e) => Err(e.to_string()),
    }
}

/// The item counts of a per-item instance that must run (its main input is known), and the
/// values of the items that would run.
fn item_plan(
    store: &dyn Store,
    inst: &Instance,
    decision: &Decision,
    upstream: &[Arc<InstanceRecord>],
) -> Result<Option<(ItemPlan, Vec<String>)>> {
    let (Some(_), Some(binding), Some(up)) =
        (&inst.per_item, inst.bindings.first(), upstream.first())
    else {
        return Ok(None);
    };
    let Some(entry) = binding.tables.first().and_then(|t| up.tables.get(t)) else {
        return Ok(None);
    };
    let df = load_table(store, &entry.blob)?;
    let label = format!("{}.{}", binding.stage, binding.tables[0]);
    let items = match decide_items(store, inst, &decision.parts, &label, &df) {
        Ok(items) => items,
        Err(ItemsError::Subset(why)) => return Err(Error::Usage(why)),
        Err(ItemsError::MissingColumn(_)) => return Ok(None),
        Err(ItemsError::Store(e)) => return Err(e),
    };
    let to_run: Vec<String> = items
        .items
        .iter()
        .filter(|i| i.hit.is_none())
        .map(|i| i.group.value.clone())
        .collect();
    Ok(Some((
        ItemPlan {
            total: items.items.len(),
            cached: items.cached(),
            incomplete: items.incomplete(),
            subset_of: inst.subset.as_ref().map(|s| {
                let all =
                    crate::keys::item_groups(&df, inst.per_item.as_deref().unwrap_or_default())
                        .map_or(0, |g| g.len());
                (all, s.describe())
            }),
        },
        to_run,
    )))
}
