//! The store on a real S3-compatible server (../shared/tools/s3-local.sh: moto on 127.0.0.1;
//! `.ci/run` starts it under CI=true): the backend's contract (conditional writes with exactly
//! one winner, raced through [`OneAtATime`] since moto's own are not atomic; compare-and-swap;
//! the verified blob cache; calls from async threads), the whole
//! iPrefBench pipeline giving the same bytes as a local store, SIGKILL and resume, concurrent
//! runs on one prefix, and `gc` beside a live run. Without `AWS_ENDPOINT_URL` these tests say
//! so and pass; under CI=true they must run. Each test uses its own key prefix.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use prefflow_engine::store::{RemoteStore, Store, StoreLocation};
use serde_json::Value;

use crate::common::*;

/// A fresh prefix of the test bucket, with a client for looking at it.
pub struct S3 {
    /// `s3://bucket/prefix`.
    pub url: String,
    /// A client without a blob cache (what the test sees is what the server holds).
    pub store: Arc<dyn Store>,
}

/// The test's own prefix on the S3 server, or `None` (skip) when none is configured; under
/// CI=true a missing server fails the test.
pub fn s3(test: &str) -> Option<S3> {
    if std::env::var_os("AWS_ENDPOINT_URL").is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{test}: no S3 server under CI=true (.ci/run starts ../shared/tools/s3-local.sh)"
        );
        eprintln!("skipping {test}: AWS_ENDPOINT_URL is not set; start a server with e=$(bash ../shared/tools/s3-local.sh -b prefflow-test); set -a; eval \"$e\"; set +a");
        return None;
    }
    let bucket = std::env::var("S3_BUCKET").unwrap_or_else(|_| "prefflow-test".into());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let url = format!("s3://{bucket}/{test}-{}-{nanos}", std::process::id());
    let StoreLocation::Remote(remote) = StoreLocation::parse(&url).expect("url") else {
        panic!("{url} is not remote");
    };
    let store = RemoteStore::open(&remote).expect("client").with_cache(None);
    Some(S3 {
        url,
        store: Arc::new(store),
    })
}

/// An HTTP proxy on 127.0.0.1 that passes one request at a time to the S3 server.
///
/// Real S3 evaluates a conditional PUT (`If-None-Match: *`, `If-Match`) atomically; moto checks
/// the condition and then writes without a lock, so two racing creates of one key can both
/// succeed there (seen in CI: "round 19: winners [2, 7]"). Behind this proxy moto's
/// check-and-write cannot interleave, which gives the racing tests S3's semantics; what they
/// then prove is the client's side: it sends the condition, and it reads a refusal as a loss.
struct OneAtATime {
    endpoint: String,
}

impl OneAtATime {
    /// A proxy in front of the server `AWS_ENDPOINT_URL` names.
    fn start() -> Self {
        let upstream = std::env::var("AWS_ENDPOINT_URL").expect("AWS_ENDPOINT_URL");
        let upstream = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
        let turn = Arc::new(Mutex::new(()));
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (upstream, turn) = (upstream.clone(), turn.clone());
                std::thread::spawn(move || serve_in_turn(client, &upstream, &turn));
            }
        });
        Self { endpoint }
    }

    /// A client of `s3`'s prefix that reaches the server through this proxy.
    fn store(&self, s3: &S3) -> Arc<dyn Store> {
        let StoreLocation::Remote(remote) = StoreLocation::parse(&s3.url).expect("url") else {
            panic!("{} is not remote", s3.url);
        };
        let store = RemoteStore::open_with_endpoint(&remote, Some(&self.endpoint))
            .expect("client")
            .with_cache(None);
        Arc::new(store)
    }
}

/// Forwards each request of `client`'s connection to `upstream` on a connection of its own,
/// holding `turn` from sending the request until the whole response is read.
fn serve_in_turn(client: TcpStream, upstream: &str, turn: &Mutex<()>) {
    let mut reader = BufReader::new(client.try_clone().expect("clone"));
    let mut client = client;
    while let Some(request) = read_request(&mut reader) {
        let response = {
            let _turn = turn.lock().unwrap_or_else(|p| p.into_inner());
            let mut server = TcpStream::connect(upstream).expect("connect to the S3 server");
            server.write_all(&request).expect("forward request");
            let mut response = Vec::new();
            server.read_to_end(&mut response).expect("read response");
            response
        };
        if client.write_all(&response).is_err() {
            return;
        }
    }
}

/// One HTTP/1.1 request from `reader`, rewritten to ask the server to close the connection
/// after answering (so its response ends at EOF); `None` at the end of the connection.
fn read_request(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().expect("content-length");
        }
        assert!(
            !lower.starts_with("transfer-encoding:"),
            "the proxy forwards sized bodies only"
        );
        if !lower.starts_with("connection:") {
            head.extend_from_slice(line.as_bytes());
        }
    }
    head.extend_from_slice(b"Connection: close\r\n\r\n");
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    head.extend_from_slice(&body);
    Some(head)
}

impl S3 {
    /// `prefflow --store URL ARGS…` in `ws`, with the blob cache inside the workspace.
    pub fn command(&self, ws: &Workspace, args: &[&str]) -> Command {
        let mut all = vec!["--store", self.url.as_str()];
        all.extend_from_slice(args);
        let mut cmd = ws.command(&all);
        cmd.env("PREFFLOW_CACHE_DIR", ws.path().join("blob-cache"));
        cmd
    }

    /// Runs the CLI and returns what it did.
    pub fn cli(&self, ws: &Workspace, args: &[&str]) -> Run {
        let out = self.command(ws, args).output().expect("spawn prefflow");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// `run FILE --progress none EXTRA…`, expecting success; the run's record from the store.
    pub fn run_ok(&self, ws: &Workspace, file: &str, extra: &[&str]) -> Value {
        let mut args = vec!["run", file, "--progress", "none"];
        args.extend_from_slice(extra);
        self.cli(ws, &args).expect_code(0);
        self.json(&format!(
            "runs/{}/last-run.json",
            pipeline_name(&ws.path().join(file))
        ))
    }

    /// A JSON object from the store.
    pub fn json(&self, key: &str) -> Value {
        let bytes = self.store.get(key).expect("get").expect(key);
        serde_json::from_slice(&bytes).expect("json")
    }

    /// Committed item manifests with their bytes.
    fn items(&self) -> BTreeMap<String, Vec<u8>> {
        self.store
            .list("items")
            .expect("list")
            .into_iter()
            .map(|k| {
                let bytes = self.store.get(&k).expect("get").expect("listed");
                (k, bytes)
            })
            .collect()
    }

    fn count(&self, prefix: &str) -> usize {
        self.store.list(prefix).expect("list").len()
    }
}

fn blob_key(hash: &str) -> String {
    format!("blobs/{}/{hash}.parquet", &hash[..2])
}

fn spawn(s3: &S3, ws: &Workspace, args: &[&str]) -> Child {
    spawn_via(s3, ws, args, None)
}

/// `run p.yaml ARGS…` started in the background, reaching the server through `proxy` if given.
fn spawn_via(s3: &S3, ws: &Workspace, args: &[&str], proxy: Option<&OneAtATime>) -> Child {
    let mut all = vec!["run", "p.yaml", "--progress", "none"];
    all.extend_from_slice(args);
    let mut cmd = s3.command(ws, &all);
    if let Some(proxy) = proxy {
        cmd.env("AWS_ENDPOINT_URL", &proxy.endpoint);
    }
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn prefflow")
}

fn finish(child: Child) -> Run {
    let out = child.wait_with_output().expect("wait");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Waits until `cond` holds, failing after two minutes.
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn s3_backend_keeps_its_contract() {
    let Some(s3) = s3("s3_backend_keeps_its_contract") else {
        return;
    };
    let store = &s3.store;
    assert_eq!(store.get("runs/p/latest.json").expect("get"), None);
    store.put("a/b.json", b"{}").expect("put");
    assert_eq!(
        store.get("a/b.json").expect("get").as_deref(),
        Some(&b"{}"[..])
    );
    assert!(store.exists("a/b.json").expect("exists"));
    assert_eq!(store.size("a/b.json").expect("size"), 2);
    store.put("a/c/d.json", b"x").expect("put");
    store.put("ab/e.json", b"y").expect("put");
    // A prefix is a directory: `a` does not reach `ab/`.
    assert_eq!(
        store.list("a").expect("list"),
        vec!["a/b.json".to_string(), "a/c/d.json".to_string()]
    );
    let meta = store.stat("a/b.json").expect("stat").expect("present");
    let now = prefflow_engine::artifact::unix_now();
    let offset = store.clock_offset().expect("an object store has a clock");
    assert!(
        (meta.modified - offset - now).abs() < 60.0,
        "{meta:?} offset {offset}"
    );
    store.delete("a/b.json").expect("delete");
    store.delete("a/never-there.json").expect("absent is fine");
    assert!(!store.exists("a/b.json").expect("exists"));
    // Compare-and-swap on ETags.
    assert!(store.put_if("l/x", b"first", None).expect("create"));
    assert!(!store.put_if("l/x", b"again", None).expect("create"));
    let (_, v1) = store.get_versioned("l/x").expect("get").expect("present");
    assert!(store.put_if("l/x", b"second", Some(&v1)).expect("swap"));
    assert!(!store.put_if("l/x", b"third", Some(&v1)).expect("stale"));
    assert_eq!(
        store.get("l/x").expect("get").as_deref(),
        Some(&b"second"[..])
    );
    // Keys that could leave the prefix are refused before any request.
    for bad in ["../x", "a//b", "/x", ""] {
        assert!(store.put(bad, b"x").is_err(), "{bad}");
    }
}

#[test]
fn put_new_races_on_s3_have_exactly_one_winner() {
    let Some(s3) = s3("put_new_races_on_s3_have_exactly_one_winner") else {
        return;
    };
    let atomic = OneAtATime::start().store(&s3);
    for round in 0..20 {
        let key = format!("leases/race-{round}.json");
        let writers = 8;
        let barrier = Arc::new(Barrier::new(writers));
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let (store, barrier, key) = (atomic.clone(), barrier.clone(), key.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    let won = store.put_new(&key, format!("writer {w}").as_bytes());
                    (w, won.expect("put_new"))
                })
            })
            .collect();
        let winners: Vec<usize> = handles
            .into_iter()
            .map(|h| h.join().expect("writer"))
            .filter(|(_, won)| *won)
            .map(|(w, _)| w)
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
        let content = s3.store.get(&key).expect("get").expect("present");
        assert_eq!(content, format!("writer {}", winners[0]).into_bytes());
    }
}

/// Racing writers of one manifest key on S3 (a non-deterministic result computed twice): one
/// manifest is written, every other writer gets that one back, and the stored bytes never
/// change; once its blob is gone, the next writer replaces it.
#[test]
fn racing_manifest_commits_on_s3_keep_the_first_result() {
    use prefflow_engine::artifact::{commit_manifest, Committed, Manifest};
    let Some(s3) = s3("racing_manifest_commits_on_s3_keep_the_first_result") else {
        return;
    };
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(2));
    ws.write("p.yaml", &two_probe_stages("s3m", 0));
    s3.run_ok(&ws, "p.yaml", &["--only", "a"]);
    let item = s3.store.list("items").expect("list")[0].clone();
    let real: Manifest = serde_json::from_value(s3.json(&item)).expect("manifest");
    let atomic = OneAtATime::start().store(&s3);
    for round in 0..10 {
        let key = format!("items/zz/race-{round}.json");
        let writers = 8;
        let barrier = Arc::new(Barrier::new(writers));
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let (store, barrier, key) = (atomic.clone(), barrier.clone(), key.clone());
                let mut mine = real.clone();
                mine.data_version = format!("writer {w}");
                std::thread::spawn(move || {
                    barrier.wait();
                    match commit_manifest(store.as_ref(), &key, &mine).expect("commit") {
                        Committed::Written => mine.data_version,
                        Committed::Kept(theirs) => theirs.data_version,
                    }
                })
            })
            .collect();
        let seen: Vec<String> = handles
            .into_iter()
            .map(|h| h.join().expect("writer"))
            .collect();
        let stored: Manifest = serde_json::from_value(s3.json(&key)).expect("manifest");
        assert!(
            seen.iter().all(|v| *v == stored.data_version),
            "round {round}: writers saw {seen:?}, the store holds {}",
            stored.data_version
        );
    }
    // The real item's table goes missing (its inline bytes cut out, so it points at a blob
    // that is not there): a new commit of its key replaces the manifest.
    let mut lost = real.clone();
    for t in lost.tables.values_mut() {
        assert!(t.inline.take().is_some(), "a small item table is inline");
        s3.store.delete(&blob_key(&t.blob)).expect("delete");
    }
    s3.store
        .put(&item, &serde_json::to_vec(&lost).expect("json"))
        .expect("put");
    let mut healed = real.clone();
    healed.data_version = "healed".into();
    assert!(matches!(
        commit_manifest(s3.store.as_ref(), &item, &healed).expect("commit"),
        Committed::Written
    ));
    let stored: Manifest = serde_json::from_value(s3.json(&item)).expect("manifest");
    assert_eq!(stored.data_version, "healed");
}

#[test]
fn the_blob_cache_is_verified_and_never_outlives_the_remote_object() {
    let Some(s3) = s3("the_blob_cache_is_verified_and_never_outlives_the_remote_object") else {
        return;
    };
    let ws = Workspace::new();
    let StoreLocation::Remote(remote) = StoreLocation::parse(&s3.url).expect("url") else {
        panic!("remote");
    };
    let cache = ws.path().join("cache");
    let cached = RemoteStore::open(&remote)
        .expect("client")
        .with_cache(Some(cache.clone()));
    let bytes = b"parquet bytes, in spirit".to_vec();
    let hash = prefflow_engine::keys::hash_bytes(&bytes);
    let key = blob_key(&hash);
    cached.put(&key, &bytes).expect("put");
    let file = cache.join(&key);
    assert_eq!(std::fs::read(&file).expect("cached on write"), bytes);
    assert_eq!(cached.get(&key).expect("get"), Some(bytes.clone()));
    // A damaged cached copy is dropped and the intact remote one served (and cached again).
    std::fs::write(&file, b"damaged").expect("damage");
    assert_eq!(cached.get(&key).expect("get"), Some(bytes.clone()));
    assert_eq!(std::fs::read(&file).expect("re-cached"), bytes);
    // Removed from the store by someone else (gc elsewhere): the cache does not resurrect it.
    s3.store.delete(&key).expect("delete");
    assert_eq!(cached.get(&key).expect("get"), None);
    assert!(!file.exists(), "the stale cached copy was kept");
    // Non-blob objects are never cached: they change.
    cached.put("runs/p/latest.json", b"{}").expect("put");
    assert!(!cache.join("runs").exists());
}

#[test]
fn s3_calls_work_from_inside_a_tokio_runtime() {
    let Some(s3) = s3("s3_calls_work_from_inside_a_tokio_runtime") else {
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let store = s3.store.clone();
    let got = rt.block_on(async move {
        let mut tasks = Vec::new();
        for i in 0..8 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                let key = format!("async/{i}.json");
                store.put(&key, b"v").expect("put");
                store.get(&key).expect("get")
            }));
        }
        let mut got = Vec::new();
        for t in tasks {
            got.push(t.await.expect("no panic"));
        }
        got
    });
    assert!(got.iter().all(|g| g.as_deref() == Some(&b"v"[..])));
    assert_eq!(s3.count("async"), 8);
}

#[test]
fn iprefbench_on_s3_gives_the_same_bytes_as_a_local_store() {
    let Some(s3) = s3("iprefbench_on_s3_gives_the_same_bytes_as_a_local_store") else {
        return;
    };
    let (local, remote) = (Workspace::new(), Workspace::new());
    for ws in [&local, &remote] {
        link_repo(ws, "datasets");
        std::fs::create_dir(ws.path().join("pipelines")).expect("mkdir");
        std::fs::copy(
            repo("pipelines/iprefbench.yaml"),
            ws.path().join("pipelines/iprefbench.yaml"),
        )
        .expect("copy");
    }
    let file = "pipelines/iprefbench.yaml";
    let local_record = local.run_ok(file, &[]);
    let record = s3.run_ok(&remote, file, &[]);
    let (want, got) = (table_blobs(&local_record), table_blobs(&record));
    // Every stage's tables (70 with the four built-in agents on the whole history), not a
    // near-empty comparison.
    assert!(want.len() >= 70, "{want:?}");
    assert_eq!(got, want, "tables differ between the local and S3 stores");
    assert_eq!(
        summary(&record, "items_executed"),
        summary(&local_record, "items_executed")
    );
    // The bytes on the server are the local store's bytes.
    for hash in want.values() {
        let key = blob_key(hash);
        let on_s3 = s3.store.get(&key).expect("get").expect("blob on S3");
        let on_disk = std::fs::read(local.store().join(&key)).expect("local blob");
        assert!(on_s3 == on_disk, "{key} differs");
    }
    // Nothing was written to a local store directory.
    assert!(!remote.store().exists());
    // The no-op re-run is all cached; `show` reads tables from S3; `--path` says why not.
    let again = s3.run_ok(&remote, file, &[]);
    assert_eq!(summary(&again, "stages_executed"), 0);
    assert_eq!(summary(&again, "items_executed"), 0);
    let shown = s3
        .cli(&remote, &["show", "iprefbench.table1", "--format", "csv"])
        .expect_code(0);
    let local_shown = local
        .cli(&["show", "iprefbench.table1", "--format", "csv"])
        .expect_code(0);
    assert_eq!(shown.stdout, local_shown.stdout);
    let path = s3
        .cli(&remote, &["show", "iprefbench.table1", "--path"])
        .expect_code(2);
    assert!(
        path.stderr.contains("show --path needs a local store") && path.stderr.contains(&s3.url),
        "{}",
        path.stderr
    );
    s3.cli(&remote, &["verify", "-p", "iprefbench"])
        .expect_code(0);
}

#[test]
fn a_run_sigkilled_on_s3_resumes_without_recomputing_a_committed_item() {
    let Some(s3) = s3("a_run_sigkilled_on_s3_resumes_without_recomputing_a_committed_item") else {
        return;
    };
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(30));
    ws.write("p.yaml", &two_probe_stages("s3p", 200));
    let mut child = spawn(&s3, &ws, &["--only", "a"]);
    wait_until("items to be committed", || s3.count("items") >= 4);
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    let before = s3.items();
    let committed = before.len();
    assert!(committed < 30, "the kill came too late ({committed})");
    // gc after the kill deletes none of the killed run's items (its dead lease lists them).
    s3.cli(&ws, &["gc"]).expect_code(0);
    assert_eq!(s3.items(), before, "gc deleted a killed run's items");
    let resumed = s3.run_ok(&ws, "p.yaml", &["--only", "a"]);
    let a = instance(&resumed, "a");
    assert_eq!(a["items"]["cached"].as_u64(), Some(committed as u64));
    assert_eq!(a["items"]["executed"].as_u64(), Some(30 - committed as u64));
    let after = s3.items();
    assert_eq!(after.len(), 30);
    for (key, bytes) in &before {
        assert_eq!(after.get(key), Some(bytes), "{key} was rewritten");
    }
    s3.cli(&ws, &["verify", "-p", "s3p"]).expect_code(0);
}

#[test]
fn concurrent_runs_on_one_s3_prefix_lose_nothing() {
    let Some(s3) = s3("concurrent_runs_on_one_s3_prefix_lose_nothing") else {
        return;
    };
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(4));
    ws.write("p.yaml", &two_probe_stages("s3p", 0));
    // Through the proxy: moto's If-Match is not atomic either (see OneAtATime).
    let proxy = OneAtATime::start();
    for round in 0..6 {
        let (la, lb) = (format!("a.label=a{round}"), format!("b.label=b{round}"));
        let a = spawn_via(&s3, &ws, &["--only", "a", "--set", &la], Some(&proxy));
        let b = spawn_via(&s3, &ws, &["--only", "b", "--set", &lb], Some(&proxy));
        let (ra, rb) = (finish(a), finish(b));
        assert_eq!(ra.code, 0, "round {round}: {}", ra.stderr);
        assert_eq!(rb.code, 0, "round {round}: {}", rb.stderr);
        // latest.json holds both runs' results: the compare-and-swap lost neither.
        let latest = s3.json("runs/s3p/latest.json");
        for (stage, label) in [("a", format!("a{round}")), ("b", format!("b{round}"))] {
            let key = instance(&latest, stage)["recipe_key"]
                .as_str()
                .expect("key")
                .to_string();
            let manifest = s3.json(&format!("recipes/{}/{key}.json", &key[..2]));
            assert_eq!(
                manifest["key"]["params"]["label"], label,
                "round {round}: latest.json lost `{stage}`"
            );
        }
    }
    // Both stages' tables are readable from the merged record.
    for stage in ["a", "b"] {
        let out = s3
            .cli(&ws, &["show", stage, "--format", "csv"])
            .expect_code(0);
        assert_eq!(out.stdout.lines().count(), 5, "{}", out.stdout);
    }
}

#[test]
fn gc_beside_a_live_run_on_s3_deletes_nothing_the_run_needs() {
    let Some(s3) = s3("gc_beside_a_live_run_on_s3_deletes_nothing_the_run_needs") else {
        return;
    };
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(16));
    ws.write("p.yaml", &two_probe_stages("s3p", 150));
    s3.run_ok(&ws, "p.yaml", &[]);
    // A second run with changed parameters; gc runs while it is live.
    let child = spawn(&s3, &ws, &["--set", "a.label=a2", "--set", "b.label=b2"]);
    wait_until("the run's first items", || s3.count("items") >= 34);
    let refused = s3.cli(&ws, &["gc"]).expect_code(3);
    assert!(
        refused.stderr.contains("gc refused: 1 live lease"),
        "{}",
        refused.stderr
    );
    let gc = s3.cli(&ws, &["gc", "--wait", "300"]).expect_code(0);
    let run = finish(child);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(gc.stdout.contains("removed"), "{}", gc.stdout);
    s3.cli(&ws, &["verify", "-p", "s3p"]).expect_code(0);
    let rerun = s3.run_ok(
        &ws,
        "p.yaml",
        &["--set", "a.label=a2", "--set", "b.label=b2"],
    );
    assert_eq!(summary(&rerun, "stages_executed"), 0, "{rerun}");
}

/// A lease written by another machine whose clock is an hour behind: its own heartbeat time
/// looks stale, but the store stamped it just now, so `gc` counts it live; once the store's
/// stamp is older than the timeout, it is dead, whatever the record says.
#[test]
fn a_lease_from_a_machine_with_a_slow_clock_is_judged_by_the_stores_clock() {
    let Some(s3) = s3("a_lease_from_a_machine_with_a_slow_clock_is_judged_by_the_stores_clock")
    else {
        return;
    };
    let ws = Workspace::new();
    let then = prefflow_engine::artifact::unix_now() - 3600.0;
    let lease = serde_json::json!({
        "id": "other-host-lease", "holder": "run", "pipeline": "elsewhere",
        "host": "another-machine", "pid": 4242, "pid_start": null,
        "started_at": then - 5.0, "heartbeat_at": then, "heartbeat_secs": 1.0
    });
    let key = "leases/other-host-lease.json";
    s3.store
        .put(key, lease.to_string().as_bytes())
        .expect("put lease");
    let gc = |ws: &Workspace| {
        s3.command(ws, &["gc"])
            .env("PREFFLOW_LEASE_HEARTBEAT_SECS", "1")
            .env("PREFFLOW_LEASE_TIMEOUT_SECS", "4")
            .output()
            .expect("gc")
    };
    let refused = gc(&ws);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("gc refused: 1 live lease") && stderr.contains("another-machine"),
        "{stderr}"
    );
    std::thread::sleep(Duration::from_secs(7));
    let done = gc(&ws);
    let stdout = String::from_utf8_lossy(&done.stdout);
    assert_eq!(done.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("dead (no heartbeat for"), "{stdout}");
}

/// An item of a per-item stage is one object on S3 (its small table inside its manifest), and
/// the tables are the local store's bytes, cold, re-run and with one more row.
#[test]
fn an_item_is_one_object_on_s3_and_its_tables_are_the_local_bytes() {
    let Some(s3) = s3("an_item_is_one_object_on_s3_and_its_tables_are_the_local_bytes") else {
        return;
    };
    let (ws, local) = (Workspace::new(), Workspace::new());
    for w in [&ws, &local] {
        w.write("data/rows.csv", &numbers_csv(12));
        w.write("p.yaml", &two_probe_stages("s3i", 0));
    }
    let record = s3.run_ok(&ws, "p.yaml", &[]);
    assert_eq!(
        table_blobs(&record),
        table_blobs(&local.run_ok("p.yaml", &[]))
    );
    // 2 stages × 12 items: 24 manifests and not one blob of their own; the blobs are the
    // instances' tables.
    assert_eq!(s3.count("items"), 24);
    let instance_blobs: std::collections::BTreeSet<String> =
        table_blobs(&record).into_values().collect();
    let blobs = s3.store.list("blobs").expect("list");
    assert_eq!(blobs.len(), instance_blobs.len(), "{blobs:?}");
    for hash in &instance_blobs {
        assert!(
            blobs.contains(&blob_key(hash)),
            "{hash} not on S3: {blobs:?}"
        );
    }
    let again = s3.run_ok(&ws, "p.yaml", &[]);
    assert_eq!(summary(&again, "stages_executed"), 0);
    assert_eq!(summary(&again, "items_executed"), 0);
    assert_eq!(table_blobs(&again), table_blobs(&record));
    // One more row: the 24 cached items are read back from their manifests on S3.
    for w in [&ws, &local] {
        w.write("data/rows.csv", &numbers_csv(13));
    }
    let grown = s3.run_ok(&ws, "p.yaml", &[]);
    assert_eq!(summary(&grown, "items_executed"), 2);
    assert_eq!(summary(&grown, "items_cached"), 24);
    assert_eq!(
        table_blobs(&grown),
        table_blobs(&local.run_ok("p.yaml", &[]))
    );
    assert_eq!(s3.count("items"), 26);
}
