//! The inspection commands: plan, why, show, dag, gc, schema.

use crate::common::*;

const PIPE: &str = r#"
pipeline: tools
params: { threshold: 3 }
stages:
  source:
    kind: read_table
    params: { path: data/numbers.csv }
  filtered:
    kind: query
    inputs: [source]
    params: { sql: "SELECT * FROM source WHERE value >= ${params.threshold}" }
  export:
    kind: write_table
    inputs: [filtered]
    params: { path: out/filtered.csv }
"#;

fn ws() -> Workspace {
    let ws = Workspace::new();
    ws.write("data/numbers.csv", &numbers_csv(20));
    ws.write("tools.yaml", PIPE);
    ws
}

#[test]
fn plan_and_why_name_the_changed_field() {
    let ws = ws();
    let before = ws.cli(&["plan", "tools.yaml"]).expect_code(0);
    assert!(
        before.stdout.contains("miss   source") && before.stdout.contains("never run"),
        "{}",
        before.stdout
    );
    ws.run_ok("tools.yaml", &[]);
    let same = ws.cli(&["plan", "tools.yaml"]).expect_code(0);
    assert_eq!(same.stdout.matches("hit").count(), 3, "{}", same.stdout);
    let changed = ws
        .cli(&["plan", "tools.yaml", "--set", "threshold=5"])
        .expect_code(0);
    assert!(
        changed.stdout.contains("hit    source"),
        "{}",
        changed.stdout
    );
    assert!(
        changed.stdout.contains("miss   filtered"),
        "{}",
        changed.stdout
    );
    assert!(
        changed.stdout.contains("WHERE value >= 3") && changed.stdout.contains("WHERE value >= 5"),
        "{}",
        changed.stdout
    );
    let why = ws
        .cli(&["why", "filtered", "--set", "threshold=5"])
        .expect_code(0);
    assert!(why.stdout.contains("params.sql"), "{}", why.stdout);
    ws.write("data/numbers.csv", &numbers_csv(21));
    let why = ws.cli(&["why", "filtered"]).expect_code(0);
    assert!(
        why.stdout.contains("depends on `source`")
            && why
                .stdout
                .contains("file `data/numbers.csv`: content changed"),
        "{}",
        why.stdout
    );
}

#[test]
fn show_prints_rows_and_exports_are_rewritten_when_deleted() {
    let ws = ws();
    ws.run_ok("tools.yaml", &[]);
    let shown = ws.cli(&["show", "filtered", "--head", "2"]).expect_code(0);
    assert!(
        shown.stdout.contains("filtered.table:") && shown.stdout.contains("r0001"),
        "{}",
        shown.stdout
    );
    let df = ws.table("filtered.table", None);
    assert!(df.height() > 0 && df.height() < 20);
    let exported = std::fs::read_to_string(ws.path().join("out/filtered.csv")).expect("export");
    assert_eq!(exported.lines().count(), df.height() + 1);
    std::fs::remove_file(ws.path().join("out/filtered.csv")).expect("rm");
    let rec = ws.run_ok("tools.yaml", &[]);
    assert_eq!(statuses(&rec)["export"], "executed");
    assert!(ws.path().join("out/filtered.csv").exists());
    let missing = ws.cli(&["show", "nosuch"]).expect_code(2);
    assert!(
        missing.stderr.contains("no stage `nosuch`"),
        "{}",
        missing.stderr
    );
}

#[test]
fn gc_removes_only_unreachable_artifacts() {
    let ws = ws();
    ws.run_ok("tools.yaml", &[]);
    ws.run_ok("tools.yaml", &["--set", "threshold=5"]);
    let dry = ws.cli(&["gc", "--dry-run"]).expect_code(0);
    assert!(
        dry.stdout.contains("would remove") && dry.stdout.contains("recipes/"),
        "{}",
        dry.stdout
    );
    let before = count_files(&ws.store());
    ws.cli(&["gc"]).expect_code(0);
    assert!(count_files(&ws.store()) < before);
    let rec = ws.run_ok("tools.yaml", &["--set", "threshold=5"]);
    assert_eq!(
        summary(&rec, "stages_executed"),
        0,
        "the latest run survives gc"
    );
    let rec = ws.run_ok("tools.yaml", &[]);
    assert_eq!(
        statuses(&rec)["filtered"],
        "executed",
        "the older result was collected"
    );
}

#[test]
fn dag_renders_all_formats() {
    let ws = ws();
    let text = ws.cli(&["dag", "tools.yaml"]).expect_code(0).stdout;
    assert!(text.contains("filtered [query] ← source"), "{text}");
    let dot = ws
        .cli(&["dag", "tools.yaml", "--format", "dot"])
        .expect_code(0)
        .stdout;
    assert!(dot.contains("\"source\" -> \"filtered\""), "{dot}");
    let mermaid = ws
        .cli(&["dag", "tools.yaml", "--format", "mermaid"])
        .expect_code(0)
        .stdout;
    assert!(mermaid.contains("filtered --> export"), "{mermaid}");
}

#[test]
fn published_schema_matches_the_binary() {
    let ws = Workspace::new();
    let printed = ws.cli(&["schema"]).expect_code(0).stdout;
    let published = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/pipeline.schema.json"
    ))
    .expect("docs/pipeline.schema.json");
    let a: serde_json::Value = serde_json::from_str(&printed).expect("json");
    let b: serde_json::Value = serde_json::from_str(&published).expect("json");
    assert_eq!(
        a, b,
        "regenerate with: cargo run -- schema > docs/pipeline.schema.json"
    );
    for field in [
        "kind",
        "inputs",
        "per_item",
        "sweep",
        "resources",
        "retries",
    ] {
        assert!(
            printed.contains(&format!("\"{field}\"")),
            "schema documents `{field}`"
        );
    }
}

#[test]
fn example_pipeline_runs_offline() {
    let ws = Workspace::new();
    let root = env!("CARGO_MANIFEST_DIR");
    for f in ["pipelines/example.yaml", "datasets/example/events.csv"] {
        ws.write(
            f,
            &std::fs::read_to_string(format!("{root}/{f}")).expect("repo file"),
        );
    }
    let rec = ws.run_ok("pipelines/example.yaml", &[]);
    assert_eq!(summary(&rec, "stages_failed"), 0);
    assert!(ws.path().join("out/usage-min5.csv").exists());
    assert!(ws.path().join("out/usage-min30.csv").exists());
}

#[test]
fn only_runs_the_named_stage_and_what_it_needs() {
    let ws = ws();
    let rec = ws.run_ok("tools.yaml", &["--only", "filtered"]);
    let s = statuses(&rec);
    assert_eq!(s["source"], "executed");
    assert_eq!(s["filtered"], "executed");
    assert_eq!(s["export"], "not_selected");
    assert!(!ws.path().join("out/filtered.csv").exists());
    let bad = ws
        .cli(&["run", "tools.yaml", "--only", "filterd"])
        .expect_code(2);
    assert!(
        bad.stderr.contains("did you mean `filtered`"),
        "{}",
        bad.stderr
    );
}

#[test]
fn independent_stages_run_concurrently() {
    let ws = Workspace::new();
    ws.write("data/numbers.csv", &numbers_csv(3));
    ws.write(
        "par.yaml",
        "pipeline: par\nstages:\n  source: { kind: read_table, params: { path: data/numbers.csv } }\n  a: { kind: probe, inputs: [source], params: { delay_ms: 400, timing: true } }\n  b: { kind: probe, inputs: [source], params: { delay_ms: 400, timing: true, label: b } }\n",
    );
    ws.run_ok("par.yaml", &[]);
    let span = |stage: &str| {
        let df = ws.table(stage, None);
        let get = |c: &str| {
            df.column(c)
                .expect("timing column")
                .i64()
                .expect("i64")
                .get(0)
                .expect("value")
        };
        (get("probe_start_us"), get("probe_end_us"))
    };
    let (a0, a1) = span("a");
    let (b0, b1) = span("b");
    assert!(
        a0 < b1 && b0 < a1,
        "a [{a0}, {a1}] and b [{b0}, {b1}] should overlap"
    );
}
