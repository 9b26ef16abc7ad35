//! `task_stats`: a task set's `tasks`, `slots` and `criteria` → the `stats` table, comparable to
//! iPrefBench Table D.1 (with the paper's figures alongside). The task set passes through, so
//! the released set and its statistics live in one stage (`taskset.tasks`, `taskset.stats`).

use prefflow_engine::schema::{InputDef, TableDef};
use prefflow_engine::{Kind, StageContext, StageError, Tables};
use serde::Deserialize;

use crate::tasks::stats::{compute, stats_frame};

/// Parameters of `task_stats` (none).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskStatsParams {}

/// Summarizes a task set.
pub struct TaskStats;

impl Kind for TaskStats {
    type Params = TaskStatsParams;
    type State = ();
    const NAME: &'static str = "task_stats";
    const VERSION: &'static str = "3";
    const OUTPUT_DEFS: &'static [&'static TableDef] = &[
        &crate::tables::tasks::TASKS,
        &crate::tables::tasks::SLOTS,
        &crate::tables::tasks::CRITERIA,
        &crate::tables::tasks::STATS,
    ];
    const INPUTS: &'static [InputDef] = &[
        InputDef::required(
            &crate::tables::tasks::TASKS,
            &[
                crate::tables::tasks::TASK_ID,
                crate::tables::tasks::TEMPLATE,
                crate::tables::tasks::PERTURBATION,
                "task_type",
                "cross_app",
                "apps",
            ],
        ),
        InputDef::required(
            &crate::tables::tasks::SLOTS,
            &[
                crate::tables::tasks::TASK_ID,
                crate::tables::tasks::SLOT_ID,
                crate::tables::tasks::SOURCE,
            ],
        ),
        InputDef::required(
            &crate::tables::tasks::CRITERIA,
            &[
                crate::tables::tasks::TASK_ID,
                crate::tables::tasks::CRITERION_ID,
                crate::tables::tasks::KIND,
            ],
        ),
    ];
    const SUMMARY: &'static str =
        "tasks, slots, criteria → the same tables plus stats (section, key, value, paper), like iPrefBench Table D.1";

    fn run(&self, _: &Self::Params, ctx: &StageContext<'_>) -> Result<Tables, StageError> {
        let (tasks, slots, criteria) = (
            ctx.input("tasks")?,
            ctx.input("slots")?,
            ctx.input("criteria")?,
        );
        let stats = stats_frame(&compute(tasks, slots, criteria)?)?;
        Ok(Tables::new([
            ("tasks", tasks.clone()),
            ("slots", slots.clone()),
            ("criteria", criteria.clone()),
            ("stats", stats),
        ]))
    }
}
