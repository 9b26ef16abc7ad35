//! The budget of one endpoint: what may be sent to it, when, and by whom.
//!
//! Every request asks its endpoint's [`Budget`] for a [`Grant`] before it is sent and settles
//! it with the answer. A grant is given when all of these allow it:
//!
//! - **Token buckets** for the limits the model entry declares (`rpm`, `tpm`, `tpd`) or the
//!   provider's headers taught it. Each refills continuously (a minute's limit over 60 s, a
//!   day's over 24 h); the minute buckets hold at most a tenth of a minute's worth, so the
//!   client never bursts more than a provider that enforces its limit over shorter periods
//!   admits, and a request larger than that passes when the bucket is full and leaves it in
//!   debt; [`HEADROOM`] of each bucket stays unused. A request reserves its estimated prompt tokens ([`super::tokens`], scaled by the
//!   ratio of reported to estimated tokens learned from this endpoint's answers, or by
//!   [`UNCALIBRATED_MARGIN`] before the first) plus the average completion seen so far; the answer's `usage` corrects the reservation, so
//!   completion tokens count too, as providers count them.
//! - **The window**: requests on the wire at once, adapted AIMD-style. It starts at the
//!   entry's `concurrency`, halves on a 429 (once per round trip: only a request sent after
//!   the last decrease lowers it again) and grows by one per window of answered requests.
//! - **Pauses**: a 429 stops every grant until its `Retry-After` (or `retry-after-ms`, or the
//!   reset of an exhausted limit, or a doubling backoff when the server says nothing) has
//!   passed, so one rate-limited request does not let the others run into the same wall.
//! - **Fair order**: waiting requests are served highest class first — a request retried
//!   after a 429, then work for an episode already played (user-simulator and judge calls),
//!   then the rest (agent turns, `llm_complete` rows, embeddings) — and within a class by
//!   start-time fair queueing over flows (one per stage instance and role) weighted by their
//!   entry's `concurrency`, so a sweep's variants or several models sharing one budget each
//!   get their share, and the simulator's answers and the judge's verdicts do not wait behind
//!   new agent turns.
//!
//! Waiting for a grant holds nothing: no connection, no window slot, no thread.
//!
//! Provider headers (see [`super::headers`]) also teach the budget: a reported limit the entry
//! does not set becomes a learned limit (read as per minute, as OpenAI and Anthropic report
//! them), and a reported `remaining` below the bucket's level lowers it. The learned limits,
//! window and 429 counts are shown on the progress line and in the run summary ([`status`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::headers::RateHeaders;
use super::types::Usage;

pub use super::types::Limits;

/// How urgent a request is; lower is served first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// A request sent again after a 429: it already waited its turn.
    Retry = 0,
    /// Work for an episode under way or played: a user-simulator or judge call.
    Continue = 1,
    /// Everything else: agent turns, `llm_complete` rows, embeddings.
    Start = 2,
}

/// What a request asks its budget for.
#[derive(Debug, Clone)]
pub struct Ticket {
    /// The flow it belongs to (stage instance and role), for fair sharing.
    pub flow: Arc<str>,
    /// The flow's weight: its entry's `concurrency`.
    pub weight: f64,
    /// Its class.
    pub class: Class,
    /// Its estimated prompt tokens ([`super::tokens`]), before the learned ratio.
    pub estimate: u64,
}

/// Why a request can never be granted.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// The request alone is larger than a limit.
    TooLarge {
        /// Tokens the request would reserve.
        tokens: u64,
        /// The limit it exceeds.
        limit: String,
    },
    /// The daily budget will not come back within the request's deadline.
    DailyExhausted {
        /// How long until it has room again.
        wait: Duration,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::TooLarge { tokens, limit } => write!(
                f,
                "the request needs ~{tokens} tokens, more than the budget's {limit}; shorten the prompt (e.g. `history: top_k:N`, `max_tools`) or raise the limit"
            ),
            Refusal::DailyExhausted { wait } => write!(
                f,
                "the daily token budget (tpd) is spent and refills enough only in {:.1} h, past the request's rate_limit_wait_s",
                wait.as_secs_f64() / 3600.0
            ),
        }
    }
}

/// A continuously refilled token bucket.
#[derive(Debug, Clone)]
struct Bucket {
    capacity: f64,
    per_second: f64,
    level: f64,
    at: Instant,
}

impl Bucket {
    /// A full bucket holding `capacity`, refilled at `per_window` per `window`.
    fn new(capacity: f64, per_window: f64, window: Duration, now: Instant) -> Self {
        Self {
            capacity,
            per_second: per_window / window.as_secs_f64(),
            level: capacity,
            at: now,
        }
    }

    /// A minute limit's bucket: a tenth of a minute's worth, at least one unit.
    fn per_minute(limit: u64, now: Instant) -> Self {
        let limit = limit as f64;
        Self::new((limit / 10.0).max(1.0), limit, Duration::from_secs(60), now)
    }

    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.at).as_secs_f64();
        self.level = (self.level + dt * self.per_second).min(self.capacity);
        self.at = now;
    }

    /// How long until `cost` may be taken with [`HEADROOM`] to spare (a cost above that
    /// needs a full bucket).
    fn wait_for(&self, cost: f64) -> Duration {
        let need = (cost + HEADROOM * self.capacity).min(self.capacity);
        if self.level >= need {
            Duration::ZERO
        } else {
            Duration::from_secs_f64((need - self.level) / self.per_second)
        }
    }

    /// Sets the rate to `limit` per minute, keeping the level within the new capacity.
    fn retune(&mut self, limit: u64) {
        let limit = limit as f64;
        self.per_second = limit / 60.0;
        self.capacity = (limit / 10.0).max(1.0);
        self.level = self.level.min(self.capacity);
    }
}

/// Where a limit came from, for display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Config,
    Headers,
}

/// One limited quantity: its bucket and where its limit came from.
#[derive(Debug, Clone)]
struct Limited {
    limit: u64,
    source: Source,
    bucket: Bucket,
}

impl Limited {
    fn per_minute(limit: u64, source: Source, now: Instant) -> Self {
        Self {
            limit,
            source,
            bucket: Bucket::per_minute(limit, now),
        }
    }

    /// Adopts `limit` when it is lower than the current one (two entries sharing a budget
    /// with different limits, or a provider reporting less than the entry says).
    fn lower_to(&mut self, limit: u64, source: Source) {
        if limit < self.limit {
            self.limit = limit;
            self.source = source;
            self.bucket.retune(limit);
        }
    }
}

/// The key of a waiting request: class, start tag (non-negative `f64` bits order like the
/// values), arrival.
type QueueKey = (Class, u64, u64);

/// Counters shown in the status line.
#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    sent: u64,
    rate_limited: u64,
    tokens: u64,
}

#[derive(Debug)]
struct State {
    cap: usize,
    window: f64,
    in_flight: usize,
    requests: Option<Limited>,
    tokens: Option<Limited>,
    daily: Option<Bucket>,
    tpd: Option<u64>,
    paused_until: Option<Instant>,
    consecutive_429: u32,
    queue: BTreeMap<QueueKey, Arc<Notify>>,
    flows: HashMap<Arc<str>, f64>,
    vtime: f64,
    arrivals: u64,
    grants: u64,
    last_decrease: u64,
    ratio: Option<f64>,
    completion: Option<f64>,
    counters: Counters,
}

/// One endpoint's (or shared) budget; see the module documentation.
#[derive(Debug)]
pub struct Budget {
    name: String,
    state: Mutex<State>,
}

/// What a grant reserved, for the correction when it is settled.
#[derive(Debug)]
pub struct Grant {
    budget: Arc<Budget>,
    seq: u64,
    estimate: u64,
    reserved: f64,
    settled: bool,
}

/// What an estimate is scaled by until the endpoint's first answer says how it counts:
/// characters / 4 is within about ±30% of common tokenizers, and reserving too little would
/// run into the provider's limit with the first burst.
pub const UNCALIBRATED_MARGIN: f64 = 1.3;

/// The share of a bucket kept unused. The client counts a request when it grants it, the
/// provider when the request has arrived and been read; with both buckets full at the start,
/// the provider's refill starts that much later, and a client spending its bucket to the last
/// token would run into the limit by the transit of the first request. The headroom covers
/// transits of up to `HEADROOM · capacity / rate` (0.3 s for a minute limit's bucket) and costs
/// it once, not per minute.
pub const HEADROOM: f64 = 0.05;

/// The smoothing of learned averages (token ratio, completion length).
const SMOOTHING: f64 = 0.2;

/// The first pause after a 429 that gave no hint; doubles per consecutive 429, up to a minute.
const FIRST_PAUSE: Duration = Duration::from_millis(500);

impl Budget {
    /// A budget named `name` (for display) with `concurrency` requests on the wire at most.
    pub fn new(name: String, concurrency: usize, limits: Limits) -> Self {
        let now = Instant::now();
        let cap = concurrency.max(1);
        let state = State {
            cap,
            window: cap as f64,
            in_flight: 0,
            requests: limits
                .rpm
                .map(|l| Limited::per_minute(l, Source::Config, now)),
            tokens: limits
                .tpm
                .map(|l| Limited::per_minute(l, Source::Config, now)),
            daily: limits
                .tpd
                .map(|l| Bucket::new(l as f64, l as f64, Duration::from_secs(86_400), now)),
            tpd: limits.tpd,
            paused_until: None,
            consecutive_429: 0,
            queue: BTreeMap::new(),
            flows: HashMap::new(),
            vtime: 0.0,
            arrivals: 0,
            grants: 0,
            last_decrease: 0,
            ratio: None,
            completion: None,
            counters: Counters::default(),
        };
        Self {
            name,
            state: Mutex::new(state),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Another entry joins this budget: the window's ceiling becomes the larger `concurrency`,
    /// and each limit the lower one.
    pub fn join(&self, concurrency: usize, limits: Limits) {
        let now = Instant::now();
        let mut guard = self.lock();
        let st = &mut *guard;
        if concurrency > st.cap {
            st.window += (concurrency - st.cap) as f64;
            st.cap = concurrency;
        }
        for (slot, limit) in [(&mut st.requests, limits.rpm), (&mut st.tokens, limits.tpm)] {
            match (slot.as_mut(), limit) {
                (Some(have), Some(l)) => have.lower_to(l, Source::Config),
                (None, Some(l)) => *slot = Some(Limited::per_minute(l, Source::Config, now)),
                _ => {}
            }
        }
        if let Some(l) = limits.tpd {
            if st.tpd.is_none_or(|have| l < have) {
                st.tpd = Some(l);
                st.daily = Some(Bucket::new(
                    l as f64,
                    l as f64,
                    Duration::from_secs(86_400),
                    now,
                ));
            }
        }
    }

    /// The window's ceiling (the largest `concurrency` of the entries using this budget).
    pub fn concurrency(&self) -> usize {
        self.lock().cap
    }

    /// Requests on the wire right now.
    pub fn in_flight(&self) -> usize {
        self.lock().in_flight
    }

    /// The current window (requests allowed on the wire at once).
    pub fn window(&self) -> f64 {
        self.lock().window
    }

    /// Requests answered 429 so far.
    pub fn rate_limited(&self) -> u64 {
        self.lock().counters.rate_limited
    }

    /// Requests waiting for a grant right now.
    pub fn waiting(&self) -> usize {
        self.lock().queue.len()
    }

    /// Tokens a request with `estimate` estimated prompt tokens would reserve now.
    pub fn reservation(&self, estimate: u64) -> f64 {
        self.lock().reservation(estimate)
    }

    /// The learned ratio of reported to estimated prompt tokens (none before an answer).
    pub fn token_ratio(&self) -> Option<f64> {
        self.lock().ratio
    }

    /// Tokens (prompt + completion) the answers reported so far.
    pub fn tokens_reported(&self) -> u64 {
        self.lock().counters.tokens
    }

    /// The tokens-per-minute limit in force (declared or learned), if any.
    pub fn tpm(&self) -> Option<u64> {
        self.lock().tokens.as_ref().map(|t| t.limit)
    }

    /// The requests-per-minute limit in force (declared or learned), if any.
    pub fn rpm(&self) -> Option<u64> {
        self.lock().requests.as_ref().map(|t| t.limit)
    }

    /// Waits for a grant (see the module documentation). `deadline` bounds how long a spent
    /// daily budget may keep the request waiting.
    pub async fn acquire(
        self: &Arc<Self>,
        ticket: &Ticket,
        deadline: Duration,
    ) -> Result<Grant, Refusal> {
        let notify = Arc::new(Notify::new());
        let key = self.enqueue(ticket, notify.clone())?;
        let mut queued = Queued {
            budget: self,
            key: Some(key),
        };
        loop {
            let wait = {
                let mut st = self.lock();
                match self.try_grant(&mut st, key, ticket, deadline, Instant::now()) {
                    Ok(Some(grant)) => {
                        queued.key = None;
                        wake_head(&st);
                        return Ok(grant);
                    }
                    Ok(None) => None,
                    Err(Wait::For(d)) => Some(d),
                    Err(Wait::Refused(r)) => {
                        drop(st);
                        return Err(r);
                    }
                }
            };
            match wait {
                Some(d) => {
                    tokio::select! {
                        _ = notify.notified() => {}
                        _ = tokio::time::sleep(d) => {}
                    }
                }
                None => notify.notified().await,
            }
        }
    }

    /// Puts a request in the queue under its class and start tag; refuses one too large for
    /// the limits.
    fn enqueue(&self, ticket: &Ticket, notify: Arc<Notify>) -> Result<QueueKey, Refusal> {
        let mut st = self.lock();
        let cost = st.reservation(ticket.estimate);
        // Refused only when it is too large by the best guess (no margin): the provider decides.
        let size = ticket.estimate as f64 * st.ratio.unwrap_or(1.0) + st.completion.unwrap_or(0.0);
        if let Some(t) = &st.tokens {
            if size > t.limit as f64 {
                return Err(Refusal::TooLarge {
                    tokens: size.ceil() as u64,
                    limit: format!("tpm {}", t.limit),
                });
            }
        }
        if let Some(tpd) = st.tpd.filter(|&l| size > l as f64) {
            return Err(Refusal::TooLarge {
                tokens: size.ceil() as u64,
                limit: format!("tpd {tpd}"),
            });
        }
        // Start-time fair queueing: a flow's next request starts where its last one finished
        // (or at the current virtual time, if it was idle), and costs `cost / weight`.
        let units = if st.tokens.is_some() || st.daily.is_some() {
            cost.max(1.0)
        } else {
            1.0
        };
        let vtime = st.vtime;
        let last = st.flows.entry(ticket.flow.clone()).or_insert(vtime);
        let start = last.max(vtime);
        *last = start + units / ticket.weight.max(1.0);
        st.arrivals += 1;
        let key = (ticket.class, start.max(0.0).to_bits(), st.arrivals);
        st.queue.insert(key, notify);
        Ok(key)
    }

    /// Grants the request `key` when it is at the head of the queue and the pause, window and
    /// buckets allow it; otherwise how long to wait (`Ok(None)`: until woken).
    fn try_grant(
        self: &Arc<Self>,
        st: &mut State,
        key: QueueKey,
        ticket: &Ticket,
        deadline: Duration,
        now: Instant,
    ) -> Result<Option<Grant>, Wait> {
        if st.queue.keys().next() != Some(&key) {
            return Ok(None);
        }
        if let Some(until) = st.paused_until.filter(|u| *u > now) {
            return Err(Wait::For(until - now));
        }
        if st.in_flight as f64 >= st.window.floor().max(1.0) {
            return Ok(None);
        }
        let cost = st.reservation(ticket.estimate);
        let mut wait = Duration::ZERO;
        if let Some(r) = st.requests.as_mut() {
            r.bucket.refill(now);
            wait = wait.max(r.bucket.wait_for(1.0));
        }
        if let Some(t) = st.tokens.as_mut() {
            t.bucket.refill(now);
            wait = wait.max(t.bucket.wait_for(cost));
        }
        if let Some(d) = st.daily.as_mut() {
            d.refill(now);
            let daily = d.wait_for(cost);
            if daily > deadline {
                return Err(Wait::Refused(Refusal::DailyExhausted { wait: daily }));
            }
            wait = wait.max(daily);
        }
        if wait > Duration::ZERO {
            return Err(Wait::For(wait));
        }
        for bucket in st.buckets() {
            bucket.level -= cost;
        }
        st.take_request();
        st.queue.remove(&key);
        st.vtime = f64::from_bits(key.1);
        st.in_flight += 1;
        st.grants += 1;
        st.counters.sent += 1;
        Ok(Some(Grant {
            budget: self.clone(),
            seq: st.grants,
            estimate: ticket.estimate,
            reserved: cost,
            settled: false,
        }))
    }

    /// A one-line account: window, limits and where they came from, 429s.
    pub fn status(&self) -> String {
        let st = self.lock();
        let mut parts = vec![format!("window {}/{}", st.window.floor() as usize, st.cap)];
        let source = |s: Source| match s {
            Source::Config => "",
            Source::Headers => " learned",
        };
        if let Some(t) = &st.tokens {
            parts.push(format!("tpm {}{}", si(t.limit), source(t.source)));
        }
        if let Some(r) = &st.requests {
            parts.push(format!("rpm {}{}", si(r.limit), source(r.source)));
        }
        if let Some(d) = st.tpd {
            parts.push(format!("tpd {}", si(d)));
        }
        if let Some(ratio) = st.ratio {
            parts.push(format!("tokens ×{ratio:.2} of estimate"));
        }
        parts.push(format!(
            "{} sent, {} answered 429",
            st.counters.sent, st.counters.rate_limited
        ));
        if !st.queue.is_empty() {
            parts.push(format!("{} waiting", st.queue.len()));
        }
        format!("{}: {}", self.name, parts.join(", "))
    }
}

/// Why a request is not granted yet.
enum Wait {
    For(Duration),
    Refused(Refusal),
}

impl State {
    /// Tokens a request with `estimate` prompt tokens reserves: the estimate scaled by the
    /// learned ratio (by [`UNCALIBRATED_MARGIN`] before the first answer), plus the average
    /// completion.
    fn reservation(&self, estimate: u64) -> f64 {
        estimate as f64 * self.ratio.unwrap_or(UNCALIBRATED_MARGIN) + self.completion.unwrap_or(0.0)
    }

    /// The token buckets (minute and day), for taking and giving back tokens.
    fn buckets(&mut self) -> impl Iterator<Item = &mut Bucket> {
        self.tokens
            .as_mut()
            .map(|t| &mut t.bucket)
            .into_iter()
            .chain(self.daily.as_mut())
    }

    fn take_request(&mut self) {
        if let Some(r) = self.requests.as_mut() {
            r.bucket.level -= 1.0;
        }
    }

    /// Lowers the buckets to what the provider says remains, and learns limits it reports
    /// that the entry does not set.
    fn learn(&mut self, headers: &RateHeaders, now: Instant) {
        for (slot, dim) in [
            (&mut self.requests, headers.requests),
            (&mut self.tokens, headers.tokens),
        ] {
            if let Some(limit) = dim.limit.filter(|l| *l > 0) {
                match slot.as_mut() {
                    Some(have) => have.lower_to(limit, Source::Headers),
                    None => *slot = Some(Limited::per_minute(limit, Source::Headers, now)),
                }
            }
            if let (Some(have), Some(remaining)) = (slot.as_mut(), dim.remaining) {
                have.bucket.refill(now);
                have.bucket.level = have.bucket.level.min(remaining as f64);
            }
        }
    }

    fn release(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }
}

fn wake_head(st: &State) {
    if let Some(n) = st.queue.values().next() {
        n.notify_one();
    }
}

/// `2000000` → `2M`, `1500` → `1.5k`.
fn si(n: u64) -> String {
    match n {
        n if n >= 1_000_000 => format!("{}M", trim(n as f64 / 1e6)),
        n if n >= 1_000 => format!("{}k", trim(n as f64 / 1e3)),
        n => n.to_string(),
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A queued request; leaving the queue unserved (the caller gave up) wakes the next one.
struct Queued<'a> {
    budget: &'a Budget,
    key: Option<QueueKey>,
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            let mut st = self.budget.lock();
            st.queue.remove(&key);
            wake_head(&st);
        }
    }
}

impl Grant {
    /// The request was answered: the window grows, the reservation is corrected to the
    /// reported usage (when the server reports it) and the token ratio and average completion
    /// learn from it.
    pub fn answered(mut self, headers: &RateHeaders, usage: Option<Usage>) {
        self.settled = true;
        let now = Instant::now();
        let mut st = self.budget.lock();
        st.release();
        st.consecutive_429 = 0;
        st.window = (st.window + 1.0 / st.window.max(1.0)).min(st.cap as f64);
        if let Some(u) = usage.filter(|u| u.prompt_tokens + u.completion_tokens > 0) {
            let actual = (u.prompt_tokens + u.completion_tokens) as f64;
            let reserved = self.reserved;
            for bucket in st.buckets() {
                bucket.level += reserved - actual;
            }
            st.counters.tokens += u.prompt_tokens + u.completion_tokens;
            if self.estimate > 0 && u.prompt_tokens > 0 {
                let sample = u.prompt_tokens as f64 / self.estimate as f64;
                st.ratio = Some(smooth(st.ratio, sample));
            }
            st.completion = Some(smooth(st.completion, u.completion_tokens as f64));
        }
        st.learn(headers, now);
        wake_head(&st);
    }

    /// The server answered 429: the reservation is given back (the server did not count the
    /// request), the window halves (once per round trip), and every grant pauses until the
    /// server's hint — `Retry-After`, else the reset of an exhausted limit, else a doubling
    /// backoff.
    pub fn rate_limited(mut self, headers: &RateHeaders) {
        self.settled = true;
        let now = Instant::now();
        let mut st = self.budget.lock();
        st.release();
        st.counters.rate_limited += 1;
        let reserved = self.reserved;
        for bucket in st.buckets() {
            bucket.level += reserved;
        }
        if let Some(r) = st.requests.as_mut() {
            r.bucket.level += 1.0;
        }
        if self.seq > st.last_decrease {
            st.window = (st.window / 2.0).max(1.0);
            st.last_decrease = st.grants;
        }
        st.learn(headers, now);
        let exhausted =
            |d: &super::headers::Dimension| d.remaining.filter(|r| *r == 0).and(d.reset);
        let pause = headers
            .retry_after
            .or_else(|| exhausted(&headers.tokens))
            .or_else(|| exhausted(&headers.requests))
            .unwrap_or_else(|| FIRST_PAUSE.saturating_mul(1 << st.consecutive_429.min(7)))
            .min(Duration::from_secs(60));
        st.consecutive_429 += 1;
        let until = now + pause;
        st.paused_until = Some(st.paused_until.map_or(until, |u| u.max(until)));
        wake_head(&st);
    }

    /// The exchange failed otherwise (a fault or a refusal): the slot is freed, the
    /// reservation kept (the server may have counted it), and the headers read.
    pub fn failed(mut self, headers: &RateHeaders) {
        self.settled = true;
        let mut st = self.budget.lock();
        st.release();
        st.learn(headers, Instant::now());
        wake_head(&st);
    }
}

impl Drop for Grant {
    fn drop(&mut self) {
        if !self.settled {
            let mut st = self.budget.lock();
            st.release();
            wake_head(&st);
        }
    }
}

fn smooth(old: Option<f64>, sample: f64) -> f64 {
    old.map_or(sample, |o| o + SMOOTHING * (sample - o))
}

/// The process's budget under `key` (created with `concurrency` and `limits` on first use;
/// later entries [`Budget::join`] it).
pub fn budget(key: (String, String), concurrency: usize, limits: Limits) -> Arc<Budget> {
    let mut all = registry().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(b) = all.get(&key) {
        b.join(concurrency, limits);
        return b.clone();
    }
    let name = format!("{} @ {}", key.1, host(&key.0));
    let made = Arc::new(Budget::new(name, concurrency, limits));
    all.insert(key, made.clone());
    made
}

type Registry = Mutex<BTreeMap<(String, String), Arc<Budget>>>;

fn registry() -> &'static Registry {
    static BUDGETS: OnceLock<Registry> = OnceLock::new();
    BUDGETS.get_or_init(Mutex::default)
}

fn host(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split('/').next().unwrap_or(rest)
}

/// One line per budget that has sent a request in this process: the learned window and
/// limits and the 429s — for the progress line and the run summary. Empty when no model was
/// called.
pub fn status() -> Vec<String> {
    let all: Vec<Arc<Budget>> = registry()
        .lock()
        .map(|a| a.values().cloned().collect())
        .unwrap_or_default();
    all.iter()
        .filter(|b| b.lock().counters.sent > 0)
        .map(|b| b.status())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticket(flow: &str, weight: f64, class: Class) -> Ticket {
        Ticket {
            flow: Arc::from(flow),
            weight,
            class,
            estimate: 100,
        }
    }

    #[test]
    fn waiting_flows_are_served_in_proportion_to_their_weights() {
        let budget = Budget::new("t".into(), 1, Limits::default());
        let mut flows = HashMap::new();
        // Flow `a` (pool 2) queues six requests before flow `b` (pool 1) queues six.
        for (flow, weight) in [("a", 2.0), ("b", 1.0)] {
            for _ in 0..6 {
                let key = budget
                    .enqueue(&ticket(flow, weight, Class::Start), Arc::new(Notify::new()))
                    .expect("queued");
                flows.insert(key, flow);
            }
        }
        let order: Vec<&str> = budget.lock().queue.keys().map(|k| flows[k]).collect();
        let first_nine = &order[..9];
        assert_eq!(
            first_nine.iter().filter(|f| **f == "a").count(),
            6,
            "{order:?}"
        );
        assert_eq!(
            first_nine.iter().filter(|f| **f == "b").count(),
            3,
            "{order:?}"
        );
    }

    #[test]
    fn a_retried_request_goes_before_work_under_way_before_new_work() {
        let budget = Budget::new("t".into(), 1, Limits::default());
        let mut classes = HashMap::new();
        for class in [Class::Start, Class::Continue, Class::Retry] {
            let key = budget
                .enqueue(&ticket("a", 1.0, class), Arc::new(Notify::new()))
                .expect("queued");
            classes.insert(key, class);
        }
        let order: Vec<Class> = budget.lock().queue.keys().map(|k| classes[k]).collect();
        assert_eq!(order, vec![Class::Retry, Class::Continue, Class::Start]);
    }

    #[test]
    fn a_bucket_refills_continuously_and_lends_to_large_requests() {
        let t0 = Instant::now();
        // 6,000 a minute: holds 600, refills 100 a second.
        let mut bucket = Bucket::per_minute(6_000, t0);
        assert_eq!(bucket.capacity, 600.0);
        // A full bucket lets anything up to its capacity through.
        assert_eq!(bucket.wait_for(600.0), Duration::ZERO);
        // Otherwise 5% of it (30) stays unused.
        bucket.level = 300.0;
        assert_eq!(bucket.wait_for(270.0), Duration::ZERO);
        assert!(bucket.wait_for(271.0) > Duration::ZERO);
        bucket.level -= 300.0;
        assert_eq!(bucket.wait_for(70.0), Duration::from_secs(1));
        bucket.refill(t0 + Duration::from_millis(500));
        assert!((bucket.level - 50.0).abs() < 1e-9);
        // Refilling stops at the capacity.
        bucket.refill(t0 + Duration::from_secs(60));
        assert_eq!(bucket.level, 600.0);
        // A request larger than the bucket passes when it is full, leaving a debt.
        assert_eq!(bucket.wait_for(900.0), Duration::ZERO);
        bucket.level -= 900.0;
        assert_eq!(bucket.wait_for(900.0), Duration::from_secs(9));
    }

    #[test]
    fn shared_budgets_take_the_larger_window_and_the_lower_limits() {
        let budget = Budget::new(
            "t".into(),
            4,
            Limits {
                tpm: Some(2_000_000),
                ..Limits::default()
            },
        );
        budget.join(
            16,
            Limits {
                rpm: Some(500),
                tpm: Some(1_000_000),
                tpd: None,
            },
        );
        assert_eq!(budget.concurrency(), 16);
        assert_eq!(budget.window(), 16.0);
        assert_eq!((budget.tpm(), budget.rpm()), (Some(1_000_000), Some(500)));
    }

    #[test]
    fn limits_print_compactly() {
        assert_eq!(si(2_000_000), "2M");
        assert_eq!(si(1_500), "1.5k");
        assert_eq!(si(450_000), "450k");
        assert_eq!(si(50), "50");
    }
}
