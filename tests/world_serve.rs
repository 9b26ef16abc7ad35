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
    let root = env!("CARGO_MANIFEST_DIR");
    let mut child = Command::new(bin())
        .current_dir(ws.path())
        .args(["serve-env", "--port", "0"])
        .arg("--apps")
        .arg(format!("{root}/datasets/apps"))
        .arg("--persona")
        .arg(format!("{root}/datasets/personas/maya.yaml"))
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
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
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
