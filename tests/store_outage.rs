//! An object store that misbehaves: an endpoint that goes silent mid-run (moto behind a
//! blackholing TCP proxy written here), a bucket that does not exist (moto), and a server that
//! refuses with S3's error bodies for credentials, region and access (a canned HTTP server on
//! 127.0.0.1). Each must end the command with one located message that says what to do,
//! never hang it or hide behind a wrong one. Skipped (with a message) without an S3 server.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::*;
use crate::store_s3::s3;

/// A TCP proxy in front of `upstream` that, once switched, keeps accepting connections but
/// forwards nothing and answers nothing: a hung endpoint.
struct Blackhole {
    addr: SocketAddr,
    silent: Arc<AtomicBool>,
}

impl Blackhole {
    fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let addr = listener.local_addr().expect("addr");
        let silent = Arc::new(AtomicBool::new(false));
        let flag = silent.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                let (c2, s2) = (client.try_clone(), server.try_clone());
                let (Ok(c2), Ok(s2)) = (c2, s2) else { continue };
                pipe(client, s2, flag.clone());
                pipe(server, c2, flag.clone());
            }
        });
        Self { addr, silent }
    }

    fn go_silent(&self) {
        self.silent.store(true, Ordering::SeqCst);
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// Copies `from` into `to` until either closes; while `silent`, what arrives is swallowed.
fn pipe(mut from: TcpStream, mut to: TcpStream, silent: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 << 10];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            if silent.load(Ordering::SeqCst) {
                continue;
            }
            if to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
    });
}

/// The S3 server's address (`AWS_ENDPOINT_URL`).
fn moto_addr() -> SocketAddr {
    let url = std::env::var("AWS_ENDPOINT_URL").expect("AWS_ENDPOINT_URL");
    let hostport = url.trim_start_matches("http://").trim_end_matches('/');
    hostport.parse().expect("endpoint is http://127.0.0.1:PORT")
}

/// A per-item probe slow enough (25 ms an item) to go silent in the middle of 400 rows.
fn slow_items(name: &str) -> String {
    crate::run_signals::slow(name, 25)
}

#[test]
fn a_hung_s3_endpoint_fails_the_run_with_a_located_message_and_a_rerun_resumes() {
    let Some(s3) = s3("a_hung_s3_endpoint_fails_the_run") else {
        return;
    };
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(400));
    ws.write("p.yaml", &slow_items("hang"));
    let proxy = Blackhole::start(moto_addr());
    // Shorter deadlines than the defaults keep the test short; set through the URL.
    let url = format!("{}?timeout=30s&request_timeout=15s", s3.url);
    let mut child = ws
        .command(&["--store", &url, "run", "p.yaml", "--progress", "none"])
        .env("AWS_ENDPOINT_URL", proxy.endpoint())
        .env("PREFFLOW_CACHE_DIR", ws.path().join("cache"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn prefflow");
    let started = Instant::now();
    while s3.store.list("items").expect("list").len() < 40 {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no items committed"
        );
        assert!(child.try_wait().expect("poll").is_none(), "ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    proxy.go_silent();
    let silent_at = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll") {
            break status;
        }
        if silent_at.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("the run was still going 2 minutes after its store went silent");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let out = child.wait_with_output().expect("output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(1), "{stderr}");
    let endpoint = proxy.endpoint();
    assert!(
        stderr.contains(&format!("(endpoint {endpoint}) did not answer for"))
            && stderr.contains("committed items are kept; re-run to resume"),
        "{stderr}"
    );
    // The library's retry chatter stays at debug; the failure is said a handful of times, not
    // once per request.
    assert!(!stderr.contains("Encountered"), "{stderr}");
    let mentions = stderr.matches("did not answer").count();
    assert!(mentions <= 4, "{mentions} mentions:\n{stderr}");
    let committed = s3.store.list("items").expect("list").len();
    assert!(
        (40..400).contains(&committed),
        "{committed} items committed"
    );
    // The endpoint answers again: the run resumes from what was committed.
    let run = s3.run_ok(&ws, "p.yaml", &[]);
    let work = instance(&run, "work");
    assert_eq!(
        work["items"]["cached"].as_u64(),
        Some(committed as u64),
        "{work}"
    );
    assert_eq!(work["items"]["total"].as_u64(), Some(400), "{work}");
}

#[test]
fn a_missing_bucket_is_named_with_its_endpoint_and_the_fix() {
    let Some(s3) = s3("a_missing_bucket_is_named") else {
        return;
    };
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(3));
    ws.write("p.yaml", &slow_items("nobucket"));
    let bucket = format!("h27-no-such-bucket-{}", std::process::id());
    let url = format!("s3://{bucket}/p");
    let endpoint = std::env::var("AWS_ENDPOINT_URL").expect("endpoint");
    for args in [
        vec!["run", "p.yaml", "--progress", "none"],
        vec!["gc"],
        vec!["show", "work"],
        vec!["verify"],
    ] {
        let mut all = vec!["--store", url.as_str()];
        all.extend(args.iter().copied());
        let out = ws.cli(&all);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains(&format!(
                "the bucket `{bucket}` does not exist at {endpoint}"
            )) && out.stderr.contains("aws s3 mb")
                && !out.stderr.contains("exists already"),
            "{args:?}: {}",
            out.stderr
        );
        assert_eq!(
            out.stderr.matches("does not exist").count(),
            1,
            "{}",
            out.stderr
        );
    }
    // The real bucket still works from the same workspace.
    s3.run_ok(&ws, "p.yaml", &[]);
}

/// A server that answers every request with `status` and an S3 error body `code` (plus
/// `extra` XML), like S3 refusing the client's setup.
fn refusing_server(status: &'static str, code: &'static str, extra: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
            let mut buf = [0u8; 16 << 10];
            let _ = conn.read(&mut buf);
            let body = format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code}</Code><Message>refused</Message>{extra}</Error>"
            );
            let reply = format!(
                "HTTP/1.1 {status}\r\ncontent-type: application/xml\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = conn.write_all(reply.as_bytes());
        }
    });
    format!("http://{addr}")
}

#[test]
fn refused_credentials_region_and_access_say_what_to_fix() {
    let ws = Workspace::new();
    ws.write("data/rows.csv", &numbers_csv(3));
    ws.write("p.yaml", &slow_items("refused"));
    let cases = [
        (
            "403 Forbidden",
            "InvalidAccessKeyId",
            "",
            "rejected the credentials",
        ),
        (
            "400 Bad Request",
            "AuthorizationHeaderMalformed",
            "<Region>eu-west-1</Region>",
            "the server says it is in `eu-west-1`",
        ),
        (
            "403 Forbidden",
            "AccessDenied",
            "",
            "access denied to s3://team-bucket/p",
        ),
    ];
    for (status, code, extra, said) in cases {
        let endpoint = refusing_server(status, code, extra);
        let out = ws
            .command(&[
                "--store",
                "s3://team-bucket/p",
                "run",
                "p.yaml",
                "--progress",
                "none",
            ])
            .env("AWS_ENDPOINT_URL", &endpoint)
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "wrong")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ALLOW_HTTP", "true")
            .env("PREFFLOW_CACHE_DIR", ws.path().join("cache"))
            .output()
            .expect("spawn");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{code}: {stderr}");
        assert!(
            stderr.contains(said) && stderr.contains(&endpoint) && stderr.contains(code),
            "{code}: {stderr}"
        );
        assert!(!stderr.contains("wrong"), "a secret leaked: {stderr}");
    }
}
