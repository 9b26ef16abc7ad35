//! Bad input, table-driven: every case is a mistake a user could make (pipeline files, `--set`
//! and other flags, app and persona YAML, task templates, review sheets, KnowU logs and
//! profiles, data files). Each one must exit 2 with a message that names the place (`at`) and
//! says how to fix it (`fix`), never panic, and leave the store as it was: a case rejected
//! while planning leaves no store at all; a case rejected by a stage commits nothing for that
//! stage and keeps every earlier result.
//!
//! To add a case, append a [`Case`] to [`CASES`]. `{repo}` in any text is the repository root.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use serde_json::Value;

use crate::common::*;

/// One mistake and what the answer to it must say.
struct Case {
    /// Shown when the case fails.
    name: &'static str,
    /// Files written into the scratch directory before the command.
    files: &'static [File],
    /// A pipeline run successfully first (in the same store), when the case needs earlier
    /// results (e.g. a review sheet needs the candidates).
    prime: Option<&'static str>,
    /// The command line after `prefflow`.
    args: &'static [&'static str],
    /// The stage that must reject the input at run time; `None` when planning must reject it
    /// (then no store may exist afterwards).
    stage: Option<&'static str>,
    /// Must appear in stderr: the place (`file:line:`, `row N`, the flag).
    at: &'static str,
    /// Must appear in stderr: the fix.
    fix: &'static str,
}

/// A file of a case.
enum File {
    /// Text written as is (after `{repo}` substitution).
    Text(&'static str, &'static str),
    /// Raw bytes (encodings, binary).
    Bytes(&'static str, &'static [u8]),
    /// A repository file copied with one edit: `from` (which must occur) replaced by `to`.
    Edit {
        path: &'static str,
        from_repo: &'static str,
        from: &'static str,
        to: &'static str,
    },
    /// A repository directory copied (one level).
    Dir(&'static str, &'static str),
}

use File::{Bytes, Dir, Edit, Text};

const RUN: &[&str] = &["run", "bad.yaml", "--progress", "none"];
const PLAN: &[&str] = &["plan", "bad.yaml"];

/// A pipeline reading `data.csv` (written by [`DATA`]).
const HEAD: &str =
    "pipeline: p\nstages:\n  source:\n    kind: read_table\n    params: { path: data.csv }\n";
const DATA: File = Text("data.csv", "id,grp,value\nr1,a,1\nr2,b,2\n");

/// The maya world from a copied `apps/` directory and a copied `persona.yaml`.
const WORLD: &str = "pipeline: w\nstages:\n  world:\n    kind: build_world\n    params: { persona: persona.yaml, apps: apps, events: 600 }\n";
const APPS: File = Dir("apps", "datasets/apps");
const PERSONA: File = Edit {
    path: "persona.yaml",
    from_repo: "datasets/personas/maya.yaml",
    from: "",
    to: "",
};

/// A KnowU import from `profile.yaml` and `log.json`.
const KNOWU: &str = "pipeline: k\nstages:\n  persona:\n    kind: import_persona\n    params: { profile: profile.yaml, log: log.json }\n";
const PROFILE: File = Edit {
    path: "profile.yaml",
    from_repo: "datasets/knowu/personas/rosa.yaml",
    from: "",
    to: "",
};
const LOG: File = Edit {
    path: "log.json",
    from_repo: "datasets/knowu/personas/rosa.json",
    from: "",
    to: "",
};

/// The world and 188 candidates: what a review case's store holds before it runs.
const REVIEW_PRIME: &str = "pipeline: r
stages:
  world:
    kind: build_world
    params: { persona: '{repo}/datasets/personas/maya.yaml', apps: '{repo}/datasets/apps' }
  candidates:
    kind: generate_tasks
    inputs: [world.sources, world.history_events]
    params: { templates: '{repo}/datasets/tasks', count: 188, seed: 7 }
";
/// Appended to [`REVIEW_PRIME`] as `review.yaml`: one refinement round reading `sheets/`.
const REVIEW_STAGE: &str = "  refined:
    kind: import_review
    inputs: [candidates.bundles]
    params: { round: refinement, sheets: [sheets] }
";
const SHEET: &str = "datasets/reviews/refinement/amara.csv";
const SHEET_TASK: &str = "calendar_dinner_sam-01,calendar_dinner_sam,";

/// Candidates from a copied `templates/` directory.
const TEMPLATES: &str = "pipeline: t
stages:
  world:
    kind: build_world
    params: { persona: '{repo}/datasets/personas/maya.yaml', apps: '{repo}/datasets/apps', events: 1000 }
  candidates:
    kind: generate_tasks
    inputs: [world.sources, world.history_events]
    params: { templates: templates, count: 4 }
";

const CASES: &[Case] = &[
    // ---------------------------------------------------------------- pipeline files
    Case { name: "top-level typo", files: &[Text("bad.yaml", "pipeline: p\nstage:\n  a: { kind: probe }\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:2:1", fix: "did you mean `stages`?" },
    Case { name: "stage field typo", files: &[DATA, Text("bad.yaml", "pipeline: p\nstages:\n  source:\n    kind: read_table\n    parms: { path: data.csv }\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:5:5", fix: "did you mean `params`?" },
    Case { name: "no pipeline name", files: &[Text("bad.yaml", "stages:\n  a: { kind: probe }\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml", fix: "prefflow schema" },
    Case { name: "unknown kind", files: &[DATA, Text("bad.yaml", "pipeline: p\nstages:\n  a:\n    kind: qurey\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:4:11", fix: "did you mean `query`?" },
    Case { name: "input names no stage", files: &[DATA, Text("bad.yaml", "pipeline: p\nstages:\n  source:\n    kind: read_table\n    params: { path: data.csv }\n  q:\n    kind: query\n    inputs: [sorce]\n    params: { sql: SELECT 1 }\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:8:", fix: "did you mean `source`?" },
    Case { name: "input names no table", files: &[DATA, Text("bad.yaml", "pipeline: p\nstages:\n  source:\n    kind: read_table\n    params: { path: data.csv }\n  q:\n    kind: query\n    inputs: [source.rows]\n    params: { sql: SELECT 1 }\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:8:", fix: "its tables are: table" },
    Case { name: "cycle", files: &[Text("bad.yaml", "pipeline: p\nstages:\n  a:\n    kind: query\n    inputs: [b]\n    params: { sql: SELECT 1 }\n  b:\n    kind: query\n    inputs: [a]\n    params: { sql: SELECT 1 }\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:5:", fix: "remove one of these inputs" },
    Case { name: "duplicate key", files: &[Text("bad.yaml", "pipeline: p\npipeline: q\nstages: {}\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:2:1", fix: "keep only one of them" },
    Case { name: "duplicate stage", files: &[Text("bad.yaml", "pipeline: p\nstages:\n  a: { kind: probe }\n  a: { kind: probe }\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:4:3", fix: "keep only one of them" },
    Case { name: "alias bomb", files: &[Text("bad.yaml", "pipeline: p\nstages: {}\nparams:\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n  d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n  e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n  f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:", fix: "alias" },
    Case { name: "malformed YAML", files: &[Text("bad.yaml", "pipeline: p\nstages:\n  a: { kind: query\n  b: [\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:", fix: "prefflow schema" },
    Case { name: "pipeline in UTF-16", files: &[Bytes("bad.yaml", b"\xFF\xFEp\x00i\x00p\x00e\x00")], prime: None, args: PLAN, stage: None, at: "bad.yaml:1:1", fix: "save it as UTF-8" },
    Case { name: "pipeline in Latin-1", files: &[Bytes("bad.yaml", b"pipeline: p\ndescription: caf\xE9\nstages: {}\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:2:17", fix: "save it as UTF-8" },
    Case { name: "pipeline is binary", files: &[Bytes("bad.yaml", b"PAR1\x15\x04\x15\x00\x15\x10L\x15\x02\x15\x00\x12\x00\x00")], prime: None, args: PLAN, stage: None, at: "bad.yaml:1:", fix: "save it as UTF-8" },
    Case { name: "missing pipeline file", files: &[], prime: None, args: PLAN, stage: None, at: "bad.yaml", fix: "check the path" },
    Case { name: "missing required param", files: &[Text("bad.yaml", "pipeline: p\nstages:\n  source:\n    kind: read_table\n    params: { format: csv }\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:4:", fix: "prefflow kinds" },
    Case { name: "ill-typed param", files: &[DATA, Text("bad.yaml", "pipeline: p\nstages:\n  slow:\n    kind: probe\n    params:\n      delay_ms: soon\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:6:17", fix: "prefflow kinds" },
    Case { name: "param typo", files: &[DATA, Text("bad.yaml", "pipeline: p\nstages:\n  slow:\n    kind: probe\n    params:\n      dealy_ms: 3\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:6:", fix: "did you mean `delay_ms`?" },
    Case { name: "undeclared pool", files: &[Text("bad.yaml", "pipeline: p\nstages:\n  a:\n    kind: probe\n    resources: [gpu]\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:5:", fix: "declare it at the top level" },
    Case { name: "pool of size 0", files: &[Text("bad.yaml", "pipeline: p\nresources: { gpu: 0 }\nstages:\n  a:\n    kind: probe\n    resources: [gpu]\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:2:19", fix: "at least one slot" },
    Case { name: "concurrency 0", files: &[Text("bad.yaml", "pipeline: p\nstages:\n  a:\n    kind: probe\n    concurrency: 0\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:5:18", fix: "give at least 1" },
    Case { name: "negative concurrency", files: &[Text("bad.yaml", "pipeline: p\nstages:\n  a:\n    kind: probe\n    concurrency: -2\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:5:", fix: "prefflow schema" },
    Case { name: "unresolved param", files: &[DATA, Text("bad.yaml", "pipeline: p\nstages:\n  source:\n    kind: read_table\n    params: { path: \"${params.file}\" }\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:5:", fix: "declare it under top-level `params:`" },
    Case { name: "stage name with a dot", files: &[Text("bad.yaml", "pipeline: p\nstages:\n  a.b: { kind: probe }\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:3:", fix: "use letters, digits" },
    Case { name: "per_item without input", files: &[Text("bad.yaml", "pipeline: p\nstages:\n  a:\n    kind: probe\n    per_item: id\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:5:", fix: "list the table whose rows are the items" },
    Case { name: "sweep exclude names no dimension", files: &[Text("bad.yaml", "pipeline: p\nstages:\n  a:\n    kind: probe\n    sweep: { grid: { delay_ms: [1, 2] }, exclude: [ { dealy_ms: 1 } ] }\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:5:12", fix: "did you mean `delay_ms`?" },
    Case { name: "sweep exclude matches nothing", files: &[Text("bad.yaml", "pipeline: p\nstages:\n  a:\n    kind: probe\n    sweep: { grid: { delay_ms: [1, 2] }, exclude: [ { delay_ms: 3 } ] }\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:5:12", fix: "a typo excludes nothing" },
    Case { name: "sweep value twice", files: &[Text("bad.yaml", "pipeline: p\nstages:\n  a:\n    kind: probe\n    sweep: { delay_ms: [1, 2, 1] }\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:5:12", fix: "list each value once" },
    Case { name: "sweep dimension not a list", files: &[Text("bad.yaml", "pipeline: p\nstages:\n  a:\n    kind: probe\n    sweep: { delay_ms: 5 }\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:5:12", fix: "sweep: { agent: [oracle, defaults] }" },
    Case { name: "sweep dimension empty", files: &[Text("bad.yaml", "pipeline: p\nstages:\n  a:\n    kind: probe\n    sweep: { delay_ms: [] }\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:5:12", fix: "give at least one value" },
    Case { name: "sweep include misses a dimension", files: &[Text("bad.yaml", "pipeline: p\nstages:\n  a:\n    kind: probe\n    sweep: { grid: { delay_ms: [1], fail_items: [[]] }, include: [ { delay_ms: 2 } ] }\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:5:12", fix: "add the missing dimensions" },
    Case { name: "sweep dimension in two stages", files: &[Text("bad.yaml", "pipeline: p\nstages:\n  a:\n    kind: probe\n    sweep: { params.n: [1, 2] }\n  b:\n    kind: probe\n    sweep: { params.n: [3] }\nparams: { n: 0 }\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:", fix: "sweep it in one stage only" },
    Case { name: "events typo", files: &[Text("bad.yaml", "pipeline: w\nstages:\n  world:\n    kind: build_world\n    params: { persona: p.yaml, events: 100000000 }\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:5:", fix: "add `max_events: 100000000`" },
    Case { name: "count typo", files: &[Text("bad.yaml", "pipeline: t\nstages:\n  world:\n    kind: build_world\n    params: { persona: p.yaml }\n  c:\n    kind: generate_tasks\n    inputs: [world.sources, world.history_events]\n    params: { count: 18800000 }\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:9:", fix: "add `max_count: 18800000`" },
    Case { name: "epochs typo", files: &[Text("bad.yaml", "pipeline: e\nstages:\n  world:\n    kind: build_world\n    params: { persona: p.yaml }\n  ep:\n    kind: run_episodes\n    inputs: [world.sources, world.history_events]\n    params: { agent: oracle, epochs: 10000 }\n")], prime: None, args: PLAN, stage: None, at: "bad.yaml:9:", fix: "add `max_epochs: 10000`" },
    // ---------------------------------------------------------------- the command line
    Case { name: "--set without =", files: &[DATA, Text("bad.yaml", HEAD)], prime: None, args: &["run", "bad.yaml", "--set", "seed"], stage: None, at: "--set `seed`", fix: "--set seed=7" },
    Case { name: "--set unknown name", files: &[DATA, Text("bad.yaml", HEAD)], prime: None, args: &["run", "bad.yaml", "--set", "nosuch=1"], stage: None, at: "--set `nosuch=1`", fix: "nor a stage [source]" },
    Case { name: "--set empty segment", files: &[DATA, Text("bad.yaml", HEAD)], prime: None, args: &["run", "bad.yaml", "--set", "source..path=x"], stage: None, at: "--set `source..path=x`", fix: "write e.g. seed=7" },
    Case { name: "--set ill-typed value", files: &[DATA, Text("bad.yaml", HEAD)], prime: None, args: &["run", "bad.yaml", "--set", "source.path=[1, 2]"], stage: None, at: "bad.yaml:5:", fix: "prefflow kinds" },
    Case { name: "--set on a swept value pins an unknown one", files: &[Text("bad.yaml", "pipeline: p\nstages:\n  a:\n    kind: probe\n    sweep: { delay_ms: [1, 2] }\n")], prime: None, args: &["run", "bad.yaml", "--set", "a.delay_ms=soon"], stage: None, at: "bad.yaml:", fix: "prefflow kinds" },
    Case { name: "--only unknown stage", files: &[DATA, Text("bad.yaml", HEAD)], prime: None, args: &["run", "bad.yaml", "--only", "sorce"], stage: None, at: "--only `sorce`", fix: "did you mean `source`?" },
    Case { name: "--store is a file", files: &[DATA, Text("bad.yaml", HEAD), Text("store-file", "x")], prime: None, args: &["--store", "store-file", "run", "bad.yaml"], stage: None, at: "--store store-file", fix: "pass a directory" },
    Case { name: "--store under a file", files: &[DATA, Text("bad.yaml", HEAD), Text("store-file", "x")], prime: None, args: &["--store", "store-file/s", "run", "bad.yaml"], stage: None, at: "--store store-file/s", fix: "pass a directory" },
    Case { name: "serve-env on a public address", files: &[], prime: None, args: &["serve-env", "--port", "0", "--bind", "0.0.0.0"], stage: None, at: "--bind 0.0.0.0", fix: "--allow-remote and --token-env" },
    Case { name: "serve-env remote without a token", files: &[], prime: None, args: &["serve-env", "--port", "0", "--bind", "0.0.0.0", "--allow-remote"], stage: None, at: "--bind 0.0.0.0", fix: "add --token-env VAR" },
    Case { name: "serve-env token variable unset", files: &[], prime: None, args: &["serve-env", "--port", "0", "--token-env", "PREFFLOW_TEST_UNSET_TOKEN"], stage: None, at: "--token-env PREFFLOW_TEST_UNSET_TOKEN", fix: "export PREFFLOW_TEST_UNSET_TOKEN=" },
    Case { name: "serve-env zero steps", files: &[], prime: None, args: &["serve-env", "--port", "0", "--max-steps", "0"], stage: None, at: "--max-steps", fix: "give a positive value" },
    Case { name: "serve-env events typo", files: &[], prime: None, args: &["serve-env", "--port", "0", "--events", "100000000"], stage: None, at: "--events 100000000", fix: "add --max-events 100000000" },
    Case { name: "serve-env missing persona", files: &[], prime: None, args: &["serve-env", "--port", "0", "--apps", "{repo}/datasets/apps", "--persona", "nobody.yaml"], stage: None, at: "nobody.yaml", fix: "check the path" },
    Case { name: "serve-env persona with a duplicate key", files: &[Text("persona.yaml", "persona: x\npersona: y\n")], prime: None, args: &["serve-env", "--port", "0", "--apps", "{repo}/datasets/apps", "--persona", "persona.yaml"], stage: None, at: "persona.yaml:2:1", fix: "keep only one of them" },
    // ---------------------------------------------------------------- data files
    Case { name: "CSV row with a stray comma", files: &[Text("data.csv", "id,grp,value\nr1,a,1\nr2,b,2,3\n"), Text("bad.yaml", HEAD)], prime: None, args: RUN, stage: Some("source"), at: "row 3 (line 3)", fix: "must be quoted" },
    Case { name: "CSV in Latin-1", files: &[Bytes("data.csv", b"id,city\nr1,Z\xFCrich\n"), Text("bad.yaml", HEAD)], prime: None, args: RUN, stage: Some("source"), at: "line 2, column 5", fix: "re-save the file as UTF-8" },
    Case { name: "CSV missing", files: &[Text("bad.yaml", HEAD)], prime: None, args: RUN, stage: Some("source"), at: "data.csv", fix: "check the path" },
    Case { name: "table of unknown format", files: &[Text("data.txt", "x"), Text("bad.yaml", "pipeline: p\nstages:\n  source:\n    kind: read_table\n    params: { path: data.txt }\n")], prime: None, args: RUN, stage: Some("source"), at: "`data.txt`", fix: "set `format: csv|json|jsonl|parquet`" },
    // ---------------------------------------------------------------- app YAML
    Case { name: "app field typo", files: &[APPS, PERSONA, Edit { path: "apps/dinespot.yaml", from_repo: "datasets/apps/dinespot.yaml", from: "description: Find restaurants", to: "descripton: Find restaurants" }, Text("bad.yaml", WORLD)], prime: None, args: RUN, stage: Some("world"), at: "dinespot.yaml:4:1", fix: "did you mean `description`?" },
    Case { name: "app duplicate key", files: &[APPS, PERSONA, Edit { path: "apps/dinespot.yaml", from_repo: "datasets/apps/dinespot.yaml", from: "name: DineSpot\n", to: "name: DineSpot\nname: Dine\n" }, Text("bad.yaml", WORLD)], prime: None, args: RUN, stage: Some("world"), at: "dinespot.yaml:3:1", fix: "keep only one of them" },
    Case { name: "app in UTF-16", files: &[APPS, PERSONA, Bytes("apps/dinespot.yaml", b"\xFE\xFF\x00a\x00p\x00p"), Text("bad.yaml", WORLD)], prime: None, args: RUN, stage: Some("world"), at: "dinespot.yaml:1:1", fix: "re-save the file as UTF-8" },
    Case { name: "app malformed", files: &[APPS, PERSONA, Edit { path: "apps/dinespot.yaml", from_repo: "datasets/apps/dinespot.yaml", from: "category: dining", to: "category: [dining" }, Text("bad.yaml", WORLD)], prime: None, args: RUN, stage: Some("world"), at: "dinespot.yaml:", fix: "fix:" },
    Case { name: "app default not an option", files: &[APPS, PERSONA, Edit { path: "apps/dinespot.yaml", from_repo: "datasets/apps/dinespot.yaml", from: "default: indoor", to: "default: rooftop" }, Text("bad.yaml", WORLD)], prime: None, args: RUN, stage: Some("world"), at: "dinespot.yaml:", fix: "fix:" },
    // ---------------------------------------------------------------- persona YAML
    Case { name: "persona missing", files: &[APPS, Text("bad.yaml", WORLD)], prime: None, args: RUN, stage: Some("world"), at: "persona.yaml", fix: "check the path" },
    Case { name: "persona field typo", files: &[APPS, Edit { path: "persona.yaml", from_repo: "datasets/personas/maya.yaml", from: "\noccupation:", to: "\noccupaton:" }, Text("bad.yaml", WORLD)], prime: None, args: RUN, stage: Some("world"), at: "persona.yaml:", fix: "did you mean `occupation`?" },
    Case { name: "persona duplicate key", files: &[APPS, Edit { path: "persona.yaml", from_repo: "datasets/personas/maya.yaml", from: "\nage: 31\n", to: "\nage: 31\nage: 32\n" }, Text("bad.yaml", WORLD)], prime: None, args: RUN, stage: Some("world"), at: "persona.yaml:", fix: "keep only one of them" },
    Case { name: "persona in Latin-1", files: &[APPS, Bytes("persona.yaml", b"persona: maya\nname: Ma\xEFa\n"), Text("bad.yaml", WORLD)], prime: None, args: RUN, stage: Some("world"), at: "persona.yaml:2:9", fix: "re-save the file as UTF-8" },
    Case { name: "persona unknown dimension", files: &[APPS, Edit { path: "persona.yaml", from_repo: "datasets/personas/maya.yaml", from: "dimension: dining", to: "dimension: dinning" }, Text("bad.yaml", WORLD)], prime: None, args: RUN, stage: Some("world"), at: "persona.yaml:", fix: "fix:" },
    // ---------------------------------------------------------------- KnowU logs and profiles
    Case { name: "KnowU log empty", files: &[PROFILE, Text("log.json", "[]"), Text("bad.yaml", KNOWU)], prime: None, args: RUN, stage: Some("persona"), at: "log.json", fix: "a KnowU log is a JSON list" },
    Case { name: "KnowU log not JSON", files: &[PROFILE, Text("log.json", "{not json"), Text("bad.yaml", KNOWU)], prime: None, args: RUN, stage: Some("persona"), at: "log.json:1:2", fix: "fix the file" },
    Case { name: "KnowU log is an object", files: &[PROFILE, Text("log.json", "{\"time\": \"2025-01-01T08:00:00\"}"), Text("bad.yaml", KNOWU)], prime: None, args: RUN, stage: Some("persona"), at: "log.json", fix: "must be a JSON list of log entries" },
    Case { name: "KnowU log bad time", files: &[PROFILE, Text("log.json", "[\n  {\"time\": \"2025-01-01T08:00:00\", \"action\": \"a\", \"label\": \"signal\"},\n  {\"time\": \"yesterday\", \"action\": \"b\", \"label\": \"noise\"}\n]"), Text("bad.yaml", KNOWU)], prime: None, args: RUN, stage: Some("persona"), at: "entry 2 (line 3)", fix: "write YYYY-MM-DDTHH:MM" },
    Case { name: "KnowU log bad label", files: &[PROFILE, Text("log.json", "[{\"time\": \"2025-01-01T08:00:00\", \"action\": \"a\", \"label\": \"signl\"}]"), Text("bad.yaml", KNOWU)], prime: None, args: RUN, stage: Some("persona"), at: "entry 1 (line 1)", fix: "use \"signal\" or \"noise\"" },
    Case { name: "KnowU log entry without label", files: &[PROFILE, Text("log.json", "[\n {\"time\": \"2025-01-01T08:00:00\", \"action\": \"a\"}\n]"), Text("bad.yaml", KNOWU)], prime: None, args: RUN, stage: Some("persona"), at: "entry 1 (line 2)", fix: "a KnowU log is a JSON list" },
    Case { name: "KnowU log in UTF-16", files: &[PROFILE, Bytes("log.json", b"\xFF\xFE[\x00]\x00"), Text("bad.yaml", KNOWU)], prime: None, args: RUN, stage: Some("persona"), at: "log.json:1:1", fix: "re-save the file as UTF-8" },
    Case { name: "KnowU log truncated", files: &[PROFILE, Text("log.json", "[{\"time\": \"2025-01-01T08:00:00\", \"action\": \"a\", \"label\": \"signal\"},\n {\"time\": \"2025-01-0"), Text("bad.yaml", KNOWU)], prime: None, args: RUN, stage: Some("persona"), at: "log.json:2:", fix: "fix the file" },
    Case { name: "KnowU profile duplicate key", files: &[LOG, Text("profile.yaml", "user_profile:\n  identity: { full_name: A }\n  identity: { full_name: B }\n"), Text("bad.yaml", KNOWU)], prime: None, args: RUN, stage: Some("persona"), at: "profile.yaml:3:3", fix: "keep only one of them" },
    Case { name: "KnowU profile without user_profile", files: &[LOG, Text("profile.yaml", "identity: { full_name: A }\n"), Text("bad.yaml", KNOWU)], prime: None, args: RUN, stage: Some("persona"), at: "profile.yaml", fix: "a KnowU profile starts with `user_profile:`" },
    Case { name: "KnowU profile malformed", files: &[LOG, Text("profile.yaml", "user_profile:\n  identity: [A\n"), Text("bad.yaml", KNOWU)], prime: None, args: RUN, stage: Some("persona"), at: "profile.yaml:2:13", fix: "a KnowU profile is YAML starting with `user_profile:`" },
    // ---------------------------------------------------------------- task templates
    Case { name: "template field typo", files: &[Dir("templates", "datasets/tasks"), Edit { path: "templates/dining.yaml", from_repo: "datasets/tasks/dining.yaml", from: "    instruction: \"Book us a table", to: "    instructon: \"Book us a table" }, Text("bad.yaml", TEMPLATES)], prime: None, args: RUN, stage: Some("candidates"), at: "dining.yaml:", fix: "instruction" },
    Case { name: "template duplicate key", files: &[Dir("templates", "datasets/tasks"), Edit { path: "templates/dining.yaml", from_repo: "datasets/tasks/dining.yaml", from: "  - id: dinespot_dinner\n", to: "  - id: dinespot_dinner\n    id: dinespot_dinner2\n" }, Text("bad.yaml", TEMPLATES)], prime: None, args: RUN, stage: Some("candidates"), at: "dining.yaml:", fix: "keep only one of them" },
    Case { name: "template in Latin-1", files: &[Dir("templates", "datasets/tasks"), Bytes("templates/dining.yaml", b"templates:\n  - id: caf\xE9\n"), Text("bad.yaml", TEMPLATES)], prime: None, args: RUN, stage: Some("candidates"), at: "dining.yaml:2:", fix: "re-save the file as UTF-8" },
    // ---------------------------------------------------------------- review sheets
    Case { name: "sheet unknown column", files: &[Edit { path: "sheets/a.csv", from_repo: SHEET, from: ",reviewer,", to: ",reviewr," }], prime: Some(REVIEW_PRIME), args: &["run", "review.yaml", "--progress", "none"], stage: Some("refined"), at: "row 1, column `reviewr`", fix: "decision columns" },
    Case { name: "sheet unknown task", files: &[Edit { path: "sheets/a.csv", from_repo: SHEET, from: SHEET_TASK, to: "calendar_dinner_sam-99,calendar_dinner_sam," }], prime: Some(REVIEW_PRIME), args: &["run", "review.yaml", "--progress", "none"], stage: Some("refined"), at: "a.csv: row 3, column `task_id`", fix: "unknown task `calendar_dinner_sam-99`" },
    Case { name: "sheet bad decision", files: &[Edit { path: "sheets/a.csv", from_repo: SHEET, from: ",accept,", to: ",acept," }], prime: Some(REVIEW_PRIME), args: &["run", "review.yaml", "--progress", "none"], stage: Some("refined"), at: "column `decision`", fix: "write `accept` or `reject`" },
    Case { name: "sheet ragged row", files: &[Edit { path: "sheets/a.csv", from_repo: SHEET, from: SHEET_TASK, to: "calendar_dinner_sam-01,extra,calendar_dinner_sam," }], prime: Some(REVIEW_PRIME), args: &["run", "review.yaml", "--progress", "none"], stage: Some("refined"), at: "a.csv: row 3: (line 7)", fix: "must be quoted" },
    Case { name: "sheet in Latin-1", files: &[Bytes("sheets/a.csv", b"task_id,decision,reviewer\ncalendar_dinner_sam-01,accept,Jos\xE9\n")], prime: Some(REVIEW_PRIME), args: &["run", "review.yaml", "--progress", "none"], stage: Some("refined"), at: "row 2", fix: "re-save the sheet as UTF-8" },
    Case { name: "sheet in UTF-16", files: &[Bytes("sheets/a.csv", b"\xFF\xFEt\x00a\x00s\x00k\x00")], prime: Some(REVIEW_PRIME), args: &["run", "review.yaml", "--progress", "none"], stage: Some("refined"), at: "row 1", fix: "re-save the sheet as UTF-8" },
    Case { name: "sheet without reviewer column", files: &[Text("sheets/a.csv", "task_id,decision\ncalendar_dinner_sam-01,accept\n")], prime: Some(REVIEW_PRIME), args: &["run", "review.yaml", "--progress", "none"], stage: Some("refined"), at: "row 1, column `reviewer`", fix: "export a fresh sheet" },
];

/// Every case fails the way it must; all failures are listed together.
#[test]
fn every_bad_input_exits_2_with_a_located_fix_and_an_untouched_store() {
    assert!(CASES.len() >= 60, "the suite keeps at least 60 cases");
    let failures: Vec<String> = CASES.iter().filter_map(|c| check(c).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n\n")
    );
}

fn check(case: &Case) -> Result<(), String> {
    let ws = Workspace::new();
    if let Some(prime) = case.prime {
        copy_dir(primed_store(prime), &ws.store());
        ws.write(
            "review.yaml",
            &with_repo(&format!("{REVIEW_PRIME}{REVIEW_STAGE}")),
        );
    }
    for f in case.files {
        write(&ws, f);
    }
    let before = committed(&ws.store());
    let args: Vec<String> = case.args.iter().map(|a| with_repo(a)).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = ws.cli(&args);
    let fail = |why: String| {
        Err(format!(
            "[{}] {why}\n  exit {}\n  stderr: {}",
            case.name,
            run.code,
            run.stderr.trim().replace('\n', "\n          ")
        ))
    };
    if run.code != 2 {
        return fail("expected exit code 2".into());
    }
    if run.stderr.contains("panicked") {
        return fail("panicked".into());
    }
    for (what, needle) in [("the place", case.at), ("the fix", case.fix)] {
        if !run.stderr.contains(&with_repo(needle)) {
            return fail(format!("stderr does not name {what}: `{needle}`"));
        }
    }
    if case.args.first() == Some(&"serve-env") && !run.stdout.is_empty() {
        return fail(format!("serve-env listened: {}", run.stdout));
    }
    match case.stage {
        None if ws.store().exists() => fail("a rejected plan must not create the store".into()),
        None => Ok(()),
        Some(stage) => untouched(&ws, &before, stage).or_else(fail),
    }
}

/// Every manifest committed before is still there, unchanged; nothing was committed for the
/// rejected stage; every earlier successful result is still the latest.
fn untouched(ws: &Workspace, before: &Snapshot, stage: &str) -> Result<(), String> {
    let after = committed(&ws.store());
    for (path, (bytes, _)) in &before.manifests {
        if after.manifests.get(path).map(|(b, _)| b) != Some(bytes) {
            return Err(format!("an earlier manifest changed or vanished: {path}"));
        }
    }
    if let Some((path, _)) = after
        .manifests
        .iter()
        .find(|(_, (_, s))| s.as_deref() == Some(stage))
    {
        return Err(format!(
            "a result was committed for the rejected stage: {path}"
        ));
    }
    for (label, version) in &before.latest {
        if after.latest.get(label) != Some(version) {
            return Err(format!(
                "the earlier result of `{label}` is no longer the latest"
            ));
        }
    }
    if after
        .latest
        .keys()
        .any(|l| l == stage || l.starts_with(&format!("{stage}[")))
    {
        return Err(format!("`{stage}` has a successful latest result"));
    }
    Ok(())
}

/// What a store holds that a bad input must not disturb.
#[derive(Default)]
struct Snapshot {
    /// Recipe and item manifests: bytes and the stage they belong to.
    manifests: BTreeMap<String, (Vec<u8>, Option<String>)>,
    /// Successful instances of every pipeline's latest record: label → data version.
    latest: BTreeMap<String, String>,
}

fn committed(store: &Path) -> Snapshot {
    let mut snap = Snapshot::default();
    for dir in ["recipes", "items"] {
        for path in files_under(&store.join(dir)) {
            let bytes = std::fs::read(&path).unwrap_or_default();
            let stage = serde_json::from_slice::<Value>(&bytes)
                .ok()
                .and_then(|m| m["stage"].as_str().map(str::to_string));
            let rel = path.strip_prefix(store).unwrap_or(&path);
            snap.manifests
                .insert(rel.display().to_string(), (bytes, stage));
        }
    }
    for path in files_under(&store.join("runs")) {
        if path.file_name().is_none_or(|n| n != "latest.json") {
            continue;
        }
        let record: Value = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        for inst in record["instances"].as_array().into_iter().flatten() {
            let ok = matches!(inst["status"].as_str(), Some("executed" | "cached"));
            if let (true, Some(version)) = (ok, inst["data_version"].as_str()) {
                let label = match inst["variant"].as_str().unwrap_or_default() {
                    "" => inst["stage"].as_str().unwrap_or_default().to_string(),
                    v => format!("{}[{v}]", inst["stage"].as_str().unwrap_or_default()),
                };
                snap.latest.insert(label, version.to_string());
            }
        }
    }
    snap
}

fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn with_repo(text: &str) -> String {
    text.replace("{repo}", env!("CARGO_MANIFEST_DIR"))
}

fn write(ws: &Workspace, file: &File) {
    match file {
        Text(path, text) => ws.write(path, &with_repo(text)),
        Bytes(path, bytes) => {
            ws.write(path, "");
            std::fs::write(ws.path().join(path), bytes).expect("write bytes");
        }
        Edit {
            path,
            from_repo,
            from,
            to,
        } => {
            let original = std::fs::read_to_string(repo(from_repo)).expect("repository file");
            assert!(original.contains(from), "`{from}` is not in {from_repo}");
            ws.write(path, &original.replacen(from, to, 1));
        }
        Dir(path, from_repo) => {
            std::fs::create_dir_all(ws.path().join(path)).expect("mkdir");
            for f in files_under(Path::new(&repo(from_repo))) {
                let name = f.file_name().expect("file name");
                std::fs::copy(&f, ws.path().join(path).join(name)).expect("copy");
            }
        }
    }
}

/// A store in which `pipeline` ran successfully, built once per pipeline text.
fn primed_store(pipeline: &'static str) -> &'static Path {
    static PRIMED: OnceLock<std::sync::Mutex<BTreeMap<&'static str, &'static Path>>> =
        OnceLock::new();
    let mut primed = PRIMED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    primed.entry(pipeline).or_insert_with(|| {
        let ws = Box::leak(Box::new(Workspace::new()));
        ws.write("prime.yaml", &with_repo(pipeline));
        ws.cli(&["run", "prime.yaml", "--progress", "none", "-q"])
            .expect_code(0);
        Box::leak(ws.store().into_boxed_path())
    })
}

fn copy_dir(from: &Path, to: &Path) {
    for f in files_under(from) {
        let rel = f.strip_prefix(from).expect("under the store");
        let dest = to.join(rel);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::copy(&f, dest).expect("copy store file");
    }
}
