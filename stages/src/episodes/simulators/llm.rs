//! `llm`: a chat model playing the user (iPrefBench C.3, G.1). Its system prompt carries the
//! persona, the profile entries relevant to the task ([`relevant_entries`]) and the task's
//! hidden context (ask-only values, situational facts); it keeps the conversation so follow-up questions read naturally. Each reply is
//! audited against the task's slots ([`audit`]), so a simulator that leaks or invents shows up
//! per episode in the `volunteered` / `ungrounded` columns.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::episodes::agent::{AgentError, AgentFuture};
use crate::episodes::prompts::{self, Prompts};
use crate::episodes::simulator::{audit, Simulator, UserReply, DONT_KNOW};
use crate::episodes::simulators::relevance::relevant_entries;
use crate::llm::{ChatMessage, ChatRequest, LlmClient};
use crate::tasks::user::spoken;
use crate::tasks::{Slot, TaskBundle};
use crate::world::World;

/// The model-backed user of one episode.
pub struct LlmUser<'a> {
    client: LlmClient<'a>,
    prompts: Arc<Prompts>,
    slots: &'a [Slot],
    messages: Vec<ChatMessage>,
    epoch: u32,
}

impl<'a> LlmUser<'a> {
    /// A user for `bundle`'s task, speaking as `persona`; its system prompt is rendered now, so
    /// a template fault is reported before the episode starts. `prompts` are the stage's
    /// compiled user templates, shared by its episodes.
    pub fn new(
        client: LlmClient<'a>,
        prompts: impl Into<Arc<Prompts>>,
        world: &World,
        bundle: &'a TaskBundle,
        epoch: u32,
    ) -> Result<Self, AgentError> {
        let prompts = prompts.into();
        let system = system_prompt(&prompts, world, bundle)?;
        Ok(Self {
            client,
            prompts,
            slots: &bundle.slots,
            messages: vec![ChatMessage::new("system", system)],
            epoch,
        })
    }
}

impl Simulator for LlmUser<'_> {
    fn reply<'a>(&'a mut self, question: &'a str) -> AgentFuture<'a, UserReply> {
        Box::pin(self.answer(question))
    }
}

impl LlmUser<'_> {
    async fn answer(&mut self, question: &str) -> Result<UserReply, AgentError> {
        let asked = self
            .prompts
            .render(prompts::USER_QUESTION, &json!({ "question": question }))?;
        self.messages.push(ChatMessage::new("user", asked));
        let request = ChatRequest {
            messages: self.messages.clone(),
            ..ChatRequest::default()
        };
        let reply = self.client.chat(&request, self.epoch).await?;
        let text = reply
            .content
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| DONT_KNOW.to_string());
        self.messages
            .push(ChatMessage::new("assistant", text.clone()));
        let (disclosed, volunteered, ungrounded) = audit(question, &text, self.slots);
        Ok(UserReply {
            text,
            disclosed,
            volunteered,
            ungrounded,
            usage: reply.usage,
        })
    }
}

/// The simulated user's system prompt for `bundle`'s task (its first message): what `plan`
/// counts and what the simulator sends.
pub fn system_prompt(
    prompts: &Prompts,
    world: &World,
    bundle: &TaskBundle,
) -> Result<String, AgentError> {
    prompts.render(prompts::USER_SYSTEM, &context(world, bundle))
}

/// What an ask-only value is, as one sentence the simulated user can act on: the slot's
/// `about`, else its first keyword or its id in words (a value without it is a bare number or
/// word the model cannot place).
fn about(slot: Option<&Slot>, id: &str) -> String {
    slot.map(|s| s.about.trim())
        .filter(|a| !a.is_empty())
        .map(str::to_string)
        .or_else(|| slot.and_then(|s| s.keywords.first().cloned()))
        .unwrap_or_else(|| id.replace('_', " "))
}

/// The template variables of the simulator prompt (see datasets/prompts/README.md): the
/// persona, the profile entries relevant to the task ([`relevant_entries`]) and the task's
/// ask-only values and facts; values are spoken (enum ids as words, as the scripted user says
/// them and as the audit looks for them).
pub fn context(world: &World, bundle: &TaskBundle) -> Value {
    let persona = &world.persona;
    let profile: Vec<Value> = relevant_entries(world, bundle)
        .into_iter()
        .map(|p| json!({ "dimension": p.dimension, "key": p.key, "value": spoken(&p.value) }))
        .collect();
    let hidden = &bundle.task.hidden_context;
    let ask_only: Vec<Value> = hidden
        .ask_only
        .iter()
        .map(|(slot, value)| {
            json!({ "slot": slot, "about": about(bundle.slot(slot), slot), "value": spoken(value) })
        })
        .collect();
    json!({
        "instruction": bundle.task.instruction,
        "persona": {
            "name": persona.name, "age": persona.age, "city": persona.city,
            "occupation": persona.occupation, "summary": persona.summary,
            "routines": persona.routines,
        },
        "profile": profile,
        "ask_only": ask_only,
        "facts": hidden.facts,
    })
}
