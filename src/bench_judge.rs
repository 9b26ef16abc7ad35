//! `prefflow bench judge`: judging and aggregation at scale. The 1,040 real episodes of the
//! built-in grid (4 agents × 2 history exposures × 130 released tasks) are replicated as epochs
//! to ~100,000 episodes, then judged by rule (replay in the phone, every criterion, the
//! interaction judge, failure labels) on two threads and aggregated into Table 1 with bootstrap
//! intervals — the work of the `judge` and `aggregate` stages without the engine around it.

use std::path::Path;
use std::time::Instant;

use anyhow::{anyhow, Context};
use polars::prelude::*;
use prefflow_stages::judging::frames::judge_tables;
use prefflow_stages::judging::index::episodes_from_table;
use prefflow_stages::judging::{judge_batch, JudgeIndex, JudgeOptions};
use prefflow_stages::metrics::{aggregate, AggregateOptions, Bootstrap};
use prefflow_stages::world::from_tables::world_from_tables;

use crate::bench::{child, reset, Figure};

/// Copies of the grid's episodes (97 × 1,040 ≈ 100,000).
const COPIES: u32 = 97;

/// Writes the grid's tables as Parquet files in `out/`.
fn export_stages() -> &'static str {
    "  all_episodes: { kind: write_table, gather: true, inputs: [episodes.episodes], params: { path: out/episodes.parquet } }\n  all_steps: { kind: write_table, gather: true, inputs: [episodes.steps], params: { path: out/steps.parquet } }\n  bundles_out: { kind: write_table, inputs: [validated.bundles], params: { path: out/bundles.parquet } }\n  sources_out: { kind: write_table, inputs: [world.sources], params: { path: out/sources.parquet } }\n  history_out: { kind: write_table, inputs: [world.history_events], params: { path: out/history.parquet } }\n"
}

fn read(path: &Path) -> anyhow::Result<DataFrame> {
    let file = std::fs::File::open(path).with_context(|| path.display().to_string())?;
    Ok(ParquetReader::new(file).finish()?)
}

/// `COPIES` copies of `df`, each with `#r<k>` appended to `episode_id` (and `epoch` = k).
fn replicate(df: &DataFrame, with_epoch: bool) -> anyhow::Result<DataFrame> {
    let ids: Vec<String> = df
        .column("episode_id")?
        .str()?
        .iter()
        .map(|s| s.unwrap_or_default().to_string())
        .collect();
    let mut out: Option<DataFrame> = None;
    for k in 0..COPIES {
        let mut copy = df.clone();
        let renamed: Vec<String> = ids.iter().map(|id| format!("{id}#r{k}")).collect();
        copy.with_column(Column::new("episode_id".into(), renamed))?;
        if with_epoch {
            copy.with_column(Column::new("epoch".into(), vec![k; df.height()]))?;
        }
        match &mut out {
            None => out = Some(copy),
            Some(acc) => {
                acc.vstack_mut(&copy)?;
            }
        }
    }
    let mut out = out.ok_or_else(|| anyhow!("nothing to replicate"))?;
    out.rechunk_mut();
    Ok(out)
}

/// Runs the judging + aggregation figure in `dir` (from the repository root).
pub fn judge(dir: &Path) -> anyhow::Result<Vec<Figure>> {
    let exe = std::env::current_exe().context("locating the prefflow binary")?;
    let taskset = std::fs::read_to_string("pipelines/taskset.yaml").context(
        "reading pipelines/taskset.yaml (run `prefflow bench` from the repository root)",
    )?;
    let datasets = std::fs::canonicalize("datasets").context("locating datasets/")?;
    let work = dir.join("judge");
    reset(&work)?;
    std::os::unix::fs::symlink(&datasets, work.join("datasets")).context("linking datasets/")?;
    let sweep = "{ agent: [oracle, defaults, ask_all, heuristic], history: [all, \"top_k:10\"] }";
    let yaml = format!(
        "{taskset}{}{}",
        crate::bench_episodes::episodes_stage(sweep, 1),
        export_stages()
    );
    std::fs::write(work.join("grid.yaml"), yaml)?;
    child(
        &exe,
        &work,
        &["run", "grid.yaml", "--progress", "none", "-q"],
    )?;
    let out = work.join("out");
    let episodes = replicate(&read(&out.join("episodes.parquet"))?, true)?;
    let steps = replicate(&read(&out.join("steps.parquet"))?, false)?;
    let bundles = read(&out.join("bundles.parquet"))?;
    let world = world_from_tables(
        &read(&out.join("sources.parquet"))?,
        &read(&out.join("history.parquet"))?,
    )?;

    let started = Instant::now();
    let index = JudgeIndex::build(&steps, &bundles)?;
    let infos = episodes_from_table(&episodes)?;
    let indexed = started.elapsed().as_secs_f64();
    let judged: Vec<_> = judge_batch(&world, &index, &infos, &JudgeOptions::default(), 2)
        .into_iter()
        .collect::<Result<_, _>>()?;
    let tables = judge_tables(&judged)?;
    let judged_s = started.elapsed().as_secs_f64();
    let table = |name: &str| tables.iter().find(|(n, _)| *n == name).map(|(_, df)| df);
    let scores = table("scores").ok_or_else(|| anyhow!("no scores table"))?;
    let verdicts = table("verdicts").ok_or_else(|| anyhow!("no verdicts table"))?;
    let options = AggregateOptions {
        bootstrap: Bootstrap::default(),
        baseline: None,
    };
    aggregate(
        scores,
        table("interaction"),
        Some(verdicts),
        Some(&episodes),
        &options,
    )?;
    let total = started.elapsed().as_secs_f64();
    Ok(vec![Figure {
        name: format!(
            "judge + aggregate {} episodes ({} criterion verdicts), rule judge, 2 threads, B = 1000",
            infos.len(),
            verdicts.height()
        ),
        value: format!(
            "{total:.2} s (index {indexed:.2} s, judging + tables {:.2} s, aggregation {:.2} s)",
            judged_s - indexed,
            total - judged_s
        ),
        target: "< 5 s".into(),
    }])
}
