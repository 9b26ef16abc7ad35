//! A scripted OpenAI-compatible server on 127.0.0.1.
//!
//! Tests and `prefflow bench` use it to exercise the client against real sockets: scripted
//! replies, replies computed from the request, injected latency, rate limits, server errors,
//! hangs and malformed bodies. It binds the
//! loopback interface only and stops accepting when dropped.

mod limits;

pub use limits::{count_tokens, Decision, LimitedProvider, ProviderLimits};

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the server does with one request.
#[derive(Clone, Debug)]
pub enum Behavior {
    /// Answer with this status, extra headers and body.
    Reply {
        /// HTTP status code.
        status: u16,
        /// Headers sent besides the content type and length.
        headers: Vec<(String, String)>,
        /// The response body.
        body: String,
    },
    /// Say nothing for this long, then close.
    Hang(Duration),
    /// Reply 200 with this body after a delay (injected latency).
    Delayed(Duration, String),
    /// Answer every request with a completion echoing the last user message.
    Echo(Duration),
    /// Answer an `/embeddings` request with one vector per input: hashed word counts, so texts
    /// sharing words are near.
    Embed,
    /// Reply 200 with the body this function computes from the request body: a model that
    /// plays something the test knows (a task's reference solution, turn by turn).
    Respond(Responder),
    /// Wait at the [`Gate`], then play the behavior.
    Gated(Arc<Gate>, Box<Behavior>),
    /// A provider enforcing token and request budgets: admitted requests are answered after
    /// its latency, the others at once with 429 and `Retry-After`.
    Limited(Arc<LimitedProvider>),
}

/// The function of [`Behavior::Respond`]: request body in, response body out.
#[derive(Clone)]
pub struct Responder(pub Arc<dyn Fn(&str) -> String + Send + Sync>);

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Responder(..)")
    }
}

impl Behavior {
    /// 200 with `body`.
    pub fn ok(body: impl Into<String>) -> Self {
        Behavior::Reply {
            status: 200,
            headers: vec![],
            body: body.into(),
        }
    }

    /// 200 with whatever `reply` makes of the request body.
    pub fn respond(reply: impl Fn(&str) -> String + Send + Sync + 'static) -> Self {
        Behavior::Respond(Responder(Arc::new(reply)))
    }

    /// `status` with a small JSON error body.
    pub fn status(status: u16) -> Self {
        Behavior::Reply {
            status,
            headers: vec![],
            body: format!("{{\"error\":\"status {status}\"}}"),
        }
    }
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    /// Request path.
    pub path: String,
    /// Headers, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// Body text.
    pub body: String,
    /// When the request was read, so benchmarks can measure sustained throughput.
    pub at: std::time::Instant,
}

/// The server; stops accepting when dropped.
pub struct ScriptedServer {
    /// Base URL including `/v1`.
    pub url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    script: Arc<Mutex<VecDeque<Behavior>>>,
    stop: Arc<AtomicBool>,
    addr: std::net::SocketAddr,
}

impl ScriptedServer {
    /// Starts a server answering from `script` in order, then with `fallback`. Panics if
    /// loopback cannot be bound (tests only; see [`Self::try_start`]).
    pub fn start(script: Vec<Behavior>, fallback: Behavior) -> Self {
        match Self::try_start(script, fallback) {
            Ok(server) => server,
            Err(e) => panic!("cannot bind 127.0.0.1: {e}"),
        }
    }

    /// Fails only if the loopback interface cannot be bound.
    pub fn try_start(script: Vec<Behavior>, fallback: Behavior) -> std::io::Result<Self> {
        let listener = listen_loopback()?;
        let addr = listener.local_addr()?;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(VecDeque::from(script)));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen2, script2, stop2) = (seen.clone(), script.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (seen, script, fallback) = (seen2.clone(), script2.clone(), fallback.clone());
                std::thread::spawn(move || serve(stream, &seen, &script, &fallback));
            }
        });
        Ok(Self {
            url: format!("http://{addr}/v1"),
            seen,
            script,
            stop,
            addr,
        })
    }

    /// Requests received so far.
    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Queues one more scripted behavior.
    pub fn push(&self, b: Behavior) {
        if let Ok(mut script) = self.script.lock() {
            script.push_back(b);
        }
    }
}

/// Connections the kernel queues for the accept loop. `TcpListener::bind` queues 128: a client
/// opening 256 connections at once (a pool of 256 requests) overflowed that while the accept
/// thread was busy starting connection threads, and the kernel dropped the extra SYNs, which the
/// client sends again only after TCP's 1 s timeout — a benchmark artefact no provider shows.
const BACKLOG: i32 = 4096;

/// A listener on an ephemeral loopback port with a [`BACKLOG`]-deep accept queue.
fn listen_loopback() -> std::io::Result<TcpListener> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], 0).into();
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    Ok(socket.into())
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

/// Serves requests on one connection until the client closes it (keep-alive, as real model
/// servers do), so a benchmark measures the client rather than connection setup.
fn serve(
    stream: TcpStream,
    seen: &Mutex<Vec<Seen>>,
    script: &Mutex<VecDeque<Behavior>>,
    fallback: &Behavior,
) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut stream = stream;
    while let Some(request) = read_request(&mut reader) {
        let body = request.body.clone();
        if let Ok(mut seen) = seen.lock() {
            seen.push(request);
        }
        let behavior = script
            .lock()
            .ok()
            .and_then(|mut s| s.pop_front())
            .unwrap_or_else(|| fallback.clone());
        if !answer(&mut stream, behavior, &body) {
            return;
        }
    }
}

/// Reads one HTTP request; `None` when the connection closed.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Seen> {
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return None;
    }
    let path = line
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.trim_end().split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Seen {
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        at: std::time::Instant::now(),
    })
}

/// Plays one behavior; false when the connection must close (a hang).
fn answer(stream: &mut TcpStream, behavior: Behavior, request_body: &str) -> bool {
    match behavior {
        Behavior::Hang(d) => {
            std::thread::sleep(d);
            return false;
        }
        Behavior::Delayed(d, body) => {
            std::thread::sleep(d);
            respond(stream, 200, &[], &body);
        }
        Behavior::Reply {
            status,
            headers,
            body,
        } => respond(stream, status, &headers, &body),
        Behavior::Embed => respond(stream, 200, &[], &embeddings(request_body)),
        Behavior::Respond(reply) => respond(stream, 200, &[], &(reply.0)(request_body)),
        Behavior::Limited(provider) => {
            let a = provider.answer(request_body);
            std::thread::sleep(a.delay);
            respond(stream, a.status, &a.headers, &a.body);
        }
        Behavior::Gated(gate, then) => {
            gate.pass();
            return answer(stream, *then, request_body);
        }
        Behavior::Echo(d) => {
            std::thread::sleep(d);
            respond(
                stream,
                200,
                &[],
                &completion(&format!("echo: {}", last_user_message(request_body)), 10, 5),
            );
        }
    }
    true
}

/// An embeddings response for a request body: 16 buckets of hashed, lower-cased words, and a
/// `usage.prompt_tokens` of one token per whitespace-separated word.
fn embeddings(body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    let inputs: Vec<String> = match &v["input"] {
        serde_json::Value::String(s) => vec![s.clone()],
        serde_json::Value::Array(a) => a
            .iter()
            .map(|x| x.as_str().unwrap_or_default().to_string())
            .collect(),
        _ => Vec::new(),
    };
    let data: Vec<serde_json::Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let mut vector = [0f64; 16];
            for word in text
                .to_lowercase()
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| w.len() > 2)
            {
                let h = word
                    .bytes()
                    .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
                vector[(h % 16) as usize] += 1.0;
            }
            serde_json::json!({ "object": "embedding", "index": i, "embedding": vector })
        })
        .collect();
    let tokens: usize = inputs.iter().map(|t| t.split_whitespace().count()).sum();
    serde_json::json!({
        "object": "list", "data": data,
        "usage": { "prompt_tokens": tokens, "total_tokens": tokens },
    })
    .to_string()
}

fn last_user_message(body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    v["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn respond(stream: &mut TcpStream, status: u16, headers: &[(String, String)], body: &str) {
    let mut out = format!("HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: keep-alive\r\n", body.len());
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(body);
    let _ = stream.write_all(out.as_bytes());
    let _ = stream.flush();
}

/// A chat-completions response with `content` and usage.
pub fn completion(content: &str, prompt: u64, completion: u64) -> String {
    serde_json::json!({
        "id": "x", "object": "chat.completion",
        "choices": [{ "index": 0, "finish_reason": "stop", "message": { "role": "assistant", "content": content } }],
        "usage": { "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion }
    })
    .to_string()
}

/// A chat-completions response whose message makes tool calls: `calls` are (function name,
/// arguments as JSON text), given ids `call_1`, `call_2`, … in order; `content` may ride along.
pub fn tool_call_completion(
    content: Option<&str>,
    calls: &[(&str, &str)],
    prompt: u64,
    completion: u64,
) -> String {
    let calls: Vec<serde_json::Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| {
            serde_json::json!({
                "id": format!("call_{}", i + 1), "type": "function",
                "function": { "name": name, "arguments": args }
            })
        })
        .collect();
    serde_json::json!({
        "id": "x", "object": "chat.completion",
        "choices": [{ "index": 0, "finish_reason": "tool_calls",
                      "message": { "role": "assistant", "content": content, "tool_calls": calls } }],
        "usage": { "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion }
    })
    .to_string()
}

/// A latch for tests of concurrency: every request it answers waits until `n` requests are
/// waiting together (or [`Gate::open`] is called, or `patience` runs out), then all are
/// released. Whether `n` were ever in flight at once is then a fact the test can assert, with
/// no timing in the assertion: an implementation that cannot keep `n` requests in flight never
/// reaches the count, and the patience only keeps such a test from hanging.
pub struct Gate {
    n: usize,
    patience: Duration,
    state: Mutex<GateState>,
    changed: std::sync::Condvar,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Gate(opens at {} waiting)", self.n)
    }
}

#[derive(Default)]
struct GateState {
    waiting: usize,
    most: usize,
    open: bool,
    reached: bool,
}

impl Gate {
    /// A closed gate that opens when `n` requests wait together.
    pub fn new(n: usize, patience: Duration) -> Arc<Self> {
        Arc::new(Self {
            n,
            patience,
            state: Mutex::new(GateState::default()),
            changed: std::sync::Condvar::new(),
        })
    }

    /// The server behavior: wait at the gate, then answer 200 with `body`.
    pub fn behavior(self: &Arc<Self>, body: String) -> Behavior {
        self.hold(Behavior::ok(body))
    }

    /// The server behavior: wait at the gate, then play `then`.
    pub fn hold(self: &Arc<Self>, then: Behavior) -> Behavior {
        Behavior::Gated(self.clone(), Box::new(then))
    }

    /// Opens the gate: every waiting and later request passes.
    pub fn open(&self) {
        self.lock().open = true;
        self.changed.notify_all();
    }

    /// Whether `n` requests were ever waiting at once.
    pub fn reached(&self) -> bool {
        self.lock().reached
    }

    /// The most requests that waited at once.
    pub fn most_waiting(&self) -> usize {
        self.lock().most
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn pass(&self) {
        let mut s = self.lock();
        s.waiting += 1;
        s.most = s.most.max(s.waiting);
        if s.waiting >= self.n {
            s.reached = true;
            s.open = true;
            self.changed.notify_all();
        }
        let (mut s, _) = self
            .changed
            .wait_timeout_while(s, self.patience, |s| !s.open)
            .unwrap_or_else(|p| p.into_inner());
        s.waiting -= 1;
    }
}
