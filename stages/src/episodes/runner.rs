//! The episode loop: brief the agent, run the optional clarification phase, then alternate agent
//! actions and environment observations until the agent finishes, errors or hits `max_steps`.
//! Every action becomes a step row; `ask_user` goes to the simulator, and its reply and
//! disclosure audit ride on the asking step.
//!
//! The loop is async: an agent's or simulator's model call is awaited, so an episode waiting on
//! its endpoint holds no thread; the environment's steps (the simulated phone) are short CPU
//! work done in place.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use crate::world::history::HistoryEvent;
use crate::world::phone::{Action, ActionSpace, AskRecord, Observation, Status};

use super::agent::{Agent, AgentError, Brief, Turn};
use super::codec::{encode, UNKNOWN};
use super::env::Environment;
use super::record::{EpisodeRow, EpisodeRun, StepRow};
use super::retrieval::IndexCache;
use super::simulator::{Simulator, UserReply};

/// What identifies and bounds one episode.
#[derive(Debug, Clone)]
pub struct EpisodeSpec {
    /// The row identity (episode_id, task_id, variant, epoch, persona, agent, seed, exposure).
    pub row: EpisodeRow,
    /// The instruction the user gives.
    pub instruction: String,
    /// GUI or tools.
    pub space: ActionSpace,
    /// Steps allowed in the act phase.
    pub max_steps: u32,
    /// Whether to run pre-execution clarification.
    pub clarify: bool,
    /// The retrieval indexes of the stage instance the episode belongs to, shared by its
    /// episodes (see [`IndexCache`]); a fresh one for an episode played on its own.
    pub indexes: Arc<IndexCache>,
}

/// Runs one episode to completion. Agent and simulator failures end it with status `error`;
/// everything recorded up to then is kept.
pub async fn run_episode(
    env: &mut dyn Environment,
    agent: &mut dyn Agent,
    user: &mut dyn Simulator,
    history: &[&HistoryEvent],
    spec: EpisodeSpec,
) -> EpisodeRun {
    let mut run = Recorder::new(spec.row.clone(), history);
    let outcome = play(env, agent, user, history, &spec, &mut run).await;
    let mut episode = run.episode;
    let mut fault = None;
    match outcome {
        Ok(status) => episode.status = status.into(),
        Err(e) => {
            episode.status = "error".into();
            episode.error = Some(e.to_string());
            if let AgentError::Llm(e) = e {
                fault = Some(e);
            }
        }
    }
    episode.steps = run.steps.len() as u32;
    EpisodeRun {
        episode,
        steps: run.steps,
        diff: env.diff().to_string(),
        fault,
    }
}

async fn play(
    env: &mut dyn Environment,
    agent: &mut dyn Agent,
    user: &mut dyn Simulator,
    history: &[&HistoryEvent],
    spec: &EpisodeSpec,
    run: &mut Recorder,
) -> Result<&'static str, AgentError> {
    let start = Briefing::of(&*env);
    let first = start.first.clone();
    let brief = start.brief(
        &spec.instruction,
        spec.space,
        history,
        spec.row.epoch,
        &spec.indexes,
    );
    let mut answered = Vec::new();
    if spec.clarify {
        let turn = agent.clarify(&brief).await?;
        run.add_usage(&turn);
        for q in turn.decision.unwrap_or_default() {
            let (obs, reply) = ask(env, user, &q).await?;
            answered.push(AskRecord {
                question: q.clone(),
                reply: reply.text.clone(),
            });
            run.push_ask("clarify", &q, &obs, reply, None);
        }
    }
    agent.start(&brief, &answered)?;
    let mut last = first;
    for _ in 0..spec.max_steps {
        let turn = agent.next(&last).await?;
        run.add_usage(&turn);
        last = match turn.decision {
            Err(why) => {
                let obs = Observation::error(format!("could not parse your action: {why}"));
                run.push_unparsed(&obs, turn.raw);
                obs
            }
            Ok(Action::AskUser { text }) => {
                let (obs, reply) = ask(env, user, &text).await?;
                run.push_ask("act", &text, &obs, reply, turn.raw);
                obs
            }
            Ok(action) => {
                let obs = env.step(&action).await;
                run.push_action(&action, &obs, turn.raw);
                obs
            }
        };
        if last.status == Status::Done || env.finished() {
            return Ok("ok");
        }
    }
    Ok("max_steps")
}

/// What an episode's [`Brief`] borrows from its environment when it starts: the first
/// observation, the tools and the clock. One place builds briefs, for the episode loop and for
/// `plan`'s estimate of the first request.
pub struct Briefing {
    /// The first observation (home screen or tool overview).
    pub first: Observation,
    /// The phone's tools.
    pub tools: Arc<[crate::world::phone::ToolSpec]>,
    /// The clock, as text.
    pub now: String,
}

impl Briefing {
    /// What `env` shows when an episode starts.
    pub fn of(env: &dyn Environment) -> Self {
        Self {
            first: env.observe(),
            tools: env.tools(),
            now: env.now(),
        }
    }

    /// The brief of an episode of `instruction` starting here.
    pub fn brief<'a>(
        &'a self,
        instruction: &'a str,
        space: ActionSpace,
        history: &'a [&'a HistoryEvent],
        epoch: u32,
        indexes: &'a IndexCache,
    ) -> Brief<'a> {
        Brief {
            instruction,
            space,
            tools: &self.tools,
            history,
            now: &self.now,
            observation: &self.first,
            epoch,
            indexes,
        }
    }
}

async fn ask(
    env: &mut dyn Environment,
    user: &mut dyn Simulator,
    question: &str,
) -> Result<(Observation, UserReply), AgentError> {
    let reply = user.reply(question).await?;
    let obs = env.ask(question, &reply.text);
    Ok((obs, reply))
}

/// Accumulates step rows and per-episode counters.
struct Recorder {
    episode: EpisodeRow,
    steps: Vec<StepRow>,
    pending_shown: Vec<String>,
}

impl Recorder {
    fn new(mut episode: EpisodeRow, history: &[&HistoryEvent]) -> Self {
        episode.shown_events = history.len() as u32;
        Self {
            episode,
            steps: Vec::new(),
            pending_shown: history.iter().map(|e| e.event_id.clone()).collect(),
        }
    }

    fn add_usage<T>(&mut self, turn: &Turn<T>) {
        self.episode.add_agent_usage(&turn.usage);
    }

    fn push(&mut self, mut row: StepRow) {
        row.episode_id = self.episode.episode_id.clone();
        row.step = self.steps.len() as u32 + 1;
        row.actor = "agent".into();
        row.shown_events = std::mem::take(&mut self.pending_shown);
        self.steps.push(row);
    }

    fn push_action(&mut self, action: &Action, obs: &Observation, raw: Option<String>) {
        if let Action::Answer { text } = action {
            self.episode.final_answer = Some(text.clone());
        }
        let (action_type, arguments) = encode(action);
        self.push(StepRow {
            phase: "act".into(),
            action_type,
            arguments: arguments.to_string(),
            observation: Some(obs.text.clone()),
            observation_status: status_str(obs.status).into(),
            raw,
            ..StepRow::default()
        });
    }

    fn push_unparsed(&mut self, obs: &Observation, raw: Option<String>) {
        self.push(StepRow {
            phase: "act".into(),
            action_type: UNKNOWN.into(),
            arguments: "{}".into(),
            observation: Some(obs.text.clone()),
            observation_status: status_str(obs.status).into(),
            raw,
            ..StepRow::default()
        });
    }

    fn push_ask(
        &mut self,
        phase: &'static str,
        question: &str,
        obs: &Observation,
        reply: UserReply,
        raw: Option<String>,
    ) {
        self.episode.ask_user_calls += 1;
        self.episode.add_user_usage(&reply.usage);
        self.episode.volunteered += u32::from(!reply.volunteered.is_empty());
        self.episode.ungrounded += u32::from(reply.ungrounded);
        let (action_type, arguments) = encode(&Action::AskUser {
            text: question.to_string(),
        });
        self.push(StepRow {
            phase: phase.into(),
            action_type,
            arguments: arguments.to_string(),
            observation: Some(obs.text.clone()),
            observation_status: status_str(obs.status).into(),
            user_reply: Some(reply.text),
            disclosed_slots: reply.disclosed,
            raw,
            ..StepRow::default()
        });
    }
}

fn status_str(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Error => "error",
        Status::Done => "done",
    }
}

/// Awaits `futures` together on the calling task, at most `limit` of them started at a time
/// (the next starts when one finishes); their outputs in input order. Each future is polled only
/// when its own waker fired, so many in flight cost no rescans. It exists so the episodes of one
/// engine item (its tasks × epochs) wait on their model together instead of one after another,
/// without requiring `'static` futures as a spawned task would.
pub async fn join_all<F: Future>(futures: Vec<F>, limit: usize) -> Vec<F::Output> {
    let n = futures.len();
    let mut pending: Vec<Option<Pin<Box<F>>>> =
        futures.into_iter().map(|f| Some(Box::pin(f))).collect();
    let mut out: Vec<Option<F::Output>> = (0..n).map(|_| None).collect();
    let limit = limit.max(1).min(n);
    let woken = Arc::new(Woken::default());
    woken.push_all(0..limit);
    let wakers: Vec<Waker> = (0..n)
        .map(|index| {
            Waker::from(Arc::new(Child {
                index,
                woken: woken.clone(),
            }))
        })
        .collect();
    let (mut started, mut left) = (limit, n);
    std::future::poll_fn(|cx| {
        // The parent's waker is stored before the queue is read, so a child woken during this
        // pass reschedules the task; the pass never loops, so tokio's cooperative budget (which
        // makes an exhausted resource wake at once) cannot spin it.
        woken.set_parent(cx.waker());
        let mut todo: VecDeque<usize> = woken.take().into();
        while let Some(i) = todo.pop_front() {
            let Some(future) = pending[i].as_mut() else {
                continue;
            };
            if let Poll::Ready(value) = future.as_mut().poll(&mut Context::from_waker(&wakers[i])) {
                out[i] = Some(value);
                pending[i] = None;
                left -= 1;
                if started < n {
                    todo.push_back(started);
                    started += 1;
                }
            }
        }
        if left == 0 {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    out.into_iter().flatten().collect()
}

/// The futures of a [`join_all`] that were woken since its last pass, and its own waker.
#[derive(Default)]
struct Woken {
    queue: Mutex<Vec<usize>>,
    parent: Mutex<Option<Waker>>,
}

impl Woken {
    fn push_all(&self, indexes: impl IntoIterator<Item = usize>) {
        lock(&self.queue).extend(indexes);
    }

    fn take(&self) -> Vec<usize> {
        std::mem::take(&mut *lock(&self.queue))
    }

    fn set_parent(&self, waker: &Waker) {
        let mut parent = lock(&self.parent);
        if !parent.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *parent = Some(waker.clone());
        }
    }

    fn wake(&self, index: usize) {
        self.push_all([index]);
        if let Some(parent) = lock(&self.parent).as_ref() {
            parent.wake_by_ref();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The waker of one future of a [`join_all`].
struct Child {
    index: usize,
    woken: Arc<Woken>,
}

impl Wake for Child {
    fn wake(self: Arc<Self>) {
        self.woken.wake(self.index);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.wake(self.index);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::join_all;
    use crate::tasks::testkit::block_on;

    /// Ten futures, each yielding a few times: at most `limit` run at once, all finish, and the
    /// outputs come back in input order whatever order they finished in.
    #[test]
    fn join_all_bounds_what_runs_at_once_and_keeps_input_order() {
        let (active, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let futures: Vec<_> = (0..10u32)
            .map(|i| {
                let (active, most) = (&active, &most);
                async move {
                    let now = active.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    for _ in 0..(10 - i) {
                        tokio::task::yield_now().await;
                    }
                    active.fetch_sub(1, Ordering::SeqCst);
                    i * 2
                }
            })
            .collect();
        let out = block_on(join_all(futures, 3));
        assert_eq!(out, (0..10).map(|i| i * 2).collect::<Vec<_>>());
        assert_eq!(most.load(Ordering::SeqCst), 3);
        assert_eq!(active.load(Ordering::SeqCst), 0);
        assert!(block_on(join_all(Vec::<std::future::Ready<u8>>::new(), 4)).is_empty());
    }
}
