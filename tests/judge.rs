//! The judge stage through the real binary: released-style tasks played by the oracle and the
//! defaults-only agent, judged per episode from the stored Parquet tables. The oracle passes
//! every criterion; the defaults agent fails personalization with failure labels; a re-run is
//! served from the cache; an LLM mode without a model is a located input error (exit 2).

use std::collections::BTreeMap;

use polars::prelude::*;

use crate::common::*;

fn pipeline() -> String {
    let head = world_and_candidates("judging", "", &repo("datasets/tasks"), 8, 5);
    let stages = validated_episodes("{ agent: oracle }", "{ agent: [oracle, defaults] }");
    format!(
        "{head}{stages}  judged:
    kind: judge
    inputs: [episodes.episodes, episodes.steps, validated.bundles, world.sources, world.history_events]
    per_item: episode_id
    params: {{ prompts: '{prompts}' }}
",
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

fn f64s(df: &DataFrame, col: &str) -> Vec<Option<f64>> {
    df.column(col)
        .expect("column")
        .f64()
        .expect("f64")
        .iter()
        .collect()
}

#[test]
fn hybrid_scores_mix_both_judges_and_llm_verdicts_replay_offline() {
    use prefflow_stages::llm::mock::{completion, Behavior, ScriptedServer};
    let verdict = serde_json::json!({"verdict": "pass", "reason": "the trajectory shows it"});
    let server =
        ScriptedServer::start(vec![], Behavior::ok(completion(&verdict.to_string(), 7, 3)));
    let ws = Workspace::new();
    let llm = format!(
        "params: {{ mode: hybrid, lambda: 0.5, llm: {{ base_url: '{}', model: judge, max_retries: 0 }}, prompts:",
        server.url
    );
    ws.write("p.yaml", &pipeline().replace("params: { prompts:", &llm));
    ws.run_ok("p.yaml", &[]);
    let calls = server.requests().len();
    let verdicts = ws.table("judged.verdicts", Some("agent=defaults"));
    assert_eq!(
        calls,
        verdicts.height(),
        "one LLM call per criterion of every episode of both variants"
    );
    let scores = ws.table("judged.scores", Some("agent=defaults"));
    // Recompute each episode's rule fraction from its rule verdict rows; the LLM passed all.
    let (ids, modes, verdict) = (
        strs(&verdicts, "episode_id"),
        strs(&verdicts, "mode"),
        strs(&verdicts, "verdict"),
    );
    for (i, id) in strs(&scores, "episode_id").iter().enumerate() {
        let rule: Vec<bool> = (0..verdicts.height())
            .filter(|&r| ids[r] == *id && modes[r].as_deref() == Some("rule"))
            .map(|r| verdict[r].as_deref() == Some("pass"))
            .collect();
        let s_rule = rule.iter().filter(|p| **p).count() as f64 / rule.len() as f64;
        let score = f64s(&scores, "score")[i].expect("score");
        assert!(
            (score - (0.5 * s_rule + 0.5)).abs() < 1e-9,
            "{id:?}: {score} vs {s_rule}"
        );
    }
    assert!(f64s(&scores, "lambda").iter().all(|l| *l == Some(0.5)));

    // A new λ re-runs the stage; offline, every verdict comes from the recorded calls.
    ws.run_ok("p.yaml", &["--offline", "--set", "judged.lambda=0.25"]);
    assert_eq!(server.requests().len(), calls, "no new model call");
    let scores = ws.table("judged.scores", Some("agent=oracle"));
    assert!(f64s(&scores, "score").iter().all(|s| *s == Some(1.0)));
    assert!(f64s(&scores, "lambda").iter().all(|l| *l == Some(0.25)));
}
