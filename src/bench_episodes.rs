//! `prefflow bench episodes`: the episode runner's figures on the released task set — the cold
//! time of 130 tasks × 4 built-in agents × 2 history exposures, and peak memory over 10,000
//! episodes. Run from the repository root (it reads `pipelines/taskset.yaml` and `datasets/`).

use std::path::Path;

use anyhow::Context;

use crate::bench::{child, reset, stage_seconds_sum, timed_run, Figure};

/// The episodes stage appended to the task-set pipeline.
fn episodes_stage(sweep: &str, epochs: u32) -> String {
    format!(
        "  episodes:\n    kind: run_episodes\n    inputs: [validated.bundles, world.sources, world.history_events]\n    per_item: task_id\n    params: {{ agent: oracle, history: all, epochs: {epochs}, seed: 7 }}\n    sweep: {sweep}\n"
    )
}

/// Runs both episode figures in `dir`.
pub fn episodes(dir: &Path) -> anyhow::Result<Vec<Figure>> {
    let exe = std::env::current_exe().context("locating the prefflow binary")?;
    let taskset = std::fs::read_to_string("pipelines/taskset.yaml")
        .context("reading pipelines/taskset.yaml (run `prefflow bench` from the repository root)")?;
    let datasets = std::fs::canonicalize("datasets").context("locating datasets/")?;
    let work = dir.join("episodes");
    reset(&work)?;
    std::os::unix::fs::symlink(&datasets, work.join("datasets")).context("linking datasets/")?;
    let mut figures = Vec::new();

    let sweep = "{ agent: [oracle, defaults, ask_all, heuristic], history: [all, \"top_k:10\"] }";
    std::fs::write(work.join("grid.yaml"), format!("{taskset}{}", episodes_stage(sweep, 1)))?;
    child(&exe, &work, &["run", "grid.yaml", "--only", "taskset", "--progress", "none", "-q"])?;
    let cold = timed_run(&exe, &work, "grid.yaml")?;
    let stage = stage_seconds_sum(&work, "taskset", "episodes")?;
    figures.push(Figure {
        name: "130 tasks × 4 built-in agents × 2 history exposures (1,040 episodes), cold".into(),
        value: format!(
            "{:.2} s wall (episodes stages {stage:.2} s summed), {:.0} MB peak RSS",
            cold.seconds, cold.peak_rss_mb
        ),
        target: "< 10 s".into(),
    });

    let many = "{ agent: [heuristic] }";
    std::fs::write(work.join("many.yaml"), format!("{taskset}{}", episodes_stage(many, 77)))?;
    let big = timed_run(&exe, &work, "many.yaml")?;
    figures.push(Figure {
        name: "10,010 episodes (130 tasks × 77 epochs, heuristic, history all)".into(),
        value: format!("{:.2} s wall, {:.0} MB peak RSS", big.seconds, big.peak_rss_mb),
        target: "peak RSS < 500 MB".into(),
    });
    Ok(figures)
}
