//! The episode loop: brief the agent, run the optional clarification phase, then alternate agent
//! actions and environment observations until the agent finishes, errors or hits `max_steps`.
//! Every action becomes a step row; `ask_user` goes to the simulator, and its reply and
//! disclosure audit ride on the asking step.

use std::sync::Arc;

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
pub fn run_episode(
    env: &mut dyn Environment,
    agent: &mut dyn Agent,
    user: &mut dyn Simulator,
    history: &[&HistoryEvent],
    spec: EpisodeSpec,
) -> EpisodeRun {
    let mut run = Recorder::new(spec.row.clone(), history);
    let outcome = play(env, agent, user, history, &spec, &mut run);
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

fn play(
    env: &mut dyn Environment,
    agent: &mut dyn Agent,
    user: &mut dyn Simulator,
    history: &[&HistoryEvent],
    spec: &EpisodeSpec,
    run: &mut Recorder,
) -> Result<&'static str, AgentError> {
    let first = env.observe();
    let tools = env.tools();
    let now = env.now();
    let brief = Brief {
        instruction: &spec.instruction,
        space: spec.space,
        tools: &tools,
        history,
        now: &now,
        observation: &first,
        epoch: spec.row.epoch,
        indexes: &spec.indexes,
    };
    let mut answered = Vec::new();
    if spec.clarify {
        let turn = agent.clarify(&brief)?;
        run.add_usage(&turn);
        for q in turn.decision.unwrap_or_default() {
            let (obs, reply) = ask(env, user, &q)?;
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
        let turn = agent.next(&last)?;
        run.add_usage(&turn);
        last = match turn.decision {
            Err(why) => {
                let obs = Observation::error(format!("could not parse your action: {why}"));
                run.push_unparsed(&obs, turn.raw);
                obs
            }
            Ok(Action::AskUser { text }) => {
                let (obs, reply) = ask(env, user, &text)?;
                run.push_ask("act", &text, &obs, reply, turn.raw);
                obs
            }
            Ok(action) => {
                let obs = env.step(&action);
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

fn ask(
    env: &mut dyn Environment,
    user: &mut dyn Simulator,
    question: &str,
) -> Result<(Observation, UserReply), AgentError> {
    let reply = user.reply(question)?;
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
        self.episode.agent_usage.prompt_tokens += turn.usage.prompt_tokens;
        self.episode.agent_usage.completion_tokens += turn.usage.completion_tokens;
    }

    fn push(&mut self, mut row: StepRow) {
        row.episode_id = self.episode.episode_id.clone();
        row.step = self.steps.len() as u32 + 1;
        row.actor = "agent";
        row.shown_events = std::mem::take(&mut self.pending_shown);
        self.steps.push(row);
    }

    fn push_action(&mut self, action: &Action, obs: &Observation, raw: Option<String>) {
        if let Action::Answer { text } = action {
            self.episode.final_answer = Some(text.clone());
        }
        let (action_type, arguments) = encode(action);
        self.push(StepRow {
            phase: "act",
            action_type,
            arguments: arguments.to_string(),
            observation: Some(obs.text.clone()),
            observation_status: status_str(obs.status),
            raw,
            ..StepRow::default()
        });
    }

    fn push_unparsed(&mut self, obs: &Observation, raw: Option<String>) {
        self.push(StepRow {
            phase: "act",
            action_type: UNKNOWN.into(),
            arguments: "{}".into(),
            observation: Some(obs.text.clone()),
            observation_status: status_str(obs.status),
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
        self.episode.user_usage.prompt_tokens += reply.usage.prompt_tokens;
        self.episode.user_usage.completion_tokens += reply.usage.completion_tokens;
        self.episode.volunteered += u32::from(!reply.volunteered.is_empty());
        self.episode.ungrounded += u32::from(reply.ungrounded);
        let (action_type, arguments) = encode(&Action::AskUser {
            text: question.to_string(),
        });
        self.push(StepRow {
            phase,
            action_type,
            arguments: arguments.to_string(),
            observation: Some(obs.text.clone()),
            observation_status: status_str(obs.status),
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
