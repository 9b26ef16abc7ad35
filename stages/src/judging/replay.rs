//! Rebuilds an episode's final phone from its recorded steps: each step is decoded back into the
//! exact phone action and performed again, `ask_user` steps get their recorded `user_reply`, and
//! `unknown` steps (output nobody could parse) are skipped, as they changed nothing. A step whose
//! outcome now differs from the recorded `observation_status` is a divergence: the judge reports
//! it instead of silently judging a different episode.

use serde_json::{Map, Value};

use super::index::StepRec;
use crate::episodes::codec::{decode, UNKNOWN};
use crate::episodes::{Environment, PhoneEnv};
use crate::tasks::TaskBundle;
use crate::world::phone::{Action, ActionSpace, EpisodeConfig, Status};
use crate::world::World;

/// One `ask_user` of the episode.
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    /// The asking step.
    pub step: u32,
    /// The agent's question.
    pub question: String,
}

/// One tool call of the episode, successful or not.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    /// The calling step.
    pub step: u32,
    /// `app.operation`.
    pub tool: String,
    /// The arguments as the agent sent them.
    pub args: Map<String, Value>,
    /// Whether the phone accepted it.
    pub ok: bool,
}

/// A step whose replay differs from the record.
#[derive(Debug, Clone, PartialEq)]
pub struct Divergence {
    /// The step.
    pub step: u32,
    /// What happened, in words.
    pub detail: String,
}

/// The replayed episode.
pub struct Replay<'w> {
    /// The phone in its final state.
    pub env: PhoneEnv<'w>,
    /// Questions asked, in order.
    pub asks: Vec<Ask>,
    /// Tool calls, in order.
    pub attempts: Vec<Attempt>,
    /// Steps that did not replay as recorded.
    pub divergences: Vec<Divergence>,
}

/// GUI episodes are recognized by their GUI actions; everything else replays with tools.
fn space_of(steps: &[StepRec]) -> ActionSpace {
    const GUI: [&str; 7] = [
        "open_app", "tap", "type", "select", "scroll", "back", "home",
    ];
    if steps.iter().any(|s| GUI.contains(&s.action_type.as_str())) {
        ActionSpace::Gui
    } else {
        ActionSpace::Tools
    }
}

/// The action a step encodes; `Err` says why it cannot be decoded.
fn decode_step(s: &StepRec) -> Result<Action, String> {
    let args: Value =
        serde_json::from_str(&s.arguments).map_err(|e| format!("`arguments` is not JSON ({e})"))?;
    decode(&s.action_type, &args)
}

/// Replays `steps` of an episode of `bundle` on `world`. `Err` only when the task's overrides do
/// not apply to the world (then nothing can be judged).
pub fn replay<'w>(
    world: &'w World,
    bundle: &TaskBundle,
    steps: &[StepRec],
) -> Result<Replay<'w>, String> {
    let config = EpisodeConfig {
        space: space_of(steps),
        clock: None,
        overrides: bundle.task.overrides.clone(),
    };
    let env = PhoneEnv::new(world, config).map_err(|e| {
        format!(
            "task `{}`: overrides do not apply to this world: {e}",
            bundle.task.task_id
        )
    })?;
    let mut out = Replay {
        env,
        asks: Vec::new(),
        attempts: Vec::new(),
        divergences: Vec::new(),
    };
    for s in steps.iter().filter(|s| s.action_type != UNKNOWN) {
        match decode_step(s) {
            Ok(action) => out.perform(s, &action),
            Err(why) => out.divergences.push(Divergence {
                step: s.step,
                detail: format!("step {} cannot be replayed: {why}", s.step),
            }),
        }
    }
    Ok(out)
}

impl Replay<'_> {
    fn perform(&mut self, s: &StepRec, action: &Action) {
        let obs = match action {
            Action::AskUser { text } => {
                self.asks.push(Ask {
                    step: s.step,
                    question: text.clone(),
                });
                let reply = s.user_reply.as_deref().unwrap_or_default();
                self.env.ask(text, reply)
            }
            other => self.env.step(other),
        };
        if let Action::Call { tool, args } = action {
            self.attempts.push(Attempt {
                step: s.step,
                tool: tool.replace("__", "."),
                args: args.clone(),
                ok: !obs.is_error(),
            });
        }
        let now = match obs.status {
            Status::Ok => "ok",
            Status::Error => "error",
            Status::Done => "done",
        };
        if let Some(recorded) = s.observation_status.as_deref() {
            if recorded != now {
                self.divergences.push(Divergence {
                    step: s.step,
                    detail: format!(
                        "step {} (`{}`) was `{recorded}` when recorded but is `{now}` on replay: {}",
                        s.step, s.action_type, obs.text
                    ),
                });
            }
        }
    }
}
