//! `prefflow plan`: what `run` would execute and why, and what its model stages would cost.

use std::path::PathBuf;

use prefflow_engine::inspect::{self, PlanStatus};
use prefflow_engine::Error;

mod estimates;

use super::session::Session;
use crate::pipeline::Select;

/// The arguments of `prefflow plan`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// Pipeline YAML file.
    pipeline: PathBuf,
    #[command(flatten)]
    select: Select,
}

/// Prints the plan and the model stages' estimates; a stage over its model's `max_context` is
/// a usage error (exit 2).
pub(crate) fn run(args: &Args, session: &Session) -> anyhow::Result<u8> {
    let (_, plan) = args.select.plan(&args.pipeline, session.quiet)?;
    let lines = inspect::dry_run(
        &plan,
        session.store()?.as_ref(),
        &session.workdir,
        &args.select.only,
    )?;
    print_plan(&lines);
    let problems = estimates::print_estimates(&lines);
    if problems > 0 {
        return Err(Error::Usage(format!(
            "{problems} stage(s) would send requests over their model's max_context (above); apply the fix named there"
        ))
        .into());
    }
    Ok(0)
}

/// One line per selected stage instance (hit, off, later, miss with its reasons).
pub(crate) fn print_plan(lines: &[inspect::PlanLine]) {
    for line in lines {
        match &line.status {
            PlanStatus::Hit { .. } => match &line.cached_only {
                Some(pin) => println!("  hit    {} (kept, not run: {pin})", line.label),
                None => println!("  hit    {}", line.label),
            },
            PlanStatus::NotSelected => {}
            PlanStatus::Disabled { reason } => println!("  off    {} ({reason})", line.label),
            PlanStatus::AfterUpstream { upstream } => {
                println!(
                    "  later  {} (runs if `{upstream}` produces new output)",
                    line.label
                )
            }
            PlanStatus::Miss { reasons, items } => {
                let items = items.as_ref().map(plan_items).unwrap_or_default();
                println!("  miss   {}{items}", line.label);
                for r in reasons {
                    println!("           - {r}");
                }
            }
        }
    }
}

/// ` [N of M items to run]`, saying how many of them lost their stored tables.
fn plan_items(i: &inspect::ItemPlan) -> String {
    let lost = match i.incomplete {
        0 => String::new(),
        n => format!("; {n} of them lost their stored tables"),
    };
    let subset = match &i.subset_of {
        Some((all, how)) => format!(" — {} of {all} by {how}", i.total),
        None => String::new(),
    };
    format!(
        " [{} of {} items to run{lost}{subset}]",
        i.total - i.cached,
        i.total
    )
}
