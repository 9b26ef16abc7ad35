//! `prefflow run`: run a pipeline, reusing every cached result, and print what happened.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::ValueEnum;
use prefflow_engine::config::PipelineFile;
use prefflow_engine::exec::{self, RunOptions};
use prefflow_engine::inspect::{self, PlanStatus};
use prefflow_engine::plan::Plan;
use prefflow_engine::progress::ProgressMode;
use prefflow_engine::record::{RunRecord, Status};
use prefflow_engine::store::{Store, StoreLocation};
use prefflow_engine::Error;

use super::session::Session;
use crate::pipeline::Select;

/// The arguments of `prefflow run`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// Pipeline YAML file.
    pipeline: PathBuf,
    #[command(flatten)]
    select: Select,
    /// Progress display.
    #[arg(long, value_enum, default_value = "auto")]
    progress: ProgressArg,
    /// Seconds between status lines when progress is logged.
    #[arg(long, default_value = "10")]
    log_every: f64,
    /// Serve every model request from the record/replay cache; a miss is an error.
    #[arg(long)]
    offline: bool,
    /// Print `peak_rss_kb: N` after the run (used by `prefflow bench`).
    #[arg(long, hide = true)]
    report_peak_rss: bool,
    /// Where per-item work runs: `local` (this process) or `slurm` (job arrays over the
    /// shared store, and one job per whole-table stage marked `executor: slurm`; see
    /// docs/cluster.md). Default: the pipeline's or profile's `kind`, else local.
    #[arg(long, value_enum)]
    executor: Option<ExecutorArg>,
    /// Executor profile: a YAML file with the fields of an `executor:` block (partition,
    /// account, qos, time, cpus_per_task, mem, max_array_size, parallel, sbatch_args,
    /// export, …); it overrides the pipeline's block field by field.
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
}

/// `--progress`.
#[derive(Clone, Copy, ValueEnum)]
enum ProgressArg {
    Auto,
    Bars,
    Log,
    None,
}

/// `--executor`.
#[derive(Clone, Copy, ValueEnum)]
enum ExecutorArg {
    Local,
    Slurm,
}

/// Plans, runs, prints the summary (or, with `--quiet`, the errors); the exit code is the
/// run's, or the signal's that interrupted it.
pub(crate) fn run(args: &Args, session: &Session) -> anyhow::Result<u8> {
    let (file, plan) = args.select.plan(&args.pipeline, session.quiet)?;
    let plan = Arc::new(plan);
    let opts = run_options(args, session, &file)?;
    let local = opts.executor.is_none();
    if local {
        exec::interrupt::install();
    }
    let store = session.store()?;
    let report = match exec::run(plan.clone(), store.clone(), &opts) {
        Err(Error::NotWritable(why)) if local => {
            return read_only_run(&plan, store.as_ref(), &opts, why)
        }
        other => other?,
    };
    if !session.quiet {
        print_summary(&report.record);
    } else {
        print_errors(&report.record);
    }
    if args.report_peak_rss {
        println!("peak_rss_kb: {}", crate::bench::peak_rss_kb().unwrap_or(0));
    }
    if let Some(sig) = exec::interrupt::interrupted() {
        eprintln!(
            "interrupted by {}: the run record is written and committed items are kept; run the same command again to resume",
            exec::interrupt::name(sig)
        );
        return Ok(exec::interrupt::exit_code(sig) as u8);
    }
    Ok(report.exit_code() as u8)
}

/// The engine's options for this run: selection, progress display, offline, the executor.
fn run_options(args: &Args, session: &Session, file: &PipelineFile) -> anyhow::Result<RunOptions> {
    let executor = item_executor(
        file,
        args.executor,
        args.profile.as_deref(),
        (&session.location, &args.select.set, args.offline),
    )?;
    Ok(RunOptions {
        workdir: session.workdir.clone(),
        only: args.select.only.clone(),
        progress: match (session.quiet, args.progress) {
            (true, _) | (_, ProgressArg::None) => ProgressMode::Quiet,
            (_, ProgressArg::Auto) => ProgressMode::Auto,
            (_, ProgressArg::Bars) => ProgressMode::Bars,
            (_, ProgressArg::Log) => ProgressMode::Log,
        },
        log_every: Duration::from_secs_f64(args.log_every.max(0.1)),
        offline: args.offline,
        executor,
        // What the model endpoints' budgets learned (window, limits, 429s).
        status: Some(prefflow_engine::progress::StatusSource(Arc::new(
            prefflow_stages::llm::budget::status,
        ))),
    })
}

/// The run's item executor: `None` for local, the Slurm executor otherwise (settings from the
/// pipeline's `executor:` block, then the profile, checked with locations; where each stage
/// runs from its `executor:` field).
fn item_executor(
    file: &PipelineFile,
    flag: Option<ExecutorArg>,
    profile: Option<&Path>,
    (store, set, offline): (&StoreLocation, &[String], bool),
) -> anyhow::Result<Option<Arc<dyn exec::ItemExecutor>>> {
    use prefflow_engine::cluster::{self, config};
    let profile_spec = profile.map(config::load_profile).transpose()?;
    let mut sources = Vec::new();
    if let Some(spec) = &file.spec.executor {
        sources.push(config::SpecSource {
            file: &file.path,
            spec,
        });
    }
    if let (Some(path), Some(spec)) = (profile, &profile_spec) {
        sources.push(config::SpecSource { file: path, spec });
    }
    let flag = flag.map(|f| match f {
        ExecutorArg::Local => cluster::ExecutorKind::Local,
        ExecutorArg::Slurm => cluster::ExecutorKind::Slurm,
    });
    let settings = match config::resolve(flag, &sources)? {
        cluster::ExecutorChoice::Local => return Ok(None),
        cluster::ExecutorChoice::Slurm(s) => *s,
    };
    let placement = config::stage_placement(file);
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let setup = cluster::SlurmSetup {
        settings,
        store_arg: match store {
            StoreLocation::Local(dir) => absolute(dir).to_string_lossy().into_owned(),
            StoreLocation::Remote(url) => url.to_url(),
        },
        file: file.path.to_string_lossy().into_owned(),
        overrides: set.to_vec(),
        local_stages: placement.local,
        job_stages: placement.jobs,
        workdir: absolute(Path::new(".")),
        offline,
    };
    let executor = cluster::SlurmExecutor::new(setup).context("cannot start the Slurm executor")?;
    Ok(Some(Arc::new(executor)))
}

/// A `run` on a store this user may not write (`why` says which path and how to fix it): when
/// every selected stage is cached, the pipeline is up to date and nothing needs writing (exit
/// 0, no run record); otherwise what would run is listed and the run refused (exit 2).
fn read_only_run(
    plan: &Plan,
    store: &dyn Store,
    opts: &RunOptions,
    why: String,
) -> anyhow::Result<u8> {
    let lines = inspect::dry_run(plan, store, &opts.workdir, &opts.only)?;
    let pending: Vec<&inspect::PlanLine> = lines
        .iter()
        .filter(|l| {
            !matches!(
                l.status,
                PlanStatus::Hit { .. } | PlanStatus::NotSelected | PlanStatus::Disabled { .. }
            )
        })
        .collect();
    if pending.is_empty() {
        for line in &lines {
            if matches!(line.status, PlanStatus::Hit { .. }) {
                println!("  {:<27} {}", "cached", line.label);
            }
        }
        println!(
            "pipeline {}: up to date ({} stages cached); the store {} is read-only for this process, so nothing was written",
            plan.name,
            lines.iter().filter(|l| matches!(l.status, PlanStatus::Hit { .. })).count(),
            store.describe()
        );
        return Ok(0);
    }
    println!(
        "pipeline {}: {} stage(s) would run:",
        plan.name,
        pending.len()
    );
    super::plan::print_plan(&lines);
    Err(Error::NotWritable(why).into())
}

/// One line per stage instance, the totals, the model budgets' state and the errors.
fn print_summary(record: &RunRecord) {
    for inst in &record.instances {
        if let Some(line) = instance_line(inst) {
            println!("{line}");
        }
    }
    let s = &record.summary;
    println!(
        "pipeline {}: {} stages executed, {} cached, {} failed, {} skipped{}; items: {} executed, {} cached, {} failed ({:.2}s)",
        record.pipeline,
        s.stages_executed,
        s.stages_cached,
        s.stages_failed,
        s.stages_skipped,
        match s.stages_disabled {
            0 => String::new(),
            n => format!(", {n} disabled"),
        },
        s.items_executed,
        s.items_cached,
        s.items_failed,
        record.seconds
    );
    for line in prefflow_stages::llm::budget::status() {
        println!("model budget {line}");
    }
    print_errors(record);
}

/// The summary line of one stage instance: status, label, rows per table, items and message
/// (`None` for an instance the run did not select).
fn instance_line(inst: &prefflow_engine::record::InstanceRecord) -> Option<String> {
    let status = match inst.status {
        Status::Executed if inst.unchanged_output => "executed (output unchanged)",
        Status::Executed => "executed",
        Status::Cached => "cached",
        Status::Failed => "FAILED",
        Status::Skipped => "skipped",
        Status::Disabled => "disabled",
        Status::NotSelected => return None,
    };
    let rows: Vec<String> = inst
        .tables
        .iter()
        .map(|(k, t)| format!("{k}={}", t.rows))
        .collect();
    let items = match (&inst.items, inst.status) {
        (Some(i), Status::Cached) => format!(" ({} items, all cached)", i.total),
        (Some(i), _) => format!(
            " ({} of {} items run, {} cached)",
            i.executed, i.total, i.cached
        ),
        _ => String::new(),
    };
    let message = inst
        .message
        .as_ref()
        .map(|m| format!(" — {m}"))
        .unwrap_or_default();
    Some(format!(
        "  {status:<27} {:<36} {}{items}{message}",
        inst.label(),
        rows.join(" ")
    ))
}

/// The run's errors on stderr, one line each, and where to see them all.
fn print_errors(record: &RunRecord) {
    for e in &record.errors {
        let item = e
            .item
            .as_ref()
            .map(|i| format!(" item `{i}`"))
            .unwrap_or_default();
        let variant = if e.variant.is_empty() {
            String::new()
        } else {
            format!("[{}]", e.variant)
        };
        eprintln!(
            "failed: {}{variant}{item} after {} attempt(s): {}",
            e.stage, e.attempts, e.message
        );
    }
    if !record.errors.is_empty() {
        eprintln!("see all errors with: prefflow show errors");
    }
}
