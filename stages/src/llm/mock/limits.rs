//! A provider's rate limits, for the scripted server: a loopback stand-in for a hosted API
//! that enforces a token and request budget per minute, the way `prefflow bench` measures how
//! much of a budget a client uses.
//!
//! Prompt tokens are counted by the server from the request body with its own method —
//! 1.3 tokens per whitespace-separated word of every message, as a rule of thumb for BPE
//! tokenizers — not with the client's counter ([`crate::llm::tokens`], characters / 4), so the
//! client must learn how this server counts from the `usage` it reports.
//!
//! Limits are token buckets refilled continuously, holding `burst` of a minute's limit. A
//! request is admitted when both buckets hold what it costs (prompt tokens plus the completion
//! it will get; one request); it is answered after the latency with `usage` and OpenAI-style
//! `x-ratelimit-*` headers. Otherwise it is answered at once with 429, `Retry-After` (whole
//! seconds, rounded up) and `retry-after-ms`: the time until the buckets will hold it.
//! Every decision is logged, so a benchmark can compute the share of the budget used.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The budget and behaviour of a rate-limited provider.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProviderLimits {
    /// Tokens per (real) minute.
    pub tpm: f64,
    /// Requests per (real) minute.
    pub rpm: f64,
    /// The share of a minute's limit a bucket holds (1.0: a full minute, as OpenAI's headers
    /// describe; a time-scaled benchmark whose simulated minute lasts 6 s uses 0.1).
    pub burst: f64,
    /// Delay before an admitted request is answered.
    pub latency: Duration,
    /// Completion tokens of every answer.
    pub completion_tokens: u64,
}

/// One decision of the server.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// When it was taken.
    pub at: Instant,
    /// The request's `model`.
    pub model: String,
    /// Prompt tokens as the server counted them.
    pub prompt_tokens: u64,
    /// True when admitted, false when answered 429.
    pub admitted: bool,
    /// Tokens in the bucket when it was taken (before this request's cost).
    pub tokens_left: f64,
}

/// A rate-limited provider's state: its two buckets and its log.
#[derive(Debug)]
pub struct LimitedProvider {
    limits: ProviderLimits,
    started: Instant,
    state: Mutex<Buckets>,
}

#[derive(Debug)]
struct Buckets {
    tokens: f64,
    requests: f64,
    at: Instant,
    log: Vec<Decision>,
}

/// What the server answers one request with.
pub struct Answer {
    /// HTTP status (200 or 429).
    pub status: u16,
    /// Headers beside content type and length.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: String,
    /// Wait this long before answering.
    pub delay: Duration,
}

impl LimitedProvider {
    /// A provider with full buckets.
    pub fn new(limits: ProviderLimits) -> Self {
        let now = Instant::now();
        Self {
            limits,
            started: now,
            state: Mutex::new(Buckets {
                tokens: limits.tpm * limits.burst,
                requests: limits.rpm * limits.burst,
                at: now,
                log: Vec::new(),
            }),
        }
    }

    /// The limits it enforces.
    pub fn limits(&self) -> ProviderLimits {
        self.limits
    }

    /// When it started (buckets full).
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Every decision so far, in order.
    pub fn log(&self) -> Vec<Decision> {
        self.state.lock().map(|s| s.log.clone()).unwrap_or_default()
    }

    /// Decides on a request body and builds the answer.
    pub fn answer(&self, body: &str) -> Answer {
        let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
        let model = v["model"].as_str().unwrap_or_default().to_string();
        let prompt = count_tokens(&v);
        let completion = self.limits.completion_tokens;
        let cost = (prompt + completion) as f64;
        let l = self.limits;
        let (tokens_per_s, requests_per_s) = (l.tpm / 60.0, l.rpm / 60.0);
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let dt = now.saturating_duration_since(st.at).as_secs_f64();
        st.tokens = (st.tokens + dt * tokens_per_s).min(l.tpm * l.burst);
        st.requests = (st.requests + dt * requests_per_s).min(l.rpm * l.burst);
        st.at = now;
        let admitted = st.tokens >= cost && st.requests >= 1.0;
        let tokens_left = st.tokens;
        st.log.push(Decision {
            at: now,
            model: model.clone(),
            prompt_tokens: prompt,
            admitted,
            tokens_left,
        });
        if admitted {
            st.tokens -= cost;
            st.requests -= 1.0;
        }
        let reset = |level: f64, per_s: f64, full: f64| {
            format!("{:.3}s", ((full - level) / per_s).max(0.0))
        };
        let mut headers = vec![
            ("x-ratelimit-limit-tokens".into(), format!("{:.0}", l.tpm)),
            ("x-ratelimit-limit-requests".into(), format!("{:.0}", l.rpm)),
            (
                "x-ratelimit-remaining-tokens".into(),
                format!("{:.0}", st.tokens.max(0.0)),
            ),
            (
                "x-ratelimit-remaining-requests".into(),
                format!("{:.0}", st.requests.max(0.0)),
            ),
            (
                "x-ratelimit-reset-tokens".into(),
                reset(st.tokens, tokens_per_s, l.tpm * l.burst),
            ),
            (
                "x-ratelimit-reset-requests".into(),
                reset(st.requests, requests_per_s, l.rpm * l.burst),
            ),
        ];
        if admitted {
            return Answer {
                status: 200,
                headers,
                body: answer_body(&model, prompt, completion),
                delay: l.latency,
            };
        }
        let wait = ((cost - st.tokens).max(0.0) / tokens_per_s)
            .max((1.0 - st.requests).max(0.0) / requests_per_s);
        headers.push(("retry-after".into(), format!("{:.0}", wait.ceil())));
        headers.push(("retry-after-ms".into(), format!("{:.0}", wait * 1000.0)));
        Answer {
            status: 429,
            headers,
            body: r#"{"error":{"type":"rate_limit_exceeded","message":"Rate limit reached"}}"#
                .into(),
            delay: Duration::ZERO,
        }
    }
}

/// A chat completion as hosted APIs send it (with `model` and `created`, which some clients
/// require).
fn answer_body(model: &str, prompt: u64, completion: u64) -> String {
    serde_json::json!({
        "id": "chatcmpl-bench", "object": "chat.completion", "created": 1_700_000_000u64,
        "model": model,
        "choices": [{ "index": 0, "finish_reason": "stop",
                      "message": { "role": "assistant", "content": "ok" } }],
        "usage": { "prompt_tokens": prompt, "completion_tokens": completion,
                   "total_tokens": prompt + completion },
    })
    .to_string()
}

/// Prompt tokens of a chat-completions body as this server counts them: 1.3 per
/// whitespace-separated word of every message's text, rounded up, plus 3 per message.
pub fn count_tokens(body: &serde_json::Value) -> u64 {
    let messages = body["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    messages
        .iter()
        .map(|m| {
            let words = m["content"]
                .as_str()
                .map_or(0, |t| t.split_whitespace().count());
            (words as f64 * 1.3).ceil() as u64 + 3
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider() -> LimitedProvider {
        LimitedProvider::new(ProviderLimits {
            tpm: 6000.0,
            rpm: 600.0,
            burst: 0.1,
            latency: Duration::ZERO,
            completion_tokens: 10,
        })
    }

    fn body(words: usize) -> String {
        serde_json::json!({ "model": "m", "messages": [{ "role": "user", "content": "ab ".repeat(words) }] })
            .to_string()
    }

    #[test]
    fn admits_within_the_bucket_then_answers_429_with_the_wait() {
        let p = provider();
        // The token bucket holds 600: 1.3 × 300 + 3 + 10 = 403 fits, a second one does not.
        let first = p.answer(&body(300));
        assert_eq!(first.status, 200);
        assert!(
            first.body.contains("\"prompt_tokens\":393"),
            "{}",
            first.body
        );
        let second = p.answer(&body(300));
        assert_eq!(second.status, 429);
        let retry: u64 = second
            .headers
            .iter()
            .find(|(k, _)| k == "retry-after")
            .map(|(_, v)| v.parse().expect("seconds"))
            .expect("retry-after");
        // 206 more tokens at 100 a second: about two seconds (rounded up to whole seconds).
        assert!((2..=3).contains(&retry), "{retry}");
        let log = p.log();
        assert_eq!(
            log.iter().map(|d| d.admitted).collect::<Vec<_>>(),
            [true, false]
        );
    }
}
