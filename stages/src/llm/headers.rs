//! What a provider's response headers say about its rate limits.
//!
//! Read from every response (not only 429s), so the budget learns the provider's limits and
//! how much of them is left before it runs into them:
//!
//! - `Retry-After` (seconds or an HTTP date) and `retry-after-ms` (OpenAI, Azure);
//! - OpenAI style: `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, resets as Go
//!   durations (`1s`, `6m0s`, `59ms`, `1h2m3.5s`) or plain seconds;
//! - Anthropic style: `anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}` (and the
//!   `input-tokens` variant when the combined `tokens` one is absent), resets as RFC 3339 times.

use std::time::{Duration, SystemTime};

/// One limited quantity (requests or tokens) as the provider reported it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Dimension {
    /// The limit per window (per minute for OpenAI and Anthropic).
    pub limit: Option<u64>,
    /// What is left of it now.
    pub remaining: Option<u64>,
    /// How long until it is replenished.
    pub reset: Option<Duration>,
}

impl Dimension {
    fn is_empty(&self) -> bool {
        *self == Dimension::default()
    }
}

/// Everything rate-related a response's headers said.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RateHeaders {
    /// How long the server asks the client to wait (`retry-after-ms`, else `Retry-After`).
    pub retry_after: Option<Duration>,
    /// The request limit.
    pub requests: Dimension,
    /// The token limit.
    pub tokens: Dimension,
}

impl RateHeaders {
    /// Reads the headers (`(name, value)` pairs, names in any case); `now` turns absolute reset
    /// times and HTTP dates into durations.
    pub fn parse<'h>(
        headers: impl IntoIterator<Item = (&'h str, &'h str)>,
        now: SystemTime,
    ) -> Self {
        let mut out = RateHeaders::default();
        let mut input_tokens = Dimension::default();
        let mut retry_after_ms = None;
        for (name, value) in headers {
            let name = name.to_ascii_lowercase();
            let value = value.trim();
            match name.as_str() {
                "retry-after" => out.retry_after = retry_after(value, now),
                "retry-after-ms" => {
                    retry_after_ms = value
                        .parse::<f64>()
                        .ok()
                        .filter(|ms| ms.is_finite() && *ms >= 0.0)
                        .map(|ms| Duration::from_secs_f64(ms / 1000.0));
                }
                _ => {
                    if let Some(rest) = name.strip_prefix("x-ratelimit-") {
                        openai(&mut out, rest, value);
                    } else if let Some(rest) = name.strip_prefix("anthropic-ratelimit-") {
                        anthropic(&mut out, &mut input_tokens, rest, value, now);
                    }
                }
            }
        }
        if out.tokens.is_empty() {
            out.tokens = input_tokens;
        }
        out.retry_after = retry_after_ms.or(out.retry_after);
        out
    }
}

fn openai(out: &mut RateHeaders, rest: &str, value: &str) {
    let Some((field, what)) = rest.split_once('-') else {
        return;
    };
    let dim = match what {
        "requests" => &mut out.requests,
        "tokens" => &mut out.tokens,
        _ => return,
    };
    match field {
        "limit" => dim.limit = value.parse().ok(),
        "remaining" => dim.remaining = value.parse().ok(),
        "reset" => dim.reset = go_duration(value),
        _ => {}
    }
}

fn anthropic(
    out: &mut RateHeaders,
    input: &mut Dimension,
    rest: &str,
    value: &str,
    now: SystemTime,
) {
    let (dim, field) = if let Some(f) = rest.strip_prefix("requests-") {
        (&mut out.requests, f)
    } else if let Some(f) = rest.strip_prefix("tokens-") {
        (&mut out.tokens, f)
    } else if let Some(f) = rest.strip_prefix("input-tokens-") {
        (input, f)
    } else {
        return;
    };
    match field {
        "limit" => dim.limit = value.parse().ok(),
        "remaining" => dim.remaining = value.parse().ok(),
        "reset" => dim.reset = rfc3339(value).map(|t| until(t, now)),
        _ => {}
    }
}

/// `Retry-After`: delay-seconds (fractions accepted) or an HTTP date.
fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    if let Ok(s) = value.parse::<f64>() {
        return (s.is_finite() && s >= 0.0).then(|| Duration::from_secs_f64(s));
    }
    httpdate::parse_http_date(value).ok().map(|t| until(t, now))
}

fn until(t: SystemTime, now: SystemTime) -> Duration {
    t.duration_since(now).unwrap_or(Duration::ZERO)
}

/// A Go duration as OpenAI sends resets (`6m0s`, `1s`, `59ms`, `1h2m3.5s`), or plain seconds.
pub fn go_duration(value: &str) -> Option<Duration> {
    if let Ok(s) = value.parse::<f64>() {
        return (s.is_finite() && s >= 0.0).then(|| Duration::from_secs_f64(s));
    }
    let mut total = 0.0f64;
    let mut rest = value;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if digits == 0 {
            return None;
        }
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        total += number * scale;
        rest = &rest[unit_len..];
    }
    Some(Duration::from_secs_f64(total))
}

/// An RFC 3339 time (`2026-05-09T03:30:00Z`, fractions and offsets accepted).
pub fn rfc3339(value: &str) -> Option<SystemTime> {
    let b = value.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| value.get(r)?.parse::<i64>().ok();
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut rest = &value[19..];
    let mut fraction = 0.0;
    if let Some(f) = rest.strip_prefix('.') {
        let end = f.find(|c: char| !c.is_ascii_digit()).unwrap_or(f.len());
        fraction = format!("0.{}", &f[..end]).parse().ok()?;
        rest = &f[end..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let (h, m) = rest[1..].split_once(':')?;
            sign * (h.parse::<i64>().ok()? * 3600 + m.parse::<i64>().ok()? * 60)
        }
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset;
    let secs = u64::try_from(secs).ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_secs_f64(fraction))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn go_durations_as_openai_sends_them() {
        assert_eq!(go_duration("1s"), Some(Duration::from_secs(1)));
        assert_eq!(go_duration("6m0s"), Some(Duration::from_secs(360)));
        assert_eq!(go_duration("59ms"), Some(Duration::from_millis(59)));
        assert_eq!(
            go_duration("1h2m3.5s"),
            Some(Duration::from_secs_f64(3723.5))
        );
        assert_eq!(go_duration("0.25"), Some(Duration::from_millis(250)));
        assert_eq!(go_duration(""), None);
        assert_eq!(go_duration("soon"), None);
        assert_eq!(go_duration("5parsecs"), None);
    }

    #[test]
    fn rfc3339_times_with_fractions_and_offsets() {
        assert_eq!(rfc3339("1970-01-02T00:00:00Z"), Some(at(86_400)));
        assert_eq!(rfc3339("2024-02-29T12:00:00Z"), Some(at(1_709_208_000)));
        assert_eq!(rfc3339("1970-01-01T01:00:00+01:00"), Some(at(0)));
        assert_eq!(
            rfc3339("1970-01-01T00:00:01.5Z"),
            Some(at(1) + Duration::from_millis(500))
        );
        assert_eq!(rfc3339("yesterday"), None);
    }

    #[test]
    fn openai_headers() {
        let h = RateHeaders::parse(
            [
                ("x-ratelimit-limit-requests", "500"),
                ("X-RateLimit-Limit-Tokens", "2000000"),
                ("x-ratelimit-remaining-requests", "499"),
                ("x-ratelimit-remaining-tokens", "1899000"),
                ("x-ratelimit-reset-requests", "120ms"),
                ("x-ratelimit-reset-tokens", "3s"),
                ("retry-after", "2"),
                ("content-type", "application/json"),
            ],
            at(0),
        );
        assert_eq!(h.requests.limit, Some(500));
        assert_eq!(h.requests.remaining, Some(499));
        assert_eq!(h.requests.reset, Some(Duration::from_millis(120)));
        assert_eq!(h.tokens.limit, Some(2_000_000));
        assert_eq!(h.tokens.remaining, Some(1_899_000));
        assert_eq!(h.tokens.reset, Some(Duration::from_secs(3)));
        assert_eq!(h.retry_after, Some(Duration::from_secs(2)));
    }

    #[test]
    fn retry_after_ms_wins_and_http_dates_are_read() {
        let h = RateHeaders::parse([("retry-after", "2"), ("retry-after-ms", "1500")], at(0));
        assert_eq!(h.retry_after, Some(Duration::from_millis(1500)));
        let now = at(1_700_000_000);
        let date = httpdate::fmt_http_date(now + Duration::from_secs(30));
        let h = RateHeaders::parse([("Retry-After", date.as_str())], now);
        assert_eq!(h.retry_after, Some(Duration::from_secs(30)));
        let h = RateHeaders::parse([("retry-after", "-3")], now);
        assert_eq!(h.retry_after, None);
    }

    #[test]
    fn anthropic_headers_with_input_tokens_as_fallback() {
        let now = at(1_709_208_000);
        let h = RateHeaders::parse(
            [
                ("anthropic-ratelimit-requests-limit", "50"),
                ("anthropic-ratelimit-requests-remaining", "49"),
                ("anthropic-ratelimit-requests-reset", "2024-02-29T12:00:01Z"),
                ("anthropic-ratelimit-input-tokens-limit", "40000"),
                ("anthropic-ratelimit-input-tokens-remaining", "38000"),
                (
                    "anthropic-ratelimit-input-tokens-reset",
                    "2024-02-29T12:00:03Z",
                ),
            ],
            now,
        );
        assert_eq!(h.requests.limit, Some(50));
        assert_eq!(h.requests.remaining, Some(49));
        assert_eq!(h.requests.reset, Some(Duration::from_secs(1)));
        assert_eq!(h.tokens.limit, Some(40_000));
        assert_eq!(h.tokens.remaining, Some(38_000));
        assert_eq!(h.tokens.reset, Some(Duration::from_secs(3)));
        // The combined `tokens` dimension wins over `input-tokens` when both are sent.
        let h = RateHeaders::parse(
            [
                ("anthropic-ratelimit-tokens-limit", "90000"),
                ("anthropic-ratelimit-input-tokens-limit", "40000"),
            ],
            now,
        );
        assert_eq!(h.tokens.limit, Some(90_000));
    }
}
