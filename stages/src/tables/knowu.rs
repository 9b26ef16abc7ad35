//! The KnowU-Bench tables (`generate_knowu_tasks`, `import_knowu_runs`, `export_knowu_runs`,
//! `knowu_metrics`, `knowu_leaderboard`; see docs/knowu.md). Their columns follow KnowU-Bench's
//! own files (tasks.csv, eval reports, METRICS.md), so the names keep KnowU's spelling.

use prefflow_engine::schema::{ColumnDef as C, Dtype::*, TableDef};

pub use super::episodes::VARIANT;
/// The agent a run's episodes were played by.
pub const AGENT: &str = "agent";
/// KnowU's split: `general`, `personalized` or `proactive`.
pub const SPLIT: &str = "split";
/// A task's difficulty: `easy` or `hard` (`all` in `splits`).
pub const DIFFICULTY: &str = "difficulty";
/// The KnowU persona (profile) a task belongs to.
pub const PERSONA: &str = "persona";
/// Episodes counted in a row.
pub const EPISODES: &str = "episodes";
/// Episodes of a row whose persona has no profile.
pub const MISSING_PROFILE_EPISODES: &str = "missing_profile_episodes";

crate::table! {
    /// One generated KnowU task: tasks.csv's columns, then prefflow's.
    pub struct KnowuTaskRow as KNOWU_TASKS ("knowu_tasks", "per generated task (KnowU's tasks.csv columns, then prefflow's); `task_name` = the Tasks tables' `task_id`") {
        /// the task (= `task_id`)
        pub task_name: String,
        /// the KnowU task class (`Prefflow…` for prefflow-only classes)
        pub class_name: String,
        /// `general`, `personalized` or `proactive`
        pub split: String,
        /// `easy` or `hard`
        pub difficulty: String,
        /// the persona's profile name
        pub profile: String,
        /// tasks.csv's tags
        pub tags: String,
        /// tasks.csv's apps
        pub apps: String,
        /// profile keys the task reads, `;`-joined
        pub habit_keys: String,
        /// the instruction
        pub goal: String,
        /// `act`, `silent` or `stop` (proactive); empty otherwise
        pub expect: String,
        /// the hybrid score's λ (personalized)
        pub lambda: Option<f64>,
        /// the user's `accept` or `reject` (proactive)
        pub decision: Option<String>,
        /// why the task expects what it does
        pub reason: String,
        /// the proactive situation's clock
        pub clock: Option<String>,
        /// the proactive situation's notification
        pub notification: Option<String>,
        /// a KnowU-Bench class (false: prefflow-only)
        pub in_knowu: bool,
        /// the persona's habit key that decided `expect`
        pub habit: Option<String>,
        /// how the habit was found: `key` or `meaning`
        pub habit_match: Option<String>,
        /// general / personalized: the preference value as the profile holds it (JSON), checked against `judged`
        pub preference: Option<String>,
        /// the field the preference is checked in: `inserted:app.table.field` (or `updated:…`; `exact-…` when it must equal the value)
        pub judged: Option<String>,
    }
}

/// Templates a persona's profile cannot instantiate.
pub static SKIPPED: TableDef = TableDef {
    name: "skipped",
    doc: "per template × persona that was not generated",
    columns: &[
        C::new("template", Str, "the template"),
        C::new(PERSONA, Str, "the persona"),
        C::new(SPLIT, Str, "the template's split"),
        C::new(
            "missing",
            Str,
            "the profile section and the phrases looked for",
        ),
    ],
    open: false,
};

/// What generation produced per persona and split.
pub static GENERATED: TableDef = TableDef {
    name: "generated",
    doc: "per persona × split",
    columns: &[
        C::new(PERSONA, Str, "the persona"),
        C::new(SPLIT, Str, "the split"),
        C::new("tasks", U32, "tasks generated"),
        C::new("knowu_classes", U32, "of which KnowU-Bench classes"),
        C::new("skipped", U32, "templates skipped"),
    ],
    open: false,
};

/// The evaluation reports of an imported results directory.
pub static REPORTS: TableDef = TableDef {
    name: "reports",
    doc: "per `eval_report_*.json` of an imported run, oldest first",
    columns: &[
        C::new("label", Str, "the import's label"),
        C::new("file", Str, "the report's file name"),
        C::nullable(
            "total_tasks_assigned",
            U64,
            "`summary.total_tasks_assigned`",
        ),
        C::nullable(
            "total_tasks_with_results",
            U64,
            "`summary.total_tasks_with_results`",
        ),
        C::nullable("successful_tasks", U64, "`summary.successful_tasks`"),
        C::nullable(
            "total_tasks_with_no_results",
            U64,
            "`summary.total_tasks_with_no_results`",
        ),
        C::nullable(
            "overall_success_rate",
            F64,
            "`summary.overall_success_rate`",
        ),
        C::nullable(
            "total_duration_seconds",
            F64,
            "`summary.total_duration_seconds`",
        ),
        C::nullable("model_name", Str, "`metadata.model_name`"),
        C::nullable("timestamp", Str, "`metadata.timestamp`"),
        C::new("tasks_scored", U64, "entries of `tasks_with_results`"),
        C::new(
            "score_mismatches",
            U32,
            "per-task scores that differ from the task directories'",
        ),
        C::new(
            "latest",
            Bool,
            "the report KnowU's split and persona scripts read",
        ),
    ],
    open: false,
};

crate::table! {
    /// One file of an imported results directory that could not be read.
    pub struct ImportError as IMPORT_ERRORS ("errors", "per unreadable file of an imported run; its episode has status `error`") {
        /// the task directory, when the file belongs to one
        pub task_id: Option<String>,
        /// the file
        pub file: String,
        /// what is wrong with it
        pub message: String,
    }
}

crate::table! {
    /// One task directory `export_knowu_runs` wrote.
    pub struct Written as WRITTEN ("written", "per task directory `export_knowu_runs` wrote") {
        /// the task
        pub task_id: String,
        /// the directory written
        pub path: String,
        /// a KnowU-Bench class (false: prefflow-only)
        pub knowu_class: bool,
        /// trajectory steps written
        pub steps: u32,
        /// a result file was written
        pub has_result: bool,
    }
}

/// The per-episode facts every KnowU mean is built from.
pub static EPISODE_METRICS: TableDef = TableDef {
    name: "episode_metrics",
    doc: "per episode (METRICS.md's per-task facts)",
    columns: &[
        C::new("episode_id", Str, "the episode"),
        C::new("task_id", Str, "the task"),
        C::new(VARIANT, Str, "the run's variant"),
        C::new(AGENT, Str, "the run's agent"),
        C::new("epoch", U32, "repeat index"),
        C::new("class_name", Str, "the task class"),
        C::nullable(
            SPLIT,
            Str,
            "the split (null for a task class KnowU does not list: warned by name)",
        ),
        C::nullable(DIFFICULTY, Str, "`easy` or `hard` (null likewise)"),
        C::nullable(PERSONA, Str, "the persona (null likewise)"),
        C::new("status", Str, "the episode's status"),
        C::new(
            "has_result",
            Bool,
            "the episode has a result (else it counts as no-result)",
        ),
        C::nullable("score", F64, "the episode's score (null without a result)"),
        C::new(
            "success",
            Bool,
            "score at or above KnowU's success threshold",
        ),
        C::new("steps", U32, "steps taken"),
        C::new("queries", U32, "questions asked of the user"),
        C::nullable(
            "user_decision",
            Str,
            "the user's accept or reject (proactive)",
        ),
        C::nullable(
            "first_reject_step",
            U32,
            "step of the user's first rejection",
        ),
        C::nullable("last_query_step", U32, "step of the last question"),
        C::new("any_engagement", Bool, "the agent engaged the user at all"),
        C::nullable(
            "last_violation_step",
            U32,
            "step of the last action after a rejection",
        ),
        C::nullable(
            "habit_should_act",
            Bool,
            "whether the persona's habit says to act (proactive)",
        ),
        C::nullable(
            "profile_found",
            Bool,
            "the persona's profile was found (proactive)",
        ),
        C::nullable("bucket", Str, "the proactive bucket (`need` / `noneed`, …)"),
        C::nullable(
            "policy_success",
            Bool,
            "Act / Silent / Stop success (proactive)",
        ),
        C::new(
            "bucket_from_quirk",
            Bool,
            "the bucket comes from a known quirk of KnowU's scripts",
        ),
        C::new(
            "in_scope",
            Bool,
            "the episode's class is one the stage's `classes` cover",
        ),
    ],
    open: false,
};

/// SR, AvgScore and the other means per split and difficulty.
pub static SPLITS: TableDef = TableDef {
    name: "splits",
    doc: "per run × split × difficulty (`all`, `easy`, `hard`)",
    columns: &[
        C::new(VARIANT, Str, "the run's variant"),
        C::new(AGENT, Str, "the run's agent"),
        C::new(SPLIT, Str, "the split"),
        C::new(DIFFICULTY, Str, "`all`, `easy` or `hard`"),
        C::new(EPISODES, U32, "episodes"),
        C::new("no_result_episodes", U32, "of which without a result"),
        C::new(
            MISSING_PROFILE_EPISODES,
            U32,
            "of which whose persona has no profile",
        ),
        C::new("successes", U32, "successful episodes"),
        C::nullable("SR", F64, "success rate"),
        C::nullable("AvgScore", F64, "mean score"),
        C::nullable("AveSteps", F64, "mean steps"),
        C::nullable("AveQueries", F64, "mean questions"),
        C::nullable("IE", F64, "interaction efficiency"),
    ],
    open: false,
};

/// Proactive Act / Silent / Stop.
pub static POLICY: TableDef = TableDef {
    name: "policy",
    doc: "per run × proactive metric × bucket",
    columns: &[
        C::new(VARIANT, Str, "the run's variant"),
        C::new(AGENT, Str, "the run's agent"),
        C::new("metric", Str, "`act`, `silent` or `stop`"),
        C::new("bucket", Str, "the bucket"),
        C::new(EPISODES, U32, "episodes in the bucket"),
        C::new("successes", U32, "of which successful"),
        C::nullable(
            "value",
            F64,
            "successes / episodes (none for an empty bucket)",
        ),
        C::new(
            "quirk_episodes",
            U32,
            "episodes bucketed by a quirk of KnowU's scripts",
        ),
        C::new(
            MISSING_PROFILE_EPISODES,
            U32,
            "episodes whose persona has no profile",
        ),
    ],
    open: false,
};

/// Mean score per persona.
pub static PERSONAS: TableDef = TableDef {
    name: "personas",
    doc: "per run × persona × split (personalized, proactive; no result = 0)",
    columns: &[
        C::new(VARIANT, Str, "the run's variant"),
        C::new(AGENT, Str, "the run's agent"),
        C::new(PERSONA, Str, "the persona"),
        C::new(SPLIT, Str, "the split"),
        C::new(EPISODES, U32, "episodes"),
        C::new("with_results", U32, "of which with a result"),
        C::new("no_results", U32, "of which without"),
        C::new("avg_score", F64, "mean score"),
        C::new(
            MISSING_PROFILE_EPISODES,
            U32,
            "episodes whose persona has no profile",
        ),
    ],
    open: false,
};

/// Overall SR and the counts behind it.
pub static OVERALL: TableDef = TableDef {
    name: "overall",
    doc: "per run",
    columns: &[
        C::new(VARIANT, Str, "the run's variant"),
        C::new(AGENT, Str, "the run's agent"),
        C::new(EPISODES, U32, "episodes"),
        C::new("episodes_with_results", U32, "of which with a result"),
        C::new("successes", U32, "successful episodes"),
        C::new("no_result_episodes", U32, "episodes without a result"),
        C::new(
            "unmatched_episodes",
            U32,
            "episodes no task of tasks.csv matches",
        ),
        C::new("error_episodes", U32, "episodes with status `error`"),
        C::new(
            "quirk_episodes",
            U32,
            "episodes bucketed by a quirk of KnowU's scripts",
        ),
        C::new(
            MISSING_PROFILE_EPISODES,
            U32,
            "episodes whose persona has no profile",
        ),
        C::new(
            "out_of_scope_episodes",
            U32,
            "episodes of classes the stage does not cover",
        ),
        C::nullable(
            "overall_SR",
            F64,
            "successes / episodes with a result (null when none has one)",
        ),
        C::new("scope", Str, "the stage's `classes`"),
    ],
    open: false,
};

/// KnowU-Bench's leaderboard with our runs among the published ones.
pub static LEADERBOARD: TableDef = TableDef {
    name: "leaderboard",
    doc: "per ranked row, in KnowU's column layout (success rates in percent)",
    columns: &[
        C::nullable("Rank", U32, "1 = best Overall among ranked rows; null for unranked rows (partial runs, the site's differing rows)"),
        C::new("Model & Date", Str, "the model and the date shown"),
        C::new("Approach & Details", Str, "the approach (for published rows, where they come from)"),
        C::nullable("Overall", F64, "overall SR, %"),
        C::nullable("General", F64, "general SR, % (paper rows: derived from the difficulty columns)"),
        C::nullable("Personalized", F64, "personalized SR, % (paper rows: derived)"),
        C::nullable("Proactive", F64, "proactive SR, % (paper rows: derived)"),
        C::nullable("Gen easy", F64, "general easy SR, %"),
        C::nullable("Gen hard", F64, "general hard SR, %"),
        C::nullable("Pers easy SR", F64, "personalized easy SR, %"),
        C::nullable("Pers easy Score", F64, "personalized easy mean score, 0–1"),
        C::nullable("Pers hard SR", F64, "personalized hard SR, %"),
        C::nullable("Pers hard Score", F64, "personalized hard mean score, 0–1"),
        C::nullable("Pro easy", F64, "proactive easy SR, %"),
        C::nullable("Pro hard", F64, "proactive hard SR, %"),
        C::nullable("general_tasks", U32, "coverage: general tasks with a result (KnowU: 42)"),
        C::nullable("personalized_tasks", U32, "coverage: personalized tasks with a result (KnowU: 86)"),
        C::nullable("proactive_tasks", U32, "coverage: proactive tasks with a result (KnowU: 64)"),
        C::new("ranked", Bool, "ranked: a published paper row, or a run covering every KnowU task with scores"),
        C::new(
            "source",
            Str,
            "`KnowU-Bench paper`, `KnowU-Bench site` or `prefflow` (our runs)",
        ),
        C::new("note", Str, "derivations, differences from the paper, partial coverage"),
    ],
    open: false,
};

/// The leaderboard as Markdown, one line per row.
pub static LEADERBOARD_TEXT: TableDef = TableDef {
    name: "text",
    doc: "per line of the leaderboard's Markdown rendering",
    columns: &[C::new("line", Str, "one line")],
    open: false,
};
