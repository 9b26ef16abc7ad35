//! A scripted HTTP/1.1 server on 127.0.0.1 for testing clients against real sockets.

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
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Say nothing for this long, then close.
    Hang(Duration),
    /// Reply after a delay (for throughput tests).
    #[allow(dead_code)]
    Delayed(Duration, String),
}

impl Behavior {
    pub fn ok(body: impl Into<String>) -> Self {
        Behavior::Reply {
            status: 200,
            headers: vec![],
            body: body.into(),
        }
    }

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
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

/// The server; stops accepting when dropped.
pub struct ScriptedServer {
    pub url: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    script: Arc<Mutex<VecDeque<Behavior>>>,
    stop: Arc<AtomicBool>,
    addr: std::net::SocketAddr,
}

impl ScriptedServer {
    /// Starts a server answering from `script` in order, then with `fallback`.
    pub fn start(script: Vec<Behavior>, fallback: Behavior) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("addr");
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
        Self {
            url: format!("http://{addr}/v1"),
            seen,
            script,
            stop,
            addr,
        }
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().expect("lock").clone()
    }

    #[allow(dead_code)]
    pub fn push(&self, b: Behavior) {
        self.script.lock().expect("lock").push_back(b);
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(
    stream: TcpStream,
    seen: &Mutex<Vec<Seen>>,
    script: &Mutex<VecDeque<Behavior>>,
    fallback: &Behavior,
) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
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
    let _ = reader.read_exact(&mut body);
    seen.lock().expect("lock").push(Seen {
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    let behavior = script
        .lock()
        .expect("lock")
        .pop_front()
        .unwrap_or_else(|| fallback.clone());
    let mut stream = stream;
    match behavior {
        Behavior::Hang(d) => std::thread::sleep(d),
        Behavior::Delayed(d, body) => {
            std::thread::sleep(d);
            respond(&mut stream, 200, &[], &body);
        }
        Behavior::Reply {
            status,
            headers,
            body,
        } => respond(&mut stream, status, &headers, &body),
    }
}

fn respond(stream: &mut TcpStream, status: u16, headers: &[(String, String)], body: &str) {
    let mut out = format!("HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
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
