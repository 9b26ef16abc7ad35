//! Running a stage in one piece (no `per_item`).

use std::sync::Arc;

use super::prepare::prepare;
use super::unit::{run_unit, Unit, Work};
use super::{Outcome, Runner};
use crate::artifact::Manifest;
use crate::decision::Decision;
use crate::kind::InputTable;
use crate::plan::Instance;
use crate::usage::{Usage, UsageMeter};

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
        let meter = Arc::new(UsageMeter::new());
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
}
