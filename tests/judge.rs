//! The judge stage through the real binary: released-style tasks played by the oracle and the
//! defaults-only agent, judged per episode from the stored Parquet tables. The oracle passes
//! every criterion; the defaults agent fails personalization with failure labels; a re-run is
//! served from the cache; an LLM mode without a model is a located input error (exit 2).

use std::collections::BTreeMap;
use std::path::PathBuf;

use polars::prelude::*;

use crate::common::*;

fn repo(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

fn pipeline() -> String {
    format!(
        "pipeline: judging
stages:
  world:
    kind: build_world
    params: {{ persona: '{persona}', apps: '{apps}' }}
  candidates:
    kind: generate_tasks
    inputs: [world.sources, world.history_events]
    params: {{ templates: '{tasks}', count: 8, seed: 5 }}
  validated:
    kind: validate_tasks
    inputs: [candidates.bundles, world.sources, world.history_events]
    per_item: task_id
  episodes:
    kind: run_episodes
    inputs: [validated.bundles, world.sources, world.history_events]
    per_item: task_id
    params: {{ agent: oracle }}
    sweep: {{ agent: [oracle, defaults] }}
  judged:
    kind: judge
    inputs: [episodes.episodes, episodes.steps, validated.bundles, world.sources, world.history_events]
    per_item: episode_id
    params: {{ prompts: '{prompts}' }}
",
        persona = repo("datasets/personas/maya.yaml"),
        apps = repo("datasets/apps"),
        tasks = repo("datasets/tasks"),
        prompts = repo("datasets/prompts"),
    )
}

fn strs(df: &DataFrame, col: &str) -> Vec<Option<String>> {
    df.column(col)
        .expect("column")
        .str()
        .expect("strings")
        .iter()
        .map(|s| s.map(str::to_string))
        .collect()
}

fn bools(df: &DataFrame, col: &str) -> Vec<Option<bool>> {
    df.column(col)
        .expect("column")
        .bool()
        .expect("bools")
        .iter()
        .collect()
}

#[test]
fn oracle_passes_defaults_fail_with_labels_and_reruns_are_cached() {
    let ws = Workspace::new();
    ws.write("p.yaml", &pipeline());
    ws.run_ok("p.yaml", &[]);
    let oracle = ws.table("judged.scores", Some("agent=oracle"));
    let defaults = ws.table("judged.scores", Some("agent=defaults"));
    let episodes = ws.table("episodes.episodes", Some("agent=oracle"));
    assert!(oracle.height() > 0);
    assert_eq!(
        oracle.height(),
        episodes.height(),
        "one score row per episode"
    );
    assert!(bools(&oracle, "success").iter().all(|s| *s == Some(true)));
    assert!(bools(&defaults, "success")
        .iter()
        .all(|s| *s == Some(false)));

    let verdicts = ws.table("judged.verdicts", Some("agent=defaults"));
    let verdict = strs(&verdicts, "verdict");
    let labels = strs(&verdicts, "failure_label");
    let kinds = strs(&verdicts, "kind");
    let mut by_label: BTreeMap<String, usize> = BTreeMap::new();
    for i in 0..verdicts.height() {
        let failed = verdict[i].as_deref() == Some("fail");
        assert_eq!(
            failed,
            labels[i].is_some(),
            "row {i}: a label exactly on failures"
        );
        if kinds[i].as_deref() == Some("personalization") {
            assert!(failed, "row {i}: defaults never personalize");
            *by_label
                .entry(labels[i].clone().unwrap_or_default())
                .or_default() += 1;
        }
    }
    assert!(!by_label.is_empty(), "{by_label:?}");

    let interaction = ws.table("judged.interaction", Some("agent=defaults"));
    let precision = interaction.column("precision").expect("precision");
    assert_eq!(
        precision.null_count(),
        interaction.height(),
        "no questions: precision undefined"
    );
    let asked = ws.table("judged.interaction", Some("agent=oracle"));
    let (slots, matched) = (
        asked
            .column("ask_only_slots")
            .expect("c")
            .u32()
            .expect("u32")
            .sum(),
        asked
            .column("matched_ask_only")
            .expect("c")
            .u32()
            .expect("u32")
            .sum(),
    );
    assert_eq!(slots, matched, "the oracle asks every ask-only slot");

    let again = ws.run_ok("p.yaml", &[]);
    assert_eq!(statuses(&again)["judged[agent=oracle]"], "cached");
}

#[test]
fn an_llm_mode_without_a_model_is_an_input_error() {
    let ws = Workspace::new();
    ws.write(
        "p.yaml",
        &pipeline().replace("params: { prompts:", "params: { mode: llm, prompts:"),
    );
    let run = ws.cli(&["run", "p.yaml", "--progress", "none"]);
    assert_eq!(run.code, 2, "stderr: {}", run.stderr);
    assert!(run.stderr.contains("need `llm"), "{}", run.stderr);
}
