//! The OpenAI-compatible client against a real HTTP server on 127.0.0.1: retries, error kinds,
//! record/replay and offline mode.

use std::future::Future;
use std::task::Poll;
use std::time::{Duration, Instant};

use prefflow_engine::store::{FsStore, Store};
use prefflow_engine::usage::UsageMeter;
use prefflow_stages::episodes::runner::join_all;
use prefflow_stages::llm::{ChatMessage, ChatRequest, LlmClient, LlmConfig, LlmError};

use prefflow_stages::llm::mock::{completion, Behavior, Gate, ScriptedServer};

use crate::common::{block_on, ChatNow};

fn config(url: &str) -> LlmConfig {
    LlmConfig {
        base_url: url.to_string(),
        base_url_env: None,
        model: "tiny".into(),
        api_key_env: None,
        temperature: Some(0.0),
        seed: Some(1),
        max_tokens: Some(64),
        timeout_s: 5.0,
        max_retries: 3,
        backoff_ms: 1,
        prices: None,
        concurrency: 4,
        rpm: None,
        tpm: None,
        tpd: None,
        budget: None,
        rate_limit_wait_s: 1800.0,
        max_context: None,
    }
}

fn request(text: &str) -> ChatRequest {
    ChatRequest {
        messages: vec![
            ChatMessage::new("system", "be brief"),
            ChatMessage::new("user", text),
        ],
        ..ChatRequest::default()
    }
}

#[test]
fn replies_are_recorded_and_replayed_offline() {
    let dir = tempfile::tempdir().expect("dir");
    let store = FsStore::new(dir.path());
    let server = ScriptedServer::start(
        vec![Behavior::ok(completion("hello", 12, 3))],
        Behavior::status(500),
    );
    let client = LlmClient::new(config(&server.url), &store, false).expect("client");
    let first = client.chat_now(&request("hi"), 0).expect("live call");
    assert_eq!(first.content.as_deref(), Some("hello"));
    assert_eq!(
        (first.usage.prompt_tokens, first.usage.completion_tokens),
        (12, 3)
    );
    assert!(!first.from_cache);
    let sent: serde_json::Value =
        serde_json::from_str(&server.requests()[0].body).expect("json body");
    assert_eq!(sent["model"], "tiny");
    assert_eq!(sent["temperature"], 0.0);
    assert_eq!(sent["messages"][1]["content"], "hi");
    assert_eq!(server.requests()[0].path, "/v1/chat/completions");

    let again = client.chat_now(&request("hi"), 0).expect("replay");
    assert!(again.from_cache);
    assert_eq!(again.content, first.content);
    assert_eq!(server.requests().len(), 1, "a replay sends nothing");

    drop(server);
    let moved = LlmClient::new(config("http://127.0.0.1:9/v1"), &store, true)
        .expect("client")
        .chat_now(&request("hi"), 0);
    assert!(
        matches!(moved, Err(LlmError::OfflineMiss { .. })),
        "the endpoint is part of the key"
    );
}

#[test]
fn offline_replay_uses_the_recorded_endpoint() {
    let dir = tempfile::tempdir().expect("dir");
    let store = FsStore::new(dir.path());
    let server = ScriptedServer::start(vec![], Behavior::ok(completion("recorded", 1, 1)));
    let url = server.url.clone();
    LlmClient::new(config(&url), &store, false)
        .expect("client")
        .chat_now(&request("q"), 0)
        .expect("record");
    drop(server);
    let replay = LlmClient::new(config(&url), &store, true)
        .expect("client")
        .chat_now(&request("q"), 0)
        .expect("offline replay");
    assert_eq!(replay.content.as_deref(), Some("recorded"));
    let epoch = LlmClient::new(config(&url), &store, true)
        .expect("client")
        .chat_now(&request("q"), 1);
    assert!(
        matches!(epoch, Err(LlmError::OfflineMiss { .. })),
        "epochs are recorded separately"
    );
    let miss = LlmClient::new(config(&url), &store, true)
        .expect("client")
        .chat_now(&request("other"), 0);
    match miss {
        Err(e @ LlmError::OfflineMiss { .. }) => {
            assert!(e.to_string().contains("without --offline"))
        }
        other => panic!("expected an offline miss, got {other:?}"),
    }
}

#[test]
fn rate_limits_honour_retry_after_and_server_errors_are_retried() {
    let dir = tempfile::tempdir().expect("dir");
    let store = FsStore::new(dir.path());
    let limited = Behavior::Reply {
        status: 429,
        headers: vec![("Retry-After".into(), "1".into())],
        body: "{}".into(),
    };
    let server = ScriptedServer::start(
        vec![
            limited,
            Behavior::status(500),
            Behavior::status(502),
            Behavior::ok(completion("finally", 1, 1)),
        ],
        Behavior::status(500),
    );
    let started = Instant::now();
    let reply = LlmClient::new(config(&server.url), &store, false)
        .expect("client")
        .chat_now(&request("x"), 0)
        .expect("retried");
    assert_eq!(reply.content.as_deref(), Some("finally"));
    assert_eq!(reply.attempts, 4);
    assert_eq!(server.requests().len(), 4);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After: 1 was honoured (backoff alone is 1 ms)"
    );
}

#[test]
fn timeouts_are_retried_and_exhaustion_is_a_typed_error() {
    let dir = tempfile::tempdir().expect("dir");
    let store = FsStore::new(dir.path());
    let server = ScriptedServer::start(
        vec![Behavior::Hang(Duration::from_secs(3))],
        Behavior::ok(completion("ok", 1, 1)),
    );
    let mut cfg = config(&server.url);
    cfg.timeout_s = 0.3;
    let reply = LlmClient::new(cfg, &store, false)
        .expect("client")
        .chat_now(&request("x"), 0)
        .expect("after a timeout");
    assert_eq!(reply.attempts, 2);

    let down = ScriptedServer::start(vec![], Behavior::status(503));
    let mut cfg = config(&down.url);
    cfg.max_retries = 2;
    match LlmClient::new(cfg, &store, false)
        .expect("client")
        .chat_now(&request("y"), 0)
    {
        Err(LlmError::Exhausted { attempts, last, .. }) => {
            assert_eq!(attempts, 3);
            assert!(last.contains("503"), "{last}");
        }
        other => panic!("expected exhaustion, got {other:?}"),
    }
    assert_eq!(down.requests().len(), 3);
    assert!(
        store.list("llm").expect("list").len() == 1,
        "failures are not recorded"
    );
}

#[test]
fn unusable_bodies_are_retried_and_client_errors_are_not() {
    let dir = tempfile::tempdir().expect("dir");
    let store = FsStore::new(dir.path());
    let server = ScriptedServer::start(
        vec![
            Behavior::ok(r#"{"choices": [{"message": {"content": "cut"#),
            Behavior::ok(r#"{"choices": []}"#),
            Behavior::ok(r#"{"choices": [{"index": 0, "finish_reason": "stop"}]}"#),
            Behavior::ok(completion("whole", 1, 1)),
            Behavior::ok("not json at all"),
        ],
        Behavior::status(400),
    );
    let reply = LlmClient::new(config(&server.url), &store, false)
        .expect("client")
        .chat_now(&request("x"), 0)
        .expect("retried past three unusable bodies");
    assert_eq!(reply.content.as_deref(), Some("whole"));
    assert_eq!(reply.attempts, 4);
    assert_eq!(server.requests().len(), 4);
    let mut cfg = config(&server.url);
    cfg.max_retries = 0;
    match LlmClient::new(cfg, &store, false)
        .expect("client")
        .chat_now(&request("y"), 0)
    {
        Err(LlmError::Exhausted {
            attempts: 1, last, ..
        }) => {
            assert!(last.contains("malformed"), "{last}")
        }
        other => panic!("expected exhaustion on an unusable body, got {other:?}"),
    }
    match LlmClient::new(config(&server.url), &store, false)
        .expect("client")
        .chat_now(&request("z"), 0)
    {
        Err(LlmError::Http { status: 400, .. }) => {}
        other => panic!("expected HTTP 400, got {other:?}"),
    }
    assert_eq!(server.requests().len(), 6, "a 400 is not retried");
    assert_eq!(
        store.list("llm").expect("list").len(),
        1,
        "only the good reply is recorded"
    );
}

#[test]
fn the_api_key_comes_from_the_environment_and_is_never_recorded() {
    let dir = tempfile::tempdir().expect("dir");
    let store = FsStore::new(dir.path());
    let server = ScriptedServer::start(vec![], Behavior::ok(completion("ok", 1, 1)));
    let mut cfg = config(&server.url);
    cfg.api_key_env = Some("PREFFLOW_TEST_KEY_UNSET".into());
    match LlmClient::new(cfg.clone(), &store, false)
        .expect("client")
        .chat_now(&request("x"), 0)
    {
        Err(e @ LlmError::MissingKey { .. }) => {
            assert!(e.to_string().contains("PREFFLOW_TEST_KEY_UNSET"))
        }
        other => panic!("expected a missing key error, got {other:?}"),
    }
    std::env::set_var("PREFFLOW_TEST_KEY_SET", "sk-secret-123");
    cfg.api_key_env = Some("PREFFLOW_TEST_KEY_SET".into());
    LlmClient::new(cfg, &store, false)
        .expect("client")
        .chat_now(&request("x"), 0)
        .expect("call");
    let seen = server.requests();
    let auth = seen[0]
        .headers
        .iter()
        .find(|(k, _)| k == "authorization")
        .map(|(_, v)| v.clone());
    assert_eq!(auth.as_deref(), Some("Bearer sk-secret-123"));
    for key in store.list("").expect("list") {
        let bytes = store.get(&key).expect("get").unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("sk-secret-123"),
            "{key} leaks the key"
        );
    }
}

/// `n` identical requests from different clients, polled together once (so each has checked
/// the record and joined the flight) before the gated server may answer, then awaited.
fn identical_in_flight(
    clients: &[LlmClient<'_>],
    gate: &Gate,
) -> Vec<Result<prefflow_stages::llm::Reply, LlmError>> {
    let question = request("the same question");
    block_on(async {
        let calls = clients.iter().map(|c| c.chat(&question, 0)).collect();
        let mut all = std::pin::pin!(join_all(calls, clients.len()));
        let first = std::future::poll_fn(|cx| Poll::Ready(all.as_mut().poll(cx))).await;
        assert!(first.is_pending(), "the server holds every request");
        gate.open();
        all.await
    })
}

#[test]
fn identical_requests_in_flight_send_one_request_and_share_its_answer() {
    let gate = Gate::new(usize::MAX, Duration::from_secs(60));
    let server = ScriptedServer::start(vec![], gate.behavior(completion("shared", 5, 2)));
    let dir = tempfile::tempdir().expect("dir");
    let store = FsStore::new(dir.path());
    let meter = UsageMeter::new();
    let clients: Vec<LlmClient<'_>> = (0..8)
        .map(|_| {
            LlmClient::new(config(&server.url), &store, false)
                .expect("client")
                .metered(Some(&meter), "judge")
        })
        .collect();
    let replies: Vec<_> = identical_in_flight(&clients, &gate)
        .into_iter()
        .map(|r| r.expect("answered"))
        .collect();

    assert_eq!(server.requests().len(), 1, "one request upstream");
    assert!(replies
        .iter()
        .all(|r| r.content.as_deref() == Some("shared")));
    let sent: Vec<bool> = replies.iter().map(|r| !r.from_cache).collect();
    assert_eq!(sent.iter().filter(|s| **s).count(), 1, "{sent:?}");
    let counted = meter.snapshot().0["judge"]["tiny"];
    assert_eq!((counted.requests, counted.replayed), (1, 7));
    assert_eq!(counted.prompt_tokens, 5, "the shared answer is paid once");
    // Nothing stays in flight: the next identical call is a replay of the record.
    let again = clients[3]
        .chat_now(&request("the same question"), 0)
        .expect("replay");
    assert!(again.from_cache);
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_failed_request_in_flight_is_not_shared_and_not_recorded() {
    let gate = Gate::new(usize::MAX, Duration::from_secs(60));
    let server = ScriptedServer::start(
        vec![gate.hold(Behavior::status(400))],
        gate.behavior(completion("second try", 5, 2)),
    );
    let dir = tempfile::tempdir().expect("dir");
    let store = FsStore::new(dir.path());
    let clients: Vec<LlmClient<'_>> = (0..4)
        .map(|_| LlmClient::new(config(&server.url), &store, false).expect("client"))
        .collect();
    let results = identical_in_flight(&clients, &gate);

    assert!(
        matches!(results[0], Err(LlmError::Http { status: 400, .. })),
        "the request that failed: {:?}",
        results[0]
    );
    for r in &results[1..] {
        let reply = r.as_ref().expect("the waiting callers sent again");
        assert_eq!(reply.content.as_deref(), Some("second try"));
    }
    assert_eq!(
        server.requests().len(),
        2,
        "the failure, then one request for the three that waited"
    );
    let again = clients[0]
        .chat_now(&request("the same question"), 0)
        .expect("replay");
    assert_eq!(again.content.as_deref(), Some("second try"));
    assert!(
        again.from_cache,
        "the answer was recorded, the failure never was"
    );
}

/// A provider that reports prompt-cache hits (OpenAI's `prompt_tokens_details.cached_tokens`,
/// DeepSeek's `prompt_cache_hit_tokens`): the hits are recorded with the reply, priced at
/// `cached_prompt_per_mtok`, counted in the usage meter, and replayed with it.
#[test]
fn cached_prompt_tokens_are_recorded_and_priced_apart() {
    let dir = tempfile::tempdir().expect("dir");
    let store = FsStore::new(dir.path());
    let body = |usage: serde_json::Value| {
        serde_json::json!({
            "choices": [{ "index": 0, "finish_reason": "stop", "message": { "role": "assistant", "content": "ok" } }],
            "usage": usage,
        })
        .to_string()
    };
    let server = ScriptedServer::start(
        vec![
            Behavior::ok(body(serde_json::json!({
                "prompt_tokens": 1000, "completion_tokens": 10,
                "prompt_tokens_details": { "cached_tokens": 800 },
            }))),
            Behavior::ok(body(serde_json::json!({
                "prompt_tokens": 500, "completion_tokens": 10, "prompt_cache_hit_tokens": 400,
            }))),
        ],
        Behavior::status(500),
    );
    let mut cfg = config(&server.url);
    cfg.prices = serde_json::from_value(serde_json::json!({
        "prompt_per_mtok": 1.0, "completion_per_mtok": 2.0, "cached_prompt_per_mtok": 0.1,
    }))
    .expect("prices");
    let meter = UsageMeter::new();
    let client = LlmClient::new(cfg.clone(), &store, false)
        .expect("client")
        .metered(Some(&meter), "agent");
    let first = client.chat_now(&request("a"), 0).expect("first");
    assert_eq!(first.usage.cached_prompt_tokens, 800);
    let cost = first.usage.cost(cfg.prices);
    assert!(
        (cost - (200.0 * 1.0 + 800.0 * 0.1 + 10.0 * 2.0) / 1e6).abs() < 1e-15,
        "{cost}"
    );
    let second = client.chat_now(&request("b"), 0).expect("second");
    assert_eq!(second.usage.cached_prompt_tokens, 400);
    let counts = meter.snapshot().total();
    assert_eq!(
        (counts.prompt_tokens, counts.cached_prompt_tokens),
        (1500, 1200)
    );
    // Replayed from the record, offline: the same usage.
    let offline = LlmClient::new(cfg, &store, true).expect("client");
    let again = offline.chat_now(&request("a"), 0).expect("replayed");
    assert!(again.from_cache);
    assert_eq!(again.usage, first.usage);
}

/// A server that says the prompt is too long (HTTP 400 about the context length) gets an
/// error saying how long the request was and which settings shrink it; a model entry's
/// `max_context` refuses such a request before it is sent.
#[test]
fn a_prompt_over_the_context_is_named_with_its_size_and_the_fix() {
    let dir = tempfile::tempdir().expect("dir");
    let store = FsStore::new(dir.path());
    let server = ScriptedServer::start(
        vec![],
        Behavior::Reply {
            status: 400,
            headers: vec![],
            body: r#"{"error": {"message": "This model's maximum context length is 4096 tokens. However, you requested 9000 tokens.", "code": "context_length_exceeded"}}"#.into(),
        },
    );
    let long = request(&"word ".repeat(4000));
    let err = LlmClient::new(config(&server.url), &store, false)
        .expect("client")
        .chat_now(&long, 0)
        .expect_err("too long");
    let LlmError::ContextLength { prompt_tokens, .. } = &err else {
        panic!("expected a context-length error, got {err:?}");
    };
    assert_eq!(
        *prompt_tokens,
        prefflow_stages::llm::tokens::prompt_tokens(&long)
    );
    let text = err.to_string();
    for needle in [
        "maximum context length is 4096",
        "history: top_k:N",
        "max_tools: N",
        "max_tokens",
        "max_context",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    assert_eq!(server.requests().len(), 1, "not retried");
    assert!(matches!(
        prefflow_engine::StageError::from(err),
        prefflow_engine::StageError::Input(_)
    ));

    let mut cfg = config(&server.url);
    cfg.max_context = Some(2000);
    let err = LlmClient::new(cfg, &store, false)
        .expect("client")
        .chat_now(&long, 0)
        .expect_err("refused");
    assert!(err.to_string().contains("(max_context 2000)"), "{err}");
    assert_eq!(server.requests().len(), 1, "refused before sending");
}
