//! The LLM judge (iPrefBench G.3, G.4): one request per criterion with the task, trajectory,
//! final answer, ground-truth profile, hidden context and simulator time, answered with a JSON
//! verdict; and one request per question to split it into information requests matched to
//! slots. Prompts are minijinja templates (`judge_criterion.j2`, `judge_requests.j2` in the
//! prompts directory). Every call goes through [`LlmClient`], so verdicts are recorded and
//! replayed like every model call. A reply that cannot be read is `unscored` (criteria) or falls
//! back to the scripted matcher (requests) — never a silent pass.

use std::path::Path;

use serde::Serialize;
use serde_json::{json, Value};

use super::index::StepRec;
use super::interaction::Piece;
use super::verdict::{JudgeError, Verdict};
use crate::episodes::prompts::{Flavor, Prompts};
use crate::llm::{ChatMessage, ChatRequest, LlmClient, LlmConfig, Usage};
use crate::tasks::{Criterion, TaskBundle};
use crate::world::types::display;
use crate::world::World;

/// Template file of the criterion judge.
pub const CRITERION_TEMPLATE: &str = "judge_criterion.j2";
/// Template file of the request matcher.
pub const REQUESTS_TEMPLATE: &str = "judge_requests.j2";

/// A model judging criteria and matching requests.
pub struct LlmJudge<'a> {
    client: LlmClient<'a>,
    /// The two prompts, compiled once.
    templates: Prompts,
    prices: Option<crate::llm::Prices>,
}

/// The judge's two prompts compiled once (minijinja's defaults, as the judge always rendered
/// them); a template that does not parse is the error its first render would have been.
fn compile(criterion: &str, requests: &str) -> Result<Prompts, JudgeError> {
    let sources = [
        (CRITERION_TEMPLATE, criterion),
        (REQUESTS_TEMPLATE, requests),
    ];
    Prompts::with_flavor("judge prompts", &sources, Flavor::Lenient)
        .map_err(|(name, e)| JudgeError::Input(format!("rendering judge prompt {name}: {e}")))
}

/// What the criterion prompt is rendered from.
#[derive(Serialize)]
pub struct CriterionContext<'a> {
    /// The instruction.
    pub instruction: &'a str,
    /// `operation` or `qa`.
    pub task_type: &'a str,
    /// The criterion's id.
    pub criterion_id: &'a str,
    /// `action` or `personalization`.
    pub kind: &'a str,
    /// The rubric line.
    pub rubric: &'a str,
    /// The trajectory, one line per step.
    pub trajectory: &'a str,
    /// The final answer, if any.
    pub final_answer: Option<&'a str>,
    /// Ground-truth profile lines.
    pub profile: &'a [String],
    /// Hidden context as JSON text.
    pub hidden_context: &'a str,
    /// Simulator time.
    pub now: &'a str,
}

impl<'a> LlmJudge<'a> {
    /// A judge calling `config`, recording into `cache`, with templates from `prompts`.
    pub fn new(
        config: LlmConfig,
        cache: &'a dyn prefflow_engine::store::Store,
        offline: bool,
        prompts: &Path,
    ) -> Result<Self, JudgeError> {
        let read = |name: &str| {
            let p = prompts.join(name);
            std::fs::read_to_string(&p).map_err(|e| {
                JudgeError::Input(format!(
                    "cannot read judge prompt {}: {e}; set `prompts` to the directory holding {CRITERION_TEMPLATE} and {REQUESTS_TEMPLATE}",
                    p.display()
                ))
            })
        };
        let prices = config.prices;
        Ok(Self {
            templates: compile(&read(CRITERION_TEMPLATE)?, &read(REQUESTS_TEMPLATE)?)?,
            client: LlmClient::new(config, cache, offline)?,
            prices,
        })
    }

    /// This judge with its calls counted in `meter` as role `judge` (see
    /// [`LlmClient::metered`]).
    pub fn metered(mut self, meter: Option<&'a prefflow_engine::usage::UsageMeter>) -> Self {
        self.client = self.client.metered(meter, "judge");
        self
    }

    /// The judge's model name (for the `judge` column).
    pub fn model(&self) -> &str {
        &self.client.config().model
    }

    /// Cost of `usage` at the configured prices.
    pub fn cost(&self, usage: Usage) -> f64 {
        usage.cost(self.prices)
    }

    async fn ask(
        &self,
        name: &str,
        vars: &impl Serialize,
    ) -> Result<(Option<String>, Usage), JudgeError> {
        let prompt = self
            .templates
            .render_plain(name, vars)
            .map_err(|e| JudgeError::Input(format!("rendering judge prompt {name}: {e}")))?;
        let request = ChatRequest {
            messages: vec![ChatMessage::new("user", prompt)],
            json_mode: true,
            ..ChatRequest::default()
        };
        let reply = self.client.chat(&request, 0).await?;
        Ok((reply.content, reply.usage))
    }

    /// Judges one criterion; an unreadable reply is [`Verdict::Unscored`].
    pub async fn criterion(
        &self,
        ctx: &CriterionContext<'_>,
    ) -> Result<(Verdict, String, Usage), JudgeError> {
        let (content, usage) = self.ask(CRITERION_TEMPLATE, ctx).await?;
        let text = content.unwrap_or_default();
        Ok(match parse_verdict(&text) {
            Some((v, reason)) => (v, reason, usage),
            None => (
                Verdict::Unscored,
                format!("unparseable judge reply: {}", clip(&text, 200)),
                usage,
            ),
        })
    }

    /// Splits and matches one question; `None` when the reply cannot be read.
    pub async fn pieces(
        &self,
        question: &str,
        bundle: &TaskBundle,
    ) -> Result<(Option<Vec<Piece>>, Usage), JudgeError> {
        let slots: Vec<Value> = bundle
            .slots
            .iter()
            .map(|s| {
                json!({
                    "slot_id": s.slot_id,
                    "source": s.source.as_str(),
                    "about": s.about,
                    "keywords": s.keywords,
                })
            })
            .collect();
        let vars = json!({
            "instruction": bundle.task.instruction,
            "question": question,
            "slots": slots,
        });
        let (content, usage) = self.ask(REQUESTS_TEMPLATE, &vars).await?;
        let pieces = parse_requests(&content.unwrap_or_default(), bundle);
        Ok((pieces, usage))
    }
}

fn clip(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// The first JSON object in a reply (code fences and prose around it are ignored).
fn json_object(text: &str) -> Option<Value> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    let v: Value = serde_json::from_str(text.get(start..=end)?).ok()?;
    v.is_object().then_some(v)
}

/// Reads `{"verdict": "pass"|"fail", "reason": …}` (or `"pass": true|false`).
pub fn parse_verdict(text: &str) -> Option<(Verdict, String)> {
    let v = json_object(text)?;
    let pass = match v.get("verdict") {
        Some(Value::String(s)) => match s.trim().to_lowercase().as_str() {
            "pass" | "passed" | "yes" => true,
            "fail" | "failed" | "no" => false,
            _ => return None,
        },
        Some(Value::Bool(b)) => *b,
        _ => v.get("pass").and_then(Value::as_bool)?,
    };
    let reason = v
        .get("reason")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Some((if pass { Verdict::Pass } else { Verdict::Fail }, reason))
}

/// Reads `{"requests": [{"request": …, "slot_id": id|null}]}`; unknown slot ids are unmatched.
pub fn parse_requests(text: &str, bundle: &TaskBundle) -> Option<Vec<Piece>> {
    let v = json_object(text)?;
    let items = v.get("requests")?.as_array()?;
    items
        .iter()
        .map(|r| {
            let text = r.get("request")?.as_str()?.to_string();
            let slot_id = r
                .get("slot_id")
                .and_then(Value::as_str)
                .filter(|id| bundle.slot(id).is_some())
                .map(str::to_string);
            Some(Piece { text, slot_id })
        })
        .collect()
}

/// The trajectory as the judge reads it: one line per step with the user's replies.
pub fn trajectory(steps: &[StepRec]) -> String {
    steps
        .iter()
        .map(|s| {
            let status = s.observation_status.as_deref().unwrap_or("?");
            let reply = s
                .user_reply
                .as_deref()
                .map(|r| format!(" → user: {r}"))
                .unwrap_or_default();
            format!(
                "{}. {} {} [{status}]{reply}",
                s.step, s.action_type, s.arguments
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The persona's profile as `key: value` lines.
pub fn profile(world: &World) -> Vec<String> {
    world
        .persona
        .profile
        .iter()
        .map(|p| format!("{} ({}): {}", p.key, p.dimension, display(&p.value)))
        .collect()
}

/// Renders the criterion prompt context for one criterion.
pub fn context<'a>(
    bundle: &'a TaskBundle,
    c: &'a Criterion,
    shared: &'a Shared,
    final_answer: Option<&'a str>,
) -> CriterionContext<'a> {
    CriterionContext {
        instruction: &bundle.task.instruction,
        task_type: bundle.task.task_type.as_str(),
        criterion_id: &c.criterion_id,
        kind: c.kind.as_str(),
        rubric: &c.rubric,
        trajectory: &shared.trajectory,
        final_answer,
        profile: &shared.profile,
        hidden_context: &shared.hidden_context,
        now: &shared.now,
    }
}

/// The parts of the criterion prompt shared by every criterion of an episode.
pub struct Shared {
    /// [`trajectory`].
    pub trajectory: String,
    /// [`profile`].
    pub profile: Vec<String>,
    /// The hidden context as JSON.
    pub hidden_context: String,
    /// Simulator time.
    pub now: String,
}
