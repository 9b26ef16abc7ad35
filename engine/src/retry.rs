//! Retrying transient failures: one policy type and one loop for every layer that retries.
//!
//! The engine retries an item whose kind returns [`StageError::Transient`] (`retries:` on the
//! stage), and model or device clients retry their own requests. Both use [`RetryPolicy`], so
//! backoff means the same everywhere, and a client that has given up returns
//! [`StageError::Exhausted`], which the engine does not retry again: a failure is retried in one
//! layer only.
//!
//! [`StageError::Transient`]: crate::StageError::Transient
//! [`StageError::Exhausted`]: crate::StageError::Exhausted

use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

/// How many times, and how patiently, a transient failure is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0: never retry).
    pub retries: u32,
    /// The wait before the first retry; it doubles with each further retry.
    pub backoff: Duration,
    /// No wait is longer than this (server hints included).
    pub max_delay: Duration,
    /// Scale each computed wait by a random factor in [0.5, 1), so callers that failed together
    /// do not retry together.
    pub jitter: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self::none()
    }
}

/// Whether a failure may be retried, and after how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Permanent: give up now.
    No,
    /// Transient: retry, after the server's hint when it gave one (e.g. `Retry-After`).
    After(Option<Duration>),
}

/// A failure that was not retried (again): the last error and the attempts made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GaveUp<E> {
    /// The last attempt's error.
    pub error: E,
    /// Attempts made, the first one included.
    pub attempts: u32,
    /// True when the error was transient but the retries ran out.
    pub exhausted: bool,
}

impl RetryPolicy {
    /// Never retry.
    pub const fn none() -> Self {
        Self {
            retries: 0,
            backoff: Duration::from_millis(200),
            max_delay: Duration::from_secs(60),
            jitter: true,
        }
    }

    /// `retries` retries starting at `backoff`, doubling, capped at a minute, with jitter.
    pub fn new(retries: u32, backoff: Duration) -> Self {
        Self {
            retries,
            backoff,
            ..Self::none()
        }
    }

    /// The wait before retry number `retry` (0 for the first retry): `hint` when the server gave
    /// one, else backoff · 2^retry with jitter; never more than `max_delay`.
    pub fn delay(&self, retry: u32, hint: Option<Duration>) -> Duration {
        let wait = hint.unwrap_or_else(|| {
            let base = self.backoff.saturating_mul(1u32 << retry.min(20));
            if self.jitter {
                base.mul_f64(0.5 + random_unit() * 0.5)
            } else {
                base
            }
        });
        wait.min(self.max_delay)
    }

    /// Runs `op(attempt)` (attempt 0, 1, …) until it succeeds, `classify` calls its error
    /// permanent, or the retries are spent, sleeping on the async runtime in between (so no
    /// thread, and no resource the caller releases inside `op`, is held while waiting).
    pub async fn run<T, E, F, Fut>(
        &self,
        mut op: F,
        classify: impl Fn(&E) -> Retry,
    ) -> Result<(T, u32), GaveUp<E>>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let mut attempt = 0;
        loop {
            match op(attempt).await {
                Ok(value) => return Ok((value, attempt + 1)),
                Err(error) => match self.next_wait(attempt, classify(&error)) {
                    Ok(wait) => tokio::time::sleep(wait).await,
                    Err(exhausted) => {
                        return Err(GaveUp {
                            error,
                            attempts: attempt + 1,
                            exhausted,
                        })
                    }
                },
            }
            attempt += 1;
        }
    }

    /// [`RetryPolicy::run`] for blocking code: sleeps the calling thread in between.
    pub fn run_blocking<T, E>(
        &self,
        mut op: impl FnMut(u32) -> Result<T, E>,
        classify: impl Fn(&E) -> Retry,
    ) -> Result<(T, u32), GaveUp<E>> {
        let mut attempt = 0;
        loop {
            match op(attempt) {
                Ok(value) => return Ok((value, attempt + 1)),
                Err(error) => match self.next_wait(attempt, classify(&error)) {
                    Ok(wait) => std::thread::sleep(wait),
                    Err(exhausted) => {
                        return Err(GaveUp {
                            error,
                            attempts: attempt + 1,
                            exhausted,
                        })
                    }
                },
            }
            attempt += 1;
        }
    }

    /// The wait before retrying after failed attempt `attempt`, or `Err(exhausted)` when giving
    /// up (`exhausted` is true when the failure was transient).
    fn next_wait(&self, attempt: u32, verdict: Retry) -> Result<Duration, bool> {
        match verdict {
            Retry::No => Err(false),
            Retry::After(_) if attempt >= self.retries => Err(true),
            Retry::After(hint) => Ok(self.delay(attempt, hint)),
        }
    }
}

/// A random number in [0, 1) from the standard library's randomly keyed hasher (jitter needs no
/// more than that).
fn random_unit() -> f64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0),
    );
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_stay_capped_and_honour_hints() {
        let p = RetryPolicy {
            jitter: false,
            max_delay: Duration::from_millis(700),
            ..RetryPolicy::new(5, Duration::from_millis(100))
        };
        let waits: Vec<u128> = (0..4).map(|r| p.delay(r, None).as_millis()).collect();
        assert_eq!(waits, [100, 200, 400, 700]);
        assert_eq!(p.delay(0, Some(Duration::from_secs(9))).as_millis(), 700);
        let jittered = RetryPolicy::new(1, Duration::from_millis(100)).delay(0, None);
        assert!(jittered >= Duration::from_millis(50) && jittered < Duration::from_millis(100));
    }

    #[test]
    fn transient_failures_are_retried_until_spent_and_permanent_ones_never() {
        let p = RetryPolicy::new(2, Duration::from_millis(1));
        let mut calls = 0;
        let out = p.run_blocking(
            |_| {
                calls += 1;
                Err::<(), _>("busy")
            },
            |_| Retry::After(None),
        );
        assert_eq!(
            out,
            Err(GaveUp {
                error: "busy",
                attempts: 3,
                exhausted: true
            })
        );
        assert_eq!(calls, 3);
        let out = p.run_blocking(|_| Err::<(), _>("bad"), |_| Retry::No);
        assert_eq!(out.map_err(|g| (g.attempts, g.exhausted)), Err((1, false)));
        let out = p.run_blocking(
            |a| if a < 2 { Err("busy") } else { Ok(a) },
            |_| Retry::After(None),
        );
        assert_eq!(out, Ok((2, 3)));
    }

    #[test]
    fn the_async_loop_retries_like_the_blocking_one() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        let p = RetryPolicy::new(3, Duration::from_millis(1));
        let out = runtime.block_on(p.run(
            |a| async move {
                if a < 1 {
                    Err("busy")
                } else {
                    Ok("done")
                }
            },
            |_| Retry::After(None),
        ));
        assert_eq!(out, Ok(("done", 2)));
    }
}
