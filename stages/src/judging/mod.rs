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
//! - `verdict`: a criterion's [`Verdict`], and [`JudgeError`], why judging could not start.

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
mod verdict;

pub use episode::{judge_batch, judge_episode, judge_label, EpisodeJudgement, JudgeOptions, Mode};
pub use index::{EpisodeInfo, JudgeIndex, StepRec};
pub use interaction::MatcherName;
pub use verdict::{JudgeError, Verdict};
