//! The judge's tables (`judge`; see docs/judging.md): one row struct per table, which the judge
//! writes and the aggregation reads.

pub use super::episodes::{EPISODE_ID, EPOCH, TASK_ID, VARIANT};
/// A criterion's id.
pub const CRITERION_ID: &str = super::tasks::CRITERION_ID;
/// `verdicts.mode` / `failure_labels.mode`: `rule` | `llm`.
pub const MODE: &str = "mode";
/// `verdicts.verdict`: `pass` | `fail` | `unscored`.
pub const VERDICT: &str = "verdict";
/// `verdicts.failure_label`.
pub const FAILURE_LABEL: &str = "failure_label";
/// `scores.success`.
pub const SUCCESS: &str = "success";
/// `scores.score`.
pub const SCORE: &str = "score";

crate::tables::row::table! {
    /// One criterion's verdict on one episode.
    #[derive(Default)]
    pub struct Verdict as VERDICTS ("verdicts", "one row per episode × criterion (`judge`)") {
        /// from `episodes`
        pub episode_id: String,
        /// from `episodes`
        pub task_id: String,
        /// from `episodes`
        pub variant: String,
        /// from `episodes`
        pub epoch: u32,
        /// from `criteria`
        pub criterion_id: String,
        /// `action` \| `personalization`
        pub kind: String,
        /// personalization criteria
        pub slot_id: Option<String>,
        /// the slot's `inferable` \| `ask_only`
        pub source: Option<String>,
        /// `rule` \| `llm` (hybrid writes both rows)
        pub mode: String,
        /// `pass` \| `fail` \| `unscored` (an unparseable LLM verdict; never counted as pass)
        pub verdict: String,
        /// the judge's reason
        pub reason: Option<String>,
        /// for failed criteria: `silent_default`, `silent_guess`, `missed_inference`, `wrong_inference`, `over_ask`, `unavailable_kept_trying`, `unavailable_substituted`, `unavailable_skipped`, `action_incomplete`, `ignored_reply` (asked, still wrong); see [judging.md](judging.md)
        pub failure_label: Option<String>,
        /// which judge produced it (as `scores.judge`)
        pub judge: String,
    }
}

crate::tables::row::table! {
    /// One judged episode's scores: what the judge computes for it (`judging::episode`), the
    /// episode's identity and counts beside them.
    #[derive(Default)]
    pub struct Score as SCORES ("scores", "one row per episode (`judge`)") {
        /// from `episodes`
        pub episode_id: String,
        /// from `episodes`
        pub task_id: String,
        /// from `episodes`
        pub variant: String,
        /// from `episodes`
        pub epoch: u32,
        /// from `episodes`
        pub agent: String,
        /// the task's perturbation
        pub perturbation: String,
        /// the task's template: the bootstrap's cluster
        pub template: String,
        /// the episode's status
        pub status: String,
        /// every criterion passes; null when any is unscored
        pub success: Option<bool>,
        /// fraction of action criteria passed; null when the task has none
        pub action: Option<f64>,
        /// fraction of personalization criteria passed; null when none
        pub personalization: Option<f64>,
        /// fraction of inferable-slot criteria passed; null when none
        pub inferable: Option<f64>,
        /// fraction of ask-only-slot criteria passed; null when none
        pub ask_only: Option<f64>,
        /// hybrid S = λ·S_rule + (1−λ)·S_llm; the rule fraction in `rule` mode
        pub score: f64,
        /// λ (hybrid only)
        pub lambda: Option<f64>,
        /// agent steps
        pub steps: u32,
        /// ask_user actions
        pub ask_user_calls: u32,
        /// LLM verdicts that could not be read
        pub unscored: u32,
        /// steps that did not replay as recorded
        pub divergent_steps: u32,
        /// the first divergent step, in words
        pub divergence: Option<String>,
        /// the judge's token usage
        pub prompt_tokens_judge: u64,
        /// the judge's token usage
        pub completion_tokens_judge: u64,
        /// the judge's cost
        pub cost_judge: f64,
        /// which judge produced these numbers: `rule+scripted`, `hybrid_text:MODEL+llm:MODEL`, … (docs/judging.md)
        pub judge: String,
    }
}

crate::tables::row::table! {
    /// One information request of the interaction judge.
    #[derive(Default)]
    pub struct RequestRow as REQUESTS ("requests", "one row per information request (interaction judge)") {
        /// the episode
        pub episode_id: String,
        /// the `ask_user` step
        pub step: u32,
        /// one separately answerable request
        pub request: String,
        /// matched slot
        pub slot_id: Option<String>,
        /// `ask_only` \| `inferable`; null = irrelevant
        pub slot_source: Option<String>,
        /// asks again for a slot already asked
        pub repeat: bool,
        /// the slot's options form a small closed set
        pub closed_set: bool,
        /// the question offered them; null when not a closed set
        pub offered_options: Option<bool>,
        /// `scripted`, `llm`, `scripted_fallback`
        pub matcher: String,
        /// which judge produced it (as `scores.judge`)
        pub judge: String,
    }
}

crate::tables::row::table! {
    /// One episode's interaction figures, as the interaction judge counts them
    /// (`judging::interaction::summarize`).
    #[derive(Default)]
    pub struct Interaction as INTERACTION ("interaction", "one row per episode (interaction judge)") {
        /// from `episodes`
        pub episode_id: String,
        /// from `episodes`
        pub task_id: String,
        /// from `episodes`
        pub variant: String,
        /// from `episodes`
        pub epoch: u32,
        /// information requests
        pub requests: u32,
        /// matched to an ask-only slot
        pub matched_requests: u32,
        /// ask-only slots of the task
        pub ask_only_slots: u32,
        /// distinct ask-only slots asked
        pub matched_ask_only: u32,
        /// null when the task has no ask-only slot
        pub recall: Option<f64>,
        /// null when no request was made — undefined, not 0 or 1
        pub precision: Option<f64>,
        /// requests about closed-set slots
        pub closed_set_requests: u32,
        /// of those, requests that offered the options
        pub offered_options: u32,
        /// which judge produced it (as `scores.judge`)
        pub judge: String,
    }
}
