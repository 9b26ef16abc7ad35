//! What a judge model's calls would cost, before the run (`prefflow plan`): one request per
//! criterion the model rules on ([`Mode::llm_judges`]) per episode, and with the LLM matcher one
//! per question. Episodes and questions come from the episodes table when it is in the store,
//! else from the episode stage's own estimate (what it will produce). Prompt tokens use the one
//! counter ([`crate::llm::tokens`]) on the prompt's parts: the template, the task's instruction,
//! rubric and hidden context, and a trajectory as long as the reference solution.

use polars::prelude::DataFrame;
use prefflow_engine::estimate::{Estimate, EstimateRow, Range};

use super::episode::Mode;
use crate::llm::tokens::{text_tokens, PER_MESSAGE, PER_REQUEST};
use crate::llm::LlmConfig;
use crate::report::text_column;
use crate::tasks::TaskBundle;

/// Tokens of a verdict (`{"verdict": …, "reason": one sentence}`) or a request split.
const REPLY_TOKENS: u64 = 45;
/// Tokens of one trajectory line (`3. app.op {args} [ok] → user: …`).
const STEP_TOKENS: u64 = 30;
/// Tokens of the persona's profile lines in a criterion prompt (about 100 `key: value` lines).
const PROFILE_TOKENS: u64 = 1_100;

/// Everything a judge stage's estimate reads.
pub struct JudgedStage<'a> {
    /// The effective criterion mode.
    pub mode: Mode,
    /// Whether questions are matched by the model.
    pub llm_matcher: bool,
    /// The judge model.
    pub config: &'a LlmConfig,
    /// The task set.
    pub bundles: &'a [TaskBundle],
    /// The episodes still to judge, when the episodes table is in the store.
    pub items: Option<&'a [String]>,
    /// The steps table, when in the store (questions counted exactly).
    pub steps: Option<&'a DataFrame>,
    /// Episodes the upstream episode stage will produce, when it runs first.
    pub episodes: Option<Range>,
    /// Questions it will ask (its estimate's range).
    pub questions: Option<Range>,
    /// Tokens of the criterion template.
    pub criterion_template: u64,
    /// Tokens of the request-matcher template.
    pub requests_template: u64,
}

impl JudgedStage<'_> {
    /// The judge's row, or why it cannot be estimated yet.
    pub fn estimate(&self) -> Result<Estimate, String> {
        let n_tasks = self.bundles.len().max(1) as f64;
        let episodes = match (self.items, self.episodes) {
            (Some(items), _) => Range::exact(items.len() as f64),
            (None, Some(e)) => e,
            (None, None) => {
                return Err(
                    "needs the episodes (or the estimate of the stage that plays them)".into(),
                )
            }
        };
        let (calls, prompt) = self.bundles.iter().fold((0.0, 0.0), |(c, p), b| {
            let judged: Vec<_> = b
                .criteria
                .iter()
                .filter(|c| self.mode.llm_judges(c))
                .collect();
            let shared = self.criterion_template
                + PROFILE_TOKENS
                + text_tokens(&b.task.instruction)
                + text_tokens(&serde_json::to_string(&b.task.hidden_context).unwrap_or_default())
                + STEP_TOKENS * (b.task.reference_solution.len() as u64 + 1)
                + PER_MESSAGE
                + PER_REQUEST;
            let tokens: u64 = judged.iter().map(|c| shared + text_tokens(&c.rubric)).sum();
            (c + judged.len() as f64, p + tokens as f64)
        });
        let per_episode = Range::exact(calls / n_tasks);
        let mut requests = episodes.times(per_episode.low);
        let mut prompt_tokens = episodes.times(prompt / n_tasks);
        if self.llm_matcher {
            let questions = match (self.items, self.steps) {
                (Some(items), Some(steps)) => Range::exact(asks(steps, items) as f64),
                _ => self.questions.unwrap_or_default(),
            };
            // Each slot's line: id, source and keywords (~12 tokens) and its `about` sentence.
            let slot_lines = self
                .bundles
                .iter()
                .flat_map(|b| &b.slots)
                .map(|s| 12 + text_tokens(&s.about))
                .sum::<u64>() as f64
                / n_tasks;
            let per_question =
                (self.requests_template + PER_MESSAGE + PER_REQUEST) as f64 + slot_lines + 25.0;
            requests = requests.plus(questions);
            prompt_tokens = prompt_tokens.plus(questions.times(per_question));
        }
        let completion = requests.times(REPLY_TOKENS as f64);
        let cost = self.config.prices.map(|p| {
            prompt_tokens
                .times(p.prompt_per_mtok / 1e6)
                .plus(completion.times(p.completion_per_mtok / 1e6))
        });
        Ok(Estimate {
            rows: vec![EstimateRow {
                role: "judge".into(),
                model: self.config.model.clone(),
                units: episodes.high as u64,
                unit: "episodes".into(),
                requests,
                prompt_tokens,
                completion_tokens: completion,
                cost,
                recorded: None,
            }],
            notes: vec![format!(
                "judge: {:.1} criterion calls per episode ({:?} mode){}; prompt tokens from the template, the task, ~{PROFILE_TOKENS} of profile and a trajectory as long as the reference",
                calls / n_tasks,
                self.mode,
                if self.llm_matcher { ", and one call per question (LLM matcher)" } else { "" }
            )],
            ..Estimate::default()
        })
    }
}

/// `ask_user` steps of the episodes in `items`.
fn asks(steps: &DataFrame, items: &[String]) -> usize {
    let keep: std::collections::HashSet<&str> = items.iter().map(String::as_str).collect();
    let (Ok(ids), Ok(kinds)) = (
        text_column(steps, crate::tables::episodes::EPISODE_ID),
        text_column(steps, crate::tables::episodes::ACTION_TYPE),
    ) else {
        return 0;
    };
    ids.iter()
        .zip(&kinds)
        .filter(|(id, kind)| {
            kind.as_deref() == Some("ask_user") && id.as_deref().is_some_and(|i| keep.contains(i))
        })
        .count()
}
