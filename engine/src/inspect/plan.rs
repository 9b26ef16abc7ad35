//! `prefflow plan`: what `run` would execute, and why, without running anything.
//!
//! Every verdict comes from [`crate::decision`], the same step `run` takes.

use std::path::Path;
use std::sync::Arc;

use crate::artifact::load_table;
use crate::decision::{decide, decide_items, disabled, Decision, Verdict};
use crate::error::Result;
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
        let upstream_known: Vec<Option<&InstanceRecord>> = inst
            .bindings
            .iter()
            .map(|b| known[b.instance].as_deref())
            .collect();
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
                Verdict::Miss => PlanStatus::Miss {
                    items: item_plan(store, inst, &decision, &upstream)?,
                    reasons: decision.reasons,
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

/// The item counts of a per-item instance that must run (its main input is known).
fn item_plan(
    store: &dyn Store,
    inst: &Instance,
    decision: &Decision,
    upstream: &[Arc<InstanceRecord>],
) -> Result<Option<ItemPlan>> {
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
        Err(crate::error::Error::Input(_)) => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(Some(ItemPlan {
        total: items.items.len(),
        cached: items.cached(),
        incomplete: items.incomplete(),
    }))
}
