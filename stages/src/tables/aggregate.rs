//! The aggregate tables (`aggregate`, `judge_agreement`, `report`; see docs/metrics.md).

use prefflow_engine::schema::{ColumnDef as C, Dtype::*, TableDef};

pub use super::episodes::VARIANT;
/// The metric a row reports.
pub const METRIC: &str = "metric";
/// A metric's value.
pub const VALUE: &str = "value";
/// The lower end of a 95% bootstrap interval.
pub const CI_LOW: &str = "ci_low";
/// The upper end of a 95% bootstrap interval.
pub const CI_HIGH: &str = "ci_high";
/// How many tasks a value is over.
pub const N: &str = "n";

/// Table 1.
pub static TABLE1: TableDef = TableDef {
    name: "table1",
    doc: "per variant × metric",
    columns: &[
        C::new(VARIANT, Str, "the variant"),
        C::new(METRIC, Str, "`success`, `action`, `personalization`, `inferable`, `ask_only`, `recall`, `precision`, `ask_user_calls`, `steps`"),
        C::nullable(VALUE, F64, "the metric"),
        C::nullable(CI_LOW, F64, "95% bootstrap, seeded, resampling templates: the variants of one template are one cluster"),
        C::nullable(CI_HIGH, F64, "see `ci_low`"),
        C::new(N, U32, "tasks"),
        C::new("templates", U32, "templates behind those tasks; scores without a `template` column count each task as its own"),
        C::nullable("judge", Str, "which judge produced the variant's numbers (`scores.judge`: `rule+scripted (offline)` for the offline judge, `hybrid_text:MODEL+llm:MODEL` for a judge model, …; several, comma-separated, if its scores mix them); null when the scores carry none"),
        C::nullable("agent", Str, "who played the variant (`episodes.agent`: `oracle`, `llm:<provider model id>`, …): with the variant's `model=<name>`, a model column carries both its name and the id the provider was asked for; null without `episodes`"),
        C::nullable("user", Str, "who answered the variant's questions (`episodes.user`: `scripted`, `llm:<model>` for the user simulator's own model, `llm:<model> (the model under test)` when asked for); null when the episodes do not say"),
        C::new("display", Str, "the value as printed (`61.5% [53.1, 70.0]`, `n/a`)"),
    ],
    open: false,
};

/// Paired differences.
pub static PAIRED: TableDef = TableDef {
    name: "paired",
    doc: "per variant × metric, against the baseline",
    columns: &[
        C::new(VARIANT, Str, "the variant"),
        C::new("baseline", Str, "the baseline variant"),
        C::new(METRIC, Str, "the metric"),
        C::nullable("diff", F64, "variant − baseline on common tasks"),
        C::nullable(
            CI_LOW,
            F64,
            "resampling templates, the same for both variants",
        ),
        C::nullable(CI_HIGH, F64, "see `ci_low`"),
        C::new(N, U32, "common tasks"),
        C::new("wins", U32, "tasks where the variant is better"),
        C::new("ties", U32, "tasks where they tie"),
        C::new("losses", U32, "tasks where the baseline is better"),
        C::nullable(
            "judge",
            Str,
            "which judge produced the variant's numbers (as in `table1`)",
        ),
        C::nullable(
            "note",
            Str,
            "why the row is not compared (`diff` and its interval null): the variant and the baseline were judged by different judges; null otherwise",
        ),
    ],
    open: false,
};

/// pass^k and pass@k.
pub static PASS_K: TableDef = TableDef {
    name: "pass_k",
    doc: "per variant × k",
    columns: &[
        C::new(VARIANT, Str, "the variant"),
        C::new("k", U32, "epochs"),
        C::new("pass_hat_k", F64, "pass^k"),
        C::new("pass_at_k", F64, "pass@k"),
        C::new(N, U32, "tasks with ≥ k scored epochs"),
        C::nullable(
            "judge",
            Str,
            "which judge produced the variant's numbers (as in `table1`)",
        ),
    ],
    open: false,
};

/// Figure 2: perturbation subsets.
pub static PERTURBATIONS: TableDef = TableDef {
    name: "perturbations",
    doc: "per variant × perturbation × metric (Figure 2)",
    columns: &[
        C::new(VARIANT, Str, "the variant"),
        C::new("perturbation", Str, "the subset"),
        C::new(METRIC, Str, "the metric"),
        C::nullable(VALUE, F64, "on the subset"),
        C::nullable("overall", F64, "on every task"),
        C::nullable("delta", F64, "value − overall"),
        C::new(N, U32, "subset tasks"),
    ],
    open: false,
};

/// Figure 4: metrics per history exposure.
pub static HISTORY_CURVE: TableDef = TableDef {
    name: "history_curve",
    doc: "per variant × exposure × metric (Figure 4)",
    columns: &[
        C::new(VARIANT, Str, "the variant"),
        C::new("exposure", Str, "the history exposure"),
        C::nullable("top_k", U32, "0 for `none`, null for `all`"),
        C::new(METRIC, Str, "the metric"),
        C::nullable(VALUE, F64, "the metric"),
        C::nullable(CI_LOW, F64, "95% bootstrap"),
        C::nullable(CI_HIGH, F64, "see `ci_low`"),
        C::new(N, U32, "tasks"),
    ],
    open: false,
};

/// Figure 3: failure-label distribution.
pub static FAILURE_LABELS: TableDef = TableDef {
    name: "failure_labels",
    doc: "per variant × judge mode × failure label (Figure 3)",
    columns: &[
        C::new(VARIANT, Str, "the variant"),
        C::new("mode", Str, "the judge mode"),
        C::new("failure_label", Str, "the label (`unlabelled` when none)"),
        C::new("count", U32, "failed criteria with it"),
        C::new("share", F64, "of the failed criteria of variant × mode"),
    ],
    open: false,
};

/// Judge agreement (`judge_agreement`).
pub static AGREEMENT: TableDef = TableDef {
    name: "agreement",
    doc: "per level × pair of raters (`judge_agreement`)",
    columns: &[
        C::new(
            "level",
            Str,
            "authored set: `criterion` \\| `success` \\| `recall` \\| `extra` \\| `simulator`; episode-keyed CSVs: `criterion` \\| `success` \\| `slot`",
        ),
        C::new(
            "pair",
            Str,
            "authored set: `<judge>~gold` (e.g. `rule+scripted~gold`), `pass1~pass2`, `<simulator variant>~valid`; episode-keyed CSVs: `rule~human`, `llm~human`, `llm~rule`, `interaction~human`",
        ),
        C::new(N, U32, "items both rated"),
        C::new("agree", U32, "items they agree on"),
        C::nullable("p_o", F64, "observed agreement"),
        C::nullable("p_e", F64, "chance agreement"),
        C::nullable("kappa", F64, "Cohen's κ (null when undefined)"),
        C::new("excluded", U32, "items left out"),
    ],
    open: false,
};

/// The human labels `judge_agreement` read.
pub static LABELS: TableDef = TableDef {
    name: "labels",
    doc: "one row per human label (`judge_agreement`)",
    columns: &[
        C::new("episode_id", Str, "the episode"),
        C::nullable("criterion_id", Str, "the criterion"),
        C::nullable("slot_id", Str, "the slot"),
        C::new(
            "label",
            Str,
            "`pass` \\| `fail` \\| `asked` \\| `not_asked`",
        ),
        C::new("file", Str, "the labels file"),
        C::new("line", U32, "its line"),
    ],
    open: false,
};

/// The authored labelled episodes `judge_agreement` read.
pub static LABELLED_EPISODES: TableDef = TableDef {
    name: "labelled",
    doc: "one row per authored episode of the labelled set (`judge_agreement`; datasets/judge-labels/README.md)",
    columns: &[
        C::new("episode", Str, "`<task_id>/<name>`"),
        C::new("task_id", Str, "the task it was written for"),
        C::new("epoch", U32, "the epoch it is played as"),
        C::new(
            "status",
            Str,
            "`ok` \\| `stale` (the task changed) \\| `unfingerprinted` \\| `unknown_task`; only `ok` episodes count",
        ),
        C::nullable("fingerprint", Str, "the task's fingerprint now (copy it into a new file)"),
        C::nullable("stored", Str, "the fingerprint in the file"),
        C::new("behaviour", Str, "the file's tags, comma-separated"),
        C::new("asks", U32, "its `ask` steps"),
    ],
    open: false,
};

/// Disagreements of the two annotation passes.
pub static DISAGREEMENTS: TableDef = TableDef {
    name: "disagreements",
    doc: "one row per judgement the two passes disagree on (`judge_agreement`)",
    columns: &[
        C::new("episode", Str, "`<task_id>/<name>`"),
        C::new(
            "level",
            Str,
            "`criterion` \\| `success` \\| `recall` \\| `extra`",
        ),
        C::new("subject", Str, "criterion id, ask-only slot id, or empty"),
        C::new("pass1", Str, "pass 1's value (empty: not labelled)"),
        C::new("pass2", Str, "pass 2's value"),
        C::nullable(
            "resolved",
            Str,
            "the adjudication (null: unresolved, left out)",
        ),
    ],
    open: false,
};

/// Where a judge differs from the gold labels of the authored episodes.
pub static JUDGE_ERRORS: TableDef = TableDef {
    name: "judge_errors",
    doc: "one row per gold judgement a judge gets wrong (`judge_agreement`): what to read when a judge's agreement is low",
    columns: &[
        C::new("judge", Str, "the judge (`scores.judge`)"),
        C::new("episode", Str, "`<task_id>/<name>`"),
        C::new(
            "level",
            Str,
            "`criterion` \\| `success` \\| `recall` \\| `extra`",
        ),
        C::new("subject", Str, "criterion id, ask-only slot id, or empty"),
        C::new("judged", Str, "the judge's value"),
        C::new("gold", Str, "the gold label"),
    ],
    open: false,
};

/// The simulator check over question–answer pairs.
pub static SIMULATOR_CHECK: TableDef = TableDef {
    name: "simulator",
    doc: "one row per question–answer pair of the labelled episodes (`judge_agreement`)",
    columns: &[
        C::new(
            "simulator",
            Str,
            "the episodes' variant (which user answered)",
        ),
        C::new("episode", Str, "`<task_id>/<name>`"),
        C::new("ask", U32, "1-based ask number"),
        C::new("question", Str, "the agent's message"),
        C::new("reply", Str, "the simulator's reply"),
        C::new(
            "asked",
            Str,
            "slots the gold pieces request, comma-separated",
        ),
        C::new("disclosed", Str, "slots whose value the reply states"),
        C::new("answered", Bool, "every asked slot's value is in the reply"),
        C::new(
            "grounded",
            Bool,
            "states a slot value, or says it does not know",
        ),
        C::new("volunteered", Bool, "disclosed a slot nobody asked about"),
        C::new("valid", Bool, "answered, grounded, nothing volunteered"),
    ],
    open: false,
};

/// The HTML report (`report`).
pub static REPORT: TableDef = TableDef {
    name: "report",
    doc: "one row: the report written (`report`)",
    columns: &[
        C::new("path", Str, "where"),
        C::new("bytes", U64, "its size"),
        C::new("tasks", U32, "tasks in the drill-down"),
    ],
    open: false,
};

/// Table 1's companion: what the variant's model calls cost.
pub static USAGE: TableDef = TableDef {
    name: "usage",
    doc: "per variant × role (`agent`, `user`, `judge`) with any tokens; sums over the variant's episodes",
    columns: &[
        C::new(VARIANT, Str, "the variant (its model is in the name: `agent=llm,model=NAME,…`)"),
        C::new("role", Str, "`agent`, `user` (the simulator) or `judge`"),
        C::new("episodes", U32, "episodes summed"),
        C::new("prompt_tokens", U64, "prompt tokens"),
        C::new("completion_tokens", U64, "completion tokens"),
        C::new("cached_prompt_tokens", U64, "of the prompt tokens, those the provider served from its prompt cache (`cached_tokens_<role>` of the episodes; 0 when it reports none)"),
        C::new("cost", F64, "money at each model's configured `prices`, cached prompt tokens at `cached_prompt_per_mtok` (0 without prices; replayed calls cost what they cost when recorded)"),
        C::nullable("judge", Str, "which judge produced the variant's numbers, as in `table1`"),
    ],
    open: false,
};
