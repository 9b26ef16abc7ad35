//! `prefflow bench`: measure performance on generated workloads and print the figures as a
//! Markdown table (see BENCHMARKS.md).

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::ValueEnum;

use crate::bench::Figure;
use crate::{bench, bench_budget, bench_episodes, bench_judge, bench_world};

/// The arguments of `prefflow bench`.
#[derive(clap::Args)]
pub(crate) struct Args {
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
}

/// The benchmark suites.
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

impl BenchSuite {
    /// Whether `self` asks for `suite`'s figures.
    fn includes(self, suite: BenchSuite) -> bool {
        self == BenchSuite::All || self == suite
    }
}

/// Measures the chosen suites in order and prints one table row per figure.
pub(crate) fn run(args: &Args) -> anyhow::Result<u8> {
    let (suite, dir) = (args.suite, args.dir.as_path());
    let mut figures = Vec::new();
    if suite.includes(BenchSuite::Engine) {
        figures.extend(bench::engine(dir, args.items)?);
    }
    if suite.includes(BenchSuite::Llm) {
        figures.extend(llm_figures(dir, args.requests)?);
    }
    if suite.includes(BenchSuite::World) {
        figures.extend(bench_world::world(Path::new("datasets"))?);
    }
    if suite.includes(BenchSuite::Episodes) {
        figures.extend(bench_episodes::episodes(dir)?);
    }
    if suite.includes(BenchSuite::Judge) {
        figures.extend(bench_judge::judge(dir)?);
    }
    if suite.includes(BenchSuite::Budget) {
        figures.extend(budget_figures(dir, args.inspect_python.as_deref())?);
    }
    println!("| figure | measured | target |\n|---|---|---|");
    for f in figures {
        println!("| {} | {} | {} |", f.name, f.value, f.target);
    }
    Ok(0)
}

/// The model client alone, then LLM episodes, each at local and at hosted-API-like latency.
fn llm_figures(dir: &Path, requests: usize) -> anyhow::Result<Vec<Figure>> {
    let mut figures = bench::llm(dir, requests, 64, 100)?;
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
    Ok(figures)
}

/// A 2M-token, 500-request-per-minute tier, ten minutes in one, ~100k-token prompts answered
/// after 1 s: one model (beside inspect_ai, given its Python), then three sharing the budget.
fn budget_figures(dir: &Path, inspect_python: Option<&Path>) -> anyhow::Result<Vec<Figure>> {
    let mut figures = Vec::new();
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
        let inspect = inspect_python.filter(|_| models == 1);
        figures.extend(bench_budget::budget(dir, &load, inspect)?);
    }
    Ok(figures)
}
