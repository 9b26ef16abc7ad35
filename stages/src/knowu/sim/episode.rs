//! What `run_knowu_episodes` adds to the generic episode runner for KnowU tasks: a proactive
//! situation's clock, the KnowU user (consent decisions, every profile answer) and the
//! per-episode rule score KnowU's metrics read.

use std::collections::HashMap;

use super::consent::KnowuUser;
use super::score::score;
use super::task::KnowuTaskInfo;
use crate::episodes::hooks::EpisodeHooks;
use crate::episodes::{Simulator, StepRow};
use crate::tasks::TaskBundle;
use crate::world::clock::DateTime;
use crate::world::phone::Phone;

/// The KnowU facts of the tasks a stage runs, by task id (from `knowu_tasks`).
pub struct KnowuHooks {
    tasks: HashMap<String, KnowuTaskInfo>,
}

impl KnowuHooks {
    /// Hooks for the tasks described by `tasks`.
    pub fn new(tasks: HashMap<String, KnowuTaskInfo>) -> Self {
        Self { tasks }
    }

    /// The facts of `bundle`'s task.
    pub fn info(&self, bundle: &TaskBundle) -> Option<&KnowuTaskInfo> {
        self.tasks.get(&bundle.task.task_id)
    }
}

impl EpisodeHooks for KnowuHooks {
    fn clock(&self, bundle: &TaskBundle) -> Option<DateTime> {
        self.info(bundle)?.clock()
    }

    fn scripted_user<'a>(&'a self, bundle: &'a TaskBundle) -> Option<Box<dyn Simulator + 'a>> {
        let info = self.info(bundle)?;
        Some(Box::new(KnowuUser::new(bundle, info)))
    }

    fn score(&self, bundle: &TaskBundle, phone: &Phone<'_>, steps: &[StepRow]) -> Option<f64> {
        Some(score(bundle, self.info(bundle)?, phone, steps))
    }
}
