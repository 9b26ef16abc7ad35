//! `llm`: a chat-completions model as the agent (iPrefBench G.2). It keeps the whole transcript
//! of the episode. In tools mode the phone's tools (plus `ask_user`, `answer`, `finish`) are
//! offered as functions and the model's `tool_calls` become actions; in GUI mode the model
//! answers one JSON action per turn (`{"action": "tap", "element": 3}`) under JSON mode.
//! Output that is not a valid action becomes an `unknown` step and the model is told why — a
//! weak model costs steps, never the run. Provider faults (after the client's retries) end the
//! episode with status `error` and [`crate::episodes::EpisodeRun::fault`] set, so `run_episodes`
//! fails the item instead of storing the episode.

use std::collections::VecDeque;
use std::sync::Arc;

use prefflow_engine::store::Store;
use prefflow_engine::StageError;
use serde_json::{json, Map, Value};

use crate::episodes::access::ModelAccess;
use crate::episodes::agent::{Agent, AgentError, AgentFactory, AgentFuture, Brief, Turn};
use crate::episodes::prompts::{self, Prompts};
use crate::episodes::toolset;
use crate::llm::{self, ChatMessage, ChatRequest, LlmClient, LlmConfig, Reply, ToolCall};
use crate::tasks::TaskBundle;
use crate::world::phone::{Action, ActionSpace, AskRecord, Observation, Status, ToolSpec};

/// Builds one [`LlmAgent`] per episode; holds what all episodes of a stage share.
pub struct LlmFactory<'a> {
    config: LlmConfig,
    /// Offer at most this many phone tools, chosen per task so it stays solvable
    /// ([`toolset::offered`]); hosted APIs cap function lists (OpenAI: 128) while the phone has
    /// ~220 tools.
    max_tools: Option<usize>,
    cache: &'a dyn Store,
    offline: bool,
    prompts: Arc<Prompts>,
    /// Where the agent's calls are counted (role `agent`).
    usage: Option<&'a prefflow_engine::usage::UsageMeter>,
    /// The last [`Stable`] prompt part rendered (shared by the episodes showing its history).
    stable: std::sync::Mutex<Option<Arc<Stable>>>,
    /// The flow its calls form in the endpoint's fair queue (the stage instance).
    flow: String,
}

/// What the `llm` agent is built from: a stage's model, its templates compiled once, and
/// `max_tools`.
#[derive(Debug, Clone)]
pub struct LlmAgentConfig {
    /// The model.
    pub llm: LlmConfig,
    /// The agent's templates ([`prompts::AGENT_TEMPLATES`]), compiled.
    pub prompts: Arc<Prompts>,
    /// Offer at most this many phone tools (see [`LlmFactory`]).
    pub max_tools: Option<usize>,
}

impl LlmAgentConfig {
    /// The configuration from a stage's `llm` block and `prompts` directory (relative to
    /// `workdir`): an input error when the block is missing or a template is missing or does
    /// not parse, so every episode is spared failing alike.
    pub fn load(
        llm: Option<&LlmConfig>,
        workdir: &std::path::Path,
        prompts_dir: &str,
        max_tools: Option<usize>,
    ) -> Result<Self, StageError> {
        let llm = llm.cloned().ok_or_else(|| {
            StageError::Input(
                "agent `llm` needs `llm: { model, base_url or base_url_env }` in params".into(),
            )
        })?;
        let prompts = Prompts::load(workdir, prompts_dir, &prompts::AGENT_TEMPLATES)?;
        Ok(Self {
            llm,
            prompts: Arc::new(prompts),
            max_tools,
        })
    }

    /// The factory of an item's episodes (see [`LlmFactory::new`]).
    pub fn build<'a>(&self, access: ModelAccess<'a>) -> Result<LlmFactory<'a>, StageError> {
        LlmFactory::new(self, access)
    }
}

impl<'a> LlmFactory<'a> {
    /// Checks the endpoint and the key variable, which would otherwise fail every episode
    /// alike, and fails the item with the fix instead.
    pub fn new(agent: &LlmAgentConfig, access: ModelAccess<'a>) -> Result<Self, StageError> {
        agent
            .llm
            .check_endpoint(access.offline)
            .map_err(|e| access.named(e))?;
        let mut factory = Self::unchecked(agent, access.cache, access.offline);
        factory.usage = access.usage;
        factory.flow = access.flow();
        Ok(factory)
    }

    /// The factory from its parts (tests drive it without a stage).
    pub fn from_parts(
        config: LlmConfig,
        cache: &'a dyn Store,
        offline: bool,
        workdir: &std::path::Path,
        prompts_dir: &str,
    ) -> Result<Self, StageError> {
        config.check_endpoint(offline)?;
        let agent = LlmAgentConfig::load(Some(&config), workdir, prompts_dir, None)?;
        Ok(Self::unchecked(&agent, cache, offline))
    }

    fn unchecked(agent: &LlmAgentConfig, cache: &'a dyn Store, offline: bool) -> Self {
        Self {
            config: agent.llm.clone(),
            max_tools: agent.max_tools,
            cache,
            offline,
            prompts: agent.prompts.clone(),
            usage: None,
            stable: std::sync::Mutex::new(None),
            flow: String::new(),
        }
    }

    /// The factory as `plan` uses it to build the requests an episode opens with: the same
    /// prompts and tool offer as a run, without the endpoint check (nothing is sent, and a
    /// missing key is the run's error, not the estimate's).
    pub fn for_plan(agent: &LlmAgentConfig, cache: &'a dyn Store) -> Self {
        Self::unchecked(agent, cache, true)
    }
}

impl AgentFactory for LlmFactory<'_> {
    fn name(&self) -> String {
        format!("llm:{}", self.config.model)
    }

    fn make<'b>(&'b self, task: &'b TaskBundle, seed: u64) -> Box<dyn Agent + 'b> {
        Box::new(self.agent(task, seed))
    }
}

impl<'a> LlmFactory<'a> {
    fn agent<'b>(&'b self, task: &'b TaskBundle, seed: u64) -> LlmAgent<'b> {
        LlmAgent {
            factory: self,
            task,
            config: self.config.for_episode(seed),
            client: None,
            epoch: 0,
            space: ActionSpace::Tools,
            tools: Arc::new([]),
            tools_value: minijinja::Value::UNDEFINED,
            functions: Vec::new(),
            messages: Vec::new(),
            fresh: true,
            awaiting: None,
            queued: VecDeque::new(),
            calls: 0,
        }
    }

    /// The requests an episode of `task` opens with, exactly as the agent sends them: the
    /// clarification request first when `clarify` is set, then the first act-phase request
    /// (system prompt, task message and offered tools rendered from `brief`). `plan` counts
    /// their tokens; nothing is sent.
    pub fn first_requests(
        &self,
        task: &TaskBundle,
        brief: &Brief<'_>,
        seed: u64,
        clarify: bool,
    ) -> Result<Vec<ChatRequest>, AgentError> {
        let mut agent = self.agent(task, seed);
        let mut out = Vec::new();
        if clarify {
            agent.adopt(brief);
            out.push(agent.clarify_request(brief)?);
        }
        agent.start(brief, &[])?;
        out.push(agent.request());
        Ok(out)
    }

    /// The configuration episodes call (before each episode's own sampling seed).
    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    /// The record/replay key of `request` sent by the episode with `seed` and `epoch`, or
    /// `None` when the endpoint cannot be resolved here (no variable set).
    pub fn cache_key(&self, request: &ChatRequest, seed: u64, epoch: u32) -> Option<String> {
        LlmClient::new(self.config.for_episode(seed), self.cache, true)
            .ok()
            .map(|c| c.cache_key(request, epoch))
    }
}

/// A decision waiting to be played: a tool call the model made beside the one being played.
type Queued = (String, Result<Action, String>, Option<String>);

/// One episode's model-backed agent.
pub struct LlmAgent<'a> {
    factory: &'a LlmFactory<'a>,
    /// The task, only for choosing which tools the benchmark offers (never shown to the model).
    task: &'a TaskBundle,
    config: LlmConfig,
    client: Option<LlmClient<'a>>,
    epoch: u32,
    space: ActionSpace,
    tools: Arc<[ToolSpec]>,
    /// `tools` as the templates' `tools` variable.
    tools_value: minijinja::Value,
    functions: Vec<llm::ToolSpec>,
    messages: Vec<ChatMessage>,
    /// True until the first `next`, whose observation the task message already shows.
    fresh: bool,
    /// The tool call whose result the next observation is.
    awaiting: Option<String>,
    /// Further tool calls of the last reply, played one per step without asking the model.
    queued: VecDeque<Queued>,
    /// Tool calls seen, for ids of calls that came without one.
    calls: u32,
}

impl<'a> LlmAgent<'a> {
    async fn chat(&mut self, request: &ChatRequest) -> Result<Reply, AgentError> {
        if self.client.is_none() {
            let f = self.factory;
            self.client = Some(
                LlmClient::new(self.config.clone(), f.cache, f.offline)?
                    .metered(f.usage, "agent")
                    .flow(&f.flow),
            );
        }
        match &self.client {
            Some(client) => Ok(client.chat(request, self.epoch).await?),
            None => Err(AgentError::Other("model client unavailable".into())),
        }
    }

    /// The system prompt and the converted history of an episode with this brief (see
    /// [`LlmFactory::stable`]).
    fn stable(&self, brief: &Brief<'_>) -> Result<Arc<Stable>, AgentError> {
        self.factory.stable(brief)
    }

    fn observation_message(&mut self, obs: &Observation) -> Result<ChatMessage, AgentError> {
        let text = self.factory.prompts.render(
            prompts::AGENT_OBSERVATION,
            &json!({ "status": status_name(obs.status), "text": obs.text }),
        )?;
        Ok(match self.awaiting.take() {
            Some(id) => ChatMessage {
                role: "tool".into(),
                content: Some(text),
                tool_calls: Vec::new(),
                tool_call_id: Some(id),
            },
            None => ChatMessage::new("user", text),
        })
    }

    /// Records a tools-mode reply and turns its first call into this turn's decision.
    fn take_tool_reply(&mut self, reply: Reply) -> Turn {
        let mut calls = reply.tool_calls;
        for call in &mut calls {
            self.calls += 1;
            if call.id.is_empty() {
                call.id = format!("call_{}", self.calls);
            }
        }
        self.messages.push(ChatMessage {
            role: "assistant".into(),
            content: reply.content.clone().or_else(|| Some(String::new())),
            tool_calls: calls.clone(),
            tool_call_id: None,
        });
        let Some(first) = calls.first() else {
            return Turn {
                decision: Err("the reply has no function call; call one function per turn (ask_user to ask, answer to reply, finish when done)".into()),
                raw: Some(reply.content.unwrap_or_default()),
                usage: reply.usage,
            };
        };
        let raw = serde_json::to_string(&calls).ok();
        for call in calls.iter().skip(1) {
            let single = serde_json::to_string(call).ok();
            self.queued
                .push_back((call.id.clone(), call_to_action(call, &self.tools), single));
        }
        self.awaiting = Some(first.id.clone());
        Turn {
            decision: call_to_action(first, &self.tools),
            raw,
            usage: reply.usage,
        }
    }

    fn take_gui_reply(&mut self, reply: Reply) -> Turn {
        let text = reply.content.unwrap_or_default();
        self.messages
            .push(ChatMessage::new("assistant", text.clone()));
        Turn {
            decision: parse_json_action(&text),
            raw: Some(text),
            usage: reply.usage,
        }
    }

    /// A turn whose reply the server cut at the completion limit (`finish_reason: length`) and
    /// that is therefore not a usable action says so: the step (and the model, on its next
    /// turn) reads "cut at max_tokens", not just a parse error.
    fn mark_cut(&self, mut turn: Turn, finish_reason: Option<&str>) -> Turn {
        if finish_reason == Some("length") {
            if let Err(why) = &turn.decision {
                let limit = self
                    .config
                    .max_tokens
                    .map(|m| format!(" ({m})"))
                    .unwrap_or_default();
                turn.decision = Err(format!(
                    "the reply was cut at max_tokens{limit} before it was complete; {why}; reply shorter (one function call, no long text)"
                ));
            }
        }
        turn
    }
}

impl Agent for LlmAgent<'_> {
    fn clarify<'a>(&'a mut self, brief: &'a Brief<'a>) -> AgentFuture<'a, Turn<Vec<String>>> {
        Box::pin(self.ask_questions(brief))
    }

    fn start(&mut self, brief: &Brief<'_>, clarifications: &[AskRecord]) -> Result<(), AgentError> {
        self.adopt(brief);
        let stable = self.stable(brief)?;
        let context = context(brief, clarifications, self.offer(), &stable.history);
        self.messages = vec![
            ChatMessage::new("system", stable.system.clone()),
            ChatMessage::new(
                "user",
                self.factory.prompts.render(prompts::AGENT_TASK, &context)?,
            ),
        ];
        self.fresh = true;
        Ok(())
    }

    fn next<'a>(&'a mut self, last: &'a Observation) -> AgentFuture<'a, Turn> {
        Box::pin(self.act(last))
    }
}

impl LlmAgent<'_> {
    /// The clarification request: one JSON-mode request for the questions to ask first.
    fn clarify_request(&self, brief: &Brief<'_>) -> Result<ChatRequest, AgentError> {
        let stable = self.stable(brief)?;
        let context = context(brief, &[], self.offer(), &stable.history);
        Ok(ChatRequest {
            messages: vec![
                ChatMessage::new("system", stable.system.clone()),
                ChatMessage::new(
                    "user",
                    self.factory.prompts.render(prompts::CLARIFY, &context)?,
                ),
            ],
            tools: Vec::new(),
            json_mode: true,
        })
    }

    /// The clarification turn.
    async fn ask_questions(&mut self, brief: &Brief<'_>) -> Result<Turn<Vec<String>>, AgentError> {
        self.adopt(brief);
        let request = self.clarify_request(brief)?;
        let reply = self.chat(&request).await?;
        let text = reply.content.unwrap_or_default();
        Ok(Turn {
            decision: parse_questions(&text),
            raw: Some(text),
            usage: reply.usage,
        })
    }

    /// One act-phase turn: a queued tool call of the last reply, else a request to the model.
    async fn act(&mut self, last: &Observation) -> Result<Turn, AgentError> {
        if !std::mem::take(&mut self.fresh) {
            let message = self.observation_message(last)?;
            self.messages.push(message);
        }
        if let Some((id, decision, raw)) = self.queued.pop_front() {
            self.awaiting = Some(id);
            return Ok(Turn {
                decision,
                raw,
                usage: Default::default(),
            });
        }
        let request = self.request();
        let reply = self.chat(&request).await?;
        let finish = reply.finish_reason.clone();
        let turn = match self.space {
            ActionSpace::Tools => self.take_tool_reply(reply),
            ActionSpace::Gui => self.take_gui_reply(reply),
        };
        Ok(self.mark_cut(turn, finish.as_deref()))
    }
}

impl LlmAgent<'_> {
    /// The act-phase request of this turn: the transcript so far and the offered functions.
    fn request(&self) -> ChatRequest {
        ChatRequest {
            messages: self.messages.clone(),
            tools: self.functions.clone(),
            json_mode: self.space == ActionSpace::Gui,
        }
    }

    /// The offered tools and their template value.
    fn offer(&self) -> (&[ToolSpec], &minijinja::Value) {
        (&self.tools, &self.tools_value)
    }

    /// Takes the episode's space, tools and epoch from the brief.
    fn adopt(&mut self, brief: &Brief<'_>) {
        self.space = brief.space;
        self.epoch = brief.epoch;
        self.tools = toolset::offered(brief.tools, self.task, self.factory.max_tools);
        self.tools_value = tools_context(&self.tools);
        self.functions = match brief.space {
            ActionSpace::Tools => function_specs(&self.tools),
            ActionSpace::Gui => Vec::new(),
        };
    }
}

/// The part of an episode's prompt that is the same for every task showing the same history
/// and for every turn: the system prompt (rendered from `space` and `history` only, with the
/// activity log in it) — the prefix providers cache — and the history converted for templates.
pub struct Stable {
    key: String,
    /// The rendered system prompt.
    pub system: String,
    history: minijinja::Value,
}

/// What identifies a [`Stable`]: the action space and every shown event (id, time, text).
fn stable_key(brief: &Brief<'_>) -> String {
    let mut h = blake3::Hasher::new();
    h.update(match brief.space {
        ActionSpace::Tools => b"tools",
        ActionSpace::Gui => b"gui",
    });
    for e in brief.history {
        for part in [
            e.event_id.as_bytes(),
            e.time.to_string().as_bytes(),
            e.text.as_bytes(),
        ] {
            h.update(&(part.len() as u64).to_le_bytes());
            h.update(part);
        }
    }
    h.finalize().to_hex().to_string()
}

/// The shown history as the templates' `history` variable.
fn history_value(history: &[&crate::world::history::HistoryEvent]) -> minijinja::Value {
    let history: Vec<Value> = history
        .iter()
        .map(|e| {
            json!({
                "event_id": e.event_id, "time": e.time.to_string(), "app": e.app,
                "location": e.location, "text": e.text,
            })
        })
        .collect();
    minijinja::Value::from_serialize(history)
}

impl LlmFactory<'_> {
    /// The [`Stable`] part of an episode with this brief. Every episode of a `history: all`
    /// stage shares one, so it is rendered once and kept (the last one seen).
    fn stable(&self, brief: &Brief<'_>) -> Result<Arc<Stable>, AgentError> {
        let key = stable_key(brief);
        let mut last = self.stable.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(kept) = last.as_ref().filter(|s| s.key == key) {
            return Ok(kept.clone());
        }
        let history = history_value(brief.history);
        let template = match brief.space {
            ActionSpace::Tools => prompts::AGENT_TOOLS,
            ActionSpace::Gui => prompts::AGENT_GUI,
        };
        let context = minijinja::context! {
            space => match brief.space { ActionSpace::Tools => "tools", ActionSpace::Gui => "gui" },
            history => history.clone(),
        };
        let system = self.prompts.render(template, &context)?;
        let made = Arc::new(Stable {
            key,
            system,
            history,
        });
        *last = Some(made.clone());
        Ok(made)
    }
}

/// The template variables of the task message and the clarification request (see
/// datasets/prompts/README.md), converted for the template engine once per episode.
fn context(
    brief: &Brief<'_>,
    clarifications: &[AskRecord],
    offered: (&[ToolSpec], &minijinja::Value),
    history: &minijinja::Value,
) -> minijinja::Value {
    let (offered, tools) = offered;
    let history = history.clone();
    let clarifications: Vec<Value> = clarifications
        .iter()
        .map(|c| json!({ "question": c.question, "reply": c.reply }))
        .collect();
    minijinja::context! {
        instruction => brief.instruction,
        now => prompts::clock_in_words(brief.now),
        space => match brief.space { ActionSpace::Tools => "tools", ActionSpace::Gui => "gui" },
        history => history,
        // The first message names only the apps whose tools are offered.
        observation => match brief.space {
            ActionSpace::Tools => toolset::overview_for(&brief.observation.text, offered),
            ActionSpace::Gui => brief.observation.text.clone(),
        },
        clarifications => clarifications,
        tools => tools.clone(),
    }
}

/// The `tools` template variable (`name`, `description` of each offered tool), converted once
/// per episode when it adopts its offer ([`LlmAgent::adopt`]) and held by the agent, since
/// several prompts of an episode render the same list (up to ~220 entries).
fn tools_context(tools: &[ToolSpec]) -> minijinja::Value {
    minijinja::Value::from_serialize(
        tools
            .iter()
            .map(|t| json!({ "name": t.name, "description": t.description }))
            .collect::<Vec<_>>(),
    )
}

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Error => "error",
        Status::Done => "done",
    }
}

/// The functions offered in tools mode: every phone tool (named with `__`, as function-calling
/// APIs require) and the three actions every episode has.
pub fn function_specs(tools: &[ToolSpec]) -> Vec<llm::ToolSpec> {
    let text = |what: &str| json!({ "type": "object", "properties": { "text": { "type": "string", "description": what } }, "required": ["text"] });
    let mut out: Vec<llm::ToolSpec> = tools
        .iter()
        .map(|t| function(&t.function_name(), &t.description, t.json_schema()))
        .collect();
    out.push(function(
        "ask_user",
        "Ask the user one short question about a detail that matters and that neither the request nor the activity log settles.",
        text("the question"),
    ));
    out.push(function(
        "answer",
        "Tell the user the outcome in a sentence or two: the answer to their question, what you did, or that what they wanted is not available (and what you did instead, or that you did nothing). Call it before finish.",
        text("what you tell the user"),
    ));
    out.push(function(
        "finish",
        "End the episode once the task is completely done.",
        json!({ "type": "object", "properties": {} }),
    ));
    out
}

fn function(name: &str, description: &str, parameters: Value) -> llm::ToolSpec {
    llm::ToolSpec {
        kind: "function".into(),
        function: json!({ "name": name, "description": description, "parameters": parameters }),
    }
}

/// The action a tool call stands for, or why it stands for none.
pub fn call_to_action(call: &ToolCall, tools: &[ToolSpec]) -> Result<Action, String> {
    let name = call.function.name.as_str();
    let args = parse_arguments(name, &call.function.arguments)?;
    match name {
        "ask_user" | "answer" | "finish" => {
            let mut tagged = args;
            tagged.insert("action".into(), Value::String(name.into()));
            serde_json::from_value(Value::Object(tagged))
                .map_err(|e| format!("bad arguments for `{name}`: {e}"))
        }
        _ => tools
            .iter()
            .find(|t| t.function_name() == name || t.name == name)
            .map(|t| Action::Call {
                tool: t.name.clone(),
                args,
            })
            .ok_or_else(|| format!("`{name}` is not one of the offered functions")),
    }
}

fn parse_arguments(name: &str, text: &str) -> Result<Map<String, Value>, String> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(format!(
            "arguments of `{name}` must be a JSON object, got {other}"
        )),
        Err(e) => Err(format!("arguments of `{name}` are not valid JSON: {e}")),
    }
}

/// The JSON object in a reply (code fences and surrounding prose tolerated).
fn json_object(text: &str) -> Result<&str, String> {
    let start = text.find('{');
    let end = text.rfind('}');
    match (start, end) {
        (Some(s), Some(e)) if s < e => Ok(&text[s..=e]),
        _ => Err("the reply contains no JSON object; reply with one action such as {\"action\": \"tap\", \"element\": 3}".into()),
    }
}

/// A GUI-mode reply as an action: exactly the phone's action JSON.
pub fn parse_json_action(text: &str) -> Result<Action, String> {
    let object = json_object(text)?;
    serde_json::from_str::<Action>(object).map_err(|e| format!("not a valid action: {e}"))
}

/// A clarification reply as questions: `{"questions": [...]}` or a bare list of strings.
pub fn parse_questions(text: &str) -> Result<Vec<String>, String> {
    let trimmed = text.trim();
    let value: Value = match trimmed.starts_with('[') {
        true => serde_json::from_str(trimmed),
        false => serde_json::from_str(json_object(trimmed)?),
    }
    .map_err(|e| format!("not valid JSON: {e}"))?;
    let list = match &value {
        Value::Array(a) => a,
        Value::Object(o) => match o.get("questions") {
            Some(Value::Array(a)) => a,
            _ => return Err("expected {\"questions\": [...]}".into()),
        },
        _ => return Err("expected {\"questions\": [...]}".into()),
    };
    list.iter()
        .map(|q| match q {
            Value::String(s) => Ok(s.trim().to_string()),
            other => Err(format!("a question must be a string, got {other}")),
        })
        .filter(|q| !matches!(q, Ok(s) if s.is_empty()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn call(name: &str, args: &str) -> ToolCall {
        serde_json::from_value(json!({"id": "c1", "function": {"name": name, "arguments": args}}))
            .unwrap()
    }

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            irreversible: false,
            params: Vec::new(),
        }
    }

    #[test]
    fn prompts_see_the_tools_of_each_episode() {
        let prompts = Prompts::from_sources(
            "p",
            &[(
                "t.j2",
                "{{ space }} {{ instruction }}: {% for t in tools %}{{ t.name }} {% endfor %}",
            )],
        )
        .unwrap();
        let observation = Observation::ok("home");
        let render = |tools: &Arc<[ToolSpec]>| {
            let brief = Brief {
                instruction: "do it",
                space: ActionSpace::Gui,
                tools,
                history: &[],
                now: "now",
                observation: &observation,
                epoch: 0,
                indexes: &Default::default(),
            };
            prompts
                .render(
                    "t.j2",
                    &context(
                        &brief,
                        &[],
                        (tools, &tools_context(tools)),
                        &history_value(&[]),
                    ),
                )
                .unwrap()
        };
        let a: Arc<[ToolSpec]> = Arc::new([spec("notes.create_note")]);
        let b: Arc<[ToolSpec]> = Arc::new([spec("weather.get_forecast"), spec("clock.set_alarm")]);
        assert_eq!(render(&a), "gui do it: notes.create_note");
        assert_eq!(
            render(&b),
            "gui do it: weather.get_forecast clock.set_alarm"
        );
        assert_eq!(render(&a), "gui do it: notes.create_note");
    }

    /// Prompts become model requests and so the keys of recorded calls: the shipped templates
    /// must render exactly as they did from the plain JSON context.
    #[test]
    fn shipped_templates_render_as_from_the_json_context() {
        let world = crate::tasks::testkit::world();
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let prompts = Prompts::load(&dir, "datasets/prompts", &prompts::AGENT_TEMPLATES).unwrap();
        let history: Vec<&crate::world::history::HistoryEvent> =
            world.history.iter().take(3).collect();
        let tools = world.tools();
        let observation = Observation::ok("screen: Home");
        let answered = [AskRecord {
            question: "Which day?".into(),
            reply: "Friday".into(),
        }];
        for space in [ActionSpace::Gui, ActionSpace::Tools] {
            let brief = Brief {
                instruction: "Book dinner",
                space,
                tools: &tools,
                history: &history,
                now: "2025-10-02T17:30:00",
                observation: &observation,
                epoch: 0,
                indexes: &Default::default(),
            };
            let plain = json!({
                "instruction": brief.instruction,
                "now": prompts::clock_in_words(brief.now),
                "space": if space == ActionSpace::Gui { "gui" } else { "tools" },
                "history": history.iter().map(|e| json!({
                    "event_id": e.event_id, "time": e.time.to_string(), "app": e.app,
                    "location": e.location, "text": e.text,
                })).collect::<Vec<_>>(),
                "observation": observation.text,
                "clarifications": [{ "question": "Which day?", "reply": "Friday" }],
                "tools": tools.iter().map(|t| json!({ "name": t.name, "description": t.description })).collect::<Vec<_>>(),
            });
            let converted = context(
                &brief,
                &answered,
                (&tools, &tools_context(&tools)),
                &history_value(&history),
            );
            for name in [prompts::AGENT_TASK, prompts::CLARIFY] {
                assert_eq!(
                    prompts.render(name, &converted).unwrap(),
                    prompts.render(name, &plain).unwrap(),
                    "{name}"
                );
            }
        }
    }

    /// Providers cache a prompt's prefix: the first message (system prompt with the activity
    /// log) must be byte-identical whatever the task, its clock, its first screen, its offered
    /// tools or its clarifications, and the task's own text must come after it.
    #[test]
    fn the_stable_prefix_comes_first_and_is_the_same_for_every_task() {
        let world = crate::tasks::testkit::world();
        let bundles = crate::tasks::testkit::candidates();
        let dir = tempfile::tempdir().unwrap();
        let store = prefflow_engine::store::FsStore::new(dir.path());
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let config: LlmConfig =
            serde_json::from_value(json!({ "base_url": "http://127.0.0.1:9/v1", "model": "m" }))
                .unwrap();
        let factory =
            LlmFactory::from_parts(config, &store, true, &root, "datasets/prompts").unwrap();
        let history: Vec<&crate::world::history::HistoryEvent> = world.history.iter().collect();
        let all_tools = world.tools();
        let few: Arc<[ToolSpec]> = all_tools.iter().take(5).cloned().collect();
        let first = |i: usize, now: &str, screen: &str, tools: &Arc<[ToolSpec]>, clarify: bool| {
            let observation = Observation::ok(screen);
            let brief = Brief {
                instruction: &bundles[i].task.instruction,
                space: ActionSpace::Tools,
                tools,
                history: &history,
                now,
                observation: &observation,
                epoch: 0,
                indexes: &Default::default(),
            };
            factory
                .first_requests(&bundles[i], &brief, 7, clarify)
                .unwrap()
        };
        let a = first(0, "2025-10-02T17:30:00", "Home", &all_tools, false);
        let b = first(5, "2025-11-20T08:00:00", "Other screen", &few, true);
        let system = |r: &ChatRequest| r.messages[0].content.clone().unwrap();
        assert_eq!(system(&a[0]), system(&b[0]), "clarification request");
        assert_eq!(system(&a[0]), system(&b[1]), "act phase");
        let log = &history[history.len() / 2].text;
        assert!(
            system(&a[0]).contains(log.as_str()),
            "the log is in the system prompt"
        );
        let task = a[0].messages[1].content.clone().unwrap();
        assert!(task.starts_with("Request: "), "{task}");
        assert!(!task.contains(log.as_str()), "and only there");
        // The serialized request begins with the same bytes up to the end of the system prompt.
        let body = |r: &ChatRequest| serde_json::to_string(&r.messages).unwrap();
        let (x, y) = (body(&a[0]), body(&b[1]));
        let shared = x.bytes().zip(y.bytes()).take_while(|(p, q)| p == q).count();
        assert!(shared > system(&a[0]).len(), "{shared} shared bytes");
    }

    #[test]
    fn tool_calls_map_to_phone_actions_by_function_name() {
        let tools = [spec("notes.create_note")];
        let a = call_to_action(&call("notes__create_note", r#"{"title": "x"}"#), &tools).unwrap();
        let Action::Call { tool, args } = a else {
            panic!("{a:?}")
        };
        assert_eq!(
            (tool.as_str(), &args["title"]),
            ("notes.create_note", &json!("x"))
        );
        assert_eq!(
            call_to_action(&call("ask_user", r#"{"text": "Which size?"}"#), &tools).unwrap(),
            Action::AskUser {
                text: "Which size?".into()
            }
        );
        assert_eq!(
            call_to_action(&call("finish", ""), &tools).unwrap(),
            Action::Finish
        );
        let e = call_to_action(&call("shop__order", "{}"), &tools).unwrap_err();
        assert!(e.contains("shop__order"), "{e}");
        let e = call_to_action(&call("ask_user", "{\"text\": "), &tools).unwrap_err();
        assert!(e.contains("not valid JSON"), "{e}");
        let e = call_to_action(&call("answer", "{}"), &tools).unwrap_err();
        assert!(e.contains("answer"), "{e}");
    }

    #[test]
    fn gui_replies_parse_with_fences_and_reject_non_actions() {
        assert_eq!(
            parse_json_action("```json\n{\"action\": \"tap\", \"element\": 3}\n```").unwrap(),
            Action::Tap { element: 3 }
        );
        assert!(parse_json_action("I will tap the button")
            .unwrap_err()
            .contains("no JSON object"));
        assert!(parse_json_action("{\"action\": \"fly\"}")
            .unwrap_err()
            .contains("not a valid action"));
        assert!(parse_json_action("{\"action\": \"tap\", \"element\": ").is_err());
    }

    #[test]
    fn clarification_replies_accept_objects_and_lists() {
        assert_eq!(
            parse_questions(r#"{"questions": ["How many people?", " "]}"#).unwrap(),
            vec!["How many people?".to_string()]
        );
        assert_eq!(
            parse_questions(r#"["a?"]"#).unwrap(),
            vec!["a?".to_string()]
        );
        assert!(parse_questions(r#"{"questions": []}"#).unwrap().is_empty());
        assert!(parse_questions(r#"{"q": 1}"#).is_err());
        assert!(parse_questions("none").is_err());
    }

    #[test]
    fn every_phone_tool_and_the_three_builtins_are_offered() {
        let specs = function_specs(&[spec("notes.create_note")]);
        let names: Vec<&str> = specs
            .iter()
            .map(|s| s.function["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["notes__create_note", "ask_user", "answer", "finish"]
        );
        assert!(specs
            .iter()
            .all(|s| s.kind == "function" && s.function["parameters"]["type"] == "object"));
    }
}
