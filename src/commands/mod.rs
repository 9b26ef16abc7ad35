//! The subcommands, one module each: its arguments and what it does. [`dispatch`] opens what
//! they share (the `--store` location) and hands over.

use clap::Subcommand;

pub(crate) mod bench;
pub(crate) mod dag;
pub(crate) mod gc;
pub(crate) mod init_store;
pub(crate) mod kinds;
pub(crate) mod plan;
pub(crate) mod run;
pub(crate) mod schema;
pub(crate) mod serve_env;
mod session;
pub(crate) mod show;
pub(crate) mod tables;
pub(crate) mod verify;
pub(crate) mod why;
pub(crate) mod work;

use session::Session;

/// The subcommands of `prefflow`.
#[derive(Subcommand)]
pub(crate) enum Command {
    /// Run a pipeline, reusing every cached result.
    Run(run::Args),
    /// Compute one shard of a cluster job (what each Slurm array task runs; docs/cluster.md).
    /// Exit codes: 0 done, 1 items failed, 2 bad input, 3 could not start.
    Work(work::Args),
    /// Measure performance on generated workloads (see BENCHMARKS.md).
    Bench(bench::Args),
    /// Show what `run` would execute, and why.
    Plan(plan::Args),
    /// Print the stage graph.
    Dag(dag::Args),
    /// Print a stage's tables from the latest successful run (`errors`: the last run's errors;
    /// `runs`: what the runs' model calls cost, by role and model).
    Show(show::Args),
    /// Explain, field by field, what changed for STAGE since its last successful run.
    Why(why::Args),
    /// Delete artifacts that no pipeline's latest run uses. Refuses (exit code 3) while a run
    /// holds a live lease on the store, unless --wait lets it wait for them.
    Gc(gc::Args),
    /// Check every stored object against its hash (or one pipeline's results); report, or
    /// quarantine with --repair, what is damaged so the next run recomputes it.
    Verify(verify::Args),
    /// Make the --store directory shareable by a team: it and everything in it go to the
    /// group, directories become 2775 (setgid) and files group-writable, and every later
    /// write keeps those modes whatever the writer's umask (docs/store.md, "Permissions").
    InitStore(init_store::Args),
    /// Serve the simulated phone over HTTP/JSON (see README: "Serving the phone").
    ServeEnv(serve_env::Args),
    /// Print the JSON Schema of the pipeline format.
    Schema,
    /// List the registered stage kinds.
    Kinds,
    /// Print the inter-stage table contracts (columns, types, meaning) as Markdown:
    /// docs/tables.md is this output.
    Tables,
}

impl Command {
    /// Whether the command reads or writes the store (so a `--store` that cannot be one is
    /// refused before it starts).
    fn uses_store(&self) -> bool {
        matches!(
            self,
            Command::Run(_)
                | Command::Plan(_)
                | Command::Show(_)
                | Command::Why(_)
                | Command::Gc(_)
                | Command::Verify(_)
                | Command::Work(_)
        )
    }
}

/// Runs `command`; the exit code on success (errors are printed and mapped by `main`).
pub(crate) fn dispatch(command: &Command, store: &str, quiet: bool) -> anyhow::Result<u8> {
    let session = Session::new(store, quiet, command.uses_store())?;
    match command {
        Command::Run(args) => run::run(args, &session),
        Command::Work(args) => work::run(args, &session),
        Command::Bench(args) => bench::run(args),
        Command::Plan(args) => plan::run(args, &session),
        Command::Dag(args) => dag::run(args),
        Command::Show(args) => show::run(args, &session),
        Command::Why(args) => why::run(args, &session),
        Command::Gc(args) => gc::run(args, &session),
        Command::Verify(args) => verify::run(args, &session),
        Command::InitStore(args) => init_store::run(args, &session),
        Command::ServeEnv(args) => serve_env::run(args),
        Command::Schema => schema::run(),
        Command::Kinds => kinds::run(),
        Command::Tables => tables::run(),
    }
}
