//! SIGINT and SIGTERM on a local run: no new work starts, items in flight finish (or are given
//! up after the grace period), the run record and errors table are written, the lease is
//! released, and the exit code is 130 / 143; a second signal stops at once. Real processes,
//! real signals (`kill -INT`, `kill -TERM`).

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// `data/rows.csv` through a per-item probe of `delay_ms` per item, then a count of it.
pub(crate) fn slow(name: &str, delay_ms: u64) -> String {
    format!(
        "pipeline: {name}
stages:
  rows:
    kind: read_table
    params: {{ path: data/rows.csv }}
  work:
    kind: probe
    inputs: [rows]
    per_item: id
    concurrency: 2
    params: {{ delay_ms: {delay_ms} }}
  total:
    kind: query
    inputs: [work]
    params: {{ sql: \"SELECT COUNT(*) AS n FROM work\" }}
"
    )
}

fn spawn(ws: &Workspace, file: &str, grace: &str) -> Child {
    ws.command(&["run", file, "--progress", "none"])
        .env("PREFFLOW_INTERRUPT_GRACE_SECS", grace)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn prefflow")
}

fn signal(child: &Child, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([&format!("-{sig}"), &child.id().to_string()])
        .status()
        .expect("kill")
        .success();
    assert!(ok, "kill -{sig} failed");
}

/// Waits (at most a minute, else fails loudly) for `cond`.
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (at most a minute) for the child to end; its exit code and stderr.
fn finish(mut child: Child) -> (i32, String) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("poll").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the run did not end within a minute of its signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Whether a live run's lease announces that it works on `stage` (its items start next).
fn announced(ws: &Workspace, stage: &str) -> bool {
    let Ok(dirs) = std::fs::read_dir(ws.store().join("leases")) else {
        return false;
    };
    dirs.flatten()
        .filter(|d| d.path().is_dir())
        .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
        .filter_map(|f| std::fs::read_to_string(f.path()).ok())
        .any(|text| text.contains(&format!("\"label\":\"{stage}\"")))
}

#[test]
fn sigint_and_sigterm_stop_new_work_write_the_record_and_release_the_lease() {
    for (sig, code) in [("INT", 130), ("TERM", 143)] {
        let ws = Workspace::new();
        ws.write("data/rows.csv", &numbers_csv(200));
        ws.write("p.yaml", &slow("sig", 40));
        let child = spawn(&ws, "p.yaml", "30");
        wait_until("items to be committed", || ws.committed_items() >= 6);
        signal(&child, sig);
        let (exit, stderr) = finish(child);
        assert_eq!(exit, code, "SIG{sig}: {stderr}");
        assert!(
            stderr.contains(&format!("interrupted by SIG{sig}")),
            "{stderr}"
        );
        let committed = ws.committed_items();
        assert!(committed < 200, "SIG{sig} came too late ({committed})");
        // The record says what happened, the lease is gone, nothing new ran after the signal.
        let record = ws.last_run("sig");
        let work = instance(&record, "work");
        assert_eq!(work["status"], "failed", "{work}");
        assert_eq!(
            work["items"]["executed"].as_u64(),
            Some(committed as u64),
            "{work}"
        );
        assert_eq!(instance(&record, "total")["status"], "skipped");
        let errors = record["errors"].as_array().expect("errors");
        assert_eq!(
            errors.len(),
            1,
            "one row for the items not started: {errors:?}"
        );
        let message = errors[0]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!("{} item(s) not started (", 200 - committed))
                && message.contains(&format!("interrupted by SIG{sig}")),
            "{errors:?}"
        );
        assert_eq!(leases(&ws), 0, "the lease was left behind");
        // The same command again resumes where the signal stopped it.
        let again = ws.run_ok("p.yaml", &[]);
        let work = instance(&again, "work");
        assert_eq!(work["items"]["cached"].as_u64(), Some(committed as u64));
        assert_eq!(
            work["items"]["executed"].as_u64(),
            Some(200 - committed as u64)
        );
    }
}

#[test]
fn items_running_past_the_grace_are_given_up_and_a_second_signal_stops_at_once() {
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(4));
    // Items that take a minute: the signal finds them running.
    ws.write("p.yaml", &slow("grace", 60_000));
    let child = spawn(&ws, "p.yaml", "1");
    wait_until("the run to start its items", || announced(&ws, "work"));
    std::thread::sleep(Duration::from_millis(500));
    signal(&child, "INT");
    let (exit, stderr) = finish(child);
    assert_eq!(exit, 130, "{stderr}");
    let record = ws.last_run("grace");
    let messages: Vec<&str> = record["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .filter_map(|e| e["message"].as_str())
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("2 item(s) stopped while running")
                && m.contains("interrupted by SIGINT")),
        "{messages:?}"
    );
    assert_eq!(leases(&ws), 0);

    // A second signal does not wait for the grace period.
    let child = spawn(&ws, "p.yaml", "600");
    wait_until("the second run to start", || announced(&ws, "work"));
    std::thread::sleep(Duration::from_millis(500));
    signal(&child, "INT");
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, "INT");
    let (exit, stderr) = finish(child);
    assert_eq!(exit, 130, "{stderr}");
    assert!(
        stderr.contains("interrupted again: stopping now"),
        "{stderr}"
    );
}
