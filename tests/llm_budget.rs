//! The model client's budget against real HTTP servers on 127.0.0.1: token reservations and
//! their correction, waiting for budget without a window slot, AIMD on 429s, limits learned from
//! headers, fair sharing between two variants and between episodes under way and new ones, and
//! 429s waited out instead of failing. No assertion is about time: each checks what the server
//! saw or what the budget holds.

use std::time::Duration;

use prefflow_engine::store::FsStore;
use prefflow_stages::episodes::runner::join_all;
use prefflow_stages::llm::mock::{completion, Behavior, Gate, ScriptedServer};
use prefflow_stages::llm::{tokens, ChatMessage, ChatRequest, LlmClient, LlmConfig, LlmError};

use crate::common::{block_on, ChatNow};

fn config(url: &str) -> LlmConfig {
    let mut cfg: LlmConfig = serde_json::from_value(serde_json::json!({
        "base_url": url, "model": "budgeted", "max_retries": 0, "backoff_ms": 1,
        "timeout_s": 30.0, "concurrency": 1,
    }))
    .expect("config");
    cfg.temperature = Some(0.0);
    cfg
}

fn request(text: &str) -> ChatRequest {
    ChatRequest {
        messages: vec![ChatMessage::new("user", text)],
        ..ChatRequest::default()
    }
}

/// A request continuing a conversation (it holds an assistant turn).
fn continuing(text: &str) -> ChatRequest {
    ChatRequest {
        messages: vec![
            ChatMessage::new("user", "start"),
            ChatMessage::new("assistant", "a question"),
            ChatMessage::new("user", text),
        ],
        ..ChatRequest::default()
    }
}

fn too_many(retry_after: &str) -> Behavior {
    Behavior::Reply {
        status: 429,
        headers: vec![("Retry-After".into(), retry_after.into())],
        body: r#"{"error":"rate limited"}"#.into(),
    }
}

/// Polls `ready` every 5 ms until it holds; panics after 30 s (a hang, not a timing check).
async fn until(what: &str, ready: impl Fn() -> bool) {
    for _ in 0..6000 {
        if ready() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("never happened: {what}");
}

/// Sends every request of `asks` through `client` at once, once `ready` holds.
async fn send_when(
    what: &str,
    ready: impl Fn() -> bool,
    client: &LlmClient<'_>,
    asks: &[ChatRequest],
) -> Vec<Result<prefflow_stages::llm::Reply, LlmError>> {
    until(what, ready).await;
    join_all(asks.iter().map(|r| client.chat(r, 0)).collect(), usize::MAX).await
}

/// The user message each request the server saw ends with, in the order it read them.
fn served(server: &ScriptedServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .map(|r| {
            let v: serde_json::Value = serde_json::from_str(&r.body).expect("json");
            let messages = v["messages"].as_array().cloned().unwrap_or_default();
            messages.last().map_or(String::new(), |m| {
                m["content"].as_str().unwrap_or_default().to_string()
            })
        })
        .collect()
}

#[test]
fn a_reservation_is_the_estimate_and_the_answer_corrects_it() {
    let dir = tempfile::tempdir().expect("dir");
    let store = FsStore::new(dir.path());
    let server = ScriptedServer::start(vec![], Behavior::ok(completion("ok", 2000, 500)));
    let mut cfg = config(&server.url);
    cfg.tpm = Some(600_000);
    let client = LlmClient::new(cfg, &store, false).expect("client");
    let ask = request(&"word ".repeat(800));
    let estimate = tokens::prompt_tokens(&ask);
    assert_eq!(estimate, tokens::PER_REQUEST + tokens::PER_MESSAGE + 1000);
    let budget = client.endpoint().budget().clone();
    let margin = prefflow_stages::llm::budget::UNCALIBRATED_MARGIN;
    assert_eq!(budget.reservation(estimate), estimate as f64 * margin);

    client.chat_now(&ask, 0).expect("answered");
    // The answer reported 2,000 prompt and 500 completion tokens: the reservation is corrected
    // to them, and the next reservation of the same estimate is what this endpoint reports.
    assert_eq!(budget.tokens_reported(), 2500);
    let ratio = budget.token_ratio().expect("learned");
    assert!((ratio - 2000.0 / estimate as f64).abs() < 1e-9, "{ratio}");
    assert!((budget.reservation(estimate) - 2500.0).abs() < 1e-6);
    assert_eq!(budget.tpm(), Some(600_000));
}

#[test]
fn a_request_waiting_for_budget_holds_no_slot() {
    let dir = tempfile::tempdir().expect("dir");
    let store = FsStore::new(dir.path());
    let gate = Gate::new(usize::MAX, Duration::from_secs(60));
    let first = request(&"a".repeat(2400));
    let second = request(&"b".repeat(800));
    let server = ScriptedServer::start(
        vec![gate.behavior(completion("first", tokens::prompt_tokens(&first), 0))],
        Behavior::ok(completion("second", tokens::prompt_tokens(&second), 0)),
    );
    let mut cfg = config(&server.url);
    cfg.concurrency = 2;
    // 6,000 tokens a minute: the bucket holds 600, so the first request (~613) empties it
    // and the second (~213) must wait about two seconds for the refill.
    cfg.tpm = Some(6_000);
    let client = LlmClient::new(cfg, &store, false).expect("client");
    let budget = client.endpoint().budget().clone();
    let (a, b, ()) = block_on(async {
        tokio::join!(
            client.chat(&first, 0),
            async {
                until("the first request is on the wire", || {
                    budget.in_flight() == 1
                })
                .await;
                client.chat(&second, 0).await
            },
            async {
                // The first reaches the server (a slot is taken before the bytes arrive there).
                until("the server has the first", || server.requests().len() == 1).await;
                until("the second waits for budget", || budget.waiting() == 1).await;
                // Waiting for tokens, it holds no slot: one on the wire, a window of two.
                assert_eq!(budget.in_flight(), 1);
                assert_eq!(budget.window(), 2.0);
                assert_eq!(server.requests().len(), 1, "the second was not sent");
                gate.open();
            }
        )
    });
    assert_eq!(a.expect("first").content.as_deref(), Some("first"));
    assert_eq!(b.expect("second").content.as_deref(), Some("second"));
    assert_eq!(served(&server), vec!["a".repeat(2400), "b".repeat(800)]);
}

#[test]
fn aimd_halves_on_429_once_per_round_and_grows_on_answers() {
    let dir = tempfile::tempdir().expect("dir");
    let store = FsStore::new(dir.path());
    // One request at a time: each 429 comes from a request sent after the last decrease.
    let server = ScriptedServer::start(
        vec![too_many("0"), too_many("0")],
        Behavior::ok(completion("ok", 10, 1)),
    );
    let mut cfg = config(&server.url);
    cfg.concurrency = 8;
    let client = LlmClient::new(cfg, &store, false).expect("client");
    let budget = client.endpoint().budget().clone();
    let reply = client
        .chat_now(&request("one"), 0)
        .expect("429s are waited out");
    assert_eq!(
        reply.attempts, 3,
        "two 429s, then the answer (max_retries: 0)"
    );
    assert_eq!(budget.rate_limited(), 2);
    let mut expected: f64 = 8.0 / 2.0 / 2.0;
    expected += 1.0 / expected;
    assert!(
        (budget.window() - expected).abs() < 1e-9,
        "{}",
        budget.window()
    );
    for text in ["two", "three", "four"] {
        client.chat_now(&request(text), 0).expect("answered");
        expected += 1.0 / expected;
    }
    assert!(
        (budget.window() - expected).abs() < 1e-9,
        "{}",
        budget.window()
    );

    // Four requests on the wire answered 429 together halve the window once, not four times.
    let gate = Gate::new(4, Duration::from_secs(60));
    let together = ScriptedServer::start(
        (0..4).map(|_| gate.hold(too_many("0"))).collect(),
        Behavior::ok(completion("ok", 10, 1)),
    );
    let mut cfg = config(&together.url);
    cfg.concurrency = 8;
    let client = LlmClient::new(cfg, &store, false).expect("client");
    let budget = client.endpoint().budget().clone();
    let asks: Vec<ChatRequest> = (0..4).map(|i| request(&format!("q{i}"))).collect();
    let replies = block_on(join_all(
        asks.iter().map(|r| client.chat(r, 0)).collect(),
        4,
    ));
    assert!(gate.reached(), "the four were on the wire together");
    assert!(replies.iter().all(Result::is_ok), "{replies:?}");
    assert_eq!(budget.rate_limited(), 4);
    let mut expected: f64 = 4.0;
    for _ in 0..4 {
        expected += 1.0 / expected;
    }
    assert!(
        (budget.window() - expected).abs() < 1e-9,
        "{}",
        budget.window()
    );
}

#[test]
fn a_429_is_waited_out_not_counted_as_a_fault_within_its_deadline() {
    let dir = tempfile::tempdir().expect("dir");
    let store = FsStore::new(dir.path());
    let server = ScriptedServer::start(
        (0..5).map(|_| too_many("0")).collect(),
        Behavior::ok(completion("at last", 10, 1)),
    );
    let client = LlmClient::new(config(&server.url), &store, false).expect("client");
    let reply = client.chat_now(&request("patient"), 0).expect("answered");
    assert_eq!(reply.content.as_deref(), Some("at last"));
    assert_eq!(reply.attempts, 6, "five 429s with max_retries: 0");

    // With no patience for 429s the first one ends the request, saying which setting it was.
    let wall = ScriptedServer::start(vec![], too_many("0"));
    let mut cfg = config(&wall.url);
    cfg.rate_limit_wait_s = 0.0;
    match LlmClient::new(cfg, &store, false)
        .expect("client")
        .chat_now(&request("impatient"), 0)
    {
        Err(LlmError::Exhausted { last, attempts, .. }) => {
            assert!(last.contains("rate_limit_wait_s"), "{last}");
            assert_eq!(attempts, 1);
        }
        other => panic!("expected exhaustion, got {other:?}"),
    }
}

#[test]
fn a_request_larger_than_the_budget_is_refused_before_sending() {
    let dir = tempfile::tempdir().expect("dir");
    let store = FsStore::new(dir.path());
    let server = ScriptedServer::start(vec![], Behavior::ok(completion("ok", 1, 1)));
    let mut cfg = config(&server.url);
    cfg.tpm = Some(1_000);
    match LlmClient::new(cfg, &store, false)
        .expect("client")
        .chat_now(&request(&"x".repeat(8_000)), 0)
    {
        Err(e @ LlmError::Budget(_)) => {
            let text = e.to_string();
            assert!(
                text.contains("tpm 1000") && text.contains("top_k"),
                "{text}"
            );
        }
        other => panic!("expected a budget refusal, got {other:?}"),
    }
    assert!(server.requests().is_empty());
    // One that fits by its estimate is sent, though its first reservation (with the margin
    // for an uncalibrated estimate) is larger than the limit: the provider decides.
    let mut cfg = config(&server.url);
    cfg.tpm = Some(1_000);
    let fits = request(&"y".repeat(3_560));
    assert!(tokens::prompt_tokens(&fits) < 1_000);
    LlmClient::new(cfg, &store, false)
        .expect("client")
        .chat_now(&fits, 0)
        .expect("sent");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn headers_teach_the_budget_the_providers_limits() {
    let dir = tempfile::tempdir().expect("dir");
    let store = FsStore::new(dir.path());
    let openai = ScriptedServer::start(
        vec![],
        Behavior::Reply {
            status: 200,
            headers: vec![
                ("x-ratelimit-limit-requests".into(), "500".into()),
                ("x-ratelimit-limit-tokens".into(), "2000000".into()),
                ("x-ratelimit-remaining-requests".into(), "499".into()),
                ("x-ratelimit-remaining-tokens".into(), "1990000".into()),
                ("x-ratelimit-reset-tokens".into(), "300ms".into()),
            ],
            body: completion("ok", 10, 1),
        },
    );
    let client = LlmClient::new(config(&openai.url), &store, false).expect("client");
    let budget = client.endpoint().budget().clone();
    assert_eq!((budget.tpm(), budget.rpm()), (None, None));
    client.chat_now(&request("hi"), 0).expect("answered");
    assert_eq!(budget.tpm(), Some(2_000_000));
    assert_eq!(budget.rpm(), Some(500));
    let status = budget.status();
    assert!(
        status.contains("tpm 2M learned") && status.contains("rpm 500 learned"),
        "{status}"
    );

    let anthropic = ScriptedServer::start(
        vec![],
        Behavior::Reply {
            status: 200,
            headers: vec![
                (
                    "anthropic-ratelimit-input-tokens-limit".into(),
                    "40000".into(),
                ),
                ("anthropic-ratelimit-requests-limit".into(), "50".into()),
            ],
            body: completion("ok", 10, 1),
        },
    );
    let mut cfg = config(&anthropic.url);
    cfg.tpm = Some(80_000);
    let client = LlmClient::new(cfg, &store, false).expect("client");
    let budget = client.endpoint().budget().clone();
    client.chat_now(&request("hi"), 0).expect("answered");
    // A reported limit below the declared one wins.
    assert_eq!((budget.tpm(), budget.rpm()), (Some(40_000), Some(50)));
}

#[test]
fn two_variants_on_one_endpoint_share_it_fairly() {
    let dir = tempfile::tempdir().expect("dir");
    let store = FsStore::new(dir.path());
    let gate = Gate::new(usize::MAX, Duration::from_secs(60));
    let server = ScriptedServer::start(
        vec![gate.behavior(completion("held", 10, 1))],
        Behavior::ok(completion("ok", 10, 1)),
    );
    // Two sweep variants of one model: one endpoint, one window of one request.
    let a = LlmClient::new(config(&server.url), &store, false)
        .expect("client")
        .flow("episodes[variant=a]");
    let b = LlmClient::new(config(&server.url), &store, false)
        .expect("client")
        .flow("episodes[variant=b]");
    let budget = a.endpoint().budget().clone();
    let a_asks: Vec<ChatRequest> = (0..10).map(|i| request(&format!("a{i}"))).collect();
    let b_asks: Vec<ChatRequest> = (0..10).map(|i| request(&format!("b{i}"))).collect();
    block_on(async {
        let (first, rest_a, all_b, ()) = tokio::join!(
            a.chat(&a_asks[0], 0),
            send_when(
                "a0 is on the wire",
                || budget.in_flight() == 1,
                &a,
                &a_asks[1..]
            ),
            // Variant b comes only once a's nine others wait: in arrival order all of a
            // would go first.
            send_when(
                "a's others are queued",
                || budget.waiting() == 9,
                &b,
                &b_asks
            ),
            async {
                until("everything is queued", || budget.waiting() == 19).await;
                gate.open();
            }
        );
        assert!(first.is_ok());
        assert!(rest_a.iter().chain(&all_b).all(Result::is_ok));
    });
    let order = served(&server);
    assert_eq!(order.len(), 20);
    // After the held a0, the two variants alternate: b0, a1, b1, a2, … — each gets half.
    let next_ten = &order[1..11];
    let from_b = next_ten.iter().filter(|m| m.starts_with('b')).count();
    assert_eq!(from_b, 5, "{order:?}");
    assert!(
        order[1].starts_with('b'),
        "b had waited longest in virtual time: {order:?}"
    );
}

#[test]
fn simulator_calls_go_before_agent_turns() {
    let dir = tempfile::tempdir().expect("dir");
    let store = FsStore::new(dir.path());
    let gate = Gate::new(usize::MAX, Duration::from_secs(60));
    let server = ScriptedServer::start(
        vec![gate.behavior(completion("held", 10, 1))],
        Behavior::ok(completion("ok", 10, 1)),
    );
    let agent = LlmClient::new(config(&server.url), &store, false)
        .expect("client")
        .metered(None, "agent");
    let user = LlmClient::new(config(&server.url), &store, false)
        .expect("client")
        .metered(None, "user");
    let budget = agent.endpoint().budget().clone();
    let turns: Vec<ChatRequest> = (0..5).map(|i| request(&format!("turn{i}"))).collect();
    let later: Vec<ChatRequest> = (0..3).map(|i| continuing(&format!("later{i}"))).collect();
    let replies: Vec<ChatRequest> = (0..2).map(|i| request(&format!("user{i}"))).collect();
    block_on(async {
        let (first, news, laters, users, ()) = tokio::join!(
            agent.chat(&turns[0], 0),
            send_when(
                "the first is on the wire",
                || budget.in_flight() == 1,
                &agent,
                &turns[1..]
            ),
            send_when("agent turns wait", || budget.waiting() == 4, &agent, &later),
            send_when(
                "later turns wait",
                || budget.waiting() == 7,
                &user,
                &replies
            ),
            async {
                until("everything is queued", || budget.waiting() == 9).await;
                gate.open();
            }
        );
        assert!(first.is_ok());
        assert!(news.iter().chain(&laters).chain(&users).all(Result::is_ok));
    });
    let order = served(&server);
    assert_eq!(order.len(), 10, "{order:?}");
    // The simulator's two replies, queued last, go before the seven agent turns waiting;
    // those keep their arrival order (the four first, then the three later ones).
    assert!(
        order[1..3].iter().all(|m| m.starts_with("user")),
        "{order:?}"
    );
    assert!(
        order[3..7].iter().all(|m| m.starts_with("turn")),
        "{order:?}"
    );
    assert!(
        order[7..].iter().all(|m| m.starts_with("later")),
        "{order:?}"
    );
}

#[test]
fn a_run_shows_what_the_budget_learned_while_it_goes_and_in_its_summary() {
    let server = ScriptedServer::start(vec![], Behavior::Echo(Duration::from_millis(200)));
    let ws = crate::common::Workspace::new();
    let rows: String = std::iter::once("id\n".to_string())
        .chain((0..5).map(|i| format!("{i}\n")))
        .collect();
    ws.write("data/rows.csv", &rows);
    ws.write(
        "b.yaml",
        &format!(
            "pipeline: b\nstages:\n  rows: {{ kind: read_table, params: {{ path: data/rows.csv }} }}\n  calls:\n    kind: llm_complete\n    inputs: [rows]\n    per_item: id\n    concurrency: 1\n    params:\n      llm: {{ base_url: \"{}\", model: shown, max_retries: 0, tpm: 600000, rpm: 300 }}\n      prompt: \"question {{{{ id }}}}\"\n",
            server.url
        ),
    );
    let out = ws
        .cli(&["run", "b.yaml", "--progress", "log", "--log-every", "0.1"])
        .expect_code(0);
    let host = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/v1");
    let summary = format!("model budget shown @ {host}: window 16/16, tpm 600k, rpm 300");
    assert!(out.stdout.contains(&summary), "{}", out.stdout);
    assert!(
        out.stdout.contains("5 sent, 0 answered 429"),
        "{}",
        out.stdout
    );
    // The log's periodic status lines carry the same account while the stage runs.
    assert!(
        out.stderr
            .contains(&format!("shown @ {host}: window 16/16")),
        "{}",
        out.stderr
    );
}
