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

crate::tables::row::table! {
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

crate::tables::row::table! {
    /// Templates a persona's profile cannot instantiate.
    pub struct SkippedRow as SKIPPED ("skipped", "per template × persona that was not generated") {
        /// the template
        pub template: String,
        /// the persona
        pub persona: String,
        /// the template's split
        pub split: String,
        /// the profile section and the phrases looked for
        pub missing: String,
    }
}

crate::tables::row::table! {
    /// What generation produced per persona and split.
    pub struct GeneratedRow as GENERATED ("generated", "per persona × split") {
        /// the persona
        pub persona: String,
        /// the split
        pub split: String,
        /// tasks generated
        pub tasks: u32,
        /// of which KnowU-Bench classes
        pub knowu_classes: u32,
        /// templates skipped
        pub skipped: u32,
    }
}

crate::tables::row::table! {
    /// The evaluation reports of an imported results directory: one report's summary, which
    /// the import reads into this row (`knowu::interop::report`).
    #[derive(Default)]
    pub struct ReportsRow as REPORTS ("reports", "per `eval_report_*.json` of an imported run, oldest first") {
        /// the import's label
        pub label: String,
        /// the report's file name
        pub file: String,
        /// `summary.total_tasks_assigned`
        pub total_tasks_assigned: Option<u64>,
        /// `summary.total_tasks_with_results`
        pub total_tasks_with_results: Option<u64>,
        /// `summary.successful_tasks`
        pub successful_tasks: Option<u64>,
        /// `summary.total_tasks_with_no_results`
        pub total_tasks_with_no_results: Option<u64>,
        /// `summary.overall_success_rate`
        pub overall_success_rate: Option<f64>,
        /// `summary.total_duration_seconds`
        pub total_duration_seconds: Option<f64>,
        /// `metadata.model_name`
        pub model_name: Option<String>,
        /// `metadata.timestamp`
        pub timestamp: Option<String>,
        /// entries of `tasks_with_results`
        pub tasks_scored: u64,
        /// per-task scores that differ from the task directories'
        pub score_mismatches: u32,
        /// the report KnowU's split and persona scripts read
        pub latest: bool,
    }
}

crate::tables::row::table! {
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

crate::tables::row::table! {
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

crate::tables::row::table! {
    /// The per-episode facts every KnowU mean is built from.
    pub struct EpisodeMetricsRow as EPISODE_METRICS ("episode_metrics", "per episode (METRICS.md's per-task facts)") {
        /// the episode
        pub episode_id: String,
        /// the task
        pub task_id: String,
        /// the run's variant
        pub variant: String,
        /// the run's agent
        pub agent: String,
        /// repeat index
        pub epoch: u32,
        /// the task class
        pub class_name: String,
        /// the split (null for a task class KnowU does not list: warned by name)
        pub split: Option<String>,
        /// `easy` or `hard` (null likewise)
        pub difficulty: Option<String>,
        /// the persona (null likewise)
        pub persona: Option<String>,
        /// the episode's status
        pub status: String,
        /// the episode has a result (else it counts as no-result)
        pub has_result: bool,
        /// the episode's score (null without a result)
        pub score: Option<f64>,
        /// score at or above KnowU's success threshold
        pub success: bool,
        /// steps taken
        pub steps: u32,
        /// questions asked of the user
        pub queries: u32,
        /// the user's accept or reject (proactive)
        pub user_decision: Option<String>,
        /// step of the user's first rejection
        pub first_reject_step: Option<u32>,
        /// step of the last question
        pub last_query_step: Option<u32>,
        /// the agent engaged the user at all
        pub any_engagement: bool,
        /// step of the last action after a rejection
        pub last_violation_step: Option<u32>,
        /// whether the persona's habit says to act (proactive)
        pub habit_should_act: Option<bool>,
        /// the persona's profile was found (proactive)
        pub profile_found: Option<bool>,
        /// the proactive bucket (`need` / `noneed`, …)
        pub bucket: Option<String>,
        /// Act / Silent / Stop success (proactive)
        pub policy_success: Option<bool>,
        /// the bucket comes from a known quirk of KnowU's scripts
        pub bucket_from_quirk: bool,
        /// the episode's class is one the stage's `classes` cover
        pub in_scope: bool,
    }
}

crate::tables::row::table! {
    /// SR, AvgScore and the other means per split and difficulty.
    pub struct SplitsRow as SPLITS ("splits", "per run × split × difficulty (`all`, `easy`, `hard`)") {
        /// the run's variant
        pub variant: String,
        /// the run's agent
        pub agent: String,
        /// the split
        pub split: String,
        /// `all`, `easy` or `hard`
        pub difficulty: String,
        /// episodes
        pub episodes: u32,
        /// of which without a result
        pub no_result_episodes: u32,
        /// of which whose persona has no profile
        pub missing_profile_episodes: u32,
        /// successful episodes
        pub successes: u32,
        /// success rate
        pub SR: Option<f64>,
        /// mean score
        pub AvgScore: Option<f64>,
        /// mean steps
        pub AveSteps: Option<f64>,
        /// mean questions
        pub AveQueries: Option<f64>,
        /// interaction efficiency
        pub IE: Option<f64>,
    }
}

crate::tables::row::table! {
    /// Proactive Act / Silent / Stop.
    pub struct PolicyRow as POLICY ("policy", "per run × proactive metric × bucket") {
        /// the run's variant
        pub variant: String,
        /// the run's agent
        pub agent: String,
        /// `act`, `silent` or `stop`
        pub metric: String,
        /// the bucket
        pub bucket: String,
        /// episodes in the bucket
        pub episodes: u32,
        /// of which successful
        pub successes: u32,
        /// successes / episodes (none for an empty bucket)
        pub value: Option<f64>,
        /// episodes bucketed by a quirk of KnowU's scripts
        pub quirk_episodes: u32,
        /// episodes whose persona has no profile
        pub missing_profile_episodes: u32,
    }
}

crate::tables::row::table! {
    /// Mean score per persona.
    pub struct PersonasRow as PERSONAS ("personas", "per run × persona × split (personalized, proactive; no result = 0)") {
        /// the run's variant
        pub variant: String,
        /// the run's agent
        pub agent: String,
        /// the persona
        pub persona: String,
        /// the split
        pub split: String,
        /// episodes
        pub episodes: u32,
        /// of which with a result
        pub with_results: u32,
        /// of which without
        pub no_results: u32,
        /// mean score
        pub avg_score: f64,
        /// episodes whose persona has no profile
        pub missing_profile_episodes: u32,
    }
}

crate::tables::row::table! {
    /// Overall SR and the counts behind it.
    pub struct OverallRow as OVERALL ("overall", "per run") {
        /// the run's variant
        pub variant: String,
        /// the run's agent
        pub agent: String,
        /// episodes
        pub episodes: u32,
        /// of which with a result
        pub episodes_with_results: u32,
        /// successful episodes
        pub successes: u32,
        /// episodes without a result
        pub no_result_episodes: u32,
        /// episodes no task of tasks.csv matches
        pub unmatched_episodes: u32,
        /// episodes with status `error`
        pub error_episodes: u32,
        /// episodes bucketed by a quirk of KnowU's scripts
        pub quirk_episodes: u32,
        /// episodes whose persona has no profile
        pub missing_profile_episodes: u32,
        /// episodes of classes the stage does not cover
        pub out_of_scope_episodes: u32,
        /// successes / episodes with a result (null when none has one)
        pub overall_SR: Option<f64>,
        /// the stage's `classes`
        pub scope: String,
    }
}

/// The leaderboard's leading columns, in KnowU's layout: rank, model, approach, then the
/// overall and per-split success rates.
pub const LEADERBOARD_LAYOUT: [&str; 7] = [
    "Rank",
    "Model & Date",
    "Approach & Details",
    "Overall",
    "General",
    "Personalized",
    "Proactive",
];
/// The leaderboard's difficulty columns (the paper's Table 2).
pub const LEADERBOARD_DIFFICULTY: [&str; 8] = [
    "Gen easy",
    "Gen hard",
    "Pers easy SR",
    "Pers easy Score",
    "Pers hard SR",
    "Pers hard Score",
    "Pro easy",
    "Pro hard",
];
/// Whether a leaderboard row is ranked.
pub const RANKED: &str = "ranked";
/// Where a leaderboard row comes from.
pub const SOURCE: &str = "source";
/// A leaderboard row's note.
pub const NOTE: &str = "note";

/// KnowU-Bench's leaderboard with our runs among the published ones.
pub static LEADERBOARD: TableDef = TableDef {
    name: "leaderboard",
    doc: "per ranked row, in KnowU's column layout (success rates in percent)",
    columns: &[
        C::nullable(LEADERBOARD_LAYOUT[0], U32, "1 = best Overall among ranked rows; null for unranked rows (partial runs, the site's differing rows)"),
        C::new(LEADERBOARD_LAYOUT[1], Str, "the model and the date shown"),
        C::new(LEADERBOARD_LAYOUT[2], Str, "the approach (for published rows, where they come from)"),
        C::nullable(LEADERBOARD_LAYOUT[3], F64, "overall SR, %"),
        C::nullable(LEADERBOARD_LAYOUT[4], F64, "general SR, % (paper rows: derived from the difficulty columns)"),
        C::nullable(LEADERBOARD_LAYOUT[5], F64, "personalized SR, % (paper rows: derived)"),
        C::nullable(LEADERBOARD_LAYOUT[6], F64, "proactive SR, % (paper rows: derived)"),
        C::nullable(LEADERBOARD_DIFFICULTY[0], F64, "general easy SR, %"),
        C::nullable(LEADERBOARD_DIFFICULTY[1], F64, "general hard SR, %"),
        C::nullable(LEADERBOARD_DIFFICULTY[2], F64, "personalized easy SR, %"),
        C::nullable(LEADERBOARD_DIFFICULTY[3], F64, "personalized easy mean score, 0–1"),
        C::nullable(LEADERBOARD_DIFFICULTY[4], F64, "personalized hard SR, %"),
        C::nullable(LEADERBOARD_DIFFICULTY[5], F64, "personalized hard mean score, 0–1"),
        C::nullable(LEADERBOARD_DIFFICULTY[6], F64, "proactive easy SR, %"),
        C::nullable(LEADERBOARD_DIFFICULTY[7], F64, "proactive hard SR, %"),
        C::nullable("general_tasks", U32, "coverage: general tasks with a result (KnowU: 42)"),
        C::nullable("personalized_tasks", U32, "coverage: personalized tasks with a result (KnowU: 86)"),
        C::nullable("proactive_tasks", U32, "coverage: proactive tasks with a result (KnowU: 64)"),
        C::new(RANKED, Bool, "ranked: a published paper row, or a run covering every KnowU task with scores"),
        C::new(SOURCE, Str, "`KnowU-Bench paper`, `KnowU-Bench site` or `prefflow` (our runs)"),
        C::new(NOTE, Str, "derivations, differences from the paper, partial coverage"),
    ],
    open: false,
};

crate::tables::row::table! {
    /// The leaderboard as Markdown, one line per row.
    pub struct LeaderboardTextRow as LEADERBOARD_TEXT ("text", "per line of the leaderboard's Markdown rendering") {
        /// one line
        pub line: String,
    }
}

crate::tables::row::row! {
    /// An `episodes` row as `import_knowu_runs` writes it (one per task directory of a KnowU
    /// run: no user simulator or judge, so their tokens and costs are 0), columns in this order.
    pub struct ImportedEpisode of super::episodes::EPISODES {
        /// See [`super::episodes::EPISODES`].
        pub episode_id: String,
        /// See [`super::episodes::EPISODES`].
        pub task_id: String,
        /// See [`super::episodes::EPISODES`].
        pub variant: String,
        /// See [`super::episodes::EPISODES`].
        pub epoch: u32,
        /// See [`super::episodes::EPISODES`].
        pub persona: Option<String>,
        /// See [`super::episodes::EPISODES`].
        pub agent: String,
        /// See [`super::episodes::EPISODES`].
        pub status: String,
        /// See [`super::episodes::EPISODES`].
        pub steps: u32,
        /// See [`super::episodes::EPISODES`].
        pub ask_user_calls: u32,
        /// See [`super::episodes::EPISODES`].
        pub final_answer: Option<String>,
        /// See [`super::episodes::EPISODES`].
        pub score: Option<f64>,
        /// See [`super::episodes::EPISODES`].
        pub prompt_tokens_agent: u64,
        /// See [`super::episodes::EPISODES`].
        pub completion_tokens_agent: u64,
        /// See [`super::episodes::EPISODES`].
        pub prompt_tokens_user: u64,
        /// See [`super::episodes::EPISODES`].
        pub completion_tokens_user: u64,
        /// See [`super::episodes::EPISODES`].
        pub prompt_tokens_judge: u64,
        /// See [`super::episodes::EPISODES`].
        pub completion_tokens_judge: u64,
        /// See [`super::episodes::EPISODES`].
        pub cost_agent: f64,
        /// See [`super::episodes::EPISODES`].
        pub cost_user: f64,
        /// See [`super::episodes::EPISODES`].
        pub cost_judge: f64,
        /// See [`super::episodes::EPISODES`].
        pub error: Option<String>,
        /// See [`super::episodes::EPISODES`].
        pub reason: Option<String>,
        /// See [`super::episodes::EPISODES`].
        pub goal: Option<String>,
        /// See [`super::episodes::EPISODES`].
        pub cached_tokens_agent: u64,
        /// See [`super::episodes::EPISODES`].
        pub cached_tokens_user: u64,
    }
}

crate::tables::row::row! {
    /// A `steps` row as `import_knowu_runs` writes it (one per trajectory entry), columns in
    /// this order.
    pub struct ImportedStep of super::episodes::STEPS {
        /// See [`super::episodes::STEPS`].
        pub episode_id: String,
        /// See [`super::episodes::STEPS`].
        pub step: u32,
        /// See [`super::episodes::STEPS`].
        pub actor: String,
        /// See [`super::episodes::STEPS`].
        pub action_type: String,
        /// See [`super::episodes::STEPS`].
        pub arguments: String,
        /// See [`super::episodes::STEPS`].
        pub observation: Option<String>,
        /// See [`super::episodes::STEPS`].
        pub user_reply: Option<String>,
        /// See [`super::episodes::STEPS`].
        pub disclosed_slots: Vec<String>,
        /// See [`super::episodes::STEPS`].
        pub shown_events: Vec<String>,
        /// See [`super::episodes::STEPS`].
        pub raw: Option<String>,
        /// See [`super::episodes::STEPS`].
        pub ask_user_response: Option<String>,
    }
}

crate::tables::row::row! {
    /// The `episodes` columns `export_knowu_runs` reads (from any producer: the KnowU-only
    /// `reason` and `goal` are null where absent).
    pub struct ExportedEpisode of super::episodes::EPISODES {
        /// See [`super::episodes::EPISODES`].
        pub episode_id: String,
        /// See [`super::episodes::EPISODES`].
        pub task_id: String,
        /// See [`super::episodes::EPISODES`].
        pub status: String,
        /// See [`super::episodes::EPISODES`].
        pub score: Option<f64>,
        /// See [`super::episodes::EPISODES`].
        pub error: Option<String>,
        /// See [`super::episodes::EPISODES`].
        pub prompt_tokens_agent: u64,
        /// See [`super::episodes::EPISODES`].
        pub completion_tokens_agent: u64,
        /// See [`super::episodes::EPISODES`].
        pub cached_tokens_agent: u64,
        /// See [`super::episodes::EPISODES`].
        pub reason: Option<String>,
        /// See [`super::episodes::EPISODES`].
        pub goal: Option<String>,
    }
}

crate::tables::row::row! {
    /// The `steps` columns `export_knowu_runs` reads (from any producer: the KnowU-only
    /// `ask_user_response` is null where absent).
    pub struct ExportedStep of super::episodes::STEPS {
        /// See [`super::episodes::STEPS`].
        pub episode_id: String,
        /// See [`super::episodes::STEPS`].
        pub step: u32,
        /// See [`super::episodes::STEPS`].
        pub action_type: String,
        /// See [`super::episodes::STEPS`].
        pub arguments: String,
        /// See [`super::episodes::STEPS`].
        pub observation: Option<String>,
        /// See [`super::episodes::STEPS`].
        pub user_reply: Option<String>,
        /// See [`super::episodes::STEPS`].
        pub raw: Option<String>,
        /// See [`super::episodes::STEPS`].
        pub ask_user_response: Option<String>,
    }
}

crate::tables::row::row! {
    /// The `steps` columns `knowu_metrics` reads for every step; a reply is read from
    /// `ask_user_response` instead of `user_reply` when the table has it (KnowU's alignment).
    pub struct MetricStep of super::episodes::STEPS {
        /// See [`super::episodes::STEPS`].
        pub episode_id: String,
        /// See [`super::episodes::STEPS`].
        pub step: u32,
        /// See [`super::episodes::STEPS`].
        pub action_type: String,
        /// See [`super::episodes::STEPS`].
        pub arguments: String,
        /// See [`super::episodes::STEPS`].
        pub user_reply: Option<String>,
    }
}

crate::tables::row::row! {
    /// The `episodes` columns `knowu_metrics` classifies an episode by (its task's class and
    /// persona: the part after `@` when `persona` is null).
    pub struct ClassifiedEpisode of super::episodes::EPISODES {
        /// See [`super::episodes::EPISODES`].
        pub task_id: String,
        /// See [`super::episodes::EPISODES`].
        pub persona: Option<String>,
    }
}

crate::tables::row::row! {
    /// The `episode_metrics` column `knowu_metrics` decides `in_scope` from.
    pub struct ScopedTask of EPISODE_METRICS {
        /// See [`EPISODE_METRICS`].
        pub task_id: String,
    }
}

crate::tables::row::row! {
    /// The `episode_metrics` columns `knowu_metrics` checks before its means: personas without
    /// a profile, tasks in no split, runs without a scored episode.
    pub struct CheckedEpisode of EPISODE_METRICS {
        /// See [`EPISODE_METRICS`].
        pub task_id: String,
        /// See [`EPISODE_METRICS`].
        pub agent: String,
        /// See [`EPISODE_METRICS`].
        pub split: Option<String>,
        /// See [`EPISODE_METRICS`].
        pub persona: Option<String>,
        /// See [`EPISODE_METRICS`].
        pub has_result: bool,
        /// See [`EPISODE_METRICS`].
        pub profile_found: Option<bool>,
        /// See [`EPISODE_METRICS`].
        pub in_scope: bool,
    }
}

crate::tables::row::row! {
    /// The `overall` columns `knowu_leaderboard` ranks a run by.
    pub struct RankedRun of OVERALL {
        /// See [`OVERALL`].
        pub variant: String,
        /// See [`OVERALL`].
        pub agent: String,
        /// See [`OVERALL`].
        pub overall_SR: Option<f64>,
    }
}

crate::tables::row::row! {
    /// The `overall` column that says which classes a run's metrics cover (`knowu_leaderboard`
    /// takes `knowu` only).
    pub struct RunScope of OVERALL {
        /// See [`OVERALL`].
        pub scope: String,
    }
}

crate::tables::row::row! {
    /// The `splits` columns `knowu_leaderboard` reads: rates, scores and coverage.
    pub struct LeaderboardSplit of SPLITS {
        /// See [`SPLITS`].
        pub variant: String,
        /// See [`SPLITS`].
        pub agent: String,
        /// See [`SPLITS`].
        pub split: String,
        /// See [`SPLITS`].
        pub difficulty: String,
        /// See [`SPLITS`].
        pub episodes: u32,
        /// See [`SPLITS`].
        pub no_result_episodes: u32,
        /// See [`SPLITS`].
        pub SR: Option<f64>,
        /// See [`SPLITS`].
        pub AvgScore: Option<f64>,
    }
}
