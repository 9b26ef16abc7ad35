//! The Slurm executor against a real Slurm cluster (../shared/tools/slurm-single-node.sh; CI
//! starts it): the shipped iPrefBench pipeline gives the same bytes as a local run, a task
//! cancelled with `scancel` is re-submitted, a SIGKILLed coordinator restarted computes no
//! committed item again, and a worker's bad-input error comes back located with exit 2;
//! whole-table stages marked `executor: slurm` run as one-task jobs with the same bytes.
//! Without `sbatch` these tests say so and pass; under `CI=true` they must run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::*;

/// Whether a Slurm cluster answers here; under CI it must.
fn slurm_up(test: &str) -> bool {
    let ok = Command::new("squeue")
        .arg("-h")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
        && Command::new("sbatch")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{test}: no Slurm cluster under CI=true (.ci/run starts ../shared/tools/slurm-single-node.sh)"
        );
        eprintln!("skipping {test}: no Slurm cluster (sbatch/squeue absent or not answering); start one with ../shared/tools/slurm-single-node.sh");
    }
    ok
}

/// `run FILE --progress none --executor slurm --profile PROFILE` in `ws`.
fn run_on_slurm(ws: &Workspace, file: &str, profile: &str) -> Run {
    ws.cli(&[
        "run",
        file,
        "--progress",
        "none",
        "--executor",
        "slurm",
        "--profile",
        profile,
    ])
}

/// A profile for the test cluster: its partition, short polls, at most `tasks` per array.
fn profile(ws: &Workspace, tasks: u32, extra: &str) -> String {
    let partition = std::env::var("SLURM_TEST_PARTITION").unwrap_or_else(|_| "debug".into());
    ws.write(
        "slurm.yaml",
        &format!("partition: {partition}\nmax_array_size: {tasks}\npoll_ms: 200\n{extra}"),
    );
    "slurm.yaml".into()
}

/// The Slurm job ids a job's submissions name, oldest first, with their shards.
fn submissions(store: &Path) -> Vec<(String, Vec<u64>)> {
    let mut out = Vec::new();
    for path in files(&store.join("cluster/jobs")) {
        if !path.ends_with("submissions.json") {
            continue;
        }
        let v: Value = serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
        for s in v["list"].as_array().cloned().unwrap_or_default() {
            let shards = s["shards"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_u64).collect())
                .unwrap_or_default();
            out.push((
                s["slurm_job"].as_str().unwrap_or_default().to_string(),
                shards,
            ));
        }
    }
    out
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Item manifests by path, with their bytes.
fn item_manifests(store: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    files(&store.join("items"))
        .into_iter()
        .filter(|p| !p.to_string_lossy().ends_with(".tmp"))
        .map(|p| {
            let bytes = std::fs::read(&p).expect("manifest");
            (p, bytes)
        })
        .collect()
}

/// Waits (without a deadline the test asserts on: the cluster is slow under load) until
/// `ready` holds, polling; panics after `patience` with `what`.
fn wait_for(what: &str, patience: Duration, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < patience, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn running_tasks(job: &str) -> Vec<String> {
    let out = Command::new("squeue")
        .args(["--states=RUNNING", "-h", "-r", "-j", job, "-o", "%i"])
        .output()
        .expect("squeue");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

fn spawn(ws: &Workspace, args: &[&str]) -> Child {
    ws.command(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn coordinator")
}

fn finish(child: Child) -> (i32, String, String) {
    let out = child.wait_with_output().expect("coordinator output");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Rows to map over, and a probe stage over them (`extra` params), then a whole-table sum.
fn probe_pipeline(n: usize, params: &str, stage_extra: &str) -> (String, String) {
    let rows = numbers_csv(n);
    let yaml = format!(
        r#"
pipeline: sl
stages:
  rows:
    kind: read_table
    params: {{ path: data/rows.csv }}
  work:
    kind: probe
    inputs: [rows]
    per_item: id
{stage_extra}    params: {{ {params} }}
  total:
    kind: query
    inputs: [work]
    params: {{ sql: "SELECT COUNT(*) AS n, SUM(value) AS s FROM work" }}
"#
    );
    (rows, yaml)
}

/// `pipelines/iprefbench.yaml` with the episode sweep narrowed to two agents (the full sweep
/// takes a quarter of an hour in a debug build on two cores; BENCHMARKS.md has that run).
fn narrowed_iprefbench() -> String {
    shipped_iprefbench("{ agent: [oracle, defaults], history: [all] }")
}

#[test]
fn iprefbench_on_slurm_gives_the_same_bytes_as_a_local_run() {
    if !slurm_up("iprefbench_on_slurm_gives_the_same_bytes_as_a_local_run") {
        return;
    }
    let local = Workspace::new();
    let cluster = Workspace::new();
    for ws in [&local, &cluster] {
        std::os::unix::fs::symlink(repo("datasets"), ws.path().join("datasets")).expect("link");
        ws.write("iprefbench.yaml", &narrowed_iprefbench());
    }
    let local_record = local.run_ok("iprefbench.yaml", &[]);
    let p = profile(&cluster, 2, "");
    let record = cluster.run_ok("iprefbench.yaml", &["--executor", "slurm", "--profile", &p]);
    let (want, got) = (table_blobs(&local_record), table_blobs(&record));
    assert!(want.len() > 40, "{want:?}");
    assert_eq!(got, want, "tables differ between the local and slurm runs");
    let subs = submissions(&cluster.store());
    // One array per per-item instance with items: validated, two episodes, two judged, the
    // labelled episodes and their judge.
    assert_eq!(subs.len(), 7, "{subs:?}");
    let items = summary(&record, "items_executed");
    assert_eq!(items, summary(&local_record, "items_executed"));
    // Every item was computed by an array task: the workers' reports account for all of them.
    let committed: u64 = files(&cluster.store().join("cluster/jobs"))
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("shard-"))
        })
        .map(|p| {
            let v: Value =
                serde_json::from_slice(&std::fs::read(p).expect("report")).expect("json");
            v["committed"].as_u64().unwrap_or(0)
        })
        .sum();
    assert_eq!(committed, items);
    // A no-op re-run submits nothing.
    cluster.run_ok("iprefbench.yaml", &["--executor", "slurm", "--profile", &p]);
    assert_eq!(submissions(&cluster.store()).len(), subs.len());
}

#[test]
fn a_task_cancelled_with_scancel_is_resubmitted_and_the_run_completes() {
    if !slurm_up("a_task_cancelled_with_scancel_is_resubmitted_and_the_run_completes") {
        return;
    }
    let ws = Workspace::new();
    let (rows, yaml) = probe_pipeline(8, "delay_ms: 700", "    retries: 1\n");
    ws.write("data/rows.csv", &rows);
    ws.write("sl.yaml", &yaml);
    let p = profile(&ws, 4, "");
    let child = spawn(
        &ws,
        &[
            "run",
            "sl.yaml",
            "--progress",
            "none",
            "--executor",
            "slurm",
            "--profile",
            &p,
        ],
    );
    let store = ws.store();
    let mut victim = String::new();
    wait_for("a running array task", Duration::from_secs(300), || {
        let subs = submissions(&store);
        if let Some((job, _)) = subs.first() {
            if let Some(t) = running_tasks(job).into_iter().next() {
                victim = t;
                return true;
            }
        }
        false
    });
    let status = Command::new("scancel")
        .arg(&victim)
        .status()
        .expect("scancel");
    assert!(status.success());
    let (code, stdout, stderr) = finish(child);
    assert_eq!(code, 0, "stdout:\n{stdout}\nstderr:\n{stderr}");
    let shard: u64 = victim
        .split('_')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("task index");
    let subs = submissions(&store);
    assert!(
        subs.iter()
            .skip(1)
            .any(|(_, shards)| shards.contains(&shard)),
        "cancelled task {victim} was not re-submitted: {subs:?}\n{stderr}"
    );
    let record = ws.last_run("sl");
    assert_eq!(summary(&record, "items_failed"), 0);
    assert_eq!(
        ws.table("total", None)
            .column("n")
            .expect("n")
            .u32()
            .expect("u32")
            .get(0),
        Some(8)
    );
    // Same bytes as a local run of the same pipeline.
    let local = Workspace::new();
    local.write("data/rows.csv", &rows);
    local.write("sl.yaml", &yaml);
    let want = table_blobs(&local.run_ok("sl.yaml", &[]));
    assert_eq!(table_blobs(&record), want);
}

#[test]
fn a_sigkilled_coordinator_restarted_computes_no_committed_item_again() {
    if !slurm_up("a_sigkilled_coordinator_restarted_computes_no_committed_item_again") {
        return;
    }
    let ws = Workspace::new();
    // `timing` stamps each computation, so an item computed twice would change its manifest.
    let (rows, yaml) = probe_pipeline(12, "delay_ms: 600, timing: true", "");
    ws.write("data/rows.csv", &rows);
    ws.write("sl.yaml", &yaml);
    let p = profile(&ws, 4, "");
    let args = [
        "run",
        "sl.yaml",
        "--progress",
        "none",
        "--executor",
        "slurm",
        "--profile",
        &p,
    ];
    let mut first = spawn(&ws, &args);
    let store = ws.store();
    wait_for("two committed items", Duration::from_secs(300), || {
        item_manifests(&store).len() >= 2
    });
    first.kill().expect("SIGKILL the coordinator");
    let _ = first.wait();
    let before = item_manifests(&store);
    assert!(
        before.len() < 12,
        "everything finished before the kill; slow the probe down"
    );
    let (code, stdout, stderr) = finish(spawn(&ws, &args));
    assert_eq!(code, 0, "stdout:\n{stdout}\nstderr:\n{stderr}");
    let after = item_manifests(&store);
    assert_eq!(after.len(), 12, "{stderr}");
    for (path, bytes) in &before {
        assert_eq!(
            after.get(path),
            Some(bytes),
            "item {} was computed again after the restart",
            path.display()
        );
    }
    let record = ws.last_run("sl");
    let work = instance(&record, "work");
    assert_eq!(work["status"], "executed");
    assert_eq!(ws.table("work", None).height(), 12);
}

#[test]
fn a_worker_failing_on_bad_input_surfaces_its_error_through_the_coordinator_with_exit_2() {
    if !slurm_up(
        "a_worker_failing_on_bad_input_surfaces_its_error_through_the_coordinator_with_exit_2",
    ) {
        return;
    }
    let ws = Workspace::new();
    ws.write("data/rows.csv", "id,value\nr1,1\nr2,2\nr3,three\nr4,4\n");
    ws.write(
        "bad.yaml",
        r#"
pipeline: bad
stages:
  rows:
    kind: read_table
    params: { path: data/rows.csv }
  cast:
    kind: query
    inputs: [rows]
    per_item: id
    retries: 2
    params: { sql: "SELECT id, CAST(value AS INT) AS n FROM rows" }
"#,
    );
    let p = profile(&ws, 2, "");
    let run = run_on_slurm(&ws, "bad.yaml", &p);
    assert_eq!(
        run.code, 2,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    assert!(
        run.stderr.contains("failed: cast item `r3`") && run.stderr.contains("three"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("slurm task "), "{}", run.stderr);
    let errors = ws.cli(&["show", "errors"]).expect_code(0);
    assert!(errors.stdout.contains("r3\tinput"), "{}", errors.stdout);
    // The Slurm job and array task it ran in have a column of their own (`slurm JOB_TASK`).
    let row = errors.stdout.lines().find(|l| l.contains("\tr3\t"));
    let ran_in = row.and_then(|l| l.split('\t').nth(4)).unwrap_or_default();
    let task = ran_in.strip_prefix("slurm ").unwrap_or_default();
    assert!(
        task.split_once('_')
            .is_some_and(|(job, t)| job.parse::<u64>().is_ok() && t.parse::<u32>().is_ok()),
        "{}",
        errors.stdout
    );
    // An input error is not re-submitted: one submission.
    assert_eq!(submissions(&ws.store()).len(), 1);
    // The other items are committed.
    assert_eq!(item_manifests(&ws.store()).len(), 3);
}

#[test]
fn a_bad_executor_profile_is_a_located_error_and_submits_nothing() {
    let ws = Workspace::new();
    let (rows, yaml) = probe_pipeline(3, "", "");
    ws.write("data/rows.csv", &rows);
    ws.write("sl.yaml", &yaml);
    ws.write(
        "slurm.yaml",
        "partition: debug\ntime: 2h\nmax_aray_size: 3\n",
    );
    let run = ws.cli(&[
        "run",
        "sl.yaml",
        "--executor",
        "slurm",
        "--profile",
        "slurm.yaml",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("slurm.yaml:3:1"), "{}", run.stderr);
    assert!(run.stderr.contains("max_array_size"), "{}", run.stderr);
    ws.write("slurm.yaml", "partition: debug\ntime: 2h\n");
    let run = ws.cli(&[
        "run",
        "sl.yaml",
        "--executor",
        "slurm",
        "--profile",
        "slurm.yaml",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("slurm.yaml:2:7") && run.stderr.contains("HH:MM:SS"),
        "{}",
        run.stderr
    );
    assert!(!ws.store().exists(), "a bad profile touched the store");
    // The pipeline's own block, and a stage-level `executor:` on a whole-table stage.
    ws.write(
        "sl.yaml",
        &yaml.replace(
            "pipeline: sl\n",
            "pipeline: sl\nexecutor: { kind: slurm, mem: lots }\n",
        ),
    );
    let run = ws.cli(&["run", "sl.yaml"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("sl.yaml:3:") && run.stderr.contains("memory size"),
        "{}",
        run.stderr
    );
    ws.write(
        "sl.yaml",
        &yaml.replace(
            "    kind: read_table\n",
            "    kind: read_table\n    executor: job\n",
        ),
    );
    let run = ws.cli(&["run", "sl.yaml", "--executor", "slurm"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("sl.yaml:6:") && run.stderr.contains("local"),
        "{}",
        run.stderr
    );
    assert!(
        !ws.store().exists(),
        "a bad stage executor touched the store"
    );
}

#[test]
fn a_worker_for_an_unknown_job_exits_3_and_a_bad_shard_exits_2() {
    let ws = Workspace::new();
    let run = ws.cli(&["work", "--job", "nosuch", "--shard", "0/2"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("no job `nosuch`"), "{}", run.stderr);
    let run = ws.cli(&["work", "--job", "nosuch", "--shard", "2/2"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("INDEX/COUNT"), "{}", run.stderr);
}

#[test]
fn ctrl_c_cancels_the_coordinators_jobs() {
    if !slurm_up("ctrl_c_cancels_the_coordinators_jobs") {
        return;
    }
    let ws = Workspace::new();
    let (rows, yaml) = probe_pipeline(6, "delay_ms: 3000", "");
    ws.write("data/rows.csv", &rows);
    ws.write("sl.yaml", &yaml);
    let p = profile(&ws, 3, "");
    let child = spawn(
        &ws,
        &[
            "run",
            "sl.yaml",
            "--progress",
            "none",
            "--executor",
            "slurm",
            "--profile",
            &p,
        ],
    );
    let store = ws.store();
    let mut job = String::new();
    wait_for(
        "a running array task",
        Duration::from_secs(300),
        || match submissions(&store).first() {
            Some((j, _)) if !running_tasks(j).is_empty() => {
                job = j.clone();
                true
            }
            _ => false,
        },
    );
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill")
        .success());
    let (code, _, stderr) = finish(child);
    assert_eq!(code, 130, "{stderr}");
    assert!(
        stderr.contains(&format!("cancelled slurm job(s) {job}")),
        "{stderr}"
    );
    let out = Command::new("squeue")
        .args(["--states=all", "-h", "-r", "-j", &job, "-o", "%T"])
        .output()
        .expect("squeue");
    let states = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        !states.contains("RUNNING") && !states.contains("PENDING"),
        "tasks outlived the interrupt: {states}"
    );
}

#[test]
fn iprefbench_on_slurm_over_s3_gives_the_same_bytes_as_a_local_run() {
    let name = "iprefbench_on_slurm_over_s3_gives_the_same_bytes_as_a_local_run";
    if !slurm_up(name) {
        return;
    }
    let Some(s3) = crate::store_s3::s3(name) else {
        return;
    };
    let local = Workspace::new();
    let cluster = Workspace::new();
    for ws in [&local, &cluster] {
        link_repo(ws, "datasets");
        ws.write("iprefbench.yaml", &narrowed_iprefbench());
    }
    let local_record = local.run_ok("iprefbench.yaml", &[]);
    let p = profile(&cluster, 2, "");
    let args = ["--executor", "slurm", "--profile", p.as_str()];
    let record = s3.run_ok(&cluster, "iprefbench.yaml", &args);
    let (want, got) = (table_blobs(&local_record), table_blobs(&record));
    assert!(want.len() > 40, "{want:?}");
    assert_eq!(
        got, want,
        "tables differ between the local run and slurm over S3"
    );
    assert!(!cluster.store().exists(), "a local store was written");
    let jobs = s3.store.list("cluster/jobs").expect("list");
    let count = |suffix: &str| jobs.iter().filter(|k| k.ends_with(suffix)).count();
    // One per per-item instance with items: validated, two episodes, two judged, the labelled
    // episodes and their judge.
    assert_eq!(count("submissions.json"), 7, "{jobs:?}");
    // Every item was computed by an array task and marked for the coordinator's listing.
    let items = summary(&record, "items_executed");
    assert_eq!(items, summary(&local_record, "items_executed"));
    let committed: u64 = jobs
        .iter()
        .filter(|k| {
            k.rsplit('/')
                .next()
                .is_some_and(|n| n.starts_with("shard-"))
        })
        .map(|k| s3.json(k)["committed"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(committed, items);
    assert_eq!(
        jobs.iter().filter(|k| k.contains("/done/")).count() as u64,
        items
    );
    // A no-op re-run submits nothing.
    let again = s3.run_ok(&cluster, "iprefbench.yaml", &args);
    assert_eq!(summary(&again, "items_executed"), 0);
    let subs = |k: &String| s3.json(k)["list"].as_array().map_or(0, Vec::len);
    let submitted: usize = jobs
        .iter()
        .filter(|k| k.ends_with("submissions.json"))
        .map(subs)
        .sum();
    let after: usize = s3
        .store
        .list("cluster/jobs")
        .expect("list")
        .iter()
        .filter(|k| k.ends_with("submissions.json"))
        .map(subs)
        .sum();
    assert_eq!(after, submitted, "the no-op re-run submitted work");
}

/// Whole-table stages marked `executor: slurm` (`rows`, without inputs, and `total`) around a
/// per-item stage kept on the coordinator (`executor: local`).
fn whole_job_pipeline() -> String {
    r#"
pipeline: wj
stages:
  rows:
    kind: read_table
    executor: slurm
    params: { path: data/rows.csv }
  work:
    kind: probe
    inputs: [rows]
    per_item: id
    executor: local
    params: { label: wj }
  total:
    kind: query
    inputs: [work]
    executor: slurm
    params: { sql: "SELECT grp, COUNT(*) AS n, SUM(value) AS s FROM work GROUP BY grp ORDER BY grp" }
"#
    .into()
}

/// The JSON objects under `cluster/jobs/` whose file name is `name`.
fn job_objects(store: &Path, name: &str) -> Vec<Value> {
    files(&store.join("cluster/jobs"))
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == name))
        .map(|p| serde_json::from_slice(&std::fs::read(p).expect("read")).expect("json"))
        .collect()
}

#[test]
fn whole_table_stages_marked_slurm_run_as_jobs_with_the_same_bytes_as_a_local_run() {
    if !slurm_up("whole_table_stages_marked_slurm_run_as_jobs_with_the_same_bytes_as_a_local_run") {
        return;
    }
    let local = Workspace::new();
    let cluster = Workspace::new();
    for ws in [&local, &cluster] {
        ws.write("data/rows.csv", &numbers_csv(9));
        ws.write("wj.yaml", &whole_job_pipeline());
    }
    let want = table_blobs(&local.run_ok("wj.yaml", &[]));
    let p = profile(&cluster, 2, "");
    let args = ["--executor", "slurm", "--profile", p.as_str()];
    let record = cluster.run_ok("wj.yaml", &args);
    assert_eq!(
        table_blobs(&record),
        want,
        "tables differ from the local run"
    );
    let total = cluster.table("total", None);
    let n = total.column("n").expect("n").u32().expect("u32").clone();
    assert_eq!((0..3).map(|i| n.get(i)).collect::<Vec<_>>(), [Some(3); 3]);
    // Two jobs of one task each: `rows` and `total`; `work` stayed on the coordinator.
    let store = cluster.store();
    let subs = submissions(&store);
    assert_eq!(subs.len(), 2, "{subs:?}");
    assert!(subs.iter().all(|(_, shards)| shards == &[0]), "{subs:?}");
    let specs = job_objects(&store, "spec.json");
    let stages: Vec<&str> = specs.iter().filter_map(|s| s["stage"].as_str()).collect();
    assert_eq!(specs.len(), 2, "{stages:?}");
    assert!(
        stages.contains(&"rows") && stages.contains(&"total"),
        "{stages:?}"
    );
    assert!(specs.iter().all(|s| s["whole_stage"] == true), "{specs:?}");
    // Each was computed by its Slurm task: the worker's report names it and its commit.
    let reports = job_objects(&store, "shard-0.json");
    assert_eq!(reports.len(), 2, "{reports:?}");
    for (job, _) in &subs {
        let task = format!("{job}_0");
        let report = reports.iter().find(|r| r["slurm"] == task.as_str());
        let report = report.unwrap_or_else(|| panic!("no report from {task}: {reports:?}"));
        assert_eq!(report["committed"], 1, "{report}");
        assert_eq!(report["exit_code"], 0, "{report}");
    }
    for stage in ["rows", "total"] {
        assert_eq!(instance(&record, stage)["status"], "executed");
    }
    // A no-op re-run submits nothing and computes nothing.
    let again = cluster.run_ok("wj.yaml", &args);
    assert_eq!(
        submissions(&store).len(),
        2,
        "the no-op re-run submitted work"
    );
    for stage in ["rows", "work", "total"] {
        assert_eq!(instance(&again, stage)["status"], "cached", "{stage}");
    }
    assert_eq!(table_blobs(&again), want);
}

#[test]
fn a_whole_table_job_failing_on_bad_input_surfaces_its_located_error_with_exit_2() {
    if !slurm_up("a_whole_table_job_failing_on_bad_input_surfaces_its_located_error_with_exit_2") {
        return;
    }
    let yaml = r#"
pipeline: bad
stages:
  rows:
    kind: read_table
    params: { path: data/rows.csv }
  cast:
    kind: query
    inputs: [rows]
    executor: slurm
    retries: 2
    params: { sql: "SELECT id, CAST(value AS INT) AS n FROM rows" }
"#;
    let rows = "id,value\nr1,1\nr2,2\nr3,three\nr4,4\n";
    // `ws` runs it on Slurm; `local` shows what the local executor says.
    let (ws, local) = (Workspace::new(), Workspace::new());
    for w in [&ws, &local] {
        w.write("data/rows.csv", rows);
        w.write("bad.yaml", yaml);
    }
    let here = local.cli(&["run", "bad.yaml", "--progress", "none"]);
    assert_eq!(here.code, 2, "{}", here.stderr);
    let p = profile(&ws, 2, "");
    let run = run_on_slurm(&ws, "bad.yaml", &p);
    assert_eq!(
        run.code, 2,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    assert!(
        run.stderr.contains("three") && run.stderr.contains("(the whole stage)"),
        "{}",
        run.stderr
    );
    let errors = ws.cli(&["show", "errors"]).expect_code(0);
    let row = errors.stdout.lines().find(|l| l.starts_with("cast\t"));
    let row = row.unwrap_or_else(|| panic!("no error row for `cast`: {}", errors.stdout));
    let fields: Vec<&str> = row.split('\t').collect();
    assert_eq!(fields[2], "input", "{row}");
    // The Slurm job and task it ran in, in a column of their own.
    let (job, _) = submissions(&ws.store()).into_iter().next().expect("a job");
    assert_eq!(fields[4], format!("slurm {job}_0"), "{row}");
    // The worker's message is the local executor's, behind where it ran.
    let local_row = local.cli(&["show", "errors"]).expect_code(0).stdout;
    let local_message = local_row
        .lines()
        .find(|l| l.starts_with("cast\t"))
        .and_then(|l| l.split('\t').nth(4))
        .expect("local error row")
        .trim_start_matches("bad input: ")
        .to_string();
    assert!(
        row.contains(&local_message),
        "{row}\nlocal: {local_message}"
    );
    // An input error is not re-submitted; nothing was committed for `cast`.
    assert_eq!(submissions(&ws.store()).len(), 1);
}

/// The run leases in the store (`leases/<id>.json`), as JSON.
fn leases(store: &Path) -> Vec<Value> {
    let Ok(entries) = std::fs::read_dir(store.join("leases")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter_map(|p| serde_json::from_slice(&std::fs::read(p).ok()?).ok())
        .collect()
}

#[test]
fn gc_refuses_while_a_worker_runs_even_after_its_coordinator_is_killed() {
    if !slurm_up("gc_refuses_while_a_worker_runs_even_after_its_coordinator_is_killed") {
        return;
    }
    let ws = Workspace::new();
    // Items slow enough that the worker is still computing when gc runs; cancelled below.
    let (rows, yaml) = probe_pipeline(2, "delay_ms: 60000", "");
    ws.write("data/rows.csv", &rows);
    ws.write("sl.yaml", &yaml);
    let p = profile(&ws, 1, "");
    let mut coordinator = spawn(
        &ws,
        &[
            "run",
            "sl.yaml",
            "--progress",
            "none",
            "--executor",
            "slurm",
            "--profile",
            &p,
        ],
    );
    let store = ws.store();
    let own = coordinator.id() as u64;
    let mut worker_pid = 0;
    wait_for("the worker's lease", Duration::from_secs(300), || {
        let found = leases(&store)
            .into_iter()
            .filter_map(|l| l["pid"].as_u64())
            .find(|&pid| pid != own);
        worker_pid = found.unwrap_or(0);
        found.is_some()
    });
    coordinator.kill().expect("SIGKILL the coordinator");
    let _ = coordinator.wait();
    let refused = ws.cli(&["gc"]);
    let (job, _) = submissions(&store).into_iter().next().expect("a job");
    let _ = Command::new("scancel").arg(&job).status();
    assert_eq!(refused.code, 3, "{}\n{}", refused.stdout, refused.stderr);
    assert!(
        refused.stderr.contains("gc refused: 1 live lease")
            && refused.stderr.contains("run of `sl`")
            && refused.stderr.contains(&format!("pid {worker_pid} ")),
        "{}",
        refused.stderr
    );
}

#[test]
fn a_restarted_coordinator_adopts_a_running_whole_table_job() {
    if !slurm_up("a_restarted_coordinator_adopts_a_running_whole_table_job") {
        return;
    }
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(5));
    ws.write(
        "wj.yaml",
        r#"
pipeline: wj
stages:
  rows:
    kind: read_table
    params: { path: data/rows.csv }
  slow:
    kind: probe
    inputs: [rows]
    executor: slurm
    params: { delay_ms: 4000 }
"#,
    );
    let p = profile(&ws, 1, "");
    let args = [
        "run",
        "wj.yaml",
        "--progress",
        "none",
        "--executor",
        "slurm",
        "--profile",
        &p,
    ];
    let mut first = spawn(&ws, &args);
    let store = ws.store();
    wait_for(
        "the whole-table job running",
        Duration::from_secs(300),
        || {
            submissions(&store)
                .first()
                .is_some_and(|(job, _)| !running_tasks(job).is_empty())
        },
    );
    first.kill().expect("SIGKILL the coordinator");
    let _ = first.wait();
    let (code, stdout, stderr) = finish(spawn(&ws, &args));
    assert_eq!(code, 0, "stdout:\n{stdout}\nstderr:\n{stderr}");
    let subs = submissions(&store);
    assert_eq!(
        subs.len(),
        1,
        "the running job was submitted again: {subs:?}"
    );
    assert!(
        stderr.contains(&format!("adopting slurm job(s) {}", subs[0].0)),
        "{stderr}"
    );
    let record = ws.last_run("wj");
    assert_eq!(instance(&record, "slow")["status"], "executed");
    assert_eq!(ws.table("slow", None).height(), 5);
    let reports = job_objects(&store, "shard-0.json");
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(reports[0]["committed"], 1, "{reports:?}");
}

/// A pipeline of two per-item stages over 30 rows, each item its own array task at most.
fn two_item_stages(ws: &Workspace) {
    ws.write("data/rows.csv", &numbers_csv(30));
    ws.write("p.yaml", &two_probe_stages("said", 0));
}

/// A partition Slurm does not know: the first submission is refused, the run stops there —
/// one error row with sbatch's own message, exit 2, nothing else submitted — instead of one
/// line per item of every stage.
#[test]
fn an_unknown_partition_is_said_once_and_stops_the_run() {
    if !slurm_up("an_unknown_partition_is_said_once_and_stops_the_run") {
        return;
    }
    let ws = Workspace::new();
    two_item_stages(&ws);
    ws.write(
        "bad.yaml",
        "partition: h27-no-such-partition\npoll_ms: 200\n",
    );
    let run = run_on_slurm(&ws, "p.yaml", "bad.yaml");
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(
        all.contains("sbatch refused the job of stage")
            && all.contains("invalid partition")
            && all.contains("partition, account"),
        "{all}"
    );
    assert_eq!(all.matches("invalid partition").count(), 1, "{all}");
    let record = ws.last_run("said");
    assert_eq!(
        record["errors"].as_array().map(Vec::len),
        Some(1),
        "{record}"
    );
    assert_eq!(record["errors"][0]["kind"], "input", "{record}");
    let st = statuses(&record);
    let failed = st.values().filter(|s| *s == "failed").count();
    let skipped = st.values().filter(|s| *s == "skipped").count();
    assert_eq!((failed, skipped), (1, 1), "{st:?}");
    assert_eq!(ws.committed_items(), 0);
}

/// A `worker:` that does not exist here is a located configuration error before anything is
/// submitted; one that exists here but cannot start on the node (a wrapper whose binary the
/// node does not have) stops the stage at its first task: exit 2, the shell's message.
#[test]
fn a_worker_that_cannot_start_is_said_once() {
    if !slurm_up("a_worker_that_cannot_start_is_said_once") {
        return;
    }
    let ws = Workspace::new();
    two_item_stages(&ws);
    let partition = std::env::var("SLURM_TEST_PARTITION").unwrap_or_else(|_| "debug".into());
    ws.write(
        "missing.yaml",
        &format!("partition: {partition}\npoll_ms: 200\nworker: /nonexistent/h27/prefflow\n"),
    );
    let run = run_on_slurm(&ws, "p.yaml", "missing.yaml");
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("missing.yaml:3:")
            && run
                .stderr
                .contains("`worker: /nonexistent/h27/prefflow` cannot be run from here"),
        "{}",
        run.stderr
    );
    assert!(
        !ws.store().join("cluster").exists(),
        "something was submitted"
    );
    // A wrapper the nodes run, exec'ing a binary no node has.
    let wrapper = ws.path().join("node-prefflow");
    std::fs::write(
        &wrapper,
        "#!/bin/sh\nexec /nonexistent/h27/prefflow \"$@\"\n",
    )
    .expect("write");
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    ws.write(
        "wrapper.yaml",
        &format!(
            "partition: {partition}\npoll_ms: 200\nmax_array_size: 3\nworker: {}\n",
            wrapper.display()
        ),
    );
    let run = run_on_slurm(&ws, "p.yaml", "wrapper.yaml");
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(
        all.contains("could not start the worker")
            && all.contains("exit 127")
            && all.contains("not found"),
        "{all}"
    );
    assert_eq!(
        all.matches("could not start the worker").count(),
        1,
        "{all}"
    );
    let record = ws.last_run("said");
    assert_eq!(
        record["errors"].as_array().map(Vec::len),
        Some(1),
        "{record}"
    );
    assert_eq!(record["errors"][0]["kind"], "input", "{record}");
    // Nothing of the stopped run is left queued or running.
    let out = Command::new("squeue")
        .args(["-h", "-o", "%j %T"])
        .output()
        .expect("squeue");
    let queue = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        !queue
            .lines()
            .any(|l| l.starts_with("prefflow:a") || l.starts_with("prefflow:b")),
        "{queue}"
    );
}
