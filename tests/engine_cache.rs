//! Caching semantics: no-op re-runs, targeted invalidation, early cutoff, sweeps.

use crate::common::*;

const CHAIN: &str = r#"
pipeline: chain
params: { threshold: 3, tag: a }
stages:
  source:
    kind: read_table
    params: { path: data/numbers.csv }
  filtered:
    kind: query
    inputs: [source]
    params: { sql: "SELECT * FROM source WHERE value >= ${params.threshold}" }
  counted:
    kind: query
    inputs: [filtered]
    params: { sql: "SELECT grp, COUNT(*) AS n FROM filtered GROUP BY grp ORDER BY grp" }
  side:
    kind: query
    inputs: [source]
    params: { sql: "SELECT COUNT(*) AS total FROM source" }
  relabel:
    kind: probe
    inputs: [side]
    params: { label: "${params.tag}" }
  after_relabel:
    kind: query
    inputs: [relabel]
    params: { sql: "SELECT total * 2 AS doubled FROM relabel" }
"#;

fn chain() -> Workspace {
    let ws = Workspace::new();
    ws.write("data/numbers.csv", &numbers_csv(30));
    ws.write("chain.yaml", CHAIN);
    ws
}

#[test]
fn unchanged_pipeline_reruns_nothing() {
    let ws = chain();
    let first = ws.run_ok("chain.yaml", &[]);
    assert_eq!(summary(&first, "stages_executed"), 6);
    let second = ws.run_ok("chain.yaml", &[]);
    assert_eq!(summary(&second, "stages_executed"), 0);
    assert_eq!(summary(&second, "stages_cached"), 6);
    assert_eq!(summary(&second, "items_executed"), 0);
}

#[test]
fn set_reruns_only_the_stages_that_read_the_param_and_their_dependents() {
    let ws = chain();
    ws.run_ok("chain.yaml", &[]);
    let rec = ws.run_ok("chain.yaml", &["--set", "threshold=8"]);
    let s = statuses(&rec);
    assert_eq!(s["source"], "cached");
    assert_eq!(s["filtered"], "executed");
    assert_eq!(s["counted"], "executed");
    assert_eq!(s["side"], "cached");
    assert_eq!(s["relabel"], "cached");
    assert_eq!(s["after_relabel"], "cached");
    // Stage-level overrides work the same way.
    let rec = ws.run_ok(
        "chain.yaml",
        &[
            "--set",
            "threshold=8",
            "--set",
            "counted.sql=SELECT COUNT(*) AS n FROM filtered",
        ],
    );
    let s = statuses(&rec);
    assert_eq!(s["filtered"], "cached");
    assert_eq!(s["counted"], "executed");
}

#[test]
fn identical_upstream_output_stops_propagation() {
    let ws = chain();
    ws.run_ok("chain.yaml", &[]);
    let rec = ws.run_ok("chain.yaml", &["--set", "tag=b"]);
    let s = statuses(&rec);
    assert_eq!(
        s["relabel"], "executed",
        "the label is part of relabel's key"
    );
    assert_eq!(
        s["after_relabel"], "cached",
        "relabel's output is unchanged, so its dependent is not re-run"
    );
    let relabel = rec["instances"]
        .as_array()
        .expect("instances")
        .iter()
        .find(|i| i["stage"] == "relabel")
        .expect("relabel");
    assert_eq!(relabel["unchanged_output"], true);
}

#[test]
fn editing_an_input_file_reruns_its_reader() {
    let ws = chain();
    ws.run_ok("chain.yaml", &[]);
    ws.write("data/numbers.csv", &numbers_csv(31));
    let s = statuses(&ws.run_ok("chain.yaml", &[]));
    assert_eq!(s["source"], "executed");
    assert_eq!(s["side"], "executed");
}

const SWEPT: &str = r#"
pipeline: swept
stages:
  source:
    kind: read_table
    params: { path: data/numbers.csv }
  pick:
    kind: query
    inputs: [source]
    sweep: { limit: LIMITS }
    params: { sql: "SELECT * FROM source", limit: 0 }
  shown:
    kind: query
    inputs: [pick]
    params: { sql: "SELECT COUNT(*) AS n FROM pick" }
"#;

#[test]
fn adding_a_grid_value_runs_only_the_new_variant() {
    let ws = Workspace::new();
    ws.write("data/numbers.csv", &numbers_csv(12));
    // `query` rejects unknown params, so sweep over the SQL text itself through a pipeline param.
    let yaml = SWEPT
        .replace(
            "sweep: { limit: LIMITS }",
            "sweep: { params.limit: LIMITS }",
        )
        .replace(
            r#"params: { sql: "SELECT * FROM source", limit: 0 }"#,
            r#"params: { sql: "SELECT * FROM source LIMIT ${params.limit}" }"#,
        )
        .replace("pipeline: swept", "pipeline: swept\nparams: { limit: 1 }");
    ws.write("swept.yaml", &yaml.replace("LIMITS", "[2, 5]"));
    let first = ws.run_ok("swept.yaml", &[]);
    assert_eq!(summary(&first, "stages_executed"), 5);
    ws.write("swept.yaml", &yaml.replace("LIMITS", "[2, 5, 7]"));
    let second = ws.run_ok("swept.yaml", &[]);
    let s = statuses(&second);
    assert_eq!(s["source"], "cached");
    assert_eq!(s["pick[params.limit=2]"], "cached");
    assert_eq!(s["pick[params.limit=5]"], "cached");
    assert_eq!(s["pick[params.limit=7]"], "executed");
    assert_eq!(s["shown[params.limit=2]"], "cached");
    assert_eq!(s["shown[params.limit=7]"], "executed");
    assert_eq!(summary(&second, "stages_executed"), 2);
    let n = ws.table("shown", Some("params.limit=7"));
    assert_eq!(
        n.column("n").expect("n").u32().expect("u32").get(0),
        Some(7)
    );
}

#[test]
fn set_on_a_swept_parameter_pins_the_sweep() {
    let ws = Workspace::new();
    ws.write("data/numbers.csv", &numbers_csv(12));
    let yaml = "pipeline: pin\nparams: { limit: 1 }\nstages:\n  source: { kind: read_table, params: { path: data/numbers.csv } }\n  pick:\n    kind: query\n    inputs: [source]\n    sweep: { params.limit: [2, 5] }\n    params: { sql: \"SELECT * FROM source LIMIT ${params.limit}\" }\n";
    ws.write("pin.yaml", yaml);
    let rec = ws.run_ok("pin.yaml", &["--set", "limit=4"]);
    let s = statuses(&rec);
    assert_eq!(s.len(), 2, "{s:?}");
    assert_eq!(s["pick[params.limit=4]"], "executed");
}

/// A `gather` stage sees every upstream variant's rows in one table and runs once; adding a
/// variant re-runs it (its input changed) but not the untouched variants.
#[test]
fn a_gather_stage_collects_every_variant_once() {
    let ws = Workspace::new();
    ws.write("data/numbers.csv", &numbers_csv(12));
    let yaml = "pipeline: gathered\nparams: { limit: 1 }\nstages:\n  source: { kind: read_table, params: { path: data/numbers.csv } }\n  pick:\n    kind: query\n    inputs: [source]\n    sweep: { params.limit: LIMITS }\n    params: { sql: \"SELECT *, ${params.limit} AS lim FROM source LIMIT ${params.limit}\" }\n  total:\n    kind: query\n    inputs: [pick]\n    gather: true\n    params: { sql: \"SELECT lim, COUNT(*) AS n FROM pick GROUP BY lim ORDER BY lim\" }\n";
    ws.write("g.yaml", &yaml.replace("LIMITS", "[2, 5]"));
    let first = ws.run_ok("g.yaml", &[]);
    let s = statuses(&first);
    assert_eq!(s["total"], "executed", "{s:?}");
    assert_eq!(s.keys().filter(|k| k.starts_with("total")).count(), 1);
    let t = ws.table("total", None);
    let n: Vec<Option<u32>> = t
        .column("n")
        .expect("n")
        .u32()
        .expect("u32")
        .iter()
        .collect();
    assert_eq!(n, [Some(2), Some(5)]);

    let again = ws.run_ok("g.yaml", &[]);
    assert_eq!(statuses(&again)["total"], "cached");

    ws.write("g.yaml", &yaml.replace("LIMITS", "[2, 5, 3]"));
    let third = ws.run_ok("g.yaml", &[]);
    let s = statuses(&third);
    assert_eq!(s["pick[params.limit=2]"], "cached");
    assert_eq!(s["pick[params.limit=3]"], "executed");
    assert_eq!(s["total"], "executed");
    let t = ws.table("total", None);
    assert_eq!(t.height(), 3);
}
