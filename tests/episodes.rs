//! Episodes of the honest baselines through the real binary: the shipped ablation pipelines are
//! valid and sweep what they say, and changing one swept value of an ablation re-runs only that
//! variant's episodes while the others come from the cache.

use polars::prelude::*;
use serde_json::Value;

use crate::common::*;

/// A history ablation on a small task set: the dining templates only, validated, then the
/// `heuristic` agent per exposure in `exposures`.
fn ablation(templates: &str, exposures: &str) -> String {
    let head = world_and_candidates("ablation-small", "", templates, 6, 7);
    let stages = validated_episodes(
        "{ agent: heuristic, history: all }",
        &format!("{{ history: {exposures} }}"),
    );
    format!("{head}{stages}")
}

fn episodes_instance<'a>(record: &'a Value, variant: &str) -> &'a Value {
    record["instances"]
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|i| i["stage"] == "episodes" && i["variant"] == variant)
        })
        .unwrap_or_else(|| panic!("no episodes variant `{variant}` in {record}"))
}

fn items(instance: &Value) -> (u64, u64, u64) {
    let n = |k: &str| instance["items"][k].as_u64().unwrap_or_default();
    (n("total"), n("executed"), n("cached"))
}

fn column_sum(df: &DataFrame, col: &str) -> u64 {
    df.column(col)
        .expect("column")
        .cast(&DataType::UInt64)
        .expect("numeric")
        .u64()
        .expect("u64")
        .iter()
        .map(|v| v.unwrap_or_default())
        .sum()
}

#[test]
fn the_shipped_ablations_sweep_their_dimension_over_every_agent_variant() {
    let ws = Workspace::new();
    for (file, dims, variants) in [
        ("pipelines/ablation-history.yaml", "sweep=agent,history", 6),
        ("pipelines/ablation-clarify.yaml", "sweep=agent,clarify", 4),
        ("pipelines/iprefbench.yaml", "sweep=agent,history", 4),
    ] {
        let out = ws.cli(&["dag", &repo(file)]).expect_code(0);
        let line = out
            .stdout
            .lines()
            .find(|l| l.starts_with("episodes "))
            .unwrap_or_else(|| panic!("{file}: no episodes stage in\n{}", out.stdout));
        assert!(line.contains(dims), "{file}: {line}");
        assert!(
            line.contains(&format!("({variants} variants)")),
            "{file}: {line}"
        );
    }
}

#[test]
fn changing_one_exposure_reruns_only_that_variants_episodes() {
    let ws = Workspace::new();
    let templates = ws.path().join("templates");
    std::fs::create_dir_all(&templates).expect("mkdir");
    std::fs::copy(
        repo("datasets/tasks/dining.yaml"),
        templates.join("dining.yaml"),
    )
    .expect("copy templates");
    let t = templates.to_string_lossy().into_owned();
    ws.write("ablation.yaml", &ablation(&t, r#"["none", "top_k:10"]"#));
    let first = ws.run_ok("ablation.yaml", &[]);
    let (total, executed, cached) = items(episodes_instance(&first, "history=none"));
    assert!(total >= 3, "a few validated dining tasks: {first}");
    assert_eq!((executed, cached), (total, 0));

    ws.write("ablation.yaml", &ablation(&t, r#"["none", "top_k:50"]"#));
    let second = ws.run_ok("ablation.yaml", &[]);
    let st = statuses(&second);
    assert_eq!(st["world"], "cached");
    assert_eq!(st["validated"], "cached");
    assert_eq!(st["episodes[history=none]"], "cached");
    assert_eq!(st["episodes[history=top_k:50]"], "executed");
    assert_eq!(
        items(episodes_instance(&second, "history=top_k:50")),
        (total, total, 0),
        "every episode of the changed variant ran"
    );
    assert_eq!(summary(&second, "items_executed"), total);

    // The exposures differ as named: nothing shown without history, and with no evidence the
    // heuristic asks at least as often as with 50 relevant events.
    let none = ws.table("episodes.episodes", Some("history=none"));
    let top = ws.table("episodes.episodes", Some("history=top_k:50"));
    assert_eq!(column_sum(&none, "shown_events"), 0);
    assert!(column_sum(&top, "shown_events") > 0);
    assert!(
        column_sum(&none, "ask_user_calls") >= column_sum(&top, "ask_user_calls"),
        "none {} vs top_k:50 {}",
        column_sum(&none, "ask_user_calls"),
        column_sum(&top, "ask_user_calls")
    );
}
