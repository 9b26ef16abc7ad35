//! `replay`: plays a fixed action list per task, then finishes. It exists to drive environments
//! whose tasks carry no solution bundle (remote devices) with known behaviour — smoke-testing a
//! device pool, reproducing a recorded trajectory, or testing the adapter itself.

use std::collections::{HashMap, VecDeque};

use crate::episodes::agent::{ready, Agent, AgentError, AgentFactory, AgentFuture, Brief, Turn};
use crate::tasks::TaskBundle;
use crate::world::phone::{Action, AskRecord, Observation};

/// Builds replay agents from actions keyed by task id.
pub struct Replay {
    actions: HashMap<String, Vec<Action>>,
}

impl Replay {
    /// A factory playing `actions[task_id]` (nothing, then `finish`, for unknown tasks).
    pub fn new(actions: HashMap<String, Vec<Action>>) -> Self {
        Self { actions }
    }
}

impl AgentFactory for Replay {
    fn name(&self) -> String {
        "replay".into()
    }

    fn make<'a>(&'a self, task: &'a TaskBundle, _seed: u64) -> Box<dyn Agent + 'a> {
        let queue = self
            .actions
            .get(&task.task.task_id)
            .cloned()
            .unwrap_or_default();
        Box::new(ReplayAgent {
            queue: queue.into(),
        })
    }
}

struct ReplayAgent {
    queue: VecDeque<Action>,
}

impl Agent for ReplayAgent {
    fn start(&mut self, _brief: &Brief<'_>, _answers: &[AskRecord]) -> Result<(), AgentError> {
        Ok(())
    }

    fn next<'a>(&'a mut self, _last: &'a Observation) -> AgentFuture<'a, Turn> {
        ready(Ok(Turn::plain(
            self.queue.pop_front().unwrap_or(Action::Finish),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::episodes::remote::episode::bundle;
    use crate::tasks::testkit::block_on;

    #[test]
    fn plays_the_task_s_actions_then_finishes() {
        let actions = HashMap::from([("t1".to_string(), vec![Action::Back, Action::Home])]);
        let factory = Replay::new(actions);
        let b = bundle("t1", "go", None);
        let mut agent = factory.make(&b, 0);
        let obs = Observation::ok("");
        let mut played = Vec::new();
        for _ in 0..3 {
            played.push(block_on(agent.next(&obs)).unwrap().decision.unwrap());
        }
        assert_eq!(played, vec![Action::Back, Action::Home, Action::Finish]);
        let other = bundle("t2", "go", None);
        let mut agent = factory.make(&other, 0);
        assert_eq!(
            block_on(agent.next(&obs)).unwrap().decision.unwrap(),
            Action::Finish
        );
    }
}
