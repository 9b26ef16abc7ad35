//! Estimates of what a run would ask of external models, made by `plan` before anything runs:
//! per role and model, the requests, prompt and completion tokens and money, as ranges, and how
//! much of it is already recorded (free on replay).
//!
//! The engine knows no roles or models (as in [`crate::usage`]); a kind that calls models
//! implements [`crate::Kind::estimate`] and says what its items would cost from its inputs. An
//! instance whose inputs are not computed yet gets the estimates of the upstream instances that
//! run first ([`EstimateContext::upstream`]), whose named quantities ([`Estimate::produces`],
//! e.g. `episodes`, `questions`) let it estimate from what they will produce.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::tables::InputTable;

/// A quantity known only as a range (`low == high` when exact).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Range {
    /// The least it may be.
    pub low: f64,
    /// The most it may be.
    pub high: f64,
}

impl Range {
    /// An exact value.
    pub fn exact(v: f64) -> Self {
        Self { low: v, high: v }
    }

    /// `[low, high]` (swapped when given the wrong way round).
    pub fn new(low: f64, high: f64) -> Self {
        Self {
            low: low.min(high),
            high: low.max(high),
        }
    }

    /// The sum of two ranges.
    pub fn plus(self, other: Range) -> Range {
        Range {
            low: self.low + other.low,
            high: self.high + other.high,
        }
    }

    /// The range scaled by `k`.
    pub fn times(self, k: f64) -> Range {
        Range::new(self.low * k, self.high * k)
    }
}

/// What one role's calls to one model would cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EstimateRow {
    /// The caller's role (`agent`, `user`, `judge`, …).
    pub role: String,
    /// The model, as the kind names it.
    pub model: String,
    /// The work units behind the row (episodes, items) still to run.
    pub units: u64,
    /// What a unit is (`episodes`, `items`), for the reader.
    pub unit: String,
    /// Requests.
    pub requests: Range,
    /// Prompt tokens over those requests.
    pub prompt_tokens: Range,
    /// Completion tokens over those requests.
    pub completion_tokens: Range,
    /// Money, when the model's prices are known.
    pub cost: Option<Range>,
    /// Units whose requests are already recorded (they replay for free), when the kind can tell.
    pub recorded: Option<u64>,
}

/// What a run of one instance would ask of external models.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// One row per role and model.
    pub rows: Vec<EstimateRow>,
    /// Quantities the instance will produce that downstream estimates read (`episodes`,
    /// `questions`, …), by name.
    pub produces: BTreeMap<String, Range>,
    /// How the figures were made (the token counter, what the ranges assume).
    pub notes: Vec<String>,
    /// Why the run would fail for sure (a request over the model's context window), each with
    /// its fix; `plan` reports them as errors.
    pub problems: Vec<String>,
}

/// What a kind's estimate sees.
pub struct EstimateContext<'a> {
    /// The stage's name.
    pub stage: &'a str,
    /// The variant's name.
    pub variant: &'a str,
    /// Directory relative paths in params are resolved against.
    pub workdir: &'a std::path::Path,
    /// The run's store (to tell which requests are recorded).
    pub cache: &'a dyn crate::store::Store,
    /// The inputs whose upstream results are in the store, whole (others are absent).
    pub inputs: &'a [InputTable],
    /// For a per-item instance with its main input known: the items that would run (cached
    /// items cost nothing and are left out).
    pub items: Option<&'a [String]>,
    /// Items that are already cached (free).
    pub cached_items: usize,
    /// The estimates of upstream instances that run first (their results are not in the store).
    pub upstream: &'a [Estimate],
}

impl EstimateContext<'_> {
    /// An input by `stage.table`, by `stage` (when it has one table) or by table name, when
    /// its upstream result is known.
    pub fn input(&self, name: &str) -> Option<&polars::prelude::DataFrame> {
        let by_label = self.inputs.iter().find(|t| t.label() == name);
        let by_table = || self.inputs.iter().find(|t| t.table == name);
        by_label.or_else(by_table).map(|t| &t.df)
    }

    /// The sum of a quantity the upstream estimates produce, if any does.
    pub fn upstream_quantity(&self, name: &str) -> Option<Range> {
        self.upstream
            .iter()
            .filter_map(|e| e.produces.get(name).copied())
            .reduce(Range::plus)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_add_and_scale() {
        let r = Range::new(3.0, 1.0).plus(Range::exact(2.0)).times(2.0);
        assert_eq!(
            r,
            Range {
                low: 6.0,
                high: 10.0
            }
        );
    }
}
