//! `authored`: plays the authored trajectories of `datasets/judge-labels/episodes/` (the
//! labelled model-like episodes the judges are validated on, iPrefBench §4.5). Each task plays
//! one episode per authored file, in name order (the epoch is the file's index); tasks without
//! one play none. The actions are fixed: the agent plays them whatever the user replies, so the
//! human labels stay true whichever simulator answers.

use std::collections::VecDeque;

use crate::episodes::agent::{ready, Agent, AgentError, AgentFactory, AgentFuture, Brief, Turn};
use crate::episodes::labelled::{self, ByTask};
use crate::tasks::TaskBundle;
use crate::world::phone::{Action, AskRecord, Observation};

/// Builds agents from the authored episodes of a directory.
pub struct Authored {
    episodes: ByTask,
}

impl Authored {
    /// Reads `dir` (`shown`: as the pipeline wrote it).
    pub fn load(dir: &std::path::Path, shown: &str) -> Result<Self, String> {
        Ok(Self {
            episodes: labelled::load(dir, shown)?,
        })
    }
}

impl AgentFactory for Authored {
    fn name(&self) -> String {
        "authored".into()
    }

    fn epochs(&self, task: &TaskBundle, _configured: u32) -> u32 {
        self.episodes
            .get(&task.task.task_id)
            .map_or(0, |e| e.len() as u32)
    }

    fn make<'a>(&'a self, task: &'a TaskBundle, seed: u64) -> Box<dyn Agent + 'a> {
        self.make_epoch(task, seed, 0)
    }

    fn make_epoch<'a>(
        &'a self,
        task: &'a TaskBundle,
        _seed: u64,
        epoch: u32,
    ) -> Box<dyn Agent + 'a> {
        let actions = self
            .episodes
            .get(&task.task.task_id)
            .and_then(|e| e.get(epoch as usize))
            .map(|e| e.actions.clone())
            .unwrap_or_default();
        Box::new(Fixed {
            queue: actions.into(),
        })
    }
}

struct Fixed {
    queue: VecDeque<Action>,
}

impl Agent for Fixed {
    fn start(&mut self, _: &Brief<'_>, _: &[AskRecord]) -> Result<(), AgentError> {
        Ok(())
    }

    fn next<'a>(&'a mut self, _last: &'a Observation) -> AgentFuture<'a, Turn> {
        ready(Ok(Turn::plain(
            self.queue.pop_front().unwrap_or(Action::Finish),
        )))
    }
}
