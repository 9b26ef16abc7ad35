//! Running a stage in one piece (no `per_item`): here, or as one job of a cluster executor.

use std::sync::Arc;

use super::inputs::InputBlob;
use super::prepare::prepare;
use super::ran::{ItemFailure, ItemsRan};
use super::remote::{ItemExecutor, RemoteWhole};
use super::runner::{Outcome, Runner};
use super::unit::{run_unit, Unit, Work};
use crate::artifact::Manifest;
use crate::decision::Decision;
use crate::error::StageError;
use crate::kind::InputTable;
use crate::plan::Instance;
use crate::usage::Usage;

impl Runner {
    /// Prepares `inst`, runs it once over all its inputs (holding its resource pools) and
    /// commits. Returns its manifest and what this run spent on it.
    pub(super) async fn run_whole(
        self: Arc<Self>,
        inst: Arc<Instance>,
        decision: Decision,
        inputs: Arc<Vec<InputTable>>,
    ) -> Result<(Manifest, Usage), Outcome> {
        let task = self.progress.start(&inst.label(), 1, 0);
        let meter = self.env.meter(&inst);
        let prepared = match prepare(&self.env, &inst, &decision.key, &inputs, &meter).await {
            Ok(p) => p,
            Err((attempts, e)) => {
                task.finish("failed");
                return Err(self.fail(&inst, None, attempts, &e));
            }
        };
        let work = Work {
            inst: inst.clone(),
            unit: Arc::new(Unit {
                item: None,
                rows: None,
                parts: decision.parts,
                key: decision.key,
            }),
            prepared,
            inputs,
            slots: None,
            pools: self.pools_of(&inst),
            meter,
        };
        match run_unit(&self.env, work).await {
            Ok((m, _)) => {
                task.inc();
                task.finish(&format!("executed ({})", super::items::rows_summary(&m)));
                let spent = m.usage.clone();
                Ok((m, spent))
            }
            Err((attempts, e)) => {
                task.finish("failed");
                Err(self.fail(&inst, None, attempts, &e))
            }
        }
    }

    /// Hands `inst` to `executor`, which computes and commits it under its recipe key (from
    /// the input blobs `blobs`), and takes the committed manifest back. A failure's error rows
    /// say where it ran (`ran_in`).
    pub(super) async fn run_whole_remote(
        self: Arc<Self>,
        executor: Arc<dyn ItemExecutor>,
        inst: Arc<Instance>,
        decision: Decision,
        blobs: Vec<InputBlob>,
    ) -> Result<(Manifest, Usage), Outcome> {
        let task = self.progress.start(&inst.label(), 1, 0);
        let req = RemoteWhole {
            env: self.env.clone(),
            inst: inst.clone(),
            decision,
            inputs: blobs,
            pools: self.pool_sizes(&inst),
        };
        let ran = tokio::task::spawn_blocking(move || executor.run_whole(req))
            .await
            .unwrap_or_else(|e| ItemsRan {
                fresh: Default::default(),
                failures: vec![ItemFailure::local(
                    None,
                    1,
                    StageError::Failed(format!("internal error: {e}")),
                )],
            });
        if let Some((m, _)) = ran.fresh.into_values().next() {
            task.inc();
            let rows = super::items::rows_summary(&m);
            task.finish(&format!("executed ({rows}; as a cluster job)"));
            let spent = m.usage.clone();
            return Ok((m, spent));
        }
        task.finish("failed");
        let mut failures = ran.failures.into_iter();
        let first = failures.next().unwrap_or_else(|| {
            let e = StageError::Failed("the cluster job ended without a result".into());
            ItemFailure::local(None, 1, e)
        });
        let (rec, mut rows) = self.fail(&inst, None, first.attempts, &first.error);
        rows.iter_mut()
            .for_each(|r| r.ran_in = first.ran_in.clone());
        for f in failures {
            let mut row = self.error_row(&inst, None, f.attempts, &f.error);
            row.ran_in = f.ran_in;
            rows.push(row);
        }
        Err((rec, rows))
    }
}
