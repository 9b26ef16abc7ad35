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

#[test]
fn a_kind_whose_declared_input_is_not_bound_fails_at_plan_time_located() {
    // generate_tasks reads `sources` and `history_events`; only `sources` is bound.
    let err = rejected(
        "pipeline: p\nstages:\n  world:\n    kind: build_world\n    params: { persona: datasets/personas/maya.yaml, apps: datasets/apps, events: 100, seed: 1 }\n  candidates:\n    kind: generate_tasks\n    inputs: [world.sources]\n    params: { templates: datasets/tasks, count: 5, seed: 1 }\n",
    );
    assert!(err.contains("bad.yaml:8:14"), "{err}");
    assert!(
        err.contains("kind `generate_tasks` reads table `history_events`, which none of its inputs provides (inputs: world.sources)"),
        "{err}"
    );
    assert!(
        err.contains("help: add the stage that writes `history_events`"),
        "{err}"
    );
}

/// Two kinds declaring what they write and read, to show the plan-time column check.
mod declared_columns {
    use prefflow_engine::config::PipelineFile;
    use prefflow_engine::plan::Plan;
    use prefflow_engine::schema::{ColumnDef, Dtype, InputDef, TableDef};
    use prefflow_engine::{Kind, Registry, StageContext, StageError, Tables};

    use crate::common::*;

    static WRITTEN: TableDef = TableDef {
        name: "things",
        doc: "what `writer` writes",
        columns: &[
            ColumnDef::new("id", Dtype::Str, "id"),
            ColumnDef::new("n", Dtype::U32, "a count"),
        ],
        open: false,
    };
    static READ: TableDef = TableDef {
        name: "things",
        doc: "what `reader` expects",
        columns: &[
            ColumnDef::new("id", Dtype::Str, "id"),
            ColumnDef::new("n", Dtype::F64, "a count, read as a float"),
            ColumnDef::new("extra", Dtype::Str, "a column nobody writes"),
        ],
        open: false,
    };

    static OUT: TableDef = TableDef::open("out", "what `reader` writes");

    struct Writer;
    impl Kind for Writer {
        type Params = serde_json::Value;
        type State = ();
        const NAME: &'static str = "writer";
        const VERSION: &'static str = "1";
        const OUTPUT_DEFS: &'static [&'static TableDef] = &[&WRITTEN];
        const SUMMARY: &'static str = "test";
        fn run(&self, _: &Self::Params, _: &StageContext<'_>) -> Result<Tables, StageError> {
            Ok(Tables::default())
        }
    }

    struct Reader;
    impl Kind for Reader {
        type Params = serde_json::Value;
        type State = ();
        const NAME: &'static str = "reader";
        const VERSION: &'static str = "1";
        const OUTPUT_DEFS: &'static [&'static TableDef] = &[&OUT];
        const INPUTS: &'static [InputDef] = &[InputDef::required(&READ, &["id", "n", "extra"])];
        const SUMMARY: &'static str = "test";
        fn run(&self, _: &Self::Params, _: &StageContext<'_>) -> Result<Tables, StageError> {
            Ok(Tables::default())
        }
    }

    /// Writes `things` as its params say: as declared (`ok`), with a column `things` does
    /// not declare (`extra_column`), with `n` as text (`mistyped`), without `n`
    /// (`missing_column`), or with a table it does not declare (`extra_table`).
    struct Sloppy;
    impl Kind for Sloppy {
        type Params = serde_json::Value;
        type State = ();
        const NAME: &'static str = "sloppy";
        const VERSION: &'static str = "1";
        const OUTPUT_DEFS: &'static [&'static TableDef] = &[&WRITTEN];
        const SUMMARY: &'static str = "test";
        fn run(&self, params: &Self::Params, _: &StageContext<'_>) -> Result<Tables, StageError> {
            use polars::prelude::*;
            let how = params["how"].as_str().unwrap_or("ok");
            let ok = || df!("id" => ["a", "b"], "n" => [1u32, 2]);
            let things = match how {
                "extra_column" => df!("id" => ["a", "b"], "n" => [1u32, 2], "secret" => ["x", "y"]),
                "mistyped" => df!("id" => ["a", "b"], "n" => ["1", "2"]),
                "missing_column" => df!("id" => ["a", "b"]),
                _ => ok(),
            }?;
            let mut tables = Tables::single("things", things);
            if how == "extra_table" {
                tables.0.insert("stray".into(), ok()?);
            }
            Ok(tables)
        }
    }

    /// Runs stage `s` of kind `sloppy` with params `how`: the run's errors and whether the
    /// store holds a committed result.
    fn run_sloppy(how: &str) -> (Vec<String>, bool) {
        use prefflow_engine::exec::{run, RunOptions};
        use prefflow_engine::progress::ProgressMode;
        use prefflow_engine::store::{FsStore, Store};
        use std::sync::Arc;

        let ws = Workspace::new();
        ws.write(
            "p.yaml",
            &format!(
                "pipeline: p\nstages:\n  s:\n    kind: sloppy\n    params: {{ how: {how} }}\n"
            ),
        );
        let mut registry = Registry::with_generic_kinds();
        registry.register(Sloppy);
        let file = PipelineFile::load(&ws.path().join("p.yaml")).expect("pipeline file");
        let plan = Plan::build(&file, &registry, &[]).expect("plan");
        let store: Arc<dyn Store> = Arc::new(FsStore::new(ws.store()));
        let opts = RunOptions {
            workdir: ws.path().to_path_buf(),
            progress: ProgressMode::Quiet,
            ..RunOptions::default()
        };
        let report = run(Arc::new(plan), store, &opts).expect("run");
        let errors = report
            .record
            .errors
            .iter()
            .map(|e| e.message.clone())
            .collect();
        let committed = std::fs::read_dir(ws.store().join("recipes"))
            .map(|d| d.count() > 0)
            .unwrap_or(false);
        (errors, committed)
    }

    #[test]
    fn a_kind_writing_what_it_did_not_declare_fails_its_commit() {
        let (errors, committed) = run_sloppy("ok");
        assert!(errors.is_empty() && committed, "{errors:?}");
        for (how, expected) in [
            ("extra_column", "kind `sloppy` wrote table `things` against its definition: column `secret` (str) is not declared"),
            ("mistyped", "kind `sloppy` wrote table `things` against its definition: column `n` is str, declared u32"),
            ("missing_column", "kind `sloppy` wrote table `things` against its definition: declared column `n` (u32) is missing"),
            ("extra_table", "kind `sloppy` wrote table `stray`, which it does not declare (its tables: things)"),
        ] {
            let (errors, committed) = run_sloppy(how);
            assert!(!committed, "{how}: a result breaking its declaration must not be committed");
            assert!(
                errors.len() == 1 && errors[0].contains(expected),
                "{how}: {errors:?}"
            );
        }
    }

    fn plan(yaml: &str) -> Result<(), String> {
        let ws = Workspace::new();
        ws.write("p.yaml", yaml);
        let mut registry = Registry::with_generic_kinds();
        registry.register(Writer);
        registry.register(Reader);
        let file = PipelineFile::load(&ws.path().join("p.yaml")).map_err(|e| e.to_string())?;
        Plan::build(&file, &registry, &[])
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_column_the_upstream_kind_does_not_write_or_writes_as_another_type_is_located() {
        let err = plan("pipeline: p\nstages:\n  w:\n    kind: writer\n  r:\n    kind: reader\n    inputs: [w.things]\n")
            .expect_err("the plan must be rejected");
        assert!(err.contains("p.yaml:7:14: error: stage `r`: kind `reader` reads `w.things`, but stage `w` (kind `writer`) writes column `n` as u32, but `reader` reads it as f64"), "{err}");
        assert!(err.contains("p.yaml:7:14: error: stage `r`: kind `reader` reads `w.things`, but stage `w` (kind `writer`) does not write column `extra`"), "{err}");
        assert!(!err.contains("column `id`"), "{err}");
    }

    #[test]
    fn a_table_from_a_kind_without_declared_columns_is_checked_by_name_only() {
        // `query` writes `table` with whatever columns its SQL makes: the stage name binds it.
        let yaml = "pipeline: p\nstages:\n  things:\n    kind: query\n    params: { sql: \"SELECT 1 AS id\" }\n  r:\n    kind: reader\n    inputs: [things]\n";
        plan(yaml).expect("bound by stage name; columns unknown until it runs");
        let unbound = "pipeline: p\nstages:\n  other:\n    kind: query\n    params: { sql: \"SELECT 1 AS id\" }\n  r:\n    kind: reader\n    inputs: [other]\n";
        let err = plan(unbound).expect_err("no table `things`");
        assert!(
            err.contains("p.yaml:8:14")
                && err.contains(
                    "reads table `things`, which none of its inputs provides (inputs: other.table)"
                ),
            "{err}"
        );
    }
}

/// Mistakes found while running: a query naming a table it does not have lists the ones it
/// has; `write_table` into an existing directory says so. Both are bad input (exit 2).
#[test]
fn an_unknown_sql_table_lists_the_tables_and_a_directory_target_is_named() {
    let ws = Workspace::new();
    ws.write("data/numbers.csv", &numbers_csv(3));
    ws.write(
        "q.yaml",
        &format!("{GOOD_HEAD}  q:\n    kind: query\n    inputs: [source]\n    params: {{ sql: SELECT * FROM sourc }}\n"),
    );
    let out = ws
        .cli(&["run", "q.yaml", "--progress", "none"])
        .expect_code(2);
    assert!(
        out.stderr.contains("sourc")
            && out
                .stderr
                .contains("the tables this query can use: source_table, source"),
        "{}",
        out.stderr
    );
    std::fs::create_dir_all(ws.path().join("out")).expect("mkdir");
    ws.write(
        "w.yaml",
        &format!("{GOOD_HEAD}  w:\n    kind: write_table\n    inputs: [source]\n    params: {{ path: out }}\n"),
    );
    let out = ws
        .cli(&["run", "w.yaml", "--progress", "none"])
        .expect_code(2);
    assert!(
        out.stderr.contains("`path: out` is a directory")
            && out.stderr.contains("e.g. `path: out/w.csv`")
            && !out.stderr.contains("cannot tell the format"),
        "{}",
        out.stderr
    );
}
