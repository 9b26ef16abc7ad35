//! The kind API's contracts, through the CLI: `prepare` once per instance, async items waiting on
//! the runtime instead of threads, `when:`, one retry layer, usage accounting.

use polars::prelude::*;

use crate::common::*;

fn column_u64(df: &DataFrame, name: &str) -> Vec<u64> {
    df.column(name)
        .unwrap_or_else(|_| panic!("column {name}"))
        .cast(&DataType::UInt64)
        .expect("cast")
        .u64()
        .expect("u64")
        .iter()
        .map(|v| v.unwrap_or_default())
        .collect()
}

fn column_i64(df: &DataFrame, name: &str) -> Vec<i64> {
    df.column(name)
        .unwrap_or_else(|_| panic!("column {name}"))
        .i64()
        .expect("i64")
        .iter()
        .map(|v| v.unwrap_or_default())
        .collect()
}

/// A read_table of `data/rows.csv` and a per-item stage of `kind` over it, swept over two labels.
fn prepared_pipeline(kind: &str) -> String {
    format!(
        r#"
pipeline: prepared
stages:
  rows:
    kind: read_table
    params: {{ path: data/rows.csv }}
  work:
    kind: {kind}
    inputs: [rows]
    per_item: id
    concurrency: 3
    sweep: {{ label: [a, b] }}
    params: {{ show_prepare: true }}
"#
    )
}

#[test]
fn prepare_runs_once_per_instance_and_sees_the_whole_input() {
    for kind in ["probe", "probe_async"] {
        let ws = Workspace::new();
        ws.write("data/rows.csv", &numbers_csv(12));
        ws.write("p.yaml", &prepared_pipeline(kind));
        ws.run_ok("p.yaml", &[]);
        let a = ws.table("work", Some("label=a"));
        let b = ws.table("work", Some("label=b"));
        let (ids_a, ids_b) = (column_u64(&a, "prepared_id"), column_u64(&b, "prepared_id"));
        assert_eq!(ids_a.len(), 12, "{kind}");
        assert!(ids_a.iter().all(|i| *i == ids_a[0]), "{kind}: {ids_a:?}");
        assert!(ids_b.iter().all(|i| *i == ids_b[0]), "{kind}: {ids_b:?}");
        assert_ne!(ids_a[0], ids_b[0], "{kind}: one prepare per instance");
        assert!(
            column_u64(&a, "prepared_rows").iter().all(|n| *n == 12),
            "{kind}: prepare sees every row, items see their own"
        );

        // Two new rows: only they run, under one new prepare; the cached items keep theirs.
        ws.write("data/rows.csv", &numbers_csv(14));
        let rec = ws.run_ok("p.yaml", &[]);
        assert_eq!(summary(&rec, "items_executed"), 4, "{kind}");
        let a = ws.table("work", Some("label=a"));
        let ids = column_u64(&a, "prepared_id");
        assert!(ids[..12].iter().all(|i| *i == ids_a[0]), "{kind}: {ids:?}");
        assert!(ids[12] == ids[13] && ids[12] != ids_a[0], "{kind}: {ids:?}");
        assert!(column_u64(&a, "prepared_rows")[12..]
            .iter()
            .all(|n| *n == 14));
    }
}

/// How many of the `(start, end)` spans overlap at the busiest moment.
fn max_overlap(df: &DataFrame) -> usize {
    let spans: Vec<(i64, i64)> = column_i64(df, "probe_start_us")
        .into_iter()
        .zip(column_i64(df, "probe_end_us"))
        .collect();
    spans
        .iter()
        .map(|(s, _)| spans.iter().filter(|(s2, e2)| s2 <= s && s < e2).count())
        .max()
        .unwrap_or(0)
}

#[test]
fn async_items_wait_on_the_runtime_not_on_threads() {
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(256));
    ws.write(
        "p.yaml",
        r#"
pipeline: waits
stages:
  rows:
    kind: read_table
    params: { path: data/rows.csv }
  calls:
    kind: probe_async
    inputs: [rows]
    per_item: id
    params: { delay_ms: 400, timing: true }
"#,
    );
    ws.run_ok("p.yaml", &[]);
    let df = ws.table("calls", None);
    assert_eq!(df.height(), 256);
    let overlap = max_overlap(&df);
    assert!(
        overlap >= 200,
        "256 waiting items should be in flight together, saw {overlap}"
    );
    let threads = column_u64(&df, "probe_threads")
        .into_iter()
        .max()
        .unwrap_or(0);
    if threads > 0 {
        assert!(
            threads < 64,
            "{threads} OS threads for {overlap} items in flight"
        );
    } else {
        eprintln!("skipped the thread count: /proc/self/status is not readable here");
    }
}

const WHEN: &str = r#"
pipeline: when
stages:
  rows:
    kind: read_table
    params: { path: data/rows.csv }
  always:
    kind: probe
    inputs: [rows]
  maybe:
    kind: probe
    inputs: [rows]
    when: { env: PREFFLOW_TEST_WHEN }
  after_maybe:
    kind: query
    inputs: [maybe]
    params: { sql: "SELECT COUNT(*) AS n FROM maybe" }
  gathered:
    kind: query
    gather: true
    inputs: [always, maybe]
    params: { sql: "SELECT COUNT(*) AS n FROM always" }
"#;

fn run_when(ws: &Workspace, set: bool) -> (String, serde_json::Value) {
    let mut cmd = ws.command(&["run", "when.yaml", "--progress", "none"]);
    if set {
        cmd.env("PREFFLOW_TEST_WHEN", "1");
    } else {
        cmd.env_remove("PREFFLOW_TEST_WHEN");
    }
    let out = cmd.output().expect("spawn");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    (stdout, ws.last_run("when"))
}

#[test]
fn when_disables_a_stage_and_what_needs_it_until_its_condition_holds() {
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(5));
    ws.write("when.yaml", WHEN);
    let plan = ws
        .command(&["plan", "when.yaml"])
        .env_remove("PREFFLOW_TEST_WHEN")
        .output()
        .expect("plan");
    let plan = String::from_utf8_lossy(&plan.stdout).into_owned();
    assert!(
        plan.contains("off    maybe (when: env PREFFLOW_TEST_WHEN is not set)"),
        "{plan}"
    );
    assert!(
        plan.contains("off    after_maybe (upstream `maybe` is disabled)"),
        "{plan}"
    );

    let (stdout, rec) = run_when(&ws, false);
    let s = statuses(&rec);
    assert_eq!(s["maybe"], "disabled");
    assert_eq!(s["after_maybe"], "disabled");
    assert_eq!(s["gathered"], "executed", "a gather goes on without it");
    assert_eq!(summary(&rec, "stages_disabled"), 2);
    assert!(
        stdout.contains("disabled") && stdout.contains("PREFFLOW_TEST_WHEN is not set"),
        "{stdout}"
    );

    let (_, rec) = run_when(&ws, true);
    let s = statuses(&rec);
    assert_eq!(s["maybe"], "executed");
    assert_eq!(s["after_maybe"], "executed");
    assert_eq!(s["gathered"], "executed", "its inputs grew");
    let key = instance(&rec, "maybe")["recipe_key"]
        .as_str()
        .expect("key")
        .to_string();
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            ws.store()
                .join("recipes")
                .join(&key[..2])
                .join(format!("{key}.json")),
        )
        .expect("manifest"),
    )
    .expect("json");
    assert_eq!(manifest["key"]["when"], "env PREFFLOW_TEST_WHEN set");

    // Unset again: disabled again, and the gather's result without it is still cached.
    let (_, rec) = run_when(&ws, false);
    let s = statuses(&rec);
    assert_eq!(s["maybe"], "disabled");
    assert_eq!(s["gathered"], "cached");
}

#[test]
fn a_when_without_a_condition_is_a_located_plan_error() {
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(3));
    ws.write(
        "when.yaml",
        &WHEN.replace("{ env: PREFFLOW_TEST_WHEN }", "{ env: 9LIVES }"),
    );
    let out = ws.cli(&["plan", "when.yaml"]).expect_code(2);
    assert!(
        out.stderr.contains("when.yaml:")
            && out
                .stderr
                .contains("`9LIVES`, which is not an environment variable name"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_failure_a_client_already_retried_is_not_retried_again() {
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(3));
    ws.write(
        "p.yaml",
        r#"
pipeline: retried
stages:
  rows:
    kind: read_table
    params: { path: data/rows.csv }
  work:
    kind: probe_async
    inputs: [rows]
    per_item: id
    retries: 3
    retry_backoff_ms: 1
    params: { exhausted_items: [r0001], flaky_items: [r0002], flaky_attempts: 2 }
"#,
    );
    ws.cli(&["run", "p.yaml", "--progress", "none"])
        .expect_code(1);
    let rec = ws.last_run("retried");
    let errors = rec["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["item"], "r0001");
    assert_eq!(errors[0]["kind"], "transient");
    assert_eq!(errors[0]["attempts"], 1, "the engine did not retry it");
    // The flaky item was retried by the engine and succeeded on its third attempt.
    assert_eq!(instance(&rec, "work")["items"]["executed"], 2);
}
