//! The task tables (`generate_tasks`, `import_review`, `validate_tasks`, `task_stats`,
//! `generate_knowu_tasks`); the JSON columns hold the values documented in tasks.md.

use prefflow_engine::schema::{ColumnDef as C, Dtype::*, TableDef};

/// A task's id, in every task table and in `episodes`, `verdicts`, `scores`.
pub const TASK_ID: &str = "task_id";
/// A slot's id.
pub const SLOT_ID: &str = "slot_id";
/// A criterion's id.
pub const CRITERION_ID: &str = "criterion_id";
/// The task's template (the bootstrap's cluster).
pub const TEMPLATE: &str = "template";
/// The task's instruction.
pub const INSTRUCTION: &str = "instruction";
/// The task's perturbation.
pub const PERTURBATION: &str = "perturbation";
/// `bundles.bundle`: the whole task bundle as JSON.
pub const BUNDLE: &str = "bundle";
/// A slot's or profile entry's source (`inferable` | `ask_only`).
pub const SOURCE: &str = "source";
/// A criterion's kind (`action` | `personalization`).
pub const KIND: &str = "kind";

/// The `tasks` table: one row per task. Its row is the domain's `tasks::Task` itself (declared
/// `is TASKS` there, its typed fields held by codecs as the types below), so no struct of
/// column cells stands between the task and its table.
pub static TASKS: TableDef = TableDef {
    name: "tasks",
    doc: "one row per task",
    columns: &[
        C::new(TASK_ID, Str, "task id"),
        C::new("persona", Str, "whose task it is"),
        C::new(TEMPLATE, Str, "the template it was instantiated from"),
        C::new(INSTRUCTION, Str, "the underspecified instruction"),
        C::new("apps", ListStr, "apps it touches"),
        C::new("category", Str, "the task's category"),
        C::new("task_type", Str, r"`operation` \| `qa`"),
        C::new(
            PERTURBATION,
            Str,
            r"`none` \| `instruction_override` \| `preference_shift` \| `unavailable_option`",
        ),
        C::new("cross_app", Bool, "whether it spans apps"),
        C::new(
            "domain",
            Str,
            "its domain group (`travel`, `food`, …; empty when the templates declare none)",
        ),
        C::new(
            "offered_apps",
            ListStr,
            "the apps whose tools a capped episode offers: its domain's, whatever the solution (empty: all)",
        ),
        C::new("overrides", Str, "JSON: `app_data`, `history`, `profile`"),
        C::new("hidden_context", Str, "JSON: `ask_only` by slot, `facts`, `unavailable`"),
        C::new(
            "reference_solution",
            Str,
            r#"JSON list of phone actions; arguments may be `{"$slot": id}` / `{"$fmt": text}`"#,
        ),
        C::new("defaults_solution", Str, "JSON list of phone actions"),
    ],
    open: false,
};

crate::tables::row::table! {
    /// One slot of a task.
    pub struct SlotRow as SLOTS ("slots", "one row per slot (a user-dependent detail the instruction omits)") {
        /// the task
        pub task_id: String,
        /// slot id
        pub slot_id: String,
        /// `inferable` \| `ask_only`
        pub source: String,
        /// history event ids
        pub evidence: Vec<String>,
        /// the value, for display
        pub value: String,
        /// the value as JSON
        pub value_json: String,
        /// words that name the slot in a question
        pub keywords: Vec<String>,
        /// the app's default for it
        pub app_default: Option<String>,
        /// profile entry or situational fact id
        pub profile_entry: Option<String>,
        /// one sentence saying what the slot is; enum values as words
        pub about: String,
    }
}

crate::tables::row::table! {
    /// One criterion of a task.
    pub struct CriterionRow as CRITERIA ("criteria", "one row per criterion") {
        /// the task
        pub task_id: String,
        /// criterion id
        pub criterion_id: String,
        /// `action` \| `personalization`
        pub kind: String,
        /// the slot (personalization only)
        pub slot_id: Option<String>,
        /// JSON, the predicate language
        pub predicate: String,
        /// what a judge checks
        pub rubric: String,
        /// checks text the user dictated: a judge model may accept a paraphrase under `hybrid`
        pub free_text: bool,
    }
}

crate::tables::row::table! {
    /// One task with its whole bundle.
    pub struct BundleRow as BUNDLES ("bundles", "one row per task with the whole bundle; what per-item stages read") {
        /// the task
        pub task_id: String,
        /// JSON: `task`, `slots`, `criteria`
        pub bundle: String,
    }
}

crate::tables::row::table! {
    /// One change a review round applied (`tasks::review` builds these as it applies a sheet).
    pub struct AuditRow as AUDIT ("audit", "one row per change a review round made") {
        /// the task
        pub task_id: String,
        /// `refinement` \| `validation`
        pub round: String,
        /// what changed
        pub field: String,
        /// before
        pub old: String,
        /// after
        pub new: String,
        /// who decided
        pub reviewer: String,
        /// why
        pub note: String,
        /// the sheet file
        pub sheet: String,
        /// its row
        pub row: u32,
    }
}

crate::tables::row::table! {
    /// A task whose instruction repeats an earlier task's.
    pub struct RepeatRow as REPEATS ("repeats", "one row per task whose instruction (case, spacing and final punctuation aside) is that of a task with a smaller id (`import_review`); `validate_tasks` rejects it as `duplicate_instruction`") {
        /// the later task
        pub task_id: String,
        /// the earlier task with the same instruction
        pub same_as: String,
    }
}

crate::tables::row::table! {
    /// One failed validation check of a task.
    pub struct RejectionRow as REJECTIONS ("rejections", "one row per failed validation check (`validate_tasks`)") {
        /// the task
        pub task_id: String,
        /// `overrides` \| `reference` \| `reference_asks` \| `defaults` \| `initial_state` \| `evidence` \| `leak` \| `unavailable` (checks), `quantity` \| `premise` \| `derivable` \| `artefacts` \| `source_mismatch` \| `guessable_count` \| `visible_choice` \| `duplicate_instruction` \| `unscored_step` \| `weekday_date` \| `unasked_own_value` (lints)
        pub check_name as "check": String,
        /// criterion or slot
        pub subject: Option<String>,
        /// what failed
        pub reason: String,
    }
}

/// Task-set statistics.
pub static STATS: TableDef = TableDef {
    name: "stats",
    doc: "Table D.1-style statistics of the task set (`task_stats`)",
    columns: &[
        C::new("section", Str, "what is counted"),
        C::new("key", Str, "which one"),
        C::new("value", F64, "the value"),
        C::nullable("paper", F64, "the paper's value, where it reports one"),
    ],
    open: false,
};

crate::tables::row::table! {
    /// One task's row of the review sheet: every cell text, as a CSV sheet holds it.
    pub struct SheetCells as SHEET ("sheet", "per task to review; every column str (a CSV sheet); reviewers fill the last six") {
        /// the task
        pub task_id: String,
        /// its template
        pub template: String,
        /// apps it touches, space-separated
        pub apps: String,
        /// its perturbation subset
        pub perturbation: String,
        /// `true` when its evidence spans apps
        pub cross_app: String,
        /// what the user says (checked on import; edits go to `new_instruction`)
        pub instruction: String,
        /// its slots with source and value
        pub slots: String,
        /// its criteria
        pub criteria: String,
        /// the reviewer's decision (refinement: `accept`/`reject`; validation: `confirm`/`flag`)
        pub decision: String,
        /// a rewritten instruction (empty: unchanged)
        pub new_instruction: String,
        /// `slot=inferable|ask_only; …` changes
        pub set_source: String,
        /// `slot=value; …` changes
        pub set_value: String,
        /// who reviewed
        pub reviewer: String,
        /// why
        pub note: String,
    }
}
