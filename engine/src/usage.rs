//! Usage accounting: what the external calls behind a result cost, by role and model.
//!
//! Kinds that call models report each call (or a batch of calls) to the [`UsageMeter`] in their
//! [`crate::StageContext`]; the engine writes the total into the result's manifest, sums items
//! into their instance, and keeps what a run spent in its run record (`prefflow show runs`). The
//! engine knows no roles or models: they are the kind's names (`agent`, `user`, `judge`, …).
//!
//! Calls the kind had to retry are tallied by cause ([`UsageMeter::retried`]) for the stage
//! instance as a whole, not stored: the run says them once per instance, when it ends.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

/// Counts for one role and model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct UsageCounts {
    /// Calls answered by the provider.
    pub requests: u64,
    /// Calls answered from the record/replay cache (no provider involved, no cost).
    pub replayed: u64,
    /// Prompt (input) tokens of the provider's calls.
    pub prompt_tokens: u64,
    /// Completion (output) tokens of the provider's calls.
    pub completion_tokens: u64,
    /// Of the prompt tokens, those the provider served from its prompt cache (as it reported
    /// them; priced separately by the kind). Left out of manifests and run records when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub cached_prompt_tokens: u64,
    /// Money spent on the provider's calls, in the currency of the configured prices (USD by
    /// convention); 0 when no prices are configured.
    pub cost: f64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl UsageCounts {
    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &UsageCounts) {
        self.requests += other.requests;
        self.replayed += other.replayed;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cached_prompt_tokens += other.cached_prompt_tokens;
        self.cost += other.cost;
    }

    /// True when nothing was counted.
    pub fn is_empty(&self) -> bool {
        *self == UsageCounts::default()
    }
}

/// Usage by role, then by model: `usage["agent"]["gpt-4o-mini"]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Usage(pub BTreeMap<String, BTreeMap<String, UsageCounts>>);

impl Usage {
    /// Adds `counts` under `role` and `model`.
    pub fn record(&mut self, role: &str, model: &str, counts: &UsageCounts) {
        self.0
            .entry(role.to_string())
            .or_default()
            .entry(model.to_string())
            .or_default()
            .add(counts);
    }

    /// Adds every entry of `other`.
    pub fn merge(&mut self, other: &Usage) {
        for (role, models) in &other.0 {
            for (model, counts) in models {
                self.record(role, model, counts);
            }
        }
    }

    /// True when no call was recorded.
    pub fn is_empty(&self) -> bool {
        self.0
            .values()
            .all(|m| m.values().all(UsageCounts::is_empty))
    }

    /// The sum over every role and model.
    pub fn total(&self) -> UsageCounts {
        let mut total = UsageCounts::default();
        for counts in self.0.values().flat_map(|m| m.values()) {
            total.add(counts);
        }
        total
    }
}

/// Where a running stage (or item) reports its usage. Shared by every call of one attempt
/// sequence, so concurrent calls of an async item may report at once.
#[derive(Debug, Default)]
pub struct UsageMeter {
    usage: Mutex<Usage>,
    retries: Arc<RetryTally>,
}

/// Retried calls by cause (`HTTP 503`, `timeout`, …), shared by the meters of one stage
/// instance's items.
#[derive(Debug, Default)]
pub struct RetryTally(Mutex<BTreeMap<String, u64>>);

impl RetryTally {
    /// The counts so far, by cause.
    pub fn counts(&self) -> BTreeMap<String, u64> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// One line for a log: `N call(s) retried: CAUSE ×K, …` (most frequent first), or `None`
    /// when nothing was retried.
    pub fn summary(&self) -> Option<String> {
        let mut counts: Vec<(String, u64)> = self.counts().into_iter().collect();
        let total: u64 = counts.iter().map(|(_, n)| n).sum();
        if total == 0 {
            return None;
        }
        counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let causes: Vec<String> = counts.iter().map(|(c, n)| format!("{c} ×{n}")).collect();
        Some(format!("{total} call(s) retried: {}", causes.join(", ")))
    }
}

impl UsageMeter {
    /// A meter with nothing recorded.
    pub fn new() -> Self {
        Self::default()
    }

    /// A meter with nothing recorded whose retries count into `retries` (the instance's
    /// tally, shared by its items).
    pub fn tallying(retries: Arc<RetryTally>) -> Self {
        Self {
            usage: Mutex::default(),
            retries,
        }
    }

    /// Counts one retried call (a fault the kind's client retried, or a rate limit it waited
    /// out) under `cause`.
    pub fn retried(&self, cause: &str) {
        *self
            .retries
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(cause.to_string())
            .or_default() += 1;
    }

    /// Records one call (or a batch) for `role` and `model`.
    pub fn record(&self, role: &str, model: &str, counts: &UsageCounts) {
        self.usage
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .record(role, model, counts);
    }

    /// What has been recorded so far.
    pub fn snapshot(&self) -> Usage {
        self.usage.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_adds_up_by_role_and_model_and_reads_old_manifests() {
        let meter = UsageMeter::new();
        let call = UsageCounts {
            requests: 1,
            prompt_tokens: 100,
            completion_tokens: 20,
            cost: 0.5,
            ..UsageCounts::default()
        };
        meter.record("agent", "m1", &call);
        meter.record("agent", "m1", &call);
        meter.record("judge", "m2", &call);
        let mut usage = meter.snapshot();
        assert_eq!(usage.0["agent"]["m1"].prompt_tokens, 200);
        usage.merge(&meter.snapshot());
        assert_eq!(usage.total().requests, 6);
        assert_eq!(usage.total().cost, 3.0);
        // Manifests written before usage was typed hold `{}`.
        let old: Usage = serde_json::from_str("{}").expect("empty usage");
        assert!(old.is_empty());
    }

    #[test]
    fn retries_of_an_instances_items_add_up_by_cause() {
        let tally = Arc::new(RetryTally::default());
        assert_eq!(tally.summary(), None);
        let (a, b) = (
            UsageMeter::tallying(tally.clone()),
            UsageMeter::tallying(tally.clone()),
        );
        a.retried("HTTP 503");
        b.retried("HTTP 503");
        b.retried("timeout");
        assert!(a.snapshot().is_empty(), "retries are not usage");
        assert_eq!(
            tally.summary().as_deref(),
            Some("3 call(s) retried: HTTP 503 ×2, timeout ×1")
        );
    }
}
