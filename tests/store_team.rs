//! One store directory, two users: `init-store --group` makes it shareable (every file and
//! directory the group's members write stays group-writable, whatever their umask), and a
//! store a user may not write still answers `plan`, `show`, `verify` and a fully cached `run`,
//! while anything that must write says which path, whose it is and the fix — once.
//!
//! The second user is `nobody` (uid 65534), switched to with `CommandExt::uid/gid`; that needs
//! root (as here and in CI). Elsewhere these tests say so and pass.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;

use crate::common::*;

const NOBODY: u32 = 65534;
/// The group the team shares (`users`, gid 100, in every Debian-like base image).
const TEAM_GID: u32 = 100;

/// Whether this test process can run commands as another user, else a message why not.
fn can_switch_users(ws: &Workspace) -> Result<(), String> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let root = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_whitespace().nth(1))
        == Some("0");
    if !root {
        return Err("not running as root, so cannot run prefflow as another user".into());
    }
    let probe = ws
        .command(&["--version"])
        .uid(NOBODY)
        .gid(TEAM_GID)
        .output()
        .map_err(|e| format!("cannot start prefflow as uid {NOBODY}: {e}"))?;
    match probe.status.success() {
        true => Ok(()),
        false => Err(format!(
            "uid {NOBODY} cannot run {} (is its directory readable by others?)",
            bin()
        )),
    }
}

/// A workspace other users can read: the temp dir itself is private by default.
fn shared_workspace(test: &str) -> Option<Workspace> {
    let ws = Workspace::new();
    if let Err(why) = can_switch_users(&ws) {
        eprintln!("skipping {test}: {why}");
        return None;
    }
    std::fs::set_permissions(ws.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    ws.write("data/rows.csv", &numbers_csv(12));
    ws.write("team.yaml", &two_probe_stages("team", 0));
    Some(ws)
}

/// `prefflow ARGS` as uid `uid` in group `gid`, with a umask that would keep files private.
fn cli_as(ws: &Workspace, uid: u32, gid: u32, args: &[&str]) -> Run {
    let mut cmd = ws.command(args);
    cmd.uid(uid).gid(gid).env("HOME", ws.path());
    let out = cmd.output().expect("spawn prefflow");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Every file and directory under `dir` with its owner, group and mode.
fn entries(dir: &Path) -> Vec<(String, u32, u32, u32, bool)> {
    let mut out = Vec::new();
    let Ok(list) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in list.flatten() {
        let p = e.path();
        let m = std::fs::symlink_metadata(&p).expect("meta");
        out.push((
            p.display().to_string(),
            m.uid(),
            m.gid(),
            m.mode() & 0o7777,
            m.is_dir(),
        ));
        if m.is_dir() {
            out.extend(entries(&p));
        }
    }
    out
}

#[test]
fn two_users_share_a_store_made_by_init_store() {
    let Some(ws) = shared_workspace("two_users_share_a_store_made_by_init_store") else {
        return;
    };
    let gid = TEAM_GID.to_string();
    let init = ws.cli(&["init-store", "--group", &gid]).expect_code(0);
    assert!(
        init.stdout.contains("is shared with group"),
        "{}",
        init.stdout
    );
    // The first member computes `a`; the second (another uid, same group) adds `b`, reusing
    // `a`, and can garbage-collect; the first re-runs everything from the cache.
    ws.cli(&["run", "team.yaml", "--only", "a", "--progress", "none"])
        .expect_code(0);
    let second = cli_as(
        &ws,
        NOBODY,
        TEAM_GID,
        &["run", "team.yaml", "--progress", "none"],
    );
    assert_eq!(second.code, 0, "{}", second.stderr);
    let record = ws.last_run("team");
    assert_eq!(statuses(&record)["a"], "cached", "{record}");
    assert_eq!(statuses(&record)["b"], "executed", "{record}");
    let gc = cli_as(&ws, NOBODY, TEAM_GID, &["gc"]);
    assert_eq!(gc.code, 0, "{}", gc.stderr);
    let again = ws.run_ok("team.yaml", &[]);
    assert_eq!(summary(&again, "stages_executed"), 0, "{again}");
    // Whoever wrote it, everything belongs to the group and stays group-writable.
    let all = entries(&ws.store());
    assert!(
        all.iter().any(|e| e.1 == NOBODY),
        "the second user wrote nothing?"
    );
    for (path, _, group, mode, dir) in &all {
        assert_eq!(*group, TEAM_GID, "{path}");
        let want = if *dir { 0o2775 } else { 0o664 };
        assert_eq!(*mode & want, want, "{path}: mode {mode:o}");
    }
}

#[test]
fn a_store_this_user_cannot_write_answers_reads_and_says_why_it_cannot_run() {
    let Some(ws) = shared_workspace("a_store_this_user_cannot_write") else {
        return;
    };
    // A store made by root with the usual umask: others may read it, not write it.
    ws.run_ok("team.yaml", &[]);
    let before = entries(&ws.store());
    let run = cli_as(
        &ws,
        NOBODY,
        NOBODY,
        &["run", "team.yaml", "--progress", "none"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("pipeline team: up to date"),
        "{}",
        run.stdout
    );
    for args in [
        vec!["plan", "team.yaml"],
        vec!["show", "a", "--format", "csv"],
        vec!["verify"],
    ] {
        let out = cli_as(&ws, NOBODY, NOBODY, &args);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
    }
    assert_eq!(
        entries(&ws.store()),
        before,
        "a read-only user changed the store"
    );
    // Work to do: refused with the path, its owner and the fix, said once.
    let refused = cli_as(
        &ws,
        NOBODY,
        NOBODY,
        &[
            "run",
            "team.yaml",
            "--set",
            "a.label=new",
            "--progress",
            "none",
        ],
    );
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    let err = &refused.stderr;
    assert!(
        err.contains("cannot write")
            && err.contains("belongs to root (uid 0)")
            && err.contains("nobody (uid 65534)")
            && err.contains("init-store --group"),
        "{err}"
    );
    assert_eq!(err.matches("permission denied").count(), 1, "{err}");
    assert!(refused.stdout.contains("miss   a"), "{}", refused.stdout);
    assert_eq!(
        entries(&ws.store()),
        before,
        "a refused run changed the store"
    );
}
