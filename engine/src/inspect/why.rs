//! `prefflow why STAGE`: for each variant of a stage, what differs from its last successful run,
//! following upstream instances that must run first.

use std::path::Path;

use super::plan::{dry_run, PlanLine, PlanStatus};
use crate::error::{Error, Result};
use crate::plan::Plan;
use crate::store::Store;

/// The explanation of `stage`, one line per fact, indented under the instance it belongs to.
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
        PlanStatus::Disabled { reason } => {
            out.push(format!("{pad}{}: disabled: {reason}", line.label))
        }
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
