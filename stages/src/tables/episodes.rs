//! The episode tables (`run_episodes`, `run_remote_episodes`, `run_knowu_episodes`,
//! `import_knowu_runs`).

use prefflow_engine::schema::{ColumnDef as C, Dtype::*, TableDef};

/// An episode's id, `<task_id>#<variant>#<epoch>`.
pub const EPISODE_ID: &str = "episode_id";
/// The task.
pub const TASK_ID: &str = super::tasks::TASK_ID;
/// The engine variant.
pub const VARIANT: &str = "variant";
/// The 0-based repeat index.
pub const EPOCH: &str = "epoch";
/// The agent's name.
pub const AGENT: &str = "agent";
/// An episode's status.
pub const STATUS: &str = "status";
/// A step's 1-based index.
pub const STEP: &str = "step";
/// A step's action type.
pub const ACTION_TYPE: &str = "action_type";
/// A step's arguments (JSON).
pub const ARGUMENTS: &str = "arguments";

/// The kinds that play episodes (not `import_knowu_runs`), for columns only they write.
const RUNNERS: &str = "`run_episodes`, `run_knowu_episodes`, `run_remote_episodes`";
/// The kind that imports KnowU runs.
const IMPORT: &str = "`import_knowu_runs`";
/// The kind that plays episodes on remote devices.
const REMOTE: &str = "`run_remote_episodes`";

/// One row per episode.
pub static EPISODES: TableDef = TableDef {
    name: "episodes",
    doc: "one row per episode (one agent configuration × one task × one epoch)",
    columns: &[
        C::new(EPISODE_ID, Str, "`<task_id>#<variant>#<epoch>`; unique within a run"),
        C::new(TASK_ID, Str, "task (KnowU: `task_name`, e.g. `Class@persona`)"),
        C::new(VARIANT, Str, "engine variant name (`\"\"` when unswept; imported runs: the run's label)"),
        C::new(EPOCH, U32, "0-based repeat index"),
        C::nullable("persona", Str, "persona name (KnowU: the part after `@`)"),
        C::new(AGENT, Str, "agent name (`oracle`, `defaults`, `ask_all`, `heuristic`, `llm:<model>`, imported: model label)"),
        C::new(STATUS, Str, "`ok` \\| `max_steps` \\| `error` \\| `no_result`"),
        C::new("steps", U32, "agent steps taken"),
        C::new("ask_user_calls", U32, "number of ask_user actions"),
        C::nullable("final_answer", Str, "text of the last `answer` action"),
        C::nullable("score", F64, "a score carried with the episode (KnowU `result.txt`; null when none)"),
        C::new("prompt_tokens_agent", U64, "token usage of the agent"),
        C::new("completion_tokens_agent", U64, "token usage of the agent"),
        C::new("prompt_tokens_user", U64, "token usage of the user simulator"),
        C::new("completion_tokens_user", U64, "token usage of the user simulator"),
        C::new("prompt_tokens_judge", U64, "token usage of the judge"),
        C::new("completion_tokens_judge", U64, "token usage of the judge"),
        C::new("cached_tokens_agent", U64, "of the agent's prompt tokens, those the provider reported as served from its prompt cache (0 when it reports none)"),
        C::new("cached_tokens_user", U64, "likewise for the user simulator"),
        C::new("cost_agent", F64, "cost of the agent's calls (0 without prices; cached prompt tokens at `cached_prompt_per_mtok`)"),
        C::new("cost_user", F64, "cost of the user simulator's calls"),
        C::new("cost_judge", F64, "cost of the judge's calls"),
        C::nullable("error", Str, "failure cause when `status` is `error` (KnowU: such an episode has no result)"),
        C::new("user", Str, "who answered `ask_user`: `scripted`, `llm:<model>` for the stage's `user_model`, `llm:<model> (the model under test)` when `simulator: agent_model` asked for the agent's model; `device` for remote devices").only(RUNNERS),
        C::new("volunteered", U32, "simulator replies that disclosed a slot not asked about (0 on remote devices)").only(RUNNERS),
        C::new("ungrounded", U32, "replies stating something the hidden context does not ground (0 on remote devices)").only(RUNNERS),
        C::new("seed", U64, "hash of root seed, task, variant, epoch").only(RUNNERS),
        C::new("exposure", Str, "`all/noisy`, `top_k:10/clean`, … (ends in `/embeddings` when retrieval used an embeddings endpoint; `device` for remote devices)").only(RUNNERS),
        C::new("shown_events", U32, "history events shown (0 on remote devices)").only(RUNNERS),
        C::new("device", Str, "the env server URL that played it").only(REMOTE),
        C::new("device_attempts", U32, "1 + episodes replayed after a device failure").only(REMOTE),
        C::nullable("eval_reason", Str, "the evaluator's reason; null when the agent failed").only(REMOTE),
        C::nullable("reason", Str, "KnowU `result.txt`'s reason, when it gives one").only(IMPORT),
        C::nullable("goal", Str, "the task's goal, as the trajectory records it").only(IMPORT),
    ],
    open: false,
};

/// One row per step of an episode.
pub static STEPS: TableDef = TableDef {
    name: "steps",
    doc: "one row per step",
    columns: &[
        C::new(EPISODE_ID, Str, "owning episode"),
        C::new(STEP, U32, "1-based"),
        C::new("actor", Str, "`agent` (agent actions), `user` (simulator replies are carried on the agent step that asked)"),
        C::new(ACTION_TYPE, Str, "`open_app`, `tap`, `type`, `select`, `scroll`, `back`, `home`, a tool/operation name, `ask_user`, `answer`, `finish`, KnowU action types (`click`, `input_text`, `wait`, `finished`, …), or `unknown`"),
        C::new(ARGUMENTS, Str, "JSON object of the action's fields"),
        C::nullable("observation", Str, "what the environment returned"),
        C::nullable("user_reply", Str, "simulator's reply when `action_type` is `ask_user`"),
        C::new("disclosed_slots", ListStr, "slots the simulator disclosed in this reply"),
        C::new("shown_events", ListStr, "history event ids shown to the agent before this step (`run_episodes` lists a `top_k:N` exposure once, on step 1; `all` and `none` are given by `episodes.exposure` and the count in `episodes.shown_events`, not repeated as thousands of ids per episode)"),
        C::nullable("raw", Str, "the model's raw output (KnowU `prediction`)"),
        C::new("phase", Str, "`clarify` for pre-execution questions, `act` (remote devices: `act` only)").only(RUNNERS),
        C::nullable("ask_user_response", Str, "KnowU's `ask_user_response` of the trajectory entry (the reply to the entry before it)").only(IMPORT),
        C::new("observation_status", Str, "`ok` \\| `error` \\| `done`").only(RUNNERS),
    ],
    open: false,
};

/// One row per episode with its final state diff.
pub static DIFFS: TableDef = TableDef {
    name: "diffs",
    doc: "one row per episode",
    columns: &[
        C::new(EPISODE_ID, Str, "the episode"),
        C::nullable("diff", Str, "JSON `WorldDiff` of the final state against the initial state; `null` for remote devices"),
    ],
    open: false,
};

/// What `run_remote_episodes` reads of its first input: a task list of any table (the `tasks`
/// table, a CSV `read_table` read), so no kind writes it and docs/tables.md does not list it;
/// this is the reader's contract, which [`RemoteTaskRow`] reads.
pub static REMOTE_TASK_LIST: TableDef = TableDef {
    name: "remote task list",
    doc: "one row per task a `run_remote_episodes` item plays",
    columns: &[
        C::new(TASK_ID, Str, "the task (`name@persona` for KnowU tasks)"),
        C::nullable(
            "goal",
            Str,
            "the goal shown to the agent (absent or blank: the device's own)",
        )
        .only(TASK_LISTS),
        C::nullable(
            "actions",
            Str,
            "JSON list of the actions a `replay` agent plays",
        )
        .only(TASK_LISTS),
    ],
    open: false,
};

/// The task lists that carry a remote task's optional columns.
const TASK_LISTS: &str = "task lists that carry it";

/// `llm_complete`'s result: the input's columns plus the reply's.
pub static COMPLETIONS: TableDef = TableDef::open(
    "completions",
    "one row per row of `llm_complete`'s first input: its columns, then `reply` str?, `prompt_tokens` u64, `completion_tokens` u64, `from_cache` bool, `cost` f64",
);

/// What the producers write beyond the columns above.
pub const NOTES: &str =
    "`run_remote_episodes` (docs/remote-device.md) takes `score` from the device's `/task/eval`;
its `diffs` rows hold `null`: the user simulator runs on the device.

With the `llm` agent, `steps.raw` is the reply's text (gui mode) or its `tool_calls` as JSON
(tools mode); an output that is not an action is an `unknown` step with the output in `raw`.
`arguments` decodes back to the exact phone action (`episodes::codec::decode`), so judges
replay an episode in the phone with the recorded `user_reply`s.";

crate::tables::row::row! {
    /// An `episodes` row as the episode runners write it (`run_episodes`, `run_knowu_episodes`,
    /// `run_remote_episodes`, which adds [`DeviceColumns`]), columns in this order: the runner's
    /// record of one episode (`episodes::record`), filled as the episode plays.
    #[derive(Default)]
    pub struct PlayedEpisode of EPISODES {
        /// `<task_id>#<variant>#<epoch>`.
        pub episode_id: String,
        /// The task.
        pub task_id: String,
        /// The engine variant name.
        pub variant: String,
        /// 0-based repeat.
        pub epoch: u32,
        /// The persona the task is grounded in.
        pub persona: Option<String>,
        /// The agent's name.
        pub agent: String,
        /// Who answered `ask_user` (`scripted`, `llm:<model>`, `llm:<model> (the model under
        /// test)`, `device`): `crate::episodes::simulators::User::label`.
        pub user: String,
        /// `ok`, `max_steps` or `error`.
        pub status: String,
        /// Step rows written (clarification questions included).
        pub steps: u32,
        /// `ask_user` exchanges.
        pub ask_user_calls: u32,
        /// The last `answer` text.
        pub final_answer: Option<String>,
        /// A score carried with the episode: a remote device's `/task/eval`, a KnowU task's rule
        /// score; null otherwise.
        pub score: Option<f64>,
        /// Agent prompt tokens (the cached ones included).
        pub prompt_tokens_agent: u64,
        /// Agent completion tokens.
        pub completion_tokens_agent: u64,
        /// Simulator prompt tokens.
        pub prompt_tokens_user: u64,
        /// Simulator completion tokens.
        pub completion_tokens_user: u64,
        /// Judge prompt tokens (0: the runners do not judge).
        pub prompt_tokens_judge: u64,
        /// Judge completion tokens (0 likewise).
        pub completion_tokens_judge: u64,
        /// Agent prompt tokens served from the provider's cache.
        pub cached_tokens_agent: u64,
        /// Simulator prompt tokens served from the provider's cache.
        pub cached_tokens_user: u64,
        /// Agent cost.
        pub cost_agent: f64,
        /// Simulator cost.
        pub cost_user: f64,
        /// Judge cost (0 likewise).
        pub cost_judge: f64,
        /// Replies that disclosed a slot the question did not ask about.
        pub volunteered: u32,
        /// Replies that stated something the hidden context does not ground.
        pub ungrounded: u32,
        /// The seed the episode ran with.
        pub seed: u64,
        /// The history exposure shown (`all`, `top_k:10`, …) and log (`noisy`/`clean`).
        pub exposure: String,
        /// Number of history events shown.
        pub shown_events: u32,
        /// Why the episode failed, when `status` is `error`.
        pub error: Option<String>,
    }
}

crate::tables::row::row! {
    /// The columns `run_remote_episodes` appends to [`PlayedEpisode`]'s.
    pub struct DeviceColumns of EPISODES {
        /// See [`EPISODES`].
        pub device: String,
        /// See [`EPISODES`].
        pub device_attempts: u32,
        /// See [`EPISODES`].
        pub eval_reason: Option<String>,
    }
}

crate::tables::row::row! {
    /// A `steps` row as the episode runners write it, columns in this order: one step of the
    /// runner's record (`episodes::record`).
    #[derive(Default)]
    pub struct PlayedStep of STEPS {
        /// Owning episode.
        pub episode_id: String,
        /// 1-based.
        pub step: u32,
        /// `clarify` (pre-execution questions) or `act`.
        pub phase: String,
        /// `agent` (simulator replies ride on the agent's ask_user step).
        pub actor: String,
        /// Action tag or tool name; `unknown` when the output did not parse.
        pub action_type: String,
        /// JSON object of the action's fields.
        pub arguments: String,
        /// What the environment returned.
        pub observation: Option<String>,
        /// `ok`, `error` or `done`.
        pub observation_status: String,
        /// The simulator's reply to an ask_user.
        pub user_reply: Option<String>,
        /// Slots the reply disclosed.
        pub disclosed_slots: Vec<String>,
        /// History events shown to the agent before this step (listed once, on the first step).
        pub shown_events: Vec<String>,
        /// The model's raw output.
        pub raw: Option<String>,
    }
}

crate::tables::row::row! {
    /// A `diffs` row as the episode runners write it.
    pub struct Diff of DIFFS {
        /// See [`DIFFS`].
        pub episode_id: String,
        /// See [`DIFFS`].
        pub diff: String,
    }
}

crate::tables::row::row! {
    /// A row of `run_remote_episodes`' task list, as read: the id may be null here so the
    /// domain (`episodes::remote::tasks`) names the row whose id is empty.
    pub struct RemoteTaskRow of REMOTE_TASK_LIST {
        /// See [`REMOTE_TASK_LIST`].
        pub task_id: Option<String>,
        /// See [`REMOTE_TASK_LIST`].
        pub goal: Option<String>,
        /// See [`REMOTE_TASK_LIST`].
        pub actions: Option<String>,
    }
}
