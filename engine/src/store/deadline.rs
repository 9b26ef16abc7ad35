//! How long an object store may take before prefflow stops waiting for it.
//!
//! A hung endpoint — one that accepts connections and then says nothing — must fail a run in
//! bounded time instead of holding every commit forever. Three limits do that: connecting,
//! one HTTP request, and one store operation (its retries and its wait for a free connection
//! included). An operation that outlives its deadline marks the store *silent*: every
//! operation started after that gets only [`Deadlines::after_silence`], so writing the run
//! record and releasing the lease cannot stretch the failure out, and the first answer from
//! the store clears the mark again.
//!
//! Each limit comes from the store URL's query (`s3://bucket/prefix?timeout=90`), else from an
//! environment variable, else from its default (docs/store.md, "Timeouts").

use std::time::Duration;

use crate::error::{Error, Result};

/// The deadlines of one object store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// Opening a connection (`connect_timeout`, default 5 s).
    pub connect: Duration,
    /// One HTTP request, from connecting to the end of its body (`request_timeout`, default
    /// 30 s); a timed-out request is retried while the operation's deadline allows.
    pub request: Duration,
    /// One store operation, retries and the wait for a connection slot included (`timeout`,
    /// default 60 s). Past it the store counts as silent.
    pub operation: Duration,
    /// An operation's deadline while the store is silent (`silent_timeout`, default 5 s).
    pub after_silence: Duration,
}

impl Default for Deadlines {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(5),
            request: Duration::from_secs(30),
            operation: Duration::from_secs(60),
            after_silence: Duration::from_secs(5),
        }
    }
}

/// One knob: its name in the URL query, its environment variable, where it goes.
struct Knob {
    name: &'static str,
    var: &'static str,
    set: fn(&mut Deadlines, Duration),
}

const KNOBS: [Knob; 4] = [
    Knob {
        name: "connect_timeout",
        var: "PREFFLOW_STORE_CONNECT_TIMEOUT",
        set: |d, v| d.connect = v,
    },
    Knob {
        name: "request_timeout",
        var: "PREFFLOW_STORE_REQUEST_TIMEOUT",
        set: |d, v| d.request = v,
    },
    Knob {
        name: "timeout",
        var: "PREFFLOW_STORE_TIMEOUT",
        set: |d, v| d.operation = v,
    },
    Knob {
        name: "silent_timeout",
        var: "PREFFLOW_STORE_SILENT_TIMEOUT",
        set: |d, v| d.after_silence = v,
    },
];

/// The names a store URL's query may use, for messages.
pub fn option_names() -> Vec<&'static str> {
    KNOBS.iter().map(|k| k.name).collect()
}

/// Checks one `name=value` of a store URL's query; the error says what is allowed.
pub fn check_option(spec: &str, name: &str, value: &str) -> Result<()> {
    if !KNOBS.iter().any(|k| k.name == name) {
        return Err(Error::Usage(format!(
            "--store {spec}: unknown option `{name}`; a store URL takes {} (seconds, or with `ms`/`s`/`m`), e.g. ?timeout=90",
            option_names().join(", ")
        )));
    }
    parse_duration(value).map(|_| ()).ok_or_else(|| {
        Error::Usage(format!(
            "--store {spec}: `{name}={value}` is not a duration; write seconds (`30`), or `500ms`, `30s`, `2m`"
        ))
    })
}

impl Deadlines {
    /// The deadlines for a store whose URL query holds `options` (checked by
    /// [`check_option`]): each one from the URL, else its environment variable, else the
    /// default. A malformed environment variable is a usage error naming it.
    pub fn resolve(options: &[(String, String)]) -> Result<Self> {
        let mut d = Deadlines::default();
        for knob in &KNOBS {
            let given = options.iter().find(|(n, _)| n == knob.name);
            let value = match given {
                Some((_, v)) => Some((v.clone(), format!("`{}` in the store URL", knob.name))),
                None => std::env::var(knob.var)
                    .ok()
                    .filter(|v| !v.trim().is_empty())
                    .map(|v| (v, knob.var.to_string())),
            };
            if let Some((text, source)) = value {
                let v = parse_duration(&text).ok_or_else(|| {
                    Error::Usage(format!(
                        "{source}: `{text}` is not a duration; write seconds (`30`), or `500ms`, `30s`, `2m`"
                    ))
                })?;
                (knob.set)(&mut d, v);
            }
        }
        Ok(d)
    }
}

/// `30`, `30s`, `500ms`, `2m` → a positive duration.
fn parse_duration(text: &str) -> Option<Duration> {
    let t = text.trim();
    let (number, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t, 1.0)
    };
    let secs = number.trim().parse::<f64>().ok()? * scale;
    (secs.is_finite() && secs > 0.0 && secs < 1e9).then(|| Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_seconds_or_a_unit() {
        assert_eq!(parse_duration("30"), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        for bad in ["", "0", "-3", "soon", "1h"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn url_options_win_and_unknown_ones_are_refused() {
        let d = Deadlines::resolve(&[("timeout".into(), "90".into())]).expect("ok");
        assert_eq!(d.operation, Duration::from_secs(90));
        assert_eq!(d.request, Deadlines::default().request);
        let err = check_option("s3://b?x=1", "x", "1")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unknown option `x`") && err.contains("timeout"),
            "{err}"
        );
        let err = check_option("s3://b?timeout=soon", "timeout", "soon")
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a duration"), "{err}");
    }
}
