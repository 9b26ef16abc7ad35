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
    ],
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
    ],
};

/// One row per episode with its final state diff.
pub static DIFFS: TableDef = TableDef {
    name: "diffs",
    doc: "one row per episode",
    columns: &[
        C::new(EPISODE_ID, Str, "the episode"),
        C::nullable("diff", Str, "JSON `WorldDiff` of the final state against the initial state; `null` for remote devices"),
    ],
};

/// What the producers add to the tables above.
pub const NOTES: &str = "`run_episodes` adds to `episodes`: `volunteered` u32 (simulator replies that disclosed a slot not asked about),
`ungrounded` u32 (replies stating something the hidden context does not ground), `seed` u64
(hash of root seed, task, variant, epoch), `exposure` str (`all/noisy`, `top_k:10/clean`, …),
`shown_events` u32 (history events shown; `exposure` ends in `/embeddings` when retrieval used an embeddings endpoint).

`run_remote_episodes` (docs/remote-device.md) writes the same columns as `run_episodes`
(`exposure` is `device`, `shown_events` 0, `volunteered`/`ungrounded` 0: the user simulator runs
on the device) with `score` from the device's `/task/eval`, and adds `device` str (the env server
URL that played it), `device_attempts` u32 (1 + episodes replayed after a device failure),
`eval_reason` str? (the evaluator's reason; null when the agent failed). Its `steps` have
`phase` `act` only, and its `diffs` rows hold `null`.

`run_episodes` adds to `steps`: `phase` str (`clarify` for pre-execution questions, `act`),
`observation_status` str (`ok` \\| `error` \\| `done`). With the `llm` agent, `raw` is the reply's
text (gui mode) or its `tool_calls` as JSON (tools mode); an output that is not an action is an
`unknown` step with the output in `raw`. `arguments` decodes back to the exact phone
action (`episodes::codec::decode`), so judges replay an episode in the phone with the recorded
`user_reply`s.";
