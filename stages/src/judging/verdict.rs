//! What every judge says and how judging fails: a criterion's [`Verdict`], and [`JudgeError`],
//! why judging an episode could not start. The judges (rule, LLM) and the episode driver share
//! them.

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
