//! The `prefflow` command line: run, inspect and maintain pipelines.

#![deny(missing_docs)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

mod bench;
mod bench_budget;
mod bench_episodes;
mod bench_judge;
mod bench_world;
mod format;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use prefflow_engine::config::PipelineFile;
use prefflow_engine::exec::{self, RunOptions};
use prefflow_engine::inspect::{self, PlanStatus};
use prefflow_engine::params::Override;
use prefflow_engine::plan::Plan;
use prefflow_engine::progress::ProgressMode;
use prefflow_engine::record::{RunRecord, Status};
use prefflow_engine::store::{Store, StoreLocation};
use prefflow_engine::{Error, Registry};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

#[derive(Parser)]
#[command(
    name = "prefflow",
    version,
    about = "Declarative pipelines for personalized mobile-agent benchmarks"
)]
struct Cli {
    /// Artifact store: a directory (or file:///path), or an object store URL
    /// (s3://bucket/prefix, gs://…, az://…; credentials from the environment, see docs/store.md).
    #[arg(
        long,
        global = true,
        default_value = ".prefflow",
        env = "PREFFLOW_STORE"
    )]
    store: String,
    /// Only warnings and errors on stderr.
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a pipeline, reusing every cached result.
    Run {
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
    },
    /// Compute one shard of a cluster job (what each Slurm array task runs; docs/cluster.md).
    /// Exit codes: 0 done, 1 items failed, 2 bad input, 3 could not start.
    Work {
        /// The job id the coordinator wrote to the store.
        #[arg(long)]
        job: String,
        /// This task's share: INDEX/COUNT, e.g. `$SLURM_ARRAY_TASK_ID/16`.
        #[arg(long, value_name = "INDEX/COUNT")]
        shard: String,
    },
    /// Measure performance on generated workloads (see BENCHMARKS.md).
    Bench {
        /// Which figures: engine, llm, world, episodes, judge, budget or all.
        #[arg(value_enum, default_value = "all")]
        suite: BenchSuite,
        /// Scratch directory for the workloads.
        #[arg(long, default_value = "target/prefflow-bench")]
        dir: PathBuf,
        /// Rows per engine workload (the 10-stage chain has this many items per stage).
        #[arg(long, default_value = "1000")]
        items: usize,
        /// Model calls in the llm benchmark.
        #[arg(long, default_value = "1920")]
        requests: usize,
        /// A Python with `inspect_ai` installed: the budget benchmark also measures inspect_ai
        /// against the same provider (see BENCHMARKS.md).
        #[arg(long, value_name = "PYTHON")]
        inspect_python: Option<PathBuf>,
    },
    /// Show what `run` would execute, and why.
    Plan {
        /// Pipeline YAML file.
        pipeline: PathBuf,
        #[command(flatten)]
        select: Select,
    },
    /// Print the stage graph.
    Dag {
        /// Pipeline YAML file.
        pipeline: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: DagFormat,
        /// Parameter overrides.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
    },
    /// Print a stage's tables from the latest successful run (`errors`: the last run's errors;
    /// `runs`: what the runs' model calls cost, by role and model).
    Show {
        /// STAGE, STAGE.TABLE, STAGE.* (every table), `errors`, or `runs`.
        target: String,
        /// Pipeline name (default: the most recently run).
        #[arg(long, short)]
        pipeline: Option<String>,
        /// Variant name, for swept stages.
        #[arg(long)]
        variant: Option<String>,
        /// Rows to print; 0 for all (default: 20 in `table` and `markdown`, all in `csv`, `json`).
        #[arg(long)]
        head: Option<usize>,
        /// Output format; no format cuts a cell or drops a column.
        #[arg(long, value_enum, default_value = "table")]
        format: format::Format,
        /// Cut text cells of `table` and `markdown` to this many characters (default: never).
        #[arg(long)]
        width: Option<usize>,
        /// Print the Parquet file path instead of rows.
        #[arg(long)]
        path: bool,
    },
    /// Explain, field by field, what changed for STAGE since its last successful run.
    Why {
        /// Stage name.
        stage: String,
        /// Pipeline file (default: the file of the most recent run).
        #[arg(long, short)]
        pipeline: Option<PathBuf>,
        /// Parameter overrides.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
    },
    /// Delete artifacts that no pipeline's latest run uses. Refuses (exit code 3) while a run
    /// holds a live lease on the store, unless --wait lets it wait for them.
    Gc {
        /// List what would be removed, and what is protected and why, without removing it.
        #[arg(long)]
        dry_run: bool,
        /// Wait up to SECS for live runs to finish instead of refusing at once.
        #[arg(long, value_name = "SECS")]
        wait: Option<f64>,
        /// Also let go of the results of killed runs that no run record holds (by default a
        /// killed run's committed items are kept until a later run adopts them).
        #[arg(long)]
        drop_dead_leases: bool,
    },
    /// Check every stored object against its hash (or one pipeline's results); report, or
    /// quarantine with --repair, what is damaged so the next run recomputes it.
    Verify {
        /// Only what this pipeline's run records reach (default: the whole store).
        #[arg(long, short)]
        pipeline: Option<String>,
        /// Move damaged objects to quarantine/ (the next run recomputes what used them).
        #[arg(long)]
        repair: bool,
    },
    /// Make the --store directory shareable by a team: it and everything in it go to the
    /// group, directories become 2775 (setgid) and files group-writable, and every later
    /// write keeps those modes whatever the writer's umask (docs/store.md, "Permissions").
    InitStore {
        /// The group that shares the store (a name or a gid; default: the directory's group).
        #[arg(long)]
        group: Option<String>,
    },
    /// Serve the simulated phone over HTTP/JSON (see README: "Serving the phone").
    ServeEnv(ServeArgs),
    /// Print the JSON Schema of the pipeline format.
    Schema,
    /// List the registered stage kinds.
    Kinds,
    /// Print the inter-stage table contracts (columns, types, meaning) as Markdown:
    /// docs/tables.md is this output.
    Tables,
}

#[derive(clap::Args)]
struct Select {
    /// Override a parameter: `seed=3`, `params.seed=3` or `STAGE.param=value`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Run only this stage and what it needs (repeatable).
    #[arg(long)]
    only: Vec<String>,
    /// Episode stages play only these tasks (comma-separated ids); each is the same cached
    /// episode as in a full run, so a full run afterwards plays only the rest.
    #[arg(long, value_delimiter = ',', value_name = "ID,…", conflicts_with_all = ["sample", "limit"])]
    tasks: Vec<String>,
    /// Episode stages play N tasks drawn with --sample-seed, stratified by perturbation subset
    /// (a larger sample keeps a smaller one's tasks).
    #[arg(long, value_name = "N", conflicts_with = "limit")]
    sample: Option<usize>,
    /// The seed of --sample.
    #[arg(long, value_name = "SEED", default_value = "0", requires = "sample")]
    sample_seed: u64,
    /// Episode stages play the first N tasks of their input.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
}

impl Select {
    /// The task subset the flags ask for, if any.
    fn subset(&self) -> Option<prefflow_stages::episodes::subset::TaskSubset> {
        use prefflow_stages::episodes::subset::TaskSubset;
        match (&self.tasks[..], self.sample, self.limit) {
            ([_, ..], _, _) => Some(TaskSubset::Tasks(self.tasks.clone())),
            (_, Some(n), _) => Some(TaskSubset::Sample {
                n,
                seed: self.sample_seed,
            }),
            (_, _, Some(n)) => Some(TaskSubset::Limit(n)),
            _ => None,
        }
    }

    /// The plan of `path` with these overrides and, with a task subset, the subset attached
    /// to its episode stages (said on stderr, naming them).
    fn plan(&self, path: &Path, quiet: bool) -> anyhow::Result<(PipelineFile, Plan)> {
        let (file, mut plan) = load_file_and_plan(path, &self.set)?;
        let Some(subset) = self.subset() else {
            return Ok((file, plan));
        };
        let describe = prefflow_engine::subset::ItemSubset::describe(&subset);
        let kinds = prefflow_stages::episodes::subset::EPISODE_KINDS;
        let applied = plan.with_subset(Arc::new(subset), |i| kinds.contains(&i.kind.name()));
        if applied.is_empty() {
            return Err(Error::Usage(format!(
                "{describe}: pipeline `{}` has no per-item episode stage ({}) to play a subset of",
                plan.name,
                kinds.join(", ")
            ))
            .into());
        }
        if !quiet {
            eprintln!("subset: {describe} in {}", applied.join(", "));
        }
        Ok((file, plan))
    }
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Interface to bind. The phone has no accounts: anything but loopback needs
    /// --allow-remote and --token-env.
    #[arg(long, default_value = "127.0.0.1")]
    bind: std::net::IpAddr,
    /// Port; 0 picks a free one (the first stdout line says which).
    #[arg(long, default_value = "8765")]
    port: u16,
    /// Directory of app YAML files.
    #[arg(long, default_value = "datasets/apps")]
    apps: PathBuf,
    /// Persona YAML file.
    #[arg(long, default_value = "datasets/personas/maya.yaml")]
    persona: PathBuf,
    /// History events to synthesize (at most --max-events).
    #[arg(long, default_value = "3051")]
    events: usize,
    /// Raises the limit on --events (default 1,000,000: about 1 KB of memory each).
    #[arg(long)]
    max_events: Option<u64>,
    /// History synthesis seed.
    #[arg(long, default_value = "7")]
    seed: u64,
    /// Serve a non-loopback --bind address (needs --token-env as well).
    #[arg(long)]
    allow_remote: bool,
    /// Environment variable holding the bearer token every request must carry
    /// (`Authorization: Bearer <token>`).
    #[arg(long, value_name = "VAR")]
    token_env: Option<String>,
    /// Episodes open at once; one more answers 429.
    #[arg(long, default_value = "64")]
    max_episodes: usize,
    /// Steps per episode; one more answers 429.
    #[arg(long, default_value = "1000")]
    max_steps: u32,
    /// Bytes per request body; a larger body answers 413.
    #[arg(long, default_value = "1048576")]
    max_body_bytes: usize,
    /// Request bytes one episode may receive in total (bounds its memory); past it, 413.
    #[arg(long, default_value = "16777216")]
    max_episode_bytes: usize,
    /// Bytes of one observation's text; longer ones are cut and say so.
    #[arg(long, default_value = "262144")]
    max_observation_bytes: usize,
    /// Seconds an episode may go without a request before it is closed.
    #[arg(long, default_value = "600")]
    episode_ttl_secs: u64,
    /// Episodes one client (its X-Client-Id header, else its address) may have open at once
    /// (default: half of --max-episodes, at least 1).
    #[arg(long)]
    max_episodes_per_client: Option<usize>,
    /// At a cap, an episode idle this many seconds may be closed to make room for a new one.
    #[arg(long, default_value = "30")]
    evict_idle_secs: u64,
}

#[derive(Clone, Copy, ValueEnum)]
enum ProgressArg {
    Auto,
    Bars,
    Log,
    None,
}

#[derive(Clone, Copy, ValueEnum)]
enum ExecutorArg {
    Local,
    Slurm,
}

#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum BenchSuite {
    All,
    Engine,
    Llm,
    World,
    Episodes,
    Judge,
    /// A provider's rate-limit budget (10 simulated minutes, twice: ~2 minutes).
    Budget,
}

#[derive(Clone, Copy, ValueEnum)]
enum DagFormat {
    Text,
    Dot,
    Mermaid,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.quiet);
    match dispatch(&cli) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            let engine = err.downcast_ref::<Error>();
            let user = engine.is_some_and(Error::is_user_error);
            match engine {
                // Already `file:line:column: error: …` per problem.
                Some(Error::Config(_)) => eprintln!("{err:#}"),
                _ => eprintln!("error: {err:#}"),
            }
            let busy = matches!(engine, Some(Error::Busy(_)));
            ExitCode::from(if user {
                2
            } else if busy {
                3
            } else {
                1
            })
        }
    }
}

fn init_logging(quiet: bool) {
    let level = if quiet {
        tracing::Level::WARN
    } else {
        match std::env::var("PREFFLOW_LOG").unwrap_or_default().as_str() {
            "debug" => tracing::Level::DEBUG,
            "warn" => tracing::Level::WARN,
            "error" => tracing::Level::ERROR,
            _ => tracing::Level::INFO,
        }
    };
    // Libraries' own chatter (object_store logs every retry at info) shows only at debug:
    // prefflow reports their failures itself, once per cause.
    let libraries = match level {
        tracing::Level::DEBUG | tracing::Level::TRACE => level,
        _ => tracing::Level::WARN,
    };
    let targets = tracing_subscriber::filter::Targets::new()
        .with_default(level)
        .with_target("object_store", libraries)
        .with_target("reqwest", libraries)
        .with_target("hyper", libraries)
        .with_target("hyper_util", libraries);
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .finish()
        .with(targets)
        .init();
}

/// Every kind this binary knows: the engine's generic kinds plus the benchmark domain's.
fn registry() -> Registry {
    let mut registry = Registry::with_generic_kinds();
    prefflow_stages::register(&mut registry);
    registry
}

fn load_plan(path: &Path, set: &[String]) -> anyhow::Result<Plan> {
    Ok(load_file_and_plan(path, set)?.1)
}

fn load_file_and_plan(path: &Path, set: &[String]) -> anyhow::Result<(PipelineFile, Plan)> {
    let file = PipelineFile::load(path)?;
    let overrides = env_params(&file)
        .into_iter()
        .chain(set.iter().cloned())
        .map(|s| Override::parse(&s).map_err(Error::Usage))
        .collect::<Result<Vec<_>, _>>()?;
    let plan = Plan::build(&file, &registry(), &overrides)?;
    Ok((file, plan))
}

/// `--set NAME=VALUE` for the pipeline params the environment gives (`PREFFLOW_KNOWU` → `knowu`,
/// `prefflow_stages::knowu::data::ENV_PARAMS`), placed before the user's own `--set`, which wins.
fn env_params(file: &PipelineFile) -> Vec<String> {
    prefflow_stages::knowu::data::ENV_PARAMS
        .iter()
        .filter(|(param, _)| file.spec.params.contains_key(*param))
        .filter_map(|(param, var)| {
            let value = std::env::var(var).ok().filter(|v| !v.is_empty())?;
            Some(format!("{param}={value}"))
        })
        .collect()
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

/// `--store` must be a directory or a path one can be created at; a file there (or above it)
/// is the user's mistake, not an I/O failure halfway through a run.
fn check_store_path(store: &Path) -> Result<(), Error> {
    let Some(existing) = store
        .ancestors()
        .find(|p| !p.as_os_str().is_empty() && p.exists())
    else {
        return Ok(());
    };
    if existing.is_dir() {
        return Ok(());
    }
    let what = if existing == store {
        "is a file".to_string()
    } else {
        format!("cannot be created: {} is a file", existing.display())
    };
    Err(Error::Usage(format!(
        "--store {}: {what}, not a store directory; pass a directory (it is created if missing), or unset PREFFLOW_STORE",
        store.display()
    )))
}

fn dispatch(cli: &Cli) -> anyhow::Result<u8> {
    let location = StoreLocation::parse(&cli.store)?;
    if matches!(
        cli.command,
        Command::Run { .. }
            | Command::Plan { .. }
            | Command::Show { .. }
            | Command::Why { .. }
            | Command::Gc { .. }
            | Command::Verify { .. }
            | Command::Work { .. }
    ) {
        if let StoreLocation::Local(dir) = &location {
            check_store_path(dir)?;
        }
    }
    let store = || location.open();
    let workdir = PathBuf::from(".");
    match &cli.command {
        Command::Run {
            pipeline,
            select,
            progress,
            log_every,
            report_peak_rss,
            offline,
            executor,
            profile,
        } => {
            let (file, plan) = select.plan(pipeline, cli.quiet)?;
            let plan = Arc::new(plan);
            let executor = item_executor(
                &file,
                *executor,
                profile.as_deref(),
                (&location, &select.set, *offline),
            )?;
            let opts = RunOptions {
                workdir,
                only: select.only.clone(),
                progress: match (cli.quiet, progress) {
                    (true, _) | (_, ProgressArg::None) => ProgressMode::Quiet,
                    (_, ProgressArg::Auto) => ProgressMode::Auto,
                    (_, ProgressArg::Bars) => ProgressMode::Bars,
                    (_, ProgressArg::Log) => ProgressMode::Log,
                },
                log_every: Duration::from_secs_f64(log_every.max(0.1)),
                offline: *offline,
                executor,
                // What the model endpoints' budgets learned (window, limits, 429s).
                status: Some(prefflow_engine::progress::StatusSource(Arc::new(
                    prefflow_stages::llm::budget::status,
                ))),
            };
            let local = opts.executor.is_none();
            if local {
                exec::interrupt::install();
            }
            let store = store()?;
            let report = match exec::run(plan.clone(), store.clone(), &opts) {
                Err(Error::NotWritable(why)) if local => {
                    return read_only_run(&plan, store.as_ref(), &opts, why)
                }
                other => other?,
            };
            if !cli.quiet {
                print_summary(&report.record);
            } else {
                print_errors(&report.record);
            }
            if *report_peak_rss {
                println!("peak_rss_kb: {}", bench::peak_rss_kb().unwrap_or(0));
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
        Command::InitStore { group } => {
            let StoreLocation::Local(dir) = &location else {
                return Err(Error::Usage(format!(
                    "init-store prepares a store directory; {} is an object store, shared through its bucket policy and credentials (docs/store.md)",
                    cli.store
                ))
                .into());
            };
            let r = prefflow_engine::store::team::init_shared(dir, group.as_deref())?;
            println!(
                "store {} is shared with group {}: directories 2775 (setgid), files 0664; {} of {} entries changed",
                r.root.display(),
                r.group.0,
                r.changed,
                r.entries
            );
            Ok(0)
        }
        Command::Bench {
            suite,
            dir,
            items,
            requests,
            inspect_python,
        } => {
            let mut figures = Vec::new();
            if matches!(suite, BenchSuite::All | BenchSuite::Engine) {
                figures.extend(bench::engine(dir, *items)?);
            }
            if matches!(suite, BenchSuite::All | BenchSuite::Llm) {
                figures.extend(bench::llm(dir, *requests, 64, 100)?);
                // Hosted-API-like latency: 256 in flight, 1 s each, for ten seconds.
                figures.extend(bench::llm(dir, 2560, 256, 1000)?);
                let rounds = bench_episodes::EpisodeLoad {
                    pool: 64,
                    tasks: 128,
                    epochs: 2,
                    steps: 10,
                };
                figures.extend(bench_episodes::llm_episodes(dir, &rounds, 100)?);
                // Hosted-API-like: 256 episodes in flight (128 tasks × 2 epochs), 1 s per call.
                let hosted = bench_episodes::EpisodeLoad {
                    pool: 256,
                    tasks: 128,
                    epochs: 2,
                    steps: 5,
                };
                figures.extend(bench_episodes::llm_episodes(dir, &hosted, 1000)?);
            }
            if matches!(suite, BenchSuite::All | BenchSuite::World) {
                figures.extend(bench_world::world(Path::new("datasets"))?);
            }
            if matches!(suite, BenchSuite::All | BenchSuite::Episodes) {
                figures.extend(bench_episodes::episodes(dir)?);
            }
            if matches!(suite, BenchSuite::All | BenchSuite::Judge) {
                figures.extend(bench_judge::judge(dir)?);
            }
            if matches!(suite, BenchSuite::All | BenchSuite::Budget) {
                // A 2M-token, 500-request-per-minute tier, ten minutes in one, ~100k-token
                // prompts answered after 1 s: one model, then three sharing the budget.
                for models in [1, 3] {
                    let load = bench_budget::BudgetLoad {
                        models,
                        tpm: 2_000_000.0,
                        rpm: 500.0,
                        scale: 10.0,
                        prompt_tokens: 100_000,
                        latency: Duration::from_secs(1),
                        minutes: 10.0,
                    };
                    let inspect = inspect_python.as_deref().filter(|_| models == 1);
                    figures.extend(bench_budget::budget(dir, &load, inspect)?);
                }
            }
            println!("| figure | measured | target |\n|---|---|---|");
            for f in figures {
                println!("| {} | {} | {} |", f.name, f.value, f.target);
            }
            Ok(0)
        }
        Command::Plan { pipeline, select } => {
            let (_, plan) = select.plan(pipeline, cli.quiet)?;
            let lines = inspect::dry_run(&plan, store()?.as_ref(), &workdir, &select.only)?;
            print_plan(&lines);
            let problems = format::print_estimates(&lines);
            if problems > 0 {
                return Err(Error::Usage(format!(
                    "{problems} stage(s) would send requests over their model's max_context (above); apply the fix named there"
                ))
                .into());
            }
            Ok(0)
        }
        Command::Dag {
            pipeline,
            format,
            set,
        } => {
            print!("{}", render_dag(&load_plan(pipeline, set)?, *format));
            Ok(0)
        }
        Command::Show {
            target,
            pipeline,
            variant,
            head,
            format,
            width,
            path,
        } => {
            let limits = format::Limits {
                rows: match (head, format) {
                    (Some(0), _) => None,
                    (Some(n), _) => Some(*n),
                    (None, format::Format::Table | format::Format::Markdown) => Some(20),
                    (None, _) => None,
                },
                width: *width,
            };
            show(
                store()?.as_ref(),
                target,
                pipeline.as_deref(),
                variant.as_deref(),
                (*format, limits),
                *path,
            )?;
            Ok(0)
        }
        Command::Why {
            stage,
            pipeline,
            set,
        } => {
            let store = store()?;
            let file = match pipeline {
                Some(p) => p.clone(),
                None => most_recent_file(store.as_ref())?,
            };
            let plan = load_plan(&file, set)?;
            for line in inspect::why(&plan, store.as_ref(), &workdir, stage)? {
                println!("{line}");
            }
            Ok(0)
        }
        Command::Gc {
            dry_run,
            wait,
            drop_dead_leases,
        } => {
            let opts = inspect::GcOptions {
                dry_run: *dry_run,
                wait: wait.map(|w| Duration::from_secs_f64(w.max(0.0))),
                drop_dead_leases: *drop_dead_leases,
            };
            let report = inspect::gc(store()?, &opts)?;
            for key in &report.removed {
                println!(
                    "{} {key}",
                    if *dry_run { "would remove" } else { "removed" }
                );
            }
            for line in &report.dropped {
                println!("dropped lease: {line}");
            }
            for line in &report.protected {
                println!("protected: {line}");
            }
            if *dry_run && !report.live.is_empty() {
                println!(
                    "note: {} live lease(s): `gc` would refuse (exit code 3) until they end, or wait with --wait",
                    report.live.len()
                );
            }
            println!(
                "{} {} objects ({:.1} MiB), kept {}",
                if *dry_run { "would remove" } else { "removed" },
                report.removed.len(),
                report.bytes as f64 / 1048576.0,
                report.kept
            );
            Ok(0)
        }
        Command::Verify { pipeline, repair } => {
            let report = inspect::verify(store()?.as_ref(), pipeline.as_deref(), *repair)?;
            Ok(print_verify(&report))
        }
        Command::Work { job, shard } => {
            use prefflow_engine::cluster::{work, Shard, WorkRequest};
            let shard: Shard = shard.parse().map_err(Error::Usage)?;
            let registry = registry();
            let (exit, report) = work(WorkRequest {
                store: store()?,
                job,
                shard,
                registry: &registry,
                workdir,
            });
            println!(
                "shard {}/{}: {} item(s) committed, {} already committed, {} failed (exit {})",
                shard.index,
                shard.count,
                report.committed,
                report.already,
                report.failures.len(),
                exit as i32
            );
            Ok(exit as u8)
        }
        Command::ServeEnv(args) => serve_env(args).map(|()| 0),
        Command::Schema => {
            println!(
                "{}",
                serde_json::to_string_pretty(&prefflow_engine::config::json_schema())?
            );
            Ok(0)
        }
        Command::Tables => {
            print!("{}", prefflow_stages::tables::markdown());
            Ok(0)
        }
        Command::Kinds => {
            for kind in registry().iter() {
                println!(
                    "{:<16} v{:<4} {}",
                    kind.name(),
                    kind.version(),
                    kind.summary()
                );
            }
            Ok(0)
        }
    }
}

fn serve_env(a: &ServeArgs) -> anyhow::Result<()> {
    use prefflow_stages::serve::{serve_env, ServeLimits, ServeOptions};
    let usage = |m: String| -> anyhow::Error { Error::Usage(m).into() };
    let token = match &a.token_env {
        None => None,
        Some(var) => match std::env::var(var) {
            Ok(t) if !t.trim().is_empty() => Some((var.clone(), t.trim().to_string())),
            _ => {
                return Err(usage(format!(
                    "--token-env {var}: the variable is not set or empty; export {var}=<a long random secret> first"
                )))
            }
        },
    };
    let opts = ServeOptions {
        bind: a.bind,
        port: a.port,
        apps: a.apps.clone(),
        persona: a.persona.clone(),
        history: prefflow_stages::world::HistoryParams {
            events: a.events,
            seed: a.seed,
            ..Default::default()
        },
        limits: ServeLimits {
            max_episodes: a.max_episodes,
            max_steps: a.max_steps,
            max_body_bytes: a.max_body_bytes,
            max_episode_bytes: a.max_episode_bytes,
            max_observation_bytes: a.max_observation_bytes,
            episode_ttl: Duration::from_secs(a.episode_ttl_secs),
            max_episodes_per_client: a
                .max_episodes_per_client
                .unwrap_or((a.max_episodes / 2).max(1)),
            evict_idle: Duration::from_secs(a.evict_idle_secs),
        },
        allow_remote: a.allow_remote,
        token,
    };
    let events = prefflow_stages::limits::EVENTS;
    let bound = a.max_events.unwrap_or(events.default);
    if a.events as u64 > bound {
        return Err(usage(format!(
            "--events {} is over the limit of {bound} {}; a typo? If you mean it, add --max-events {}",
            a.events, events.unit, a.events
        )));
    }
    let warning = opts.check().map_err(|e| usage(e.to_string()))?;
    if let Some(w) = warning {
        eprintln!("warning: {w}");
    }
    let ready = |addr| {
        println!("listening on http://{addr}");
        let _ = std::io::Write::flush(&mut std::io::stdout());
    };
    serve_env(&opts, ready).map_err(|e| match e.is_user_error() {
        true => usage(e.to_string()),
        false => e.into(),
    })
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
    print_plan(&lines);
    Err(Error::NotWritable(why).into())
}

/// Prints what `verify` found; the exit code is 1 unless the store is whole (see
/// [`inspect::VerifyReport::whole`]).
fn print_verify(r: &inspect::VerifyReport) -> u8 {
    let verb = if r.repaired { "quarantined" } else { "damaged" };
    for key in &r.damaged_blobs {
        println!("{verb}: {key} (content does not match its hash)");
    }
    for key in &r.unreadable_manifests {
        println!("{verb}: {key} (manifest cannot be decoded)");
    }
    for key in &r.unreadable_records {
        println!("{verb}: {key} (run record cannot be decoded; `show` and `plan` cannot use it)");
    }
    for (manifest, blob) in &r.incomplete {
        println!("incomplete: {manifest} needs {blob}, which is missing or damaged (recomputed by the next run)");
    }
    for (referrer, key) in &r.dangling {
        println!("missing: {referrer} names {key} (recomputed by the next run)");
    }
    let damage = r.damaged_blobs.len() + r.unreadable_manifests.len() + r.unreadable_records.len();
    println!(
        "checked {} objects ({:.1} MiB): {damage} damaged, {} incomplete, {} missing",
        r.checked,
        r.bytes as f64 / 1048576.0,
        r.incomplete.len(),
        r.dangling.len()
    );
    if damage > 0 && r.repaired {
        println!("damaged objects moved to quarantine/; run the pipeline again to recompute them");
    } else if damage > 0 {
        println!(
            "run `prefflow verify --repair` to quarantine them (the next run then recomputes them)"
        );
    }
    if r.whole() {
        return 0;
    }
    if !r.incomplete.is_empty() || !r.dangling.is_empty() {
        println!("the store is incomplete: run the pipelines again to recompute what is missing");
    }
    1
}

fn most_recent_file(store: &dyn Store) -> anyhow::Result<PathBuf> {
    let record = inspect::record_for_show(store, None)?;
    Ok(PathBuf::from(record.file))
}

fn print_summary(record: &RunRecord) {
    for inst in &record.instances {
        let status = match inst.status {
            Status::Executed if inst.unchanged_output => "executed (output unchanged)",
            Status::Executed => "executed",
            Status::Cached => "cached",
            Status::Failed => "FAILED",
            Status::Skipped => "skipped",
            Status::Disabled => "disabled",
            Status::NotSelected => continue,
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
        println!(
            "  {status:<27} {:<36} {}{items}{message}",
            inst.label(),
            rows.join(" ")
        );
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

fn print_plan(lines: &[inspect::PlanLine]) {
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

fn render_dag(plan: &Plan, format: DagFormat) -> String {
    let mut out = String::new();
    let variants = |stage: &str| plan.instances_of(stage).count();
    match format {
        DagFormat::Text => {
            for s in &plan.stages {
                let inputs = if s.upstream.is_empty() {
                    String::new()
                } else {
                    format!(" ← {}", s.upstream.join(", "))
                };
                let item = s
                    .per_item
                    .as_ref()
                    .map(|c| format!(" per_item={c}"))
                    .unwrap_or_default();
                let sweep = if s.sweep_dims.is_empty() {
                    String::new()
                } else {
                    format!(" sweep={}", s.sweep_dims.join(","))
                };
                let n = variants(&s.name);
                let n = if n > 1 {
                    format!(" ({n} variants)")
                } else {
                    String::new()
                };
                out.push_str(&format!(
                    "{} [{}]{inputs}{item}{sweep}{n}\n",
                    s.name, s.kind
                ));
            }
        }
        DagFormat::Dot => {
            out.push_str(&format!("digraph \"{}\" {{\n  rankdir=LR;\n", plan.name));
            for s in &plan.stages {
                out.push_str(&format!(
                    "  \"{}\" [label=\"{}\\n{}\" shape=box];\n",
                    s.name, s.name, s.kind
                ));
                for u in &s.upstream {
                    out.push_str(&format!("  \"{u}\" -> \"{}\";\n", s.name));
                }
            }
            out.push_str("}\n");
        }
        DagFormat::Mermaid => {
            out.push_str("graph LR\n");
            for s in &plan.stages {
                out.push_str(&format!("  {}[\"{}: {}\"]\n", s.name, s.name, s.kind));
                for u in &s.upstream {
                    out.push_str(&format!("  {u} --> {}\n", s.name));
                }
            }
        }
    }
    out
}

/// `prefflow show runs`: tokens, cost and requests by pipeline, role and model, for what the
/// last run spent and what the latest results cost (summed from their manifests).
fn show_runs(
    store: &dyn Store,
    pipeline: Option<&str>,
    (format, limits): (format::Format, format::Limits),
) -> anyhow::Result<()> {
    let mut rows = inspect::run_usage(store, pipeline)?;
    if rows.is_empty() {
        println!("no model calls recorded in this store's runs");
        return Ok(());
    }
    if !matches!(format, format::Format::Csv | format::Format::Json) {
        rows = with_model_totals(rows);
    }
    let text = |f: fn(&inspect::UsageRow) -> String| rows.iter().map(f).collect::<Vec<_>>();
    let count = |f: fn(&prefflow_engine::UsageCounts) -> u64| {
        rows.iter().map(|r| f(&r.counts)).collect::<Vec<_>>()
    };
    let df = polars::df!(
        "pipeline" => text(|r| r.pipeline.clone()),
        "run" => text(|r| r.run_id.clone()),
        "scope" => text(|r| r.scope.to_string()),
        "model" => text(|r| r.model.clone()),
        "role" => text(|r| r.role.clone()),
        "requests" => count(|c| c.requests),
        "replayed" => count(|c| c.replayed),
        "prompt_tokens" => count(|c| c.prompt_tokens),
        "completion_tokens" => count(|c| c.completion_tokens),
        "cached_prompt_tokens" => count(|c| c.cached_prompt_tokens),
        "cost" => rows.iter().map(|r| r.counts.cost).collect::<Vec<_>>(),
    )?;
    if !matches!(format, format::Format::Csv | format::Format::Json) {
        println!(
            "model usage: `spent` = the last run's calls (cached results cost nothing); \
             `results` = what the latest results cost when computed"
        );
    }
    print!("{}", format::render(&df, format, limits)?);
    Ok(())
}

/// `show runs` rows (grouped by pipeline, scope and model) with a total row after each model
/// that served more than one role, for reading on a terminal (CSV and JSON keep only the
/// per-role rows, so summing them never counts twice).
fn with_model_totals(rows: Vec<inspect::UsageRow>) -> Vec<inspect::UsageRow> {
    let mut out: Vec<inspect::UsageRow> = Vec::with_capacity(rows.len());
    let mut block: Vec<inspect::UsageRow> = Vec::new();
    let flush = |block: &mut Vec<inspect::UsageRow>, out: &mut Vec<inspect::UsageRow>| {
        if block.len() > 1 {
            let mut total = block[0].clone();
            total.role = "(all roles)".into();
            total.counts = Default::default();
            for r in block.iter() {
                total.counts.add(&r.counts);
            }
            block.push(total);
        }
        out.append(block);
    };
    for row in rows {
        let same = block.last().is_some_and(|b| {
            (&b.pipeline, b.scope, &b.model) == (&row.pipeline, row.scope, &row.model)
        });
        if !same {
            flush(&mut block, &mut out);
        }
        block.push(row);
    }
    flush(&mut block, &mut out);
    out
}

fn show(
    store: &dyn Store,
    target: &str,
    pipeline: Option<&str>,
    variant: Option<&str>,
    (format, limits): (format::Format, format::Limits),
    path: bool,
) -> anyhow::Result<()> {
    if target == "errors" {
        let record = inspect::last_errors(store, pipeline)?;
        if record.errors.is_empty() {
            println!("no errors in the last run of `{}`", record.pipeline);
        }
        for e in &record.errors {
            let variant = if e.variant.is_empty() {
                String::new()
            } else {
                format!("[{}]", e.variant)
            };
            // Where a cluster ran it (`slurm JOB_TASK`), when it did: a column of its own.
            let ran_in = e
                .ran_in
                .as_deref()
                .map(|r| format!("{r}\t"))
                .unwrap_or_default();
            println!(
                "{}{variant}\t{}\t{}\t{} attempt(s)\t{ran_in}{}",
                e.stage,
                e.item.as_deref().unwrap_or("-"),
                e.kind,
                e.attempts,
                e.message
            );
        }
        return Ok(());
    }
    if target == "runs" {
        return show_runs(store, pipeline, (format, limits));
    }
    let record = inspect::record_for_show(store, pipeline)?;
    let tables = inspect::find_tables(&record, target, variant)?;
    if tables.len() > 1 && matches!(format, format::Format::Csv | format::Format::Json) && !path {
        let names: Vec<String> = tables.iter().map(|(l, t, _)| format!("{l}.{t}")).collect();
        return Err(Error::Usage(format!(
            "--format {} prints one table; `{target}` names {}: {}; pick one as STAGE.TABLE",
            format
                .to_possible_value()
                .map(|v| v.get_name().to_string())
                .unwrap_or_default(),
            names.len(),
            names.join(", ")
        ))
        .into());
    }
    for (label, table, entry) in tables {
        let key = prefflow_engine::artifact::blob_path(&entry.blob);
        if path {
            let Some(p) = store.local_path(&key) else {
                return Err(Error::Usage(format!(
                    "show --path needs a local store; {} has no local files: print the table with \
                     --format csv or --format json instead",
                    store.describe()
                ))
                .into());
            };
            println!("{}", std::path::absolute(&p).unwrap_or(p).display());
            continue;
        }
        let df = prefflow_engine::artifact::load_table(store, &entry.blob)?;
        if matches!(format, format::Format::Csv | format::Format::Json) {
            print!("{}", format::render(&df, format, limits)?);
            continue;
        }
        println!(
            "{label}.{table}: {} rows × {} columns",
            df.height(),
            df.width()
        );
        // Tables with a layout of their own (Table 1, a world summary) print laid out.
        if let Some(text) = (format == format::Format::Table)
            .then(|| prefflow_stages::report::text::render(&table, &df))
            .flatten()
        {
            print!("{text}");
            continue;
        }
        print!("{}", format::render(&df, format, limits)?);
    }
    Ok(())
}
