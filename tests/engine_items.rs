//! Per-item stages: resume after SIGKILL, incremental items, failures, retries, pools.

use std::time::{Duration, Instant};

use crate::common::*;

fn items_pipeline(delay_ms: u64, extra: &str) -> String {
    format!(
        r#"
pipeline: items
resources: {{ slots: 2 }}
stages:
  rows:
    kind: read_table
    params: {{ path: data/rows.csv }}
  work:
    kind: probe
    inputs: [rows]
    per_item: id
    concurrency: 4
    resources: [slots]
    params: {{ delay_ms: {delay_ms}{extra} }}
  total:
    kind: query
    inputs: [work]
    params: {{ sql: "SELECT COUNT(*) AS n, SUM(value) AS s FROM work" }}
"#
    )
}

#[test]
fn a_killed_run_resumes_with_exactly_the_uncommitted_items() {
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(40));
    ws.write("items.yaml", &items_pipeline(150, ""));
    let mut child = ws
        .command(&["run", "items.yaml", "--progress", "none"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(120);
    while ws.committed_items() < 6 {
        assert!(Instant::now() < deadline, "no items committed in time");
        assert!(
            child.try_wait().expect("poll").is_none(),
            "run ended before it could be killed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    let committed = ws.committed_items();
    assert!(
        committed < 40,
        "the kill came too late to test resume ({committed} committed)"
    );

    let resumed = ws.run_ok("items.yaml", &[]);
    let work = instance(&resumed, "work");
    assert_eq!(
        work["items"]["cached"].as_u64(),
        Some(committed as u64),
        "committed items are reused"
    );
    assert_eq!(
        work["items"]["executed"].as_u64(),
        Some(40 - committed as u64),
        "only the rest re-runs"
    );

    let clean = Workspace::new();
    clean.write("data/rows.csv", &numbers_csv(40));
    clean.write("items.yaml", &items_pipeline(150, ""));
    clean.run_ok("items.yaml", &[]);
    assert!(
        ws.table("work", None).equals(&clean.table("work", None)),
        "resumed output equals a clean run's"
    );
}

#[test]
fn new_rows_run_only_their_items() {
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(10));
    ws.write("items.yaml", &items_pipeline(0, ""));
    ws.run_ok("items.yaml", &[]);
    ws.write("data/rows.csv", &numbers_csv(13));
    let rec = ws.run_ok("items.yaml", &[]);
    let work = instance(&rec, "work");
    assert_eq!(work["items"]["executed"].as_u64(), Some(3));
    assert_eq!(work["items"]["cached"].as_u64(), Some(10));
    assert_eq!(ws.table("work", None).height(), 13);
}

#[test]
fn a_failing_item_is_recorded_while_its_siblings_complete() {
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(8));
    ws.write("items.yaml", &items_pipeline(0, ", fail_items: [r0003]"));
    let out = ws
        .cli(&["run", "items.yaml", "--progress", "none"])
        .expect_code(1);
    assert!(
        out.stderr.contains("r0003"),
        "the failed item is named: {}",
        out.stderr
    );
    let rec = ws.last_run("items");
    assert_eq!(statuses(&rec)["work"], "failed");
    assert_eq!(statuses(&rec)["total"], "skipped");
    let errors = rec["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["item"], "r0003");
    assert!(errors[0]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("fail_items"));
    assert_eq!(ws.committed_items(), 7, "siblings committed");
    let shown = ws.cli(&["show", "errors"]).expect_code(0);
    assert!(shown.stdout.contains("r0003"));

    // A re-run retries only the failed item: its siblings come from the store.
    ws.cli(&["run", "items.yaml", "--progress", "none"])
        .expect_code(1);
    let rec = ws.last_run("items");
    let work = instance(&rec, "work");
    assert_eq!(work["items"]["cached"].as_u64(), Some(7));
    assert_eq!(rec["errors"].as_array().map(Vec::len), Some(1));
}

#[test]
fn transient_failures_are_retried() {
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(4));
    let yaml = items_pipeline(0, ", flaky_items: [r0001], flaky_attempts: 2").replace(
        "concurrency: 4",
        "concurrency: 4\n    retries: 2\n    retry_backoff_ms: 1",
    );
    ws.write("items.yaml", &yaml);
    ws.run_ok("items.yaml", &[]);
    let manifests = glob_json(&ws.store().join("items"));
    let flaky = manifests
        .iter()
        .find(|m| m["key"]["item"]["value"] == "r0001")
        .expect("flaky item manifest");
    assert_eq!(flaky["attempts"], 3);

    // Without enough retries the item fails with a transient error.
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(4));
    ws.write("items.yaml", &yaml.replace("retries: 2", "retries: 1"));
    ws.cli(&["run", "items.yaml", "--progress", "none"])
        .expect_code(1);
    let rec = ws.last_run("items");
    assert_eq!(rec["errors"][0]["kind"], "transient");
    assert_eq!(rec["errors"][0]["attempts"], 2);
}

#[test]
fn resource_pools_bound_items_in_flight() {
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(12));
    ws.write("items.yaml", &items_pipeline(30, ", timing: true"));
    ws.run_ok("items.yaml", &[]);
    let df = ws.table("work", None);
    let start = df
        .column("probe_start_us")
        .expect("start")
        .i64()
        .expect("i64")
        .clone();
    let end = df
        .column("probe_end_us")
        .expect("end")
        .i64()
        .expect("i64")
        .clone();
    let spans: Vec<(i64, i64)> = start
        .iter()
        .zip(end.iter())
        .map(|(s, e)| (s.unwrap_or(0), e.unwrap_or(0)))
        .collect();
    let max_overlap = spans
        .iter()
        .map(|(s, _)| spans.iter().filter(|(s2, e2)| s2 <= s && s < e2).count())
        .max()
        .unwrap_or(0);
    assert!(
        max_overlap <= 2,
        "pool `slots: 2` was exceeded: {max_overlap} items in flight"
    );
}

fn glob_json(dir: &std::path::Path) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(glob_json(&p));
        } else if let Ok(bytes) = std::fs::read(&p) {
            if let Ok(v) = serde_json::from_slice(&bytes) {
                out.push(v);
            }
        }
    }
    out
}

/// The item manifests of `stage` in the store, as JSON.
fn item_manifests(ws: &Workspace, stage: &str) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for shard in std::fs::read_dir(ws.store().join("items")).expect("items dir") {
        for file in std::fs::read_dir(shard.expect("shard").path()).expect("shard dir") {
            let bytes = std::fs::read(file.expect("file").path()).expect("manifest");
            let m: serde_json::Value = serde_json::from_slice(&bytes).expect("manifest json");
            if m["stage"] == stage {
                out.push(m);
            }
        }
    }
    out
}

/// Deletes the blobs a manifest points at, as someone cleaning a store by hand would; an item
/// manifest's inline tables are cut out of it (the manifest then points at blobs that are not
/// there, the same loss).
fn delete_blobs(ws: &Workspace, manifest: &serde_json::Value) {
    let mut stripped = manifest.clone();
    let mut inline = false;
    let tables = stripped["tables"].as_object_mut().expect("tables");
    for table in tables.values_mut() {
        if table
            .as_object_mut()
            .expect("entry")
            .remove("inline")
            .is_some()
        {
            inline = true;
            continue;
        }
        let blob = table["blob"].as_str().expect("blob hash");
        let path = ws
            .store()
            .join("blobs")
            .join(&blob[..2])
            .join(format!("{blob}.parquet"));
        std::fs::remove_file(&path).expect("remove blob");
    }
    if inline {
        let key = manifest["recipe_key"].as_str().expect("key");
        let path = ws
            .store()
            .join("items")
            .join(&key[..2])
            .join(format!("{key}.json"));
        let bytes = serde_json::to_vec_pretty(&stripped).expect("json");
        std::fs::write(path, bytes).expect("rewrite the item manifest");
    }
}

#[test]
fn plan_and_run_agree_when_item_blobs_were_deleted_by_hand() {
    let ws = Workspace::new();
    // Ten items of two interleaved rows each, so the assembled table (rows grouped by item)
    // is not byte-equal to the input table and has a blob of its own.
    let mut csv = String::from("id,grp,value\n");
    for i in 0..20 {
        csv.push_str(&format!("r{:02},g{},{i}\n", i % 10, i % 3));
    }
    ws.write("data/rows.csv", &csv);
    ws.write("items.yaml", &items_pipeline(0, ""));
    ws.run_ok("items.yaml", &[]);
    // Three items lose their tables, and so does the stage's assembled table: its recipe
    // manifest and the items' manifests survive.
    let items = item_manifests(&ws, "work");
    assert_eq!(items.len(), 10);
    for m in &items[..3] {
        delete_blobs(&ws, m);
    }
    let record = ws.last_run("items");
    let recipe = instance(&record, "work")["recipe_key"]
        .as_str()
        .expect("recipe key")
        .to_string();
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            ws.store()
                .join("recipes")
                .join(&recipe[..2])
                .join(format!("{recipe}.json")),
        )
        .expect("recipe manifest"),
    )
    .expect("json");
    delete_blobs(&ws, &manifest);

    let plan = ws.cli(&["plan", "items.yaml"]).expect_code(0).stdout;
    assert!(
        plan.contains("miss   work [3 of 10 items to run; 3 of them lost their stored tables]"),
        "{plan}"
    );
    assert!(
        plan.contains("stored tables missing from the store: table"),
        "{plan}"
    );
    let run = ws.run_ok("items.yaml", &[]);
    let work = instance(&run, "work");
    assert_eq!(work["status"], "executed");
    assert_eq!(work["items"]["executed"].as_u64(), Some(3), "{work}");
    assert_eq!(work["items"]["cached"].as_u64(), Some(7), "{work}");
    // The rebuilt output equals the lost one, so downstream stays cached, and plan agrees that
    // nothing is left to do.
    assert_eq!(work["unchanged_output"], true, "{work}");
    assert_eq!(instance(&run, "total")["status"], "cached");
    let plan = ws.cli(&["plan", "items.yaml"]).expect_code(0).stdout;
    assert!(
        plan.contains("hit    work") && !plan.contains("miss"),
        "{plan}"
    );
}
