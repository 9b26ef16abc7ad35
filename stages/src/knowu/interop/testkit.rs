//! Test helpers: hand-built KnowU run directories in temp dirs, paths to the shared benchmark
//! data (read in place, never copied), and a way to run a kind outside a pipeline.

use std::path::{Path, PathBuf};

use polars::prelude::DataFrame;
use prefflow_engine::kind::DynKind;
use prefflow_engine::store::FsStore;
use prefflow_engine::{InputTable, StageContext, StageError, Tables};
use serde_json::{json, Value};

/// A file of KnowU-Bench's published data, e.g. `tasks.csv` or `user_profile`, through the
/// data setting ([`crate::knowu::data::for_tests`]); `None` (and a line naming the setting) when
/// it is absent, so the test skips.
pub fn shared(test: &str, rel: &str) -> Option<PathBuf> {
    crate::knowu::data::for_tests(test).map(|d| d.join(rel))
}

/// A scratch directory to build run directories, task lists and persona files in.
pub struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    /// An empty scratch directory.
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `text` to `rel`, creating parent directories.
    pub fn file(&self, rel: &str, text: &str) -> &Self {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
        self
    }

    /// Writes `<run>/<task>/traj.json` from trajectory entries, and `result.txt` when given.
    pub fn episode(&self, run: &str, task: &str, steps: Vec<Value>, result: Option<&str>) -> &Self {
        let traj = json!({"0": {"tools": null, "traj": steps,
            "token_usage": {"prompt_tokens": 10 * steps.len(), "completion_tokens": steps.len(),
                            "cached_tokens": 0, "total_tokens": 11 * steps.len()}}});
        self.file(&format!("{run}/{task}/traj.json"), &traj.to_string());
        if let Some(r) = result {
            self.file(&format!("{run}/{task}/result.txt"), r);
        }
        self
    }
}

/// A trajectory entry: `action`, and the simulator's reply to the previous step's ask_user.
pub fn step(action: Value, reply: Option<&str>) -> Value {
    json!({"task_goal": "goal", "prediction": format!("thought {}", action["action_type"]),
           "action": action, "ask_user_response": reply, "tool_call": null})
}

/// An action of `kind` without fields.
pub fn act(kind: &str) -> Value {
    json!({"action_type": kind})
}

/// An action with a `text` field (`ask_user`, `answer`, `input_text`).
pub fn say(kind: &str, text: &str) -> Value {
    json!({"action_type": kind, "text": text})
}

/// An upstream table as a stage sees it.
pub fn input(table: &str, df: DataFrame) -> InputTable {
    InputTable {
        stage: "up".into(),
        table: table.into(),
        df,
    }
}

/// Runs `kind` with JSON `params` in `workdir`, like the engine does (params checked by serde).
pub fn run_kind(
    kind: &dyn DynKind,
    params: Value,
    workdir: &Path,
    inputs: &[InputTable],
) -> Result<Tables, StageError> {
    let store_dir = tempfile::tempdir().expect("store dir");
    let store = FsStore::new(store_dir.path());
    let ctx = StageContext {
        stage: "test",
        variant: "",
        item: None,
        seed: 0,
        attempt: 0,
        workdir,
        inputs,
        cache: &store,
        offline: true,
        state: &(),
        usage: &prefflow_engine::usage::UsageMeter::new(),
    };
    kind.run(&params, &ctx)
}
