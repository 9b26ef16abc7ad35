//! Judging episodes (iPrefBench §3.4, E.2–E.3, G.3–G.4; issue 6): every criterion of a task is
//! judged independently on the replayed episode, the agent's questions are split into
//! information requests and matched to slots, and failed criteria get a failure label.
//!
//! - [`index`]: the per-episode index of `steps` and `bundles`, memoized across items.
//! - [`replay`]: rebuilds the final phone from recorded steps, reporting divergences.
//! - [`rule`]: criterion verdicts from the task's predicates (exact, free).
//! - [`llm`]: criterion verdicts and request matching by an LLM judge (cached).
//! - [`interaction`]: information requests, slot matching, recall/precision inputs.
//! - [`labels`]: failure labels of failed criteria.
//! - [`episode`]: one episode judged end to end, and a batch of them.
//! - [`frames`]: the `verdicts`, `scores`, `requests` and `interaction` tables.

pub mod episode;
pub mod estimate;
pub mod frames;
pub mod index;
pub mod interaction;
pub mod labels;
pub mod llm;
pub mod replay;
pub mod rule;
#[cfg(test)]
mod tests;

pub use episode::{judge_batch, judge_episode, judge_label, EpisodeJudgement, JudgeOptions, Mode};
pub use index::{EpisodeInfo, JudgeIndex, StepRec};
pub use interaction::MatcherName;

/// A judge's decision on one criterion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Clear evidence the criterion holds.
    Pass,
    /// It does not hold.
    Fail,
    /// The judge's reply could not be read; never counted as a pass.
    Unscored,
}

impl Verdict {
    /// The table spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Unscored => "unscored",
        }
    }
}

/// Why judging an episode could not start.
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    /// An input table lacks a column or has an unreadable value.
    #[error("{0}")]
    Input(String),
    /// The LLM judge failed after retries (or an offline replay missed).
    #[error("LLM judge: {0}")]
    Llm(#[from] crate::llm::LlmError),
    /// Building a table failed.
    #[error("building judge tables: {0}")]
    Polars(#[from] polars::prelude::PolarsError),
}

impl From<JudgeError> for prefflow_engine::StageError {
    fn from(e: JudgeError) -> Self {
        match e {
            JudgeError::Llm(l) => l.into(),
            JudgeError::Input(m) => prefflow_engine::StageError::Input(m),
            JudgeError::Polars(p) => p.into(),
        }
    }
}
