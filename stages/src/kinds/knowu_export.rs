//! `export_knowu_runs`: prefflow `episodes` + `steps` → a KnowU-Bench results directory
//! (`<dir>/<task_id>/traj.json`, and `result.txt` when the episode has a result), so KnowU's own
//! scripts (`calc_paper_metrics.py`, `calc_split_difficulty_metrics.py`,
//! `calc_persona_pref_routine_avg.py`) and viewers give the numbers `knowu_metrics` gives.
//! `import_knowu_runs` reads it back.
//!
//! The stage kind only: what it computes lives in [`crate::knowu::interop::export`].

use crate::knowu::error::KnowuError;
use crate::knowu::interop::export::*;
use crate::knowu::interop::run::{self, RunEpisode};
use crate::tables::episodes as ep;
use prefflow_engine::keys::hash_path;
use prefflow_engine::schema::{InputDef, TableDef};
use prefflow_engine::{Kind, StageContext, StageError, Tables};
use std::path::Path;

/// Writes episodes in KnowU-Bench's run layout; re-runs when the directory changed since.
pub struct ExportKnowuRuns;

impl Kind for ExportKnowuRuns {
    type Params = ExportParams;
    type State = ();
    const NAME: &'static str = "export_knowu_runs";
    const VERSION: &'static str = "1";
    const OUTPUT_DEFS: &'static [&'static TableDef] = &[&crate::tables::knowu::WRITTEN];
    const INPUTS: &'static [InputDef] = &[
        InputDef::required(
            &ep::EPISODES,
            &[
                ep::EPISODE_ID,
                ep::TASK_ID,
                "score",
                "prompt_tokens_agent",
                "completion_tokens_agent",
            ],
        ),
        InputDef::required(
            &ep::STEPS,
            &[
                ep::EPISODE_ID,
                ep::STEP,
                ep::ACTION_TYPE,
                ep::ARGUMENTS,
                "observation",
                "raw",
                "user_reply",
            ],
        ),
    ];
    const SUMMARY: &'static str = "write inputs episodes + steps as KnowU-Bench results directories in KnowU's action vocabulary (params: dir, prefflow_only_dir?); table `written` lists the task directories";

    fn cached_output_is_valid(&self, params: &Self::Params, workdir: &Path) -> bool {
        [params.dir.clone(), params.prefflow_only_dir()]
            .iter()
            .map(|d| workdir.join(d))
            .all(|dir| {
                !dir.exists()
                    || std::fs::read_to_string(marker(&dir))
                        .is_ok_and(|m| m.trim() == hash_path(&dir))
            })
    }

    fn run(&self, params: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let run = run::from_frames(ctx.input("episodes")?, ctx.input("steps")?)?;
        check_task_ids(&run)?;
        let (knowu, prefflow): (Vec<RunEpisode>, Vec<RunEpisode>) =
            run.into_iter().partition(|e| !is_prefflow_only(&e.task_id));
        let extra = params.prefflow_only_dir();
        let mut written = Vec::new();
        for (label, episodes) in [(&params.dir, &knowu), (&extra, &prefflow)] {
            let dir = ctx.resolve(label);
            if episodes.is_empty() && !dir.exists() {
                continue;
            }
            write_run(&dir, episodes)?;
            std::fs::write(marker(&dir), hash_path(&dir))
                .map_err(|e| KnowuError::write(&dir, e))?;
            written.extend(episodes.iter().map(|e| (label.as_str(), e)));
        }
        if !prefflow.is_empty() {
            tracing::info!(
                "stage `{}`: {} episode(s) of prefflow-only classes written apart, to {extra}",
                ctx.stage,
                prefflow.len()
            );
        }
        Ok(Tables::single("written", written_frame(&written)?))
    }
}
