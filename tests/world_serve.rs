//! `prefflow serve-env`: the real binary on a free loopback port, driven by a real HTTP client.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use reqwest::blocking::Client;
use serde_json::{json, Value};

use crate::common::{bin, Workspace};

/// The server process; killed when the test ends, pass or fail.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(ws: &Workspace) -> Server {
    start_with(ws, &[], &[])
}

/// `serve-env` with extra flags and environment variables.
fn start_with(ws: &Workspace, flags: &[&str], env: &[(&str, &str)]) -> Server {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut child = Command::new(bin())
        .current_dir(ws.path())
        .args(["serve-env", "--port", "0"])
        .arg("--apps")
        .arg(format!("{root}/datasets/apps"))
        .arg("--persona")
        .arg(format!("{root}/datasets/personas/maya.yaml"))
        .args(flags)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn serve-env");
    let mut line = String::new();
    let stdout = child.stdout.take().expect("stdout");
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("first line");
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("first line: {line:?}"))
        .to_string();
    assert!(
        url.contains("://127.0.0.1:") || url.contains("://0.0.0.0:"),
        "{url}"
    );
    // A wildcard bind is reached over loopback: tests never leave this machine.
    let url = url.replace("://0.0.0.0:", "://127.0.0.1:");
    Server { child, url }
}

struct Api<'a> {
    http: Client,
    url: &'a str,
}

impl Api<'_> {
    fn send(&self, req: reqwest::blocking::RequestBuilder) -> (u16, Value) {
        let res = req.send().expect("request");
        let code = res.status().as_u16();
        (code, res.json().expect("JSON body"))
    }
    fn get(&self, path: &str) -> (u16, Value) {
        self.send(self.http.get(format!("{}{path}", self.url)))
    }
    fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.send(self.http.post(format!("{}{path}", self.url)).json(&body))
    }
    fn step(&self, id: &str, action: Value) -> Value {
        let (code, obs) = self.post(&format!("/episodes/{id}/step"), action);
        assert_eq!(code, 200, "{obs}");
        obs
    }
}

fn inserted<'v>(diff: &'v Value, app: &str, table: &str) -> &'v Vec<Value> {
    diff["tables"]
        .as_array()
        .and_then(|ts| ts.iter().find(|t| t["app"] == app && t["table"] == table))
        .and_then(|t| t["inserted"].as_array())
        .unwrap_or_else(|| panic!("no inserts in {app}.{table}: {diff}"))
}

#[test]
fn served_phone_runs_a_tools_episode_over_http() {
    let ws = Workspace::new();
    let server = start(&ws);
    let api = Api {
        http: Client::new(),
        url: &server.url,
    };
    let (code, health) = api.get("/health");
    assert_eq!(
        (code, &health["apps"], &health["events"]),
        (200, &json!(26), &json!(3051))
    );
    let body =
        json!({ "space": "tools", "answers": [{ "when": "how many", "reply": "Six of us." }] });
    let (code, created) = api.post("/episodes", body);
    assert_eq!(code, 200, "{created}");
    let id = created["episode_id"]
        .as_str()
        .expect("episode id")
        .to_string();
    let tools = created["tools"].as_array().expect("tools");
    assert!(tools.iter().any(|t| t["name"] == "dinespot.book_table"));
    let book = json!({ "action": "call", "tool": "dinespot.book_table",
        "args": { "restaurant": "baan-thai", "date": "2025-10-03", "time": "19:30", "seating": "patio" } });
    let obs = api.step(&id, book);
    assert_eq!(obs["status"], "ok", "{obs}");
    let (_, diff) = api.get(&format!("/episodes/{id}/diff"));
    let res = inserted(&diff, "dinespot", "reservations");
    assert_eq!(
        (res.len(), &res[0]["seating"], &res[0]["time"]),
        (1, &json!("patio"), &json!("19:30"))
    );
    let ev = inserted(&diff, "calendar", "events");
    assert_eq!(ev[0]["title"], "Dinner at Baan Thai");
    let (_, state) = api.get(&format!("/episodes/{id}/state"));
    let reservations = state["tables"]["dinespot.reservations"]
        .as_array()
        .expect("table");
    assert!(
        reservations.iter().any(|r| r["id"] == res[0]["id"]),
        "{state}"
    );
    assert_eq!(state["operations"][0]["tool"], "dinespot.book_table");
    let reply = api.step(
        &id,
        json!({ "action": "ask_user", "text": "How many people are coming?" }),
    );
    assert_eq!(reply["text"], "Six of us.");
    // Invalid actions are error observations that change nothing.
    for bad in [
        json!({ "action": "tap", "element": 1 }),
        json!({ "action": "call", "tool": "dinespot.teleport" }),
        json!({ "action": "fly" }),
    ] {
        assert_eq!(api.step(&id, bad.clone())["status"], "error", "{bad}");
    }
    assert_eq!(api.get(&format!("/episodes/{id}/diff")).1, diff);
    // Another episode starts from the untouched world.
    let (_, other) = api.post("/episodes", json!({}));
    let other_id = other["episode_id"].as_str().expect("id");
    assert_ne!(other_id, id);
    assert_eq!(
        api.get(&format!("/episodes/{other_id}/diff")).1,
        json!({ "tables": [] })
    );
    let (code, closed) = api.send(api.http.delete(format!("{}/episodes/{id}", server.url)));
    assert_eq!((code, &closed["closed"]), (200, &json!(id)));
    let (code, gone) = api.get(&format!("/episodes/{id}/observe"));
    assert_eq!(code, 404);
    assert!(
        gone["error"].as_str().is_some_and(|e| e.contains(&id)),
        "{gone}"
    );
}

#[test]
fn served_phone_rejects_bad_requests_with_json_errors() {
    let ws = Workspace::new();
    let server = start(&ws);
    let api = Api {
        http: Client::new(),
        url: &server.url,
    };
    // Every error is JSON, whatever produced it: wrong method, unknown path, bad body.
    let (code, err) = api.get("/episodes");
    assert_eq!(code, 405, "{err}");
    assert!(
        err["error"]
            .as_str()
            .is_some_and(|e| e.contains("GET /episodes")),
        "{err}"
    );
    let (code, err) = api.send(api.http.put(format!("{}/health", server.url)));
    assert_eq!(code, 405, "{err}");
    let (code, err) = api.post("/episodes/ep-404/step", json!({ "action": "finish" }));
    assert_eq!(code, 404);
    assert!(err["error"].as_str().is_some_and(|e| e.contains("ep-404")));
    let (code, err) = api.post("/episodes", json!({ "space": "telepathy" }));
    assert_eq!(code, 400, "{err}");
    let edit = json!({ "overrides": { "app_data": [{ "op": "delete", "table": "nope.things", "id": "x" }] } });
    let (code, err) = api.post("/episodes", edit);
    assert_eq!(code, 400, "{err}");
    assert!(
        err["error"]
            .as_str()
            .is_some_and(|e| e.contains("nope.things")),
        "{err}"
    );
    let (_, created) = api.post("/episodes", json!({}));
    let id = created["episode_id"].as_str().expect("id");
    let raw = api
        .http
        .post(format!("{}/episodes/{id}/step", server.url))
        .body("{not json");
    assert_eq!(api.send(raw).0, 400);
    assert_eq!(api.get("/nowhere").0, 404);
    // The server is still up after all that.
    assert_eq!(api.get("/health").0, 200);
}

#[test]
fn serve_env_with_a_missing_persona_exits_2() {
    let ws = Workspace::new();
    let apps = format!("{}/datasets/apps", env!("CARGO_MANIFEST_DIR"));
    let args = [
        "serve-env",
        "--port",
        "0",
        "--apps",
        &apps,
        "--persona",
        "nobody.yaml",
    ];
    let run = ws.cli(&args).expect_code(2);
    assert!(run.stderr.contains("nobody.yaml"), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "never listened: {}", run.stdout);
}

fn error_of(v: &Value) -> &str {
    v["error"]
        .as_str()
        .unwrap_or_else(|| panic!("no `error` in {v}"))
}

#[test]
fn served_phone_enforces_its_limits_and_reports_them_in_health() {
    let ws = Workspace::new();
    let flags = [
        "--max-episodes",
        "2",
        "--max-episodes-per-client",
        "2",
        "--max-steps",
        "3",
        "--max-body-bytes",
        "4000",
        "--max-episode-bytes",
        "9000",
        "--max-observation-bytes",
        "300",
    ];
    let server = start_with(&ws, &flags, &[]);
    let api = Api {
        http: Client::new(),
        url: &server.url,
    };
    let (_, health) = api.get("/health");
    assert_eq!(health["limits"]["max_episodes"], 2, "{health}");
    assert_eq!(health["limits"]["max_steps"], 3, "{health}");
    assert_eq!(health["limits"]["max_body_bytes"], 4000, "{health}");
    assert_eq!(health["limits"]["max_observation_bytes"], 300, "{health}");
    assert_eq!(health["limits"]["episode_ttl_secs"], 600, "{health}");

    // Observations are cut to the limit and say so.
    let (code, a) = api.post("/episodes", json!({ "space": "gui" }));
    assert_eq!(code, 200, "{a}");
    let a = a["episode_id"].as_str().expect("id").to_string();
    api.step(&a, json!({ "action": "open_app", "app": "dinespot" }));
    let screen = api.step(&a, json!({ "action": "tap", "element": 1 }));
    let text = screen["text"].as_str().expect("text");
    assert!(
        text.len() <= 300 && text.contains("observation cut"),
        "{text}"
    );

    // A third open episode is refused; closing one makes room.
    let (_, b) = api.post("/episodes", json!({}));
    let b = b["episode_id"].as_str().expect("id").to_string();
    let (code, err) = api.post("/episodes", json!({}));
    assert_eq!(code, 429, "{err}");
    assert!(error_of(&err).contains("--max-episodes"), "{err}");
    let (code, _) = api.send(api.http.delete(format!("{}/episodes/{a}", server.url)));
    assert_eq!(code, 200);
    let (code, c) = api.post("/episodes", json!({}));
    assert_eq!(code, 200, "{c}");
    let c = c["episode_id"].as_str().expect("id").to_string();

    // A body over the limit is a JSON 413, and the server goes on.
    let big = json!({ "action": "call", "tool": "notes.create_note",
        "args": { "title": "big", "body": "x".repeat(5000) } });
    let (code, err) = api.post(&format!("/episodes/{b}/step"), big);
    assert_eq!(code, 413, "{err}");
    assert!(error_of(&err).contains("--max-body-bytes"), "{err}");

    // An episode's bytes are bounded over its life, and its steps too.
    let note = |n: usize| {
        json!({ "action": "call", "tool": "notes.create_note",
        "args": { "title": format!("n{n}"), "body": "y".repeat(3500) } })
    };
    assert_eq!(api.step(&b, note(1))["status"], "ok");
    assert_eq!(api.step(&b, note(2))["status"], "ok");
    let (code, err) = api.post(&format!("/episodes/{b}/step"), note(3));
    assert_eq!(code, 413, "{err}");
    assert!(error_of(&err).contains("--max-episode-bytes"), "{err}");
    for _ in 0..3 {
        api.step(&c, json!({ "action": "home" }));
    }
    let (code, err) = api.post(&format!("/episodes/{c}/step"), json!({ "action": "home" }));
    assert_eq!(code, 429, "{err}");
    assert!(error_of(&err).contains("--max-steps"), "{err}");
    // Reads are not steps: the episode can still be inspected.
    assert_eq!(api.get(&format!("/episodes/{c}/diff")).0, 200);

    let (_, health) = api.get("/health");
    assert_eq!(health["episodes"], 2, "{health}");
    assert_eq!(health["counts"]["created"], 3, "{health}");
    assert_eq!(health["counts"]["closed"], 1, "{health}");
    assert!(health["counts"]["refused"].as_u64() >= Some(4), "{health}");
}

#[test]
fn idle_episodes_expire_after_the_ttl() {
    let ws = Workspace::new();
    let server = start_with(&ws, &["--episode-ttl-secs", "1"], &[]);
    let api = Api {
        http: Client::new(),
        url: &server.url,
    };
    let (_, created) = api.post("/episodes", json!({}));
    let id = created["episode_id"].as_str().expect("id").to_string();
    // Longer than the TTL (a lower bound only: a slower machine waits longer, never shorter).
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let (code, err) = api.get(&format!("/episodes/{id}/observe"));
    assert_eq!(code, 404, "{err}");
    assert!(error_of(&err).contains("expired"), "{err}");
    let (_, health) = api.get("/health");
    assert_eq!(
        (&health["episodes"], &health["counts"]["expired"]),
        (&json!(0), &json!(1)),
        "{health}"
    );
}

#[test]
fn a_large_state_in_flight_does_not_hold_up_other_episodes() {
    use std::io::{Read, Write};
    let ws = Workspace::new();
    let server = start(&ws);
    let api = Api {
        http: Client::new(),
        url: &server.url,
    };
    let (_, big) = api.post("/episodes", json!({}));
    let big = big["episode_id"].as_str().expect("id").to_string();
    for n in 0..12 {
        let note = json!({ "action": "call", "tool": "notes.create_note",
            "args": { "title": format!("big {n}"), "body": "z".repeat(900_000) } });
        assert_eq!(api.step(&big, note)["status"], "ok");
    }
    // Ask for the ~11 MB state and do not read it yet: the server cannot finish that response.
    let addr = server.url.trim_start_matches("http://").to_string();
    let mut slow = std::net::TcpStream::connect(&addr).expect("connect");
    write!(
        slow,
        "GET /episodes/{big}/state HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    // Meanwhile other episodes run whole, in parallel threads, and health answers.
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let url = server.url.clone();
            std::thread::spawn(move || {
                let api = Api {
                    http: Client::new(),
                    url: &url,
                };
                let (code, ep) = api.post("/episodes", json!({}));
                assert_eq!(code, 200, "{ep}");
                let id = ep["episode_id"].as_str().expect("id").to_string();
                let note = json!({ "action": "call", "tool": "notes.create_note",
                    "args": { "title": format!("worker {w}") } });
                assert_eq!(api.step(&id, note)["status"], "ok");
                let (_, state) = api.get(&format!("/episodes/{id}/state"));
                let titles: Vec<&str> = state["tables"]["notes.notes"]
                    .as_array()
                    .expect("notes")
                    .iter()
                    .filter_map(|n| n["title"].as_str())
                    .collect();
                assert!(
                    titles.contains(&format!("worker {w}").as_str()),
                    "{titles:?}"
                );
                assert!(
                    !titles.iter().any(|t| t.starts_with("big ")),
                    "episodes share no state"
                );
                assert_eq!(api.get("/health").0, 200);
                id
            })
        })
        .collect();
    let ids: Vec<String> = workers
        .into_iter()
        .map(|w| w.join().expect("worker"))
        .collect();
    assert_eq!(ids.len(), 4);
    // Only now read the big state: it is whole and holds every note.
    let mut raw = Vec::new();
    slow.read_to_end(&mut raw).expect("read the state");
    let text = String::from_utf8_lossy(&raw);
    assert!(
        text.starts_with("HTTP/1.1 200"),
        "{}",
        &text[..text.len().min(200)]
    );
    assert!(raw.len() > 10_000_000, "{} bytes", raw.len());
    assert!(
        text.matches("\"big ").count() >= 12,
        "every note is in the state"
    );
}

#[test]
fn a_token_guards_every_request_and_remote_binds_need_one() {
    let ws = Workspace::new();
    let env = [("PREFFLOW_TEST_PHONE_TOKEN", "t0ken-for-tests")];
    let flags = [
        "--bind",
        "0.0.0.0",
        "--allow-remote",
        "--token-env",
        "PREFFLOW_TEST_PHONE_TOKEN",
    ];
    let server = start_with(&ws, &flags, &env);
    let api = Api {
        http: Client::new(),
        url: &server.url,
    };
    let (code, err) = api.get("/health");
    assert_eq!(code, 401, "{err}");
    assert!(error_of(&err).contains("Authorization: Bearer"), "{err}");
    let wrong = api
        .http
        .get(format!("{}/health", server.url))
        .bearer_auth("t0ken-for-test");
    assert_eq!(api.send(wrong).0, 401);
    let (code, err) = api.send(api.http.post(format!("{}/episodes", server.url)).body("{}"));
    assert_eq!(code, 401, "{err}");
    let right = api
        .http
        .get(format!("{}/health", server.url))
        .bearer_auth("t0ken-for-tests");
    let (code, health) = api.send(right);
    assert_eq!((code, &health["status"]), (200, &json!("ok")));
    let create = api
        .http
        .post(format!("{}/episodes", server.url))
        .bearer_auth("t0ken-for-tests")
        .body("{}");
    assert_eq!(api.send(create).0, 200);
}

#[test]
fn a_remote_bind_warns_on_stderr() {
    let ws = Workspace::new();
    let root = env!("CARGO_MANIFEST_DIR");
    let mut child = Command::new(bin())
        .current_dir(ws.path())
        .args([
            "serve-env",
            "--port",
            "0",
            "--bind",
            "0.0.0.0",
            "--allow-remote",
        ])
        .args([
            "--token-env",
            "PREFFLOW_TEST_PHONE_TOKEN",
            "--persona",
            "nobody.yaml",
        ])
        .arg("--apps")
        .arg(format!("{root}/datasets/apps"))
        .env("PREFFLOW_TEST_PHONE_TOKEN", "t0ken-for-tests")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn serve-env");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr)
        .expect("stderr");
    let _ = child.wait();
    assert!(stderr.contains("warning: serving on 0.0.0.0"), "{stderr}");
    assert!(
        stderr.contains("PREFFLOW_TEST_PHONE_TOKEN") && !stderr.contains("t0ken-for-tests"),
        "{stderr}"
    );
}

/// `POST /episodes` as client `who` (its `X-Client-Id`): status, body and `Retry-After`.
fn create_as(api: &Api<'_>, who: &str) -> (u16, Value, Option<u64>) {
    let res = api
        .http
        .post(format!("{}/episodes", api.url))
        .header("X-Client-Id", who)
        .json(&json!({}))
        .send()
        .expect("request");
    let code = res.status().as_u16();
    let retry = res
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    (code, res.json().expect("JSON body"), retry)
}

/// A client that opens episodes and never closes them holds at most its quota; others still
/// get theirs; at the server's cap the longest-idle episode gives way once it has been idle
/// for `--evict-idle-secs`, and until then a 429 says how long to wait (`Retry-After`).
#[test]
fn a_leaking_client_cannot_lock_the_others_out() {
    let ws = Workspace::new();
    let flags = [
        "--max-episodes",
        "6",
        "--max-episodes-per-client",
        "3",
        "--evict-idle-secs",
        "2",
    ];
    let server = start_with(&ws, &flags, &[]);
    let api = Api {
        http: Client::new(),
        url: &server.url,
    };
    let mut leaked = Vec::new();
    for _ in 0..3 {
        let (code, body, _) = create_as(&api, "leaker");
        assert_eq!(code, 200, "{body}");
        leaked.push(body["episode_id"].as_str().expect("id").to_string());
    }
    let (code, err, retry) = create_as(&api, "leaker");
    assert_eq!(code, 429, "{err}");
    assert!(
        error_of(&err).contains("--max-episodes-per-client"),
        "{err}"
    );
    assert!(matches!(retry, Some(1..=2)), "Retry-After {retry:?}");
    // Another client is not locked out by the leak.
    let mut mine = Vec::new();
    for _ in 0..3 {
        let (code, body, _) = create_as(&api, "careful");
        assert_eq!(code, 200, "{body}");
        mine.push(body["episode_id"].as_str().expect("id").to_string());
    }
    // The server is full, nobody idle long enough: a third client waits, told how long.
    let (code, err, retry) = create_as(&api, "third");
    assert_eq!(code, 429, "{err}");
    assert!(error_of(&err).contains("--max-episodes"), "{err}");
    assert!(matches!(retry, Some(1..=2)), "Retry-After {retry:?}");
    // The careful client keeps using its episodes; the leaked ones sit idle and give way.
    std::thread::sleep(std::time::Duration::from_millis(2200));
    for id in &mine {
        assert_eq!(api.get(&format!("/episodes/{id}/observe")).0, 200);
    }
    let (code, body, _) = create_as(&api, "third");
    assert_eq!(code, 200, "{body}");
    let (code, err) = api.get(&format!("/episodes/{}/observe", leaked[0]));
    assert_eq!(code, 404, "{err}");
    assert!(error_of(&err).contains("to make room"), "{err}");
    let (_, health) = api.get("/health");
    assert_eq!(health["counts"]["evicted"], 1, "{health}");
    assert_eq!(health["clients"]["id:leaker"], 2, "{health}");
    assert_eq!(health["clients"]["id:careful"], 3, "{health}");
    assert_eq!(health["limits"]["max_episodes_per_client"], 3, "{health}");
}
