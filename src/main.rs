//! The `prefflow` command line: run, inspect and maintain pipelines.

#![deny(missing_docs)]

use std::process::ExitCode;

mod bench;
mod bench_budget;
mod bench_episodes;
mod bench_judge;
mod bench_world;
mod commands;
mod format;
mod pipeline;

use clap::Parser;
use prefflow_engine::Error;
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
    command: commands::Command,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.quiet);
    match commands::dispatch(&cli.command, &cli.store, cli.quiet) {
        Ok(code) => ExitCode::from(code),
        Err(err) => ExitCode::from(report(&err)),
    }
}

/// Prints a command's error and returns its exit code: 2 for the user's mistakes, 3 when the
/// store is busy, 1 otherwise.
fn report(err: &anyhow::Error) -> u8 {
    let engine = err.downcast_ref::<Error>();
    let user = engine.is_some_and(Error::is_user_error);
    match engine {
        // Already `file:line:column: error: …` per problem.
        Some(Error::Config(_)) => eprintln!("{err:#}"),
        _ => eprintln!("error: {err:#}"),
    }
    let busy = matches!(engine, Some(Error::Busy(_)));
    if user {
        2
    } else if busy {
        3
    } else {
        1
    }
}

/// Logs to stderr at `PREFFLOW_LOG`'s level (info by default, warn with `--quiet`).
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
