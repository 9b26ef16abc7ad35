//! Bad pipeline files: located errors, exit code 2, and an untouched store.

use crate::common::*;

/// Runs `prefflow run` on `yaml` and returns stderr, asserting exit 2 and no store written.
fn rejected(yaml: &str) -> String {
    let ws = Workspace::new();
    ws.write("data/numbers.csv", &numbers_csv(3));
    ws.write("bad.yaml", yaml);
    let out = ws
        .cli(&["run", "bad.yaml", "--progress", "none"])
        .expect_code(2);
    assert!(
        !ws.store().exists(),
        "a rejected pipeline must not touch the store"
    );
    out.stderr
}

const GOOD_HEAD: &str = "pipeline: p\nstages:\n  source:\n    kind: read_table\n    params: { path: data/numbers.csv }\n";

#[test]
fn cycle_is_named_and_located() {
    let err = rejected(
        "pipeline: p\nstages:\n  a:\n    kind: query\n    inputs: [b]\n    params: { sql: SELECT 1 }\n  b:\n    kind: query\n    inputs: [a]\n    params: { sql: SELECT 1 }\n",
    );
    assert!(err.contains("bad.yaml:5:"), "{err}");
    assert!(err.contains("cycle") && err.contains("a → b"), "{err}");
}

#[test]
fn unknown_kind_suggests_the_closest() {
    let err = rejected(&format!(
        "{GOOD_HEAD}  q:\n    kind: qurey\n    inputs: [source]\n"
    ));
    assert!(err.contains("bad.yaml:7:11"), "{err}");
    assert!(
        err.contains("unknown kind `qurey`") && err.contains("did you mean `query`"),
        "{err}"
    );
}

#[test]
fn bad_references_are_located() {
    let err = rejected(&format!(
        "{GOOD_HEAD}  q:\n    kind: query\n    inputs: [sorce]\n    params: {{ sql: SELECT 1 }}\n"
    ));
    assert!(
        err.contains("bad.yaml:8:")
            && err.contains("`sorce` names no stage")
            && err.contains("did you mean `source`"),
        "{err}"
    );
    let err = rejected(&format!("{GOOD_HEAD}  q:\n    kind: query\n    inputs: [source.nope]\n    params: {{ sql: SELECT 1 }}\n"));
    assert!(
        err.contains("bad.yaml:8:") && err.contains("no table `nope`") && err.contains("table"),
        "{err}"
    );
    let err = rejected(&format!("{GOOD_HEAD}  q:\n    kind: query\n    inputs: [source]\n    params: {{ sql: \"SELECT ${{params.missing}}\" }}\n"));
    assert!(
        err.contains("bad.yaml:9:") && err.contains("params.missing"),
        "{err}"
    );
}

#[test]
fn malformed_yaml_is_located() {
    let err = rejected("pipeline: p\nstages:\n  a: { kind: query\n  b: [\n");
    assert!(err.contains("bad.yaml:"), "{err}");
    let err = rejected(&format!("{GOOD_HEAD}    bogus_field: 1\n"));
    assert!(
        err.contains("bad.yaml:6:") && err.contains("bogus_field"),
        "{err}"
    );
}

#[test]
fn missing_and_ill_typed_params_are_located() {
    let err = rejected(
        "pipeline: p\nstages:\n  source:\n    kind: read_table\n    params: { format: csv }\n",
    );
    assert!(
        err.contains("bad.yaml:4:") && err.contains("missing field `path`"),
        "{err}"
    );
    let err = rejected(&format!("{GOOD_HEAD}  slow:\n    kind: probe\n    inputs: [source]\n    params:\n      delay_ms: soon\n"));
    assert!(
        err.contains("bad.yaml:10:17") && err.contains("delay_ms"),
        "{err}"
    );
    let err = rejected(&format!("{GOOD_HEAD}  slow:\n    kind: probe\n    inputs: [source]\n    params:\n      dealy_ms: 3\n"));
    assert!(
        err.contains("bad.yaml:10:") && err.contains("dealy_ms"),
        "{err}"
    );
}

#[test]
fn bad_set_and_undeclared_pools_are_rejected() {
    let ws = Workspace::new();
    ws.write("data/numbers.csv", &numbers_csv(3));
    ws.write("p.yaml", GOOD_HEAD);
    let out = ws
        .cli(&["run", "p.yaml", "--set", "nosuch=1"])
        .expect_code(2);
    assert!(
        out.stderr.contains("nosuch") && out.stderr.contains("source"),
        "{}",
        out.stderr
    );
    assert!(!ws.store().exists());
    let err = rejected(&format!(
        "{GOOD_HEAD}  slow:\n    kind: probe\n    inputs: [source]\n    resources: [gpu]\n"
    ));
    assert!(
        err.contains("bad.yaml:9:") && err.contains("pool `gpu`"),
        "{err}"
    );
}

#[test]
fn bad_input_data_fails_with_exit_2_and_keeps_earlier_results() {
    let ws = Workspace::new();
    ws.write("data/numbers.csv", &numbers_csv(3));
    ws.write(
        "p.yaml",
        &format!(
            "{GOOD_HEAD}  other:\n    kind: read_table\n    params: {{ path: data/missing.csv }}\n"
        ),
    );
    let out = ws
        .cli(&["run", "p.yaml", "--progress", "none"])
        .expect_code(2);
    assert!(out.stderr.contains("data/missing.csv"), "{}", out.stderr);
    assert_eq!(statuses(&ws.last_run("p"))["source"], "executed");
}
