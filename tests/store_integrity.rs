//! A store that heals and stays inside its directory: names are checked before anything is
//! written, damaged blobs are quarantined and recomputed (and damaged inline item tables
//! recomputed), `verify` finds and repairs damage,
//! a full disk leaves no temporary files and still leaves a run record, and `gc` sweeps stale
//! temporary files everywhere.

use std::path::{Path, PathBuf};

use crate::common::*;

fn items_pipeline(rows: &str) -> String {
    format!(
        r#"
pipeline: heal
stages:
  rows:
    kind: read_table
    params: {{ path: {rows} }}
  work:
    kind: probe
    inputs: [rows]
    per_item: id
  total:
    kind: query
    inputs: [work]
    params: {{ sql: "SELECT COUNT(*) AS n, SUM(value) AS s FROM work" }}
"#
    )
}

/// Every file under `dir`, recursively.
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
    out
}

fn blob_file(ws: &Workspace, blob: &str) -> PathBuf {
    ws.store()
        .join("blobs")
        .join(&blob[..2])
        .join(format!("{blob}.parquet"))
}

/// Flips bytes in the middle of a blob: same size, different content.
fn damage(path: &Path) {
    let mut bytes = std::fs::read(path).expect("blob");
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 4] {
        *b ^= 0x5a;
    }
    std::fs::write(path, bytes).expect("write damaged blob");
}

/// The item manifests of `stage` (value, path), by item value; each one's small table is
/// inline.
fn item_manifests(ws: &Workspace, stage: &str) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    // Manifests only, not the side files of compare-and-swap (`.KEY.json.lock`).
    let manifests = files(&ws.store().join("items")).into_iter().filter(|p| {
        p.file_name()
            .is_some_and(|n| !n.to_string_lossy().starts_with('.'))
    });
    for p in manifests {
        let m: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&p).expect("manifest")).expect("json");
        if m["stage"] == stage {
            let item = m["key"]["item"]["value"]
                .as_str()
                .expect("item")
                .to_string();
            assert!(m["tables"]["table"]["inline"].is_string(), "{m}");
            out.push((item, p));
        }
    }
    out.sort();
    out
}

/// Changes one character in the middle of an item manifest's inline table: still base64 and
/// valid JSON, other bytes.
fn damage_inline(path: &Path) {
    let mut m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).expect("manifest")).expect("json");
    let text = m["tables"]["table"]["inline"].as_str().expect("inline");
    let mut chars: Vec<char> = text.chars().collect();
    let mid = chars.len() / 2;
    chars[mid] = if chars[mid] == 'A' { 'B' } else { 'A' };
    m["tables"]["table"]["inline"] = chars.into_iter().collect::<String>().into();
    std::fs::write(path, serde_json::to_vec_pretty(&m).expect("json")).expect("write");
}

#[test]
fn a_pipeline_name_that_is_a_path_is_rejected_before_the_store_is_touched() {
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(3));
    let text = items_pipeline("data/rows.csv").replace("pipeline: heal", "pipeline: ../../escaped");
    ws.write("bad.yaml", &text);
    for cmd in [&["run", "bad.yaml"][..], &["plan", "bad.yaml"][..]] {
        let out = ws.cli(cmd).expect_code(2);
        assert!(
            out.stderr.contains("bad.yaml:2:")
                && out
                    .stderr
                    .contains("pipeline name `../../escaped` must not contain `..`"),
            "{}",
            out.stderr
        );
    }
    assert!(!ws.store().exists(), "the store was created");
    assert!(!ws.path().parent().expect("parent").join("escaped").exists());
    // A stage name with a path separator, and a sweep value with `..`, are located too.
    let text = items_pipeline("data/rows.csv").replace("  work:", "  wo/rk:");
    ws.write("stage.yaml", &text);
    let out = ws.cli(&["run", "stage.yaml"]).expect_code(2);
    assert!(
        out.stderr
            .contains("stage name `wo/rk` must not contain `/`"),
        "{}",
        out.stderr
    );
    let text = items_pipeline("data/rows.csv").replace(
        "    per_item: id\n",
        "    per_item: id\n    sweep: { label: [a, ../up] }\n",
    );
    ws.write("sweep.yaml", &text);
    let out = ws.cli(&["run", "sweep.yaml"]).expect_code(2);
    assert!(
        out.stderr
            .contains("variant name `label=../up` must not contain `..`"),
        "{}",
        out.stderr
    );
    // Names given on the command line are checked as well.
    let out = ws.cli(&["show", "work", "-p", "../../etc"]).expect_code(2);
    assert!(
        out.stderr.contains("pipeline name `../../etc`"),
        "{}",
        out.stderr
    );
    assert!(!ws.store().exists(), "the store was created");
}

#[test]
fn a_damaged_inline_item_table_is_detected_and_only_that_item_recomputed() {
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(20));
    ws.write("heal.yaml", &items_pipeline("data/rows.csv"));
    ws.run_ok("heal.yaml", &[]);
    let before = ws.table("work", None);
    let manifests = item_manifests(&ws, "work");
    assert_eq!(manifests.len(), 20);
    let (item, path) = manifests[7].clone();
    damage_inline(&path);
    let relative = path
        .strip_prefix(ws.store())
        .expect("in the store")
        .to_string_lossy()
        .into_owned();
    let out = ws.cli(&["verify"]);
    assert!(
        out.stdout.contains(&format!("damaged: {relative}")),
        "{}",
        out.stdout
    );
    // One more input row: the stage runs again, and assembling reads every cached item.
    ws.write("data/rows.csv", &numbers_csv(21));
    let run = ws.run_ok("heal.yaml", &[]);
    let work = instance(&run, "work");
    assert_eq!(work["items"]["executed"].as_u64(), Some(2), "{work}");
    assert_eq!(work["items"]["cached"].as_u64(), Some(19), "{work}");
    // The recomputed item replaced its damaged manifest: the store is whole again.
    ws.cli(&["verify"]).expect_code(0);
    assert!(
        item_manifests(&ws, "work")
            .iter()
            .any(|(v, p)| v == &item && p == &path),
        "item `{item}` has no manifest"
    );
    let after = ws.table("work", None);
    assert_eq!(after.height(), before.height() + 1);
    assert!(after.slice(0, before.height()).equals(&before));
}

#[test]
fn a_damaged_stage_output_is_recomputed_and_verify_reports_and_repairs() {
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(12));
    ws.write("heal.yaml", &items_pipeline("data/rows.csv"));
    let first = ws.run_ok("heal.yaml", &[]);
    let clean = ws.cli(&["verify"]).expect_code(0).stdout;
    assert!(clean.contains("0 damaged"), "{clean}");
    let total_blob = instance(&first, "total")["tables"]["table"]["blob"]
        .as_str()
        .expect("blob")
        .to_string();
    let before = ws.table("total", None);
    damage(&blob_file(&ws, &total_blob));

    let out = ws.cli(&["verify"]).expect_code(1);
    assert!(
        out.stdout.contains(&format!(
            "damaged: blobs/{}/{total_blob}.parquet",
            &total_blob[..2]
        )) && out.stdout.contains("1 damaged"),
        "{}",
        out.stdout
    );
    let scoped = ws.cli(&["verify", "-p", "heal"]).expect_code(1);
    assert!(scoped.stdout.contains("1 damaged"), "{}", scoped.stdout);
    // `plan` sees the damage as a reason to run, and says so.
    let plan = ws.cli(&["plan", "heal.yaml"]).expect_code(0).stdout;
    assert!(
        plan.contains("miss   total") && plan.contains("damaged"),
        "{plan}"
    );
    let run = ws.run_ok("heal.yaml", &[]);
    assert_eq!(instance(&run, "total")["status"], "executed");
    assert_eq!(instance(&run, "work")["status"], "cached");
    assert!(ws.table("total", None).equals(&before));
    ws.cli(&["verify"]).expect_code(0);

    // --repair quarantines what it finds; the next run recomputes it.
    let (_, item_manifest) = item_manifests(&ws, "work")[3].clone();
    damage_inline(&item_manifest);
    let out = ws.cli(&["verify", "--repair"]).expect_code(0);
    assert!(out.stdout.contains("quarantined: items/"), "{}", out.stdout);
    assert!(!item_manifest.exists());
    // Until a run recomputes it, the stage's result names an item that is gone: incomplete.
    let out = ws.cli(&["verify"]).expect_code(1);
    assert!(
        out.stdout.contains("missing: recipes/") && out.stdout.contains("1 missing"),
        "{}",
        out.stdout
    );
    forget_recipe(&ws, &run, "work");
    let run = ws.run_ok("heal.yaml", &[]);
    assert_eq!(
        instance(&run, "work")["items"]["executed"].as_u64(),
        Some(1)
    );
}

/// Removes the recipe manifest of `stage` from the store (its items stay).
fn forget_recipe(ws: &Workspace, record: &serde_json::Value, stage: &str) {
    let key = instance(record, stage)["recipe_key"].as_str().expect("key");
    let path = ws
        .store()
        .join("recipes")
        .join(&key[..2])
        .join(format!("{key}.json"));
    std::fs::remove_file(path).expect("remove recipe");
}

#[test]
fn gc_removes_stale_temp_files_in_runs_and_llm_and_keeps_live_ones() {
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(3));
    ws.write("heal.yaml", &items_pipeline("data/rows.csv"));
    ws.run_ok("heal.yaml", &[]);
    let host = prefflow_engine::store::host_name();
    let dead = dead_pid();
    let live = std::process::id();
    let stale = [
        format!("runs/heal/.latest.json.{host}-{dead}-0.tmp"),
        format!("llm/ab/.abcd.json.{host}-{dead}-1.tmp"),
        format!("blobs/ab/.abcd.parquet.{host}-{dead}-2.tmp"),
    ];
    let keep = [
        format!("runs/heal/.latest.json.{host}-{live}-3.tmp"),
        format!("llm/ab/.abcd.json.{host}-{live}-4.tmp"),
        "llm/ab/abcd.json".to_string(),
    ];
    for key in stale.iter().chain(&keep) {
        ws.write(&format!(".prefflow/{key}"), "partial");
    }
    let out = ws.cli(&["gc"]).expect_code(0);
    for key in &stale {
        assert!(
            !ws.store().join(key).exists(),
            "{key} survived gc\n{}",
            out.stdout
        );
    }
    for key in &keep {
        assert!(
            ws.store().join(key).exists(),
            "gc removed {key}\n{}",
            out.stdout
        );
    }
    ws.run_ok("heal.yaml", &[]);
}

/// A pid no process has on this machine.
fn dead_pid() -> u32 {
    (1..u32::MAX)
        .map(|i| 4_000_000 - i)
        .find(|p| !Path::new(&format!("/proc/{p}")).exists())
        .expect("a free pid")
}

/// A small tmpfs mounted for one test (needs root; the test skips otherwise), unmounted on drop.
struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    fn mount(dir: PathBuf, size: &str) -> Option<Self> {
        std::fs::create_dir_all(&dir).ok()?;
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Self { dir })
    }

    fn resize(&self, size: &str) {
        let status = std::process::Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.dir)
            .status()
            .expect("mount");
        assert!(status.success(), "remount failed");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.dir).status();
    }
}

#[test]
fn a_full_disk_leaves_no_temp_files_stops_new_items_and_still_records_the_run() {
    let ws = Workspace::new();
    let Some(fs) = Tmpfs::mount(ws.store(), "2600k") else {
        eprintln!(
            "skipped: cannot mount a tmpfs here (needs root); the full-disk test did not run"
        );
        return;
    };
    // 100 items of ~20 KB each; the input table (~2 MB) fits, the items do not.
    let mut csv = String::from("id,grp,value,text\n");
    for i in 0..100 {
        let text: String = (0..20_000)
            .map(|j| char::from(b'a' + ((i * 7 + j * 13) % 26) as u8))
            .collect();
        csv.push_str(&format!("r{i:04},g{},{i},{text}\n", i % 3));
    }
    ws.write("data/rows.csv", &csv);
    let pipeline = r#"
pipeline: full
stages:
  rows:
    kind: read_table
    params: { path: data/rows.csv }
  work:
    kind: probe
    inputs: [rows]
    per_item: id
    concurrency: 2
"#;
    ws.write("full.yaml", pipeline);
    let out = ws.cli(&["run", "full.yaml", "--progress", "none"]);
    assert_eq!(
        out.code, 1,
        "stdout:\n{}\nstderr:\n{}",
        out.stdout, out.stderr
    );
    assert!(
        out.stderr.contains("out of space")
            && out.stderr.contains("free space on the filesystem holding"),
        "{}",
        out.stderr
    );
    let leftovers: Vec<PathBuf> = files(&ws.store())
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
    let record = ws.last_run("full");
    let work = instance(&record, "work");
    assert_eq!(work["status"], "failed", "{work}");
    let errors = record["errors"].as_array().expect("errors");
    let not_started = errors
        .iter()
        .filter(|e| {
            e["message"]
                .as_str()
                .unwrap_or_default()
                .contains("not started")
        })
        .count();
    assert!(
        not_started > 0,
        "every item was tried after the disk filled up"
    );
    let committed = ws.committed_items();
    assert!(
        committed > 0 && committed < 100,
        "{committed} items committed"
    );

    // With room again, the run resumes from the committed items.
    fs.resize("64m");
    let resumed = ws.run_ok("full.yaml", &[]);
    let work = instance(&resumed, "work");
    assert_eq!(
        work["items"]["cached"].as_u64(),
        Some(committed as u64),
        "{work}"
    );
    assert_eq!(
        work["items"]["executed"].as_u64(),
        Some(100 - committed as u64)
    );
    drop(fs);
}

/// `verify` fails (exit 1) on whatever it reports: a stage result whose blob is gone, and a
/// run record that cannot be read; the next run (or `--repair`) makes the store whole again.
#[test]
fn verify_fails_on_a_missing_blob_and_an_unreadable_run_record() {
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(6));
    ws.write("heal.yaml", &items_pipeline("data/rows.csv"));
    let first = ws.run_ok("heal.yaml", &[]);
    ws.cli(&["verify"]).expect_code(0);
    let blob = instance(&first, "total")["tables"]["table"]["blob"]
        .as_str()
        .expect("blob")
        .to_string();
    std::fs::remove_file(blob_file(&ws, &blob)).expect("remove blob");
    for args in [vec!["verify"], vec!["verify", "-p", "heal"]] {
        let out = ws.cli(&args).expect_code(1);
        assert!(
            out.stdout.contains("incomplete: recipes/") && out.stdout.contains(&blob),
            "{args:?}: {}",
            out.stdout
        );
    }
    ws.run_ok("heal.yaml", &[]);
    ws.cli(&["verify"]).expect_code(0);
    let latest = ws.store().join("runs/heal/latest.json");
    std::fs::write(&latest, b"{ not a record").expect("damage the record");
    for args in [vec!["verify"], vec!["verify", "-p", "heal"]] {
        let out = ws.cli(&args).expect_code(1);
        assert!(
            out.stdout
                .contains("damaged: runs/heal/latest.json (run record cannot be decoded"),
            "{args:?}: {}",
            out.stdout
        );
    }
    let out = ws.cli(&["verify", "--repair"]).expect_code(0);
    assert!(
        out.stdout.contains("quarantined: runs/heal/latest.json"),
        "{}",
        out.stdout
    );
    assert!(!latest.exists());
}

/// What killed runs leave behind goes in time: a reserve file of a dead process is removed when
/// the next run starts, and a dead lease older than PREFFLOW_DEAD_LEASE_EXPIRY_SECS is dropped
/// by `gc`, which says so, while a recently killed run's lease still protects its items.
#[test]
fn a_killed_runs_reserve_goes_at_the_next_start_and_its_lease_expires() {
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(4));
    ws.write("heal.yaml", &items_pipeline("data/rows.csv"));
    let host = prefflow_engine::store::host_name();
    let dead = dead_pid();
    let reserve = format!("tmp/.reserve-1-{host}-{dead}-ab.{host}-{dead}-0.tmp");
    ws.write(&format!(".prefflow/{reserve}"), &"\0".repeat(256 * 1024));
    ws.run_ok("heal.yaml", &[]);
    assert!(
        !ws.store().join(&reserve).exists(),
        "the dead run's reserve is still there"
    );
    // Two dead leases protecting an item manifest no record holds: one from a run killed long
    // ago, one from a run killed just now.
    let now = prefflow_engine::artifact::unix_now();
    for (id, heartbeat) in [("old", now - 8.0 * 86400.0), ("recent", now - 5.0)] {
        let lease = serde_json::json!({
            "id": id, "holder": "run", "pipeline": "heal", "host": host, "pid": dead,
            "started_at": heartbeat - 60.0, "heartbeat_at": heartbeat, "heartbeat_secs": 10.0,
        });
        ws.write(&format!(".prefflow/leases/{id}.json"), &lease.to_string());
        let protected = serde_json::json!({
            "label": "lost", "recipe_key": format!("{id}0000"), "item_keys": [],
        });
        ws.write(
            &format!(".prefflow/leases/{id}/{id}0000.json"),
            &protected.to_string(),
        );
    }
    let out = ws.cli(&["gc"]).expect_code(0);
    assert!(
        out.stdout
            .contains("dropped lease: run of `heal` (lease old")
            && out.stdout.contains("dead for more than 7 days"),
        "{}",
        out.stdout
    );
    assert!(!ws.store().join("leases/old.json").exists());
    assert!(
        ws.store().join("leases/recent.json").exists(),
        "{}",
        out.stdout
    );
    // With a shorter documented age, the recent one goes too.
    let out = ws
        .command(&["gc"])
        .env("PREFFLOW_DEAD_LEASE_EXPIRY_SECS", "1")
        .output()
        .expect("gc");
    assert!(out.status.success());
    assert!(!ws.store().join("leases/recent.json").exists());
}

/// On a disk too full to take even the run's lease, the first failure already says what to
/// free (needs root for a small tmpfs; skipped otherwise).
#[test]
fn a_lease_write_on_a_full_disk_says_what_to_free() {
    let ws = Workspace::new();
    let Some(fs) = Tmpfs::mount(ws.store(), "256k") else {
        eprintln!(
            "skipped: cannot mount a tmpfs here (needs root); the full-lease test did not run"
        );
        return;
    };
    ws.write("data/rows.csv", &numbers_csv(3));
    ws.write("heal.yaml", &items_pipeline("data/rows.csv"));
    // Fill the filesystem to the last block.
    let filler = ws.store().join("filler");
    let mut f = std::fs::File::create(&filler).expect("filler");
    let chunk = vec![0u8; 4096];
    while std::io::Write::write_all(&mut f, &chunk).is_ok() {}
    drop(f);
    let out = ws.cli(&["run", "heal.yaml", "--progress", "none"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("out of space")
            && out.stderr.contains("free space on the filesystem holding"),
        "{}",
        out.stderr
    );
    std::fs::remove_file(&filler).expect("free");
    ws.run_ok("heal.yaml", &[]);
    drop(fs);
}
