//! The judge's tables (`judge`; see docs/judging.md).

use prefflow_engine::schema::{ColumnDef as C, Dtype::*, TableDef};

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

/// One row per episode × criterion.
pub static VERDICTS: TableDef = TableDef {
    name: "verdicts",
    doc: "one row per episode × criterion (`judge`)",
    columns: &[
        C::new(EPISODE_ID, Str, "from `episodes`"),
        C::new(TASK_ID, Str, "from `episodes`"),
        C::new(VARIANT, Str, "from `episodes`"),
        C::new(EPOCH, U32, "from `episodes`"),
        C::new(CRITERION_ID, Str, "from `criteria`"),
        C::new("kind", Str, "`action` \\| `personalization`"),
        C::nullable("slot_id", Str, "personalization criteria"),
        C::nullable("source", Str, "the slot's `inferable` \\| `ask_only`"),
        C::new(MODE, Str, "`rule` \\| `llm` (hybrid writes both rows)"),
        C::new(VERDICT, Str, "`pass` \\| `fail` \\| `unscored` (an unparseable LLM verdict; never counted as pass)"),
        C::nullable("reason", Str, "the judge's reason"),
        C::nullable(FAILURE_LABEL, Str, "for failed criteria: `silent_default`, `silent_guess`, `missed_inference`, `wrong_inference`, `over_ask`, `unavailable_kept_trying`, `unavailable_substituted`, `unavailable_skipped`, `action_incomplete`, `ignored_reply` (asked, still wrong); see [judging.md](judging.md)"),
        C::new(
            "judge",
            Str,
            "which judge produced it (as `scores.judge`)",
        ),
    ],
    open: false,
};

/// One row per judged episode.
pub static SCORES: TableDef = TableDef {
    name: "scores",
    doc: "one row per episode (`judge`)",
    columns: &[
        C::new(EPISODE_ID, Str, "from `episodes`"),
        C::new(TASK_ID, Str, "from `episodes`"),
        C::new(VARIANT, Str, "from `episodes`"),
        C::new(EPOCH, U32, "from `episodes`"),
        C::new("agent", Str, "from `episodes`"),
        C::new("perturbation", Str, "the task's perturbation"),
        C::new(
            "template",
            Str,
            "the task's template: the bootstrap's cluster",
        ),
        C::new("status", Str, "the episode's status"),
        C::nullable(
            SUCCESS,
            Bool,
            "every criterion passes; null when any is unscored",
        ),
        C::nullable(
            "action",
            F64,
            "fraction of action criteria passed; null when the task has none",
        ),
        C::nullable(
            "personalization",
            F64,
            "fraction of personalization criteria passed; null when none",
        ),
        C::nullable(
            "inferable",
            F64,
            "fraction of inferable-slot criteria passed; null when none",
        ),
        C::nullable(
            "ask_only",
            F64,
            "fraction of ask-only-slot criteria passed; null when none",
        ),
        C::new(
            SCORE,
            F64,
            "hybrid S = λ·S_rule + (1−λ)·S_llm; the rule fraction in `rule` mode",
        ),
        C::nullable("lambda", F64, "λ (hybrid only)"),
        C::new("steps", U32, "agent steps"),
        C::new("ask_user_calls", U32, "ask_user actions"),
        C::new("unscored", U32, "LLM verdicts that could not be read"),
        C::new(
            "divergent_steps",
            U32,
            "steps that did not replay as recorded",
        ),
        C::nullable("divergence", Str, "the first divergent step, in words"),
        C::new("prompt_tokens_judge", U64, "the judge's token usage"),
        C::new("completion_tokens_judge", U64, "the judge's token usage"),
        C::new("cost_judge", F64, "the judge's cost"),
        C::new(
            "judge",
            Str,
            "which judge produced these numbers: `rule+scripted`, `hybrid_text:MODEL+llm:MODEL`, … (docs/judging.md)",
        ),
    ],
    open: false,
};

/// One row per information request of the interaction judge.
pub static REQUESTS: TableDef = TableDef {
    name: "requests",
    doc: "one row per information request (interaction judge)",
    columns: &[
        C::new(EPISODE_ID, Str, "the episode"),
        C::new("step", U32, "the `ask_user` step"),
        C::new("request", Str, "one separately answerable request"),
        C::nullable("slot_id", Str, "matched slot"),
        C::nullable(
            "slot_source",
            Str,
            "`ask_only` \\| `inferable`; null = irrelevant",
        ),
        C::new("repeat", Bool, "asks again for a slot already asked"),
        C::new(
            "closed_set",
            Bool,
            "the slot's options form a small closed set",
        ),
        C::nullable(
            "offered_options",
            Bool,
            "the question offered them; null when not a closed set",
        ),
        C::new("matcher", Str, "`scripted`, `llm`, `scripted_fallback`"),
        C::new("judge", Str, "which judge produced it (as `scores.judge`)"),
    ],
    open: false,
};

/// One row per episode of the interaction judge.
pub static INTERACTION: TableDef = TableDef {
    name: "interaction",
    doc: "one row per episode (interaction judge)",
    columns: &[
        C::new(EPISODE_ID, Str, "from `episodes`"),
        C::new(TASK_ID, Str, "from `episodes`"),
        C::new(VARIANT, Str, "from `episodes`"),
        C::new(EPOCH, U32, "from `episodes`"),
        C::new("requests", U32, "information requests"),
        C::new("matched_requests", U32, "matched to an ask-only slot"),
        C::new("ask_only_slots", U32, "ask-only slots of the task"),
        C::new("matched_ask_only", U32, "distinct ask-only slots asked"),
        C::nullable("recall", F64, "null when the task has no ask-only slot"),
        C::nullable(
            "precision",
            F64,
            "null when no request was made — undefined, not 0 or 1",
        ),
        C::new(
            "closed_set_requests",
            U32,
            "requests about closed-set slots",
        ),
        C::new(
            "offered_options",
            U32,
            "of those, requests that offered the options",
        ),
        C::new("judge", Str, "which judge produced it (as `scores.judge`)"),
    ],
    open: false,
};
