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
    let mut walk = DryRun {
        store,
        workdir,
        previous: load_latest(store, &plan.name)?,
        known: vec![None; plan.instances.len()],
        estimates: vec![None; plan.instances.len()],
    };
    let mut lines = Vec::new();
    for inst in &plan.instances {
        let (status, items_to_run) = match selected[inst.id] {
            false => (PlanStatus::NotSelected, None),
            true => walk.status(plan, inst)?,
        };
        let runs = matches!(
            status,
            PlanStatus::Miss { .. } | PlanStatus::AfterUpstream { .. }
        );
        let estimate = (runs && inst.kind.estimates())
            .then(|| walk.estimate(inst, items_to_run.as_deref(), &status));
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

/// The dry run's walk over the instances in dependency order: what it knows of each
/// instance's result (as `run` would record it) and of its estimate, once decided.
struct DryRun<'a> {
    store: &'a dyn Store,
    workdir: &'a Path,
    previous: Option<crate::record::RunRecord>,
    known: Vec<Option<Arc<InstanceRecord>>>,
    estimates: Vec<Option<Estimate>>,
}

impl DryRun<'_> {
    /// The verdict on a selected instance, and for a per-item miss the items that would run:
    /// disabled by a `when:`, unknown until an upstream instance runs, or the cache decision.
    fn status(
        &mut self,
        plan: &Plan,
        inst: &Instance,
    ) -> Result<(PlanStatus, Option<Vec<String>>)> {
        let upstream_known: Vec<Option<&InstanceRecord>> = inst
            .bindings
            .iter()
            .map(|b| self.known[b.instance].as_deref())
            .collect();
        if let Some(reason) = disabled(inst, &upstream_known) {
            let off = InstanceRecord::empty(
                &inst.stage,
                inst.variant.name(),
                inst.kind.name(),
                Status::Disabled,
            );
            self.known[inst.id] = Some(Arc::new(off));
            return Ok((PlanStatus::Disabled { reason }, None));
        }
        if let Some(b) = inst
            .bindings
            .iter()
            .find(|b| self.known[b.instance].is_none())
        {
            let upstream = plan.instances[b.instance].label();
            return Ok((PlanStatus::AfterUpstream { upstream }, None));
        }
        self.decided(inst)
    }

    /// The cache decision on an instance whose upstream results are all known.
    fn decided(&mut self, inst: &Instance) -> Result<(PlanStatus, Option<Vec<String>>)> {
        let upstream: Vec<Arc<InstanceRecord>> = inst
            .bindings
            .iter()
            .filter_map(|b| self.known[b.instance].clone())
            .collect();
        let decision = decide(
            self.store,
            self.workdir,
            inst,
            &upstream,
            self.previous.as_ref(),
        )?;
        let (variant, kind) = (inst.variant.name(), inst.kind.name());
        match &decision.verdict {
            Verdict::Hit(m) => {
                let record =
                    InstanceRecord::from_manifest(&inst.stage, variant, kind, Status::Cached, m);
                self.known[inst.id] = Some(Arc::new(record));
                let changes = decision.reasons;
                Ok((PlanStatus::Hit { changes }, None))
            }
            Verdict::Disabled(reason) => {
                let off = InstanceRecord::empty(&inst.stage, variant, kind, Status::Disabled);
                self.known[inst.id] = Some(Arc::new(off));
                let reason = reason.clone();
                Ok((PlanStatus::Disabled { reason }, None))
            }
            Verdict::Miss => {
                let (items, to_run) = match item_plan(self.store, inst, &decision, &upstream)? {
                    Some((counts, to_run)) => (Some(counts), Some(to_run)),
                    None => (None, None),
                };
                let reasons = decision.reasons;
                Ok((PlanStatus::Miss { items, reasons }, to_run))
            }
        }
    }

    /// The kind's estimate of an instance that runs, from the estimates of the upstream
    /// instances that run first; kept for the instances downstream.
    fn estimate(
        &mut self,
        inst: &Instance,
        items_to_run: Option<&[String]>,
        status: &PlanStatus,
    ) -> std::result::Result<Estimate, String> {
        let mut ids: Vec<usize> = inst.bindings.iter().map(|b| b.instance).collect();
        ids.sort_unstable();
        ids.dedup();
        let upstream: Vec<Estimate> = ids
            .iter()
            .filter_map(|&i| self.estimates[i].clone())
            .collect();
        let estimate = estimate(
            self.store,
            self.workdir,
            inst,
            &self.known,
            items_to_run,
            status,
            &upstream,
        );
        if let Ok(e) = &estimate {
            self.estimates[inst.id] = Some(e.clone());
        }
        estimate
    }
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
