//! A store shared by many runs: leases protect live and killed runs' work from `gc`, run
//! records merge instead of overwriting, and two runs of the same items share the work.
//! Real processes of the built binary, real SIGKILL.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

fn spawn(ws: &Workspace, args: &[&str]) -> Child {
    let mut all = vec!["run", "shared.yaml", "--progress", "none"];
    all.extend_from_slice(args);
    ws.command(&all)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn prefflow")
}

/// Waits until `cond` holds, failing after a minute.
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn finish(child: Child) -> Run {
    let out = child.wait_with_output().expect("wait");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn gc_refuses_while_a_run_is_live_and_keeps_a_killed_runs_items() {
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(30));
    ws.write("shared.yaml", &two_probe_stages("shared", 150));
    let mut child = spawn(&ws, &["--only", "a"]);
    wait_until("items to be committed", || ws.committed_items() >= 4);
    // While the run is live, gc refuses with its own exit code and names the lease.
    let refused = ws.cli(&["gc"]).expect_code(3);
    assert!(
        refused.stderr.contains("gc refused: 1 live lease")
            && refused.stderr.contains("run of `shared`"),
        "{}",
        refused.stderr
    );
    let dry = ws.cli(&["gc", "--dry-run"]).expect_code(0);
    assert!(
        dry.stdout.contains("protected: run of `shared`") && dry.stdout.contains("live"),
        "{}",
        dry.stdout
    );
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    let committed = ws.committed_items();
    assert!(
        committed < 30,
        "the kill came too late ({committed} committed)"
    );
    // The killed run left no record, but its lease lists its items: gc deletes none of them.
    let dry = ws.cli(&["gc", "--dry-run"]).expect_code(0);
    assert!(
        dry.stdout.contains("dead (process")
            && dry.stdout.contains("re-run `shared` to adopt them"),
        "{}",
        dry.stdout
    );
    ws.cli(&["gc"]).expect_code(0);
    assert_eq!(
        ws.committed_items(),
        committed,
        "gc deleted a killed run's items"
    );
    assert_eq!(
        leases(&ws),
        1,
        "the dead lease is kept until its work is adopted"
    );
    // The resume reuses every committed item; then the dead lease has served its purpose.
    let resumed = ws.run_ok("shared.yaml", &["--only", "a"]);
    assert_eq!(
        instance(&resumed, "a")["items"]["cached"].as_u64(),
        Some(committed as u64)
    );
    let out = ws.cli(&["gc"]).expect_code(0);
    assert!(
        out.stdout.contains("its results are in the run records"),
        "{}",
        out.stdout
    );
    assert_eq!(leases(&ws), 0);
    ws.cli(&["verify", "-p", "shared"]).expect_code(0);
    let again = ws.run_ok("shared.yaml", &["--only", "a"]);
    assert_eq!(instance(&again, "a")["status"], "cached");
}

#[test]
fn gc_wait_lets_a_live_run_finish_and_deletes_nothing_it_needs() {
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(12));
    ws.write("shared.yaml", &two_probe_stages("shared", 300));
    ws.run_ok("shared.yaml", &[]);
    // A second run with changed parameters: gc --wait starts while it is live.
    let child = spawn(&ws, &["--set", "a.label=a2", "--set", "b.label=b2"]);
    wait_until("the run's lease", || leases(&ws) == 1);
    let gc = ws.cli(&["gc", "--wait", "120"]).expect_code(0);
    let run = finish(child);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(gc.stdout.contains("removed"), "{}", gc.stdout);
    // Everything the finished run's record names is intact.
    ws.cli(&["verify", "-p", "shared"]).expect_code(0);
    let record = ws.last_run("shared");
    for stage in ["a", "b"] {
        assert_eq!(instance(&record, stage)["status"], "executed");
    }
    let rerun = ws.run_ok(
        "shared.yaml",
        &["--set", "a.label=a2", "--set", "b.label=b2"],
    );
    assert_eq!(summary(&rerun, "stages_executed"), 0, "{rerun}");
}

#[test]
fn overlapping_runs_of_different_stages_both_land_their_results() {
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(4));
    ws.write("shared.yaml", &two_probe_stages("shared", 0));
    for round in 0..40 {
        let label_a = format!("a.label=a{round}");
        let label_b = format!("b.label=b{round}");
        let a = spawn(&ws, &["--only", "a", "--set", &label_a]);
        let b = spawn(&ws, &["--only", "b", "--set", &label_b]);
        let (ra, rb) = (finish(a), finish(b));
        assert_eq!(ra.code, 0, "round {round}: {}", ra.stderr);
        assert_eq!(rb.code, 0, "round {round}: {}", rb.stderr);
        // latest.json holds both runs' results of this round: neither overwrote the other.
        let latest: serde_json::Value = serde_json::from_slice(
            &std::fs::read(ws.store().join("runs/shared/latest.json")).expect("latest"),
        )
        .expect("json");
        for (stage, label) in [("a", format!("a{round}")), ("b", format!("b{round}"))] {
            let key = instance(&latest, stage)["recipe_key"]
                .as_str()
                .expect("key");
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
            assert_eq!(
                manifest["key"]["params"]["label"], label,
                "round {round}: latest.json lost `{stage}`"
            );
        }
    }
}

#[test]
fn two_runs_of_the_same_items_compute_each_item_once() {
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(16));
    ws.write("shared.yaml", &two_probe_stages("shared", 250));
    let first = spawn(&ws, &["--only", "a"]);
    wait_until("the first run to start its items", || {
        ws.committed_items() >= 1
    });
    let second = spawn(&ws, &["--only", "a"]);
    let (r1, r2) = (finish(first), finish(second));
    assert_eq!(r1.code, 0, "{}", r1.stderr);
    assert_eq!(r2.code, 0, "{}", r2.stderr);
    // The two run records are the same file name, so read each run's count from its output.
    let executed = |out: &str| -> u64 {
        let line = out
            .lines()
            .find(|l| l.starts_with("pipeline shared:"))
            .unwrap_or_else(|| panic!("no summary in {out}"));
        let items = line.split("items: ").nth(1).expect("items");
        items
            .split(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .expect("executed count")
    };
    let (e1, e2) = (executed(&r1.stdout), executed(&r2.stdout));
    assert_eq!(
        e1 + e2,
        16,
        "items computed twice: {e1} + {e2}\n{}\n{}",
        r1.stdout,
        r2.stdout
    );
    assert!(e2 < 16, "the second run computed everything again");
    assert!(ws.table("a", None).height() == 16);
}

/// The cluster executor's hand-off objects go once their instance is committed; an unfinished
/// job (its coordinator was killed) stays for a restarted coordinator to adopt, until
/// `--drop-dead-leases`.
#[test]
fn gc_removes_finished_cluster_jobs_and_keeps_unfinished_ones() {
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(4));
    ws.write("shared.yaml", &two_probe_stages("shared", 0));
    let record = ws.run_ok("shared.yaml", &["--only", "a"]);
    let finished = instance(&record, "a")["recipe_key"]
        .as_str()
        .expect("recipe key")
        .to_string();
    let unfinished = "f".repeat(64);
    let jobs = ws.store().join("cluster/jobs");
    for job in [&finished, &unfinished] {
        for file in ["spec.json", "submissions.json", "shard-0.json", "done/k1"] {
            ws.write(&format!(".prefflow/cluster/jobs/{job}/{file}"), "{}");
        }
    }
    let dry = ws.cli(&["gc", "--dry-run"]).expect_code(0);
    assert!(
        dry.stdout.contains("1 unfinished cluster job(s)"),
        "{}",
        dry.stdout
    );
    assert_eq!(
        count_files(&jobs.join(&finished)),
        4,
        "--dry-run removed something"
    );
    ws.cli(&["gc"]).expect_code(0);
    assert_eq!(
        count_files(&jobs.join(&finished)),
        0,
        "a finished job was kept"
    );
    assert_eq!(
        count_files(&jobs.join(&unfinished)),
        4,
        "an unfinished job was removed"
    );
    ws.cli(&["gc", "--drop-dead-leases"]).expect_code(0);
    assert_eq!(count_files(&jobs.join(&unfinished)), 0);
    // The run's own results survived every collection.
    let again = ws.run_ok("shared.yaml", &["--only", "a"]);
    assert_eq!(summary(&again, "stages_executed"), 0, "{again}");
}
