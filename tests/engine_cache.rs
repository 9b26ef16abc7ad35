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
    assert_eq!(s.len(), 4, "{s:?}");
    assert_eq!(s["pick[params.limit=4]"], "executed");
    // The other points never run: without a cached result they are left out, and said so.
    assert_eq!(s["pick[params.limit=2]"], "disabled");
    assert_eq!(s["pick[params.limit=5]"], "disabled");
    let why = rec["instances"]
        .as_array()
        .expect("instances")
        .iter()
        .find(|i| i["variant"] == "params.limit=2")
        .and_then(|i| i["message"].as_str())
        .unwrap_or_default()
        .to_string();
    assert!(why.contains("`--set limit=4` pins the sweep"), "{why}");
    // Once computed, they are kept (cached, never run) while another value is pinned.
    ws.run_ok("pin.yaml", &[]);
    let rec = ws.run_ok("pin.yaml", &["--set", "limit=4"]);
    let s = statuses(&rec);
    assert_eq!(s["pick[params.limit=2]"], "cached");
    assert_eq!(s["pick[params.limit=4]"], "cached");
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

/// Code is part of the key: the same pipeline run by two builds whose `probe` code differs.
mod code_changes {
    use std::sync::Arc;

    use prefflow_engine::code::CodeFingerprint;
    use prefflow_engine::config::PipelineFile;
    use prefflow_engine::exec::{run, RunOptions};
    use prefflow_engine::inspect::{dry_run, why, PlanStatus};
    use prefflow_engine::kinds::Probe;
    use prefflow_engine::plan::Plan;
    use prefflow_engine::progress::ProgressMode;
    use prefflow_engine::record::{RunRecord, Status};
    use prefflow_engine::store::{FsStore, Store};
    use prefflow_engine::Registry;

    use crate::common::*;

    const PIPELINE: &str = r#"
pipeline: coded
stages:
  source:
    kind: read_table
    params: { path: data/numbers.csv }
  relabel:
    kind: probe
    inputs: [source]
  after:
    kind: query
    inputs: [relabel]
    params: { sql: "SELECT grp, COUNT(*) AS n FROM relabel GROUP BY grp ORDER BY grp" }
"#;

    /// The generic kinds as built, except `probe`, whose code is `probe_code` (a stand-in for
    /// a build where probe's crate was edited).
    fn registry(probe_code: &str) -> Registry {
        let mut registry = Registry::with_generic_kinds();
        let code = CodeFingerprint::from([("probe-crate".to_string(), probe_code.to_string())]);
        registry.register_with_code(Probe, code);
        registry
    }

    fn plan(ws: &Workspace, probe_code: &str) -> Plan {
        let file = PipelineFile::load(&ws.path().join("coded.yaml")).expect("pipeline file");
        Plan::build(&file, &registry(probe_code), &[]).expect("plan")
    }

    fn run_with(ws: &Workspace, store: &Arc<dyn Store>, probe_code: &str) -> RunRecord {
        let opts = RunOptions {
            workdir: ws.path().to_path_buf(),
            progress: ProgressMode::Quiet,
            ..RunOptions::default()
        };
        let report = run(Arc::new(plan(ws, probe_code)), store.clone(), &opts).expect("run");
        assert!(
            report.record.errors.is_empty(),
            "{:?}",
            report.record.errors
        );
        report.record
    }

    fn status(record: &RunRecord, stage: &str) -> Status {
        record.instance(stage, "").expect("instance").status
    }

    fn setup() -> (Workspace, Arc<dyn Store>) {
        let ws = Workspace::new();
        ws.write("data/numbers.csv", &numbers_csv(20));
        ws.write("coded.yaml", PIPELINE);
        let store: Arc<dyn Store> = Arc::new(FsStore::new(ws.store()));
        (ws, store)
    }

    #[test]
    fn a_code_change_is_a_miss_that_plan_and_why_name() {
        let (ws, store) = setup();
        let first = run_with(&ws, &store, "aaaa1111");
        assert_eq!(status(&first, "relabel"), Status::Executed);
        assert_eq!(
            status(&run_with(&ws, &store, "aaaa1111"), "relabel"),
            Status::Cached,
            "the same code hits"
        );

        let changed = plan(&ws, "bbbb2222");
        let lines = dry_run(&changed, store.as_ref(), ws.path(), &[]).expect("plan");
        let relabel = lines.iter().find(|l| l.stage == "relabel").expect("line");
        let PlanStatus::Miss { reasons, .. } = &relabel.status else {
            panic!(
                "relabel should run after its code changed: {:?}",
                relabel.status
            );
        };
        assert_eq!(
            reasons,
            &["code changed: probe-crate (aaaa1111 → bbbb2222)".to_string()]
        );
        let source = lines.iter().find(|l| l.stage == "source").expect("line");
        assert_eq!(source.status, PlanStatus::Hit { changes: vec![] });

        let explained = why(&changed, store.as_ref(), ws.path(), "relabel").expect("why");
        assert_eq!(
            explained,
            [
                "relabel: will run because:",
                "  - code changed: probe-crate (aaaa1111 → bbbb2222)"
            ]
        );
        let ran = run_with(&ws, &store, "bbbb2222");
        assert_eq!(status(&ran, "source"), Status::Cached);
        assert_eq!(status(&ran, "relabel"), Status::Executed);
    }

    #[test]
    fn early_cutoff_stops_a_code_change_that_leaves_the_output_identical() {
        let (ws, store) = setup();
        run_with(&ws, &store, "aaaa1111");
        let ran = run_with(&ws, &store, "bbbb2222");
        let relabel = ran.instance("relabel", "").expect("relabel");
        assert_eq!(relabel.status, Status::Executed, "its code changed");
        assert!(relabel.unchanged_output, "probe passes its input through");
        assert_eq!(
            status(&ran, "after"),
            Status::Cached,
            "relabel's output is identical, so `after` keeps its key"
        );
        // Going back to the old code finds the old result: nothing runs.
        let back = run_with(&ws, &store, "aaaa1111");
        assert_eq!(status(&back, "relabel"), Status::Cached);
    }

    #[test]
    fn kinds_carry_the_code_of_their_crate_and_of_the_crates_it_uses() {
        let mut registry = Registry::with_generic_kinds();
        prefflow_stages::register(&mut registry);
        let crates = |kind: &str| -> Vec<String> {
            let code = registry.get(kind).expect("kind").code();
            code.keys().cloned().collect()
        };
        assert_eq!(crates("query"), ["Cargo.lock", "prefflow-engine"]);
        assert_eq!(
            crates("build_world"),
            ["Cargo.lock", "prefflow-engine", "prefflow-stages"]
        );
        assert_eq!(
            crates("knowu_metrics"),
            ["Cargo.lock", "prefflow-engine", "prefflow-stages"]
        );
        let engine = registry.get("query").expect("query").code();
        let stages = registry.get("build_world").expect("build_world").code();
        assert_eq!(engine["prefflow-engine"], stages["prefflow-engine"]);
        assert_ne!(stages["prefflow-engine"], stages["prefflow-stages"]);
    }
}

/// A catalog the sweep picks one entry from (`Kind::key_params`): each variant's key holds only
/// its own entry, so growing the catalog with a new entry (and sweep value) runs only the new
/// variant's items, while editing a picked entry re-runs that variant alone.
#[test]
fn growing_a_catalog_runs_only_the_new_picks_items() {
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(5));
    let yaml = |entries: &str, picks: &str| {
        format!(
            "pipeline: catalog
params: {{ catalog: [{entries}] }}
stages:
  rows: {{ kind: read_table, params: {{ path: data/rows.csv }} }}
  work:
    kind: probe
    inputs: [rows]
    per_item: id
    sweep: {{ pick: [{picks}] }}
    params: {{ catalog: \"${{params.catalog}}\", pick: a }}
"
        )
    };
    let a = "{ name: a, x: 1 }";
    let b = "{ name: b, x: 2 }";
    let c = "{ name: c, x: 3 }";
    ws.write("c.yaml", &yaml(&format!("{a}, {b}"), "a, b"));
    let first = ws.run_ok("c.yaml", &[]);
    assert_eq!(summary(&first, "items_executed"), 10);

    ws.write("c.yaml", &yaml(&format!("{a}, {b}, {c}"), "a, b, c"));
    let grown = ws.run_ok("c.yaml", &[]);
    let s = statuses(&grown);
    assert_eq!(s["work[pick=a]"], "cached", "{s:?}");
    assert_eq!(s["work[pick=b]"], "cached", "{s:?}");
    assert_eq!(s["work[pick=c]"], "executed", "{s:?}");
    assert_eq!(summary(&grown, "items_executed"), 5);
    let picked = ws.table("work", Some("pick=c"));
    let text = picked.column("picked").expect("picked").str().expect("str");
    assert!(
        text.iter().all(|t| t == Some("{\"name\":\"c\",\"x\":3}")),
        "{picked}"
    );

    // Editing one entry is a change to that variant only.
    let b2 = "{ name: b, x: 20 }";
    ws.write("c.yaml", &yaml(&format!("{a}, {b2}, {c}"), "a, b, c"));
    let edited = ws.run_ok("c.yaml", &[]);
    let s = statuses(&edited);
    assert_eq!(
        (
            s["work[pick=a]"].as_str(),
            s["work[pick=b]"].as_str(),
            s["work[pick=c]"].as_str()
        ),
        ("cached", "executed", "cached")
    );
}
