//! Task subsets (`run --tasks / --sample / --limit`): episode stages play only the chosen tasks,
//! downstream tables count what was played (Table 1's `n`), `plan` says how many of how many,
//! and every task is the same cached item as in a full run — a full run afterwards plays only
//! the rest, and a subset after a full run plays no episode.

use polars::prelude::*;

use crate::common::*;

/// World, 24 candidates validated, oracle and defaults per task, judged, aggregated.
fn pipeline() -> String {
    let head = world_and_candidates("subsets", "", &repo("datasets/tasks"), 24, 5);
    let episodes = validated_episodes(
        "{ max_steps: 30 }",
        "{ agent: [oracle, defaults], history: [all] }",
    );
    format!(
        "{head}{episodes}  judged:
    kind: judge
    inputs: [episodes.episodes, episodes.steps, validated.bundles, world.sources, world.history_events]
    per_item: episode_id
  table:
    kind: aggregate
    gather: true
    inputs: [judged.scores, judged.interaction, judged.verdicts, episodes.episodes]
    params: {{ resamples: 20 }}
"
    )
}

const ORACLE: &str = "agent=oracle,history=all";

fn items(record: &serde_json::Value, label: &str) -> (u64, u64) {
    let inst = record["instances"]
        .as_array()
        .and_then(|a| {
            a.iter().find(|i| {
                format!(
                    "{}[{}]",
                    i["stage"].as_str().unwrap_or_default(),
                    i["variant"].as_str().unwrap_or_default()
                ) == label
            })
        })
        .unwrap_or_else(|| panic!("no {label} in {record}"));
    (
        inst["items"]["executed"].as_u64().unwrap_or(0),
        inst["items"]["cached"].as_u64().unwrap_or(0),
    )
}

fn task_ids(df: &DataFrame) -> Vec<String> {
    let mut ids: Vec<String> = column_texts(df, "task_id").into_iter().flatten().collect();
    ids.sort();
    ids.dedup();
    ids
}

fn success_n(ws: &Workspace) -> Vec<(String, String)> {
    let t = ws.table("table.table1", None);
    let v = column_texts(&t, "variant");
    let m = column_texts(&t, "metric");
    let n = column_texts(&t, "n");
    (0..t.height())
        .filter(|&i| m[i].as_deref() == Some("success"))
        .map(|i| {
            (
                v[i].clone().unwrap_or_default(),
                n[i].clone().unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn a_subset_plays_only_its_tasks_and_shares_them_with_the_full_run() {
    let ws = Workspace::new();
    ws.write("p.yaml", &pipeline());

    // `plan` says which subset and how many of how many, before anything runs downstream.
    ws.run_ok("p.yaml", &["--only", "validated"]);
    let all = task_ids(&ws.table("validated.tasks", None));
    assert!(all.len() >= 12, "{} validated tasks", all.len());
    let plan = ws.cli(&["plan", "p.yaml", "--sample", "6"]).expect_code(0);
    assert!(
        plan.stderr.contains("subset: --sample 6"),
        "{}",
        plan.stderr
    );
    assert!(
        plan.stdout.contains(&format!(
            "[6 of 6 items to run — 6 of {} by --sample 6 --sample-seed 0",
            all.len()
        )),
        "{}",
        plan.stdout
    );

    // A stratified sample of 6: only those tasks are played, judged and counted.
    let record = ws.run_ok("p.yaml", &["--sample", "6"]);
    assert_eq!(items(&record, &format!("episodes[{ORACLE}]")), (6, 0));
    let played = task_ids(&ws.table("episodes.episodes", Some(ORACLE)));
    assert_eq!(played.len(), 6);
    assert!(played.iter().all(|t| all.contains(t)));
    for (variant, n) in success_n(&ws) {
        assert_eq!(n, "6", "{variant}: Table 1's n is the subset");
    }

    // Two of those tasks by id: nothing plays. (The judge's items read the whole `steps`
    // table, so they are judged again over the new episode set; a judge model's calls would
    // replay from the record.)
    let two = format!("{},{}", played[0], played[1]);
    let record = ws.run_ok("p.yaml", &["--tasks", &two]);
    assert_eq!(items(&record, &format!("episodes[{ORACLE}]")), (0, 2));
    assert_eq!(
        items(&record, "episodes[agent=defaults,history=all]"),
        (0, 2)
    );
    assert_eq!(
        task_ids(&ws.table("episodes.episodes", Some(ORACLE))),
        played[..2]
    );

    // The full run plays only the rest.
    let record = ws.run_ok("p.yaml", &[]);
    let rest = (all.len() - 6) as u64;
    assert_eq!(items(&record, &format!("episodes[{ORACLE}]")), (rest, 6));
    for (variant, n) in success_n(&ws) {
        assert_eq!(n, all.len().to_string(), "{variant}");
    }

    // After it, `--limit 3` is a cache hit for every episode: the first three tasks of the input.
    let record = ws.run_ok("p.yaml", &["--limit", "3"]);
    assert_eq!(items(&record, &format!("episodes[{ORACLE}]")), (0, 3));
    assert_eq!(
        task_ids(&ws.table("episodes.episodes", Some(ORACLE))).len(),
        3
    );
}

#[test]
fn subset_mistakes_are_usage_errors_naming_the_fix() {
    let ws = Workspace::new();
    ws.write("p.yaml", &pipeline());
    ws.run_ok("p.yaml", &["--only", "validated"]);
    let known = task_ids(&ws.table("validated.tasks", None));
    let typo = format!("{}x", known[0]);
    let out = ws.cli(&["run", "p.yaml", "--tasks", &typo, "--progress", "none"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains(&format!("`{typo}` (did you mean `{}`?)", known[0])),
        "{}",
        out.stderr
    );
    let out = ws.cli(&["plan", "p.yaml", "--sample", "3", "--limit", "2"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    // A pipeline without an episode stage has nothing to take a subset of.
    ws.write(
        "w.yaml",
        &world_and_candidates("w", "", &repo("datasets/tasks"), 4, 5),
    );
    let out = ws.cli(&["plan", "w.yaml", "--limit", "2"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("no per-item episode stage"),
        "{}",
        out.stderr
    );
}
