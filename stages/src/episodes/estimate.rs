//! What an episode stage's model calls would cost, before it runs (`prefflow plan`): per role
//! (agent, user simulator) the episodes, requests, prompt and completion tokens and money, as
//! ranges, and how many episodes are already recorded (they replay for free).
//!
//! - **Prompt tokens** are counted with the one counter ([`crate::llm::tokens`], chars/4) on the
//!   requests the agent would really send: each task's phone is set up as the episode's is, its
//!   history exposed, and the `llm` agent builds its first request (system prompt, task message,
//!   offered tools) through its own code ([`LlmFactory::first_requests`]); the simulated user's
//!   system prompt likewise ([`crate::episodes::simulators::system_prompt`]).
//! - **Later requests** carry the transcript: each turn adds the model's call and the phone's
//!   answer, measured on the task's reference solution played in the phone.
//! - **Requests** range from the reference's length (a model that does the task as the
//!   reference does) to `max_steps` (one that runs out of steps); questions to the user from the
//!   reference's to one per slot of the task.
//! - A request that would not fit the model's `max_context` is a problem with its fix
//!   (`history: top_k:N`, `max_tools`), which `plan` reports as an error.

use prefflow_engine::estimate::{Estimate, EstimateRow, Range};
use prefflow_engine::store::Store;
use prefflow_engine::StageError;

use super::agent::AgentFactory;
use super::agents::{LlmFactory, Oracle};
use super::env::PhoneEnv;
use super::exposure::{self, Exposure};
use super::params::RunEpisodesParams;
use super::prompts::Prompts;
use super::record::EpisodeRow;
use super::retrieval::IndexCache;
use super::runner::Briefing;
use super::runner::{run_episode, EpisodeSpec};
use super::seed::{episode_id, episode_seed};
use super::setup::EpisodeSetup;
use super::simulator::ScriptedUser;
use super::simulators::system_prompt;
use crate::llm::tokens::{self, message_tokens, prompt_tokens, text_tokens, PER_MESSAGE};
use crate::llm::{ChatMessage, ChatRequest, LlmConfig};
use crate::tasks::TaskBundle;
use crate::world::history::HistoryEvent;
use crate::world::phone::EpisodeConfig;
use crate::world::World;

/// Tokens of a user simulator's reply (a sentence or two), for its completion and the growth
/// of its conversation.
const USER_REPLY_TOKENS: u64 = 25;

/// Everything an episode stage's estimate reads.
pub struct EpisodeStage<'a> {
    /// The stage's params, parsed (the chosen `models` entry applied, templates compiled).
    pub setup: &'a EpisodeSetup,
    /// The world the episodes play in.
    pub world: &'a World,
    /// The tasks that would run (cached ones left out).
    pub bundles: &'a [TaskBundle],
    /// Tasks already cached (free).
    pub cached: usize,
    /// The engine's variant name (the episodes' own name is made from it).
    pub variant: &'a str,
    /// The record/replay store, to tell which episodes are recorded.
    pub cache: &'a dyn Store,
    /// The stage name, for messages.
    pub stage: &'a str,
}

/// One task's figures, per epoch.
#[derive(Debug, Default, Clone)]
struct TaskFigures {
    agent: Calls,
    user: Calls,
    /// Questions the episode asks (low: the reference's; high: one per slot).
    asks: Range,
    /// Epochs whose first agent request is recorded.
    recorded: u64,
    /// Prompt tokens of the first act-phase request, and of it without history.
    first: u64,
    /// Tokens of its stable prefix (the system prompt with the log, and the tools), which a
    /// provider's prompt cache serves after the first request.
    prefix: u64,
    without_history: u64,
    /// Tokens of the offered tools, and how many there are.
    tool_tokens: u64,
    tools: usize,
    /// History events shown.
    shown: usize,
}

/// Requests and tokens of one role in one episode.
#[derive(Debug, Default, Clone, Copy)]
struct Calls {
    requests: Range,
    prompt: Range,
    completion: Range,
}

impl Calls {
    fn plus(self, o: Calls) -> Calls {
        Calls {
            requests: self.requests.plus(o.requests),
            prompt: self.prompt.plus(o.prompt),
            completion: self.completion.plus(o.completion),
        }
    }

    fn times(self, k: f64) -> Calls {
        Calls {
            requests: self.requests.times(k),
            prompt: self.prompt.times(k),
            completion: self.completion.times(k),
        }
    }
}

/// Prompt tokens of `n` requests of a conversation that opens at `first` tokens and grows by
/// `growth` per turn: n·first + growth·n(n−1)/2.
fn conversation(first: u64, growth: f64, n: f64) -> f64 {
    n * first as f64 + growth * n * (n - 1.0).max(0.0) / 2.0
}

/// The estimate of an episode stage (agent `llm` and/or simulator `llm`); `None` when no model
/// plays a part.
pub fn estimate(stage: &EpisodeStage<'_>) -> Result<Option<Estimate>, StageError> {
    let setup = stage.setup;
    let agent = setup
        .agent
        .llm()
        .map(|llm| LlmFactory::for_plan(llm, stage.cache));
    let user = setup.user.model();
    if agent.is_none() && user.is_none() {
        return Ok(None);
    }
    let user_prompts = setup.user.prompts();
    let indexes = IndexCache::default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| StageError::Failed(format!("cannot start a runtime: {e}")))?;
    let variant = &setup.variant;
    let mut figures = Vec::with_capacity(stage.bundles.len());
    let memo = std::sync::Mutex::default();
    for bundle in stage.bundles {
        let task = TaskSetup {
            stage,
            bundle,
            indexes: &indexes,
            variant,
            stage_memo: &memo,
        };
        figures.push(runtime.block_on(task.figures(agent.as_ref(), user_prompts))?);
    }
    Ok(Some(summarize(
        stage,
        agent.as_ref().map(|a| a.config()),
        user,
        &figures,
    )))
}

/// One task's episode as the estimate sets it up.
struct TaskSetup<'a> {
    stage: &'a EpisodeStage<'a>,
    bundle: &'a TaskBundle,
    indexes: &'a IndexCache,
    variant: &'a str,
    /// Tokens of each distinct tool list seen (by its functions' names).
    stage_memo: &'a std::sync::Mutex<std::collections::HashMap<String, u64>>,
}

impl TaskSetup<'_> {
    async fn figures(
        &self,
        agent: Option<&LlmFactory<'_>>,
        user_prompts: Option<&Prompts>,
    ) -> Result<TaskFigures, StageError> {
        let (params, world, task) = (
            &self.stage.setup.params,
            self.stage.world,
            &self.bundle.task,
        );
        let config = EpisodeConfig {
            space: params.space,
            clock: None,
            overrides: task.overrides.clone(),
        };
        let env = super::play::phone_env(world, config.clone(), &task.task_id)?;
        let extra: Vec<HistoryEvent> = env.phone.extra_history().to_vec();
        let history = exposure::episode_history(world, &extra);
        let shown = exposure::select(
            &history,
            params.history,
            params.log,
            &task.instruction,
            self.indexes,
        );
        let (steps, asks) = self.reference(&shown, config).await?;
        let mut fig = TaskFigures {
            asks: Range::new(
                asks.len() as f64,
                (asks.len() + self.bundle.slots.len()) as f64,
            ),
            shown: shown.len(),
            ..TaskFigures::default()
        };
        let briefing = Briefing::of(&env);
        if let Some(factory) = agent {
            self.agent_figures(factory, &briefing, &shown, &steps, &mut fig)?;
        }
        if let Some(prompts) = user_prompts {
            let system = system_prompt(prompts, world, self.bundle)
                .map_err(|e| StageError::Input(e.to_string()))?;
            let opening = message_tokens(&ChatMessage::new("system", system)) + tokens::PER_REQUEST;
            let question = asks
                .iter()
                .map(|q| text_tokens(q) + PER_MESSAGE)
                .sum::<u64>()
                .checked_div(asks.len() as u64)
                .unwrap_or(20 + PER_MESSAGE);
            let growth = (question + USER_REPLY_TOKENS + PER_MESSAGE) as f64;
            let calls = |n: f64| Calls {
                requests: Range::exact(n),
                prompt: Range::exact(conversation(opening + question, growth, n)),
                completion: Range::exact(n * USER_REPLY_TOKENS as f64),
            };
            let (low, high) = (calls(fig.asks.low), calls(fig.asks.high));
            fig.user = Calls {
                requests: Range::new(low.requests.low, high.requests.high),
                prompt: Range::new(low.prompt.low, high.prompt.high),
                completion: Range::new(low.completion.low, high.completion.high),
            };
        }
        Ok(fig)
    }

    /// The reference solution played in the phone (as the `oracle` agent plays it, with the
    /// scripted user): its steps as (call, answer) token counts, and its questions.
    async fn reference(
        &self,
        shown: &[&HistoryEvent],
        config: EpisodeConfig,
    ) -> Result<(Vec<(u64, u64)>, Vec<String>), StageError> {
        let mut env = PhoneEnv::new(self.stage.world, config)
            .map_err(|e| StageError::Input(e.to_string()))?;
        let mut oracle = Oracle.make(self.bundle, 0);
        let mut user = ScriptedUser::new(&self.bundle.slots);
        let spec = EpisodeSpec {
            row: EpisodeRow {
                episode_id: episode_id(&self.bundle.task.task_id, "estimate", 0),
                ..EpisodeRow::default()
            },
            instruction: self.bundle.task.instruction.clone(),
            space: self.stage.setup.params.space,
            max_steps: self.stage.setup.params.max_steps.max(1),
            clarify: false,
            indexes: Default::default(),
        };
        let run = run_episode(&mut env, oracle.as_mut(), &mut user, shown, spec).await;
        let steps = run
            .steps
            .iter()
            .map(|s| {
                let call = text_tokens(&s.action_type) + text_tokens(&s.arguments) + 8;
                let answer = s
                    .user_reply
                    .as_deref()
                    .or(s.observation.as_deref())
                    .map_or(0, text_tokens);
                (call, answer + PER_MESSAGE)
            })
            .collect();
        let asks = run
            .steps
            .iter()
            .filter(|s| s.action_type == "ask_user")
            .map(|s| s.arguments.clone())
            .collect();
        Ok((steps, asks))
    }

    /// Tokens of a request's offered tools ([`prompt_tokens`]'s share for them), counted once
    /// per distinct list.
    fn tool_tokens(&self, request: &ChatRequest) -> u64 {
        let names: String = request
            .tools
            .iter()
            .map(|t| t.function["name"].as_str().unwrap_or_default())
            .collect::<Vec<_>>()
            .join(",");
        let mut memo = self.stage_memo.lock().unwrap_or_else(|p| p.into_inner());
        *memo.entry(names).or_insert_with(|| {
            request
                .tools
                .iter()
                .map(|t| text_tokens(&t.function.to_string()))
                .sum()
        })
    }

    /// The agent's requests: the first one(s) rendered as the agent renders them, then the
    /// reference's turns as the transcript's growth.
    fn agent_figures(
        &self,
        factory: &LlmFactory<'_>,
        briefing: &Briefing,
        shown: &[&HistoryEvent],
        steps: &[(u64, u64)],
        fig: &mut TaskFigures,
    ) -> Result<(), StageError> {
        let params = &self.stage.setup.params;
        let task = &self.bundle.task;
        let seed = episode_seed(params.seed, &task.task_id, self.variant, 0);
        let brief = briefing.brief(&task.instruction, params.space, shown, 0, self.indexes);
        let requests = factory
            .first_requests(self.bundle, &brief, seed, params.clarify)
            .map_err(|e| StageError::Input(format!("task `{}`: {e}", task.task_id)))?;
        let Some(first) = requests.last() else {
            return Ok(());
        };
        fig.tools = first.tools.len();
        fig.tool_tokens = self.tool_tokens(first);
        // The one counter's sum (`prompt_tokens`), with the tools' schemas — the same list for
        // every task of a domain — counted once per list.
        fig.first = tokens::PER_REQUEST
            + first.messages.iter().map(message_tokens).sum::<u64>()
            + fig.tool_tokens;
        fig.prefix = first.messages.first().map_or(0, message_tokens) + fig.tool_tokens;
        if factory.config().max_context.is_some() {
            // Only a fix for an oversized request needs the history's share.
            let bare = briefing.brief(&task.instruction, params.space, &[], 0, self.indexes);
            let bare = factory
                .first_requests(self.bundle, &bare, seed, false)
                .map_err(|e| StageError::Input(e.to_string()))?;
            fig.without_history = bare.last().map_or(0, prompt_tokens);
        }
        fig.recorded = (0..params.epochs)
            .filter(|&epoch| {
                let seed = episode_seed(params.seed, &task.task_id, self.variant, epoch);
                factory
                    .cache_key(first, seed, epoch)
                    .is_some_and(|key| recorded(self.stage.cache, &key))
            })
            .count() as u64;
        let n = steps.len().max(1) as f64;
        let call: u64 = steps.iter().map(|s| s.0).sum::<u64>() / steps.len().max(1) as u64;
        let growth = steps.iter().map(|s| s.0 + s.1 + PER_MESSAGE).sum::<u64>() as f64 / n;
        let per_request = call.max(10) as f64;
        let high = f64::from(params.max_steps.max(1)).max(n);
        let clarify = if params.clarify {
            requests.first().map_or(0, prompt_tokens) as f64
        } else {
            0.0
        };
        let extra = f64::from(u8::from(params.clarify));
        fig.agent = Calls {
            requests: Range::new(n + extra, high + extra),
            prompt: Range::new(
                conversation(fig.first, growth, n) + clarify,
                conversation(fig.first, growth, high) + clarify,
            ),
            completion: Range::new(n * per_request, high * per_request),
        };
        Ok(())
    }
}

/// Whether the record of `key` is in the store.
fn recorded(cache: &dyn Store, key: &str) -> bool {
    crate::llm::record::exists(cache, key)
}

/// The estimate from every task's figures.
fn summarize(
    stage: &EpisodeStage<'_>,
    agent: Option<&LlmConfig>,
    user: Option<&LlmConfig>,
    figures: &[TaskFigures],
) -> Estimate {
    let params = &stage.setup.params;
    let epochs = f64::from(params.epochs);
    let episodes = (stage.bundles.len() as u64) * u64::from(params.epochs);
    let sum = |f: fn(&TaskFigures) -> Calls| {
        figures
            .iter()
            .map(f)
            .fold(Calls::default(), Calls::plus)
            .times(epochs)
    };
    let mut estimate = Estimate::default();
    let recorded: u64 = figures.iter().map(|f| f.recorded).sum();
    // What is still to pay: the episodes whose requests are not recorded yet (a recorded
    // episode replays whole, its simulator's calls too).
    let to_pay = |f: fn(&TaskFigures) -> Calls| {
        figures
            .iter()
            .map(|t| f(t).times((epochs - t.recorded as f64).max(0.0)))
            .fold(Calls::default(), Calls::plus)
    };
    // `cached`: prompt tokens the provider's prompt cache may serve at best (priced at
    // `cached_prompt_per_mtok`, the low end of the cost; the high end assumes none).
    let known = agent.map(|_| recorded);
    let mut row = |role: &str, config: &LlmConfig, calls: Calls, paid: Calls, cached: f64| {
        estimate.rows.push(EstimateRow {
            role: role.into(),
            model: model_label(params, config, role),
            units: episodes,
            unit: "episodes".into(),
            requests: calls.requests,
            prompt_tokens: calls.prompt,
            completion_tokens: calls.completion,
            cost: config.prices.map(|p| {
                Range::new(
                    p.cost(paid.prompt.low, cached, paid.completion.low),
                    p.cost(paid.prompt.high, 0.0, paid.completion.high),
                )
            }),
            recorded: known,
        });
    };
    if let Some(config) = agent {
        // The stable prefix (system prompt with the history, and the tools) of every request
        // but the first.
        let paid = to_pay(|f| f.agent);
        let prefix = figures.iter().map(|f| f.prefix).min().unwrap_or(0) as f64;
        let cached = (paid.requests.low - 1.0).max(0.0) * prefix;
        row("agent", config, sum(|f| f.agent), paid, cached);
    }
    if let Some(config) = user {
        row("user", config, sum(|f| f.user), to_pay(|f| f.user), 0.0);
    }
    let asks = figures
        .iter()
        .map(|f| f.asks)
        .fold(Range::default(), Range::plus)
        .times(epochs);
    estimate
        .produces
        .insert("episodes".into(), Range::exact(episodes as f64));
    estimate.produces.insert("questions".into(), asks);
    estimate.notes = notes(stage, figures);
    if let Some(config) = agent {
        estimate.problems = context_problems(stage, config, figures);
    }
    estimate
}

/// The model as the estimate names it: the entry's name, with the provider's id when it differs.
fn model_label(params: &RunEpisodesParams, config: &LlmConfig, role: &str) -> String {
    let name = params.model_name().filter(|_| role == "agent");
    match name {
        Some(n) if n != config.model => format!("{n} ({})", config.model),
        _ => config.model.clone(),
    }
}

fn notes(stage: &EpisodeStage<'_>, figures: &[TaskFigures]) -> Vec<String> {
    let params = &stage.setup.params;
    let mut out = vec![format!(
        "prompt tokens: {} ({}) on each task's rendered first request — system prompt, task message, offered tools and the exposed history ({}) — growing per turn by the reference solution's calls and answers; requests from the reference's length to max_steps {}; cost: only the episodes not recorded yet (recorded ones replay free), its low end with the stable prefix (system prompt, history, tools) of every request but the first at `cached_prompt_per_mtok` when set",
        tokens::METHOD,
        "crate llm::tokens",
        params.history,
        params.max_steps
    )];
    if let Some(first) = figures.iter().map(|f| f.first).max().filter(|f| *f > 0) {
        let mean = figures.iter().map(|f| f.first).sum::<u64>() / figures.len().max(1) as u64;
        out.push(format!(
            "first agent request: {mean} prompt tokens on average, {first} at most"
        ));
    }
    if stage.cached > 0 {
        out.push(format!("{} tasks already cached (free)", stage.cached));
    }
    if params.embeddings.is_some() && matches!(params.history, Exposure::TopK(_)) {
        out.push("history ranked lexically here (the run ranks by embeddings; the same number of events)".into());
    }
    out
}

/// The requests that cannot fit the model's `max_context`, with the fix.
fn context_problems(
    stage: &EpisodeStage<'_>,
    config: &LlmConfig,
    figures: &[TaskFigures],
) -> Vec<String> {
    let Some(window) = config.max_context else {
        return Vec::new();
    };
    let reply = u64::from(config.max_tokens.unwrap_or(0));
    let Some((i, worst)) = figures.iter().enumerate().max_by_key(|(_, f)| f.first) else {
        return Vec::new();
    };
    if worst.first + reply <= window {
        return Vec::new();
    }
    let task = &stage.bundles[i].task.task_id;
    vec![context_fix(
        stage.stage,
        &config.model,
        task,
        worst,
        window,
        reply,
    )]
}

/// What to change so the first request of `fig` fits `window` tokens (leaving `reply`).
fn context_fix(
    stage: &str,
    model: &str,
    task: &str,
    fig: &TaskFigures,
    window: u64,
    reply: u64,
) -> String {
    let history = fig.first.saturating_sub(fig.without_history);
    let per_event = history as f64 / fig.shown.max(1) as f64;
    let per_tool = fig.tool_tokens as f64 / fig.tools.max(1) as f64;
    // The rest: instructions, the request, the first screen.
    let base = fig.without_history.saturating_sub(fig.tool_tokens);
    let room = window.saturating_sub(reply) as f64;
    let for_history = room - (base + fig.tool_tokens) as f64;
    let mut fixes = Vec::new();
    if for_history > 0.0 && per_event > 0.0 {
        let k = (for_history / per_event) as u64;
        fixes.push(format!(
            "show less history (`history: top_k:{k}` fits, ~{per_event:.0} tokens per event)"
        ));
    }
    if fig.tools > 0 && per_tool > 0.0 {
        let with_history = ((room - (base + history) as f64) / per_tool).floor();
        let without = ((room - base as f64) / per_tool).floor();
        if with_history >= 1.0 {
            fixes.push(format!(
                "offer fewer tools (`max_tools: {with_history}`; {} tools are ~{} tokens)",
                fig.tools, fig.tool_tokens
            ));
        } else if without >= 1.0 {
            fixes.push(format!(
                "offer fewer tools and no history (`max_tools: {without}` with `history: none`; {} tools are ~{} tokens)",
                fig.tools, fig.tool_tokens
            ));
        }
    }
    format!(
        "stage `{stage}`: task `{task}`'s first request is ~{} prompt tokens ({}; history ~{history}, tools ~{}){}, over model `{model}`'s max_context {window}: {}",
        fig.first,
        tokens::METHOD,
        fig.tool_tokens,
        if reply > 0 { format!(" + max_tokens {reply}") } else { String::new() },
        if fixes.is_empty() {
            format!("even the prompt without history or tools is ~{base} tokens; use a model with a larger context")
        } else {
            fixes.join(", or ")
        }
    )
}
