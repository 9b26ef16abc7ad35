//! Loading a pipeline file into a plan, as every command that takes one does: the registry of
//! kinds, the parameters the environment gives, `--set`, and the task subset of `run`/`plan`.

use std::path::Path;
use std::sync::Arc;

use prefflow_engine::config::PipelineFile;
use prefflow_engine::params::Override;
use prefflow_engine::plan::Plan;
use prefflow_engine::{Error, Registry};

/// Every kind this binary knows: the engine's generic kinds plus the benchmark domain's.
pub(crate) fn registry() -> Registry {
    let mut registry = Registry::with_generic_kinds();
    prefflow_stages::register(&mut registry);
    registry
}

/// The plan of `path` with the overrides `set`.
pub(crate) fn load_plan(path: &Path, set: &[String]) -> anyhow::Result<Plan> {
    Ok(load_file_and_plan(path, set)?.1)
}

/// The pipeline file at `path` and its plan with the overrides `set` (after the environment's).
pub(crate) fn load_file_and_plan(
    path: &Path,
    set: &[String],
) -> anyhow::Result<(PipelineFile, Plan)> {
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

/// What `run` and `plan` select: overrides, stages and a task subset.
#[derive(clap::Args)]
pub(crate) struct Select {
    /// Override a parameter: `seed=3`, `params.seed=3` or `STAGE.param=value`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub(crate) set: Vec<String>,
    /// Run only this stage and what it needs (repeatable).
    #[arg(long)]
    pub(crate) only: Vec<String>,
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
    pub(crate) fn plan(&self, path: &Path, quiet: bool) -> anyhow::Result<(PipelineFile, Plan)> {
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
