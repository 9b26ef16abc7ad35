//! One episode judged end to end: replay, criterion verdicts (rule, llm or both), information
//! requests, failure labels and the episode's scores; and [`judge_batch`], the same for many
//! episodes on all cores without the engine (for benchmarks and scripts).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::index::{EpisodeInfo, JudgeIndex, StepRec};
use super::interaction::{self, Interaction, MatcherName, Piece, Request};
use super::labels::{self, Facts};
use super::llm::{self, LlmJudge, Shared};
use super::replay::{replay, Replay};
use super::rule;
use super::verdict::{JudgeError, Verdict};
use crate::llm::Usage;
use crate::tasks::{Criterion, CriterionKind, Source, TaskBundle};
use crate::world::World;

/// How criteria are judged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// The task's predicates (default; exact and free).
    #[default]
    Rule,
    /// An LLM judge per criterion.
    Llm,
    /// Both, combined per task as S = λ·S_rule + (1−λ)·S_llm.
    Hybrid,
    /// The rule judge on every criterion, and the LLM judge too on free-text criteria (a
    /// message or caption the user dictated, `Criterion::free_text`), where a faithful
    /// paraphrase is a fair answer the rule cannot see; those criteria count λ·rule + (1−λ)·llm.
    HybridText,
}

impl Mode {
    /// Whether an LLM is needed.
    pub fn uses_llm(self) -> bool {
        self != Mode::Rule
    }

    /// Whether the LLM judge rules on criterion `c` in this mode.
    pub fn llm_judges(self, c: &Criterion) -> bool {
        match self {
            Mode::Rule => false,
            Mode::Llm | Mode::Hybrid => true,
            Mode::HybridText => c.free_text,
        }
    }
}

/// Which judge produced a score, as the `judge` column of `scores` and `table1` writes it:
/// `<criteria>+<matcher>`, each LLM part naming its model — `rule+scripted` (the offline
/// default), `hybrid_text:MODEL+llm:MODEL` (a judge model configured for model episodes),
/// `hybrid:MODEL+scripted`, … — so a reader can tell numbers from different judges apart.
pub fn judge_label(mode: Mode, matcher: MatcherName, model: Option<&str>) -> String {
    let m = model.unwrap_or("?");
    let criteria = match mode {
        Mode::Rule => "rule".to_string(),
        Mode::Llm => format!("llm:{m}"),
        Mode::Hybrid => format!("hybrid:{m}"),
        Mode::HybridText => format!("hybrid_text:{m}"),
    };
    let matcher = match matcher {
        MatcherName::Scripted => "scripted".to_string(),
        MatcherName::Llm => format!("llm:{m}"),
    };
    format!("{criteria}+{matcher}")
}

/// How to judge.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JudgeOptions {
    /// Criterion judge.
    pub mode: Mode,
    /// Request matcher.
    pub matcher: MatcherName,
    /// λ of hybrid scores when the task does not carry one.
    pub lambda: f64,
}

impl Default for JudgeOptions {
    fn default() -> Self {
        Self {
            mode: Mode::Rule,
            matcher: MatcherName::Scripted,
            lambda: 0.5,
        }
    }
}

/// One `verdicts` row (the episode's identity is added by the frame).
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictRow {
    /// The criterion.
    pub criterion_id: String,
    /// `action` or `personalization`.
    pub kind: CriterionKind,
    /// The judged slot.
    pub slot_id: Option<String>,
    /// The slot's source.
    pub source: Option<Source>,
    /// `rule` or `llm`.
    pub mode: &'static str,
    /// The decision.
    pub verdict: Verdict,
    /// Why.
    pub reason: String,
    /// Why it failed (failed criteria only).
    pub failure_label: Option<&'static str>,
}

/// One `scores` row: the table's row struct, filled by the judge.
pub use crate::tables::judging::Score as ScoreRow;

/// Everything judging one episode produced.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeJudgement {
    /// The episode judged.
    pub episode: EpisodeInfo,
    /// Verdict rows, criterion order (hybrid: rule rows, then llm rows).
    pub verdicts: Vec<VerdictRow>,
    /// Scores.
    pub score: ScoreRow,
    /// Information requests.
    pub requests: Vec<Request>,
    /// Interaction counts.
    pub interaction: Interaction,
}

/// Judges one episode. `llm` is needed for `llm`/`hybrid` mode and the `llm` matcher; its
/// requests are awaited (the replay and the rule judge are short CPU work done in place).
pub async fn judge_episode(
    world: &World,
    bundle: &TaskBundle,
    episode: &EpisodeInfo,
    steps: &[StepRec],
    opts: &JudgeOptions,
    llm: Option<&LlmJudge<'_>>,
) -> Result<EpisodeJudgement, JudgeError> {
    let needs_llm = opts.mode.uses_llm() || opts.matcher == MatcherName::Llm;
    let llm = match (needs_llm, llm) {
        (true, None) => {
            return Err(JudgeError::Input(
                "mode `llm`/`hybrid` and matcher `llm` need an `llm` config".into(),
            ))
        }
        (_, l) => l,
    };
    let r = replay(world, bundle, steps).map_err(JudgeError::Input)?;
    let mut usage = Usage::default();
    let requests = match_requests(&r, bundle, opts.matcher, llm, &mut usage).await?;
    let operations = r.env.phone.operations();
    let asked: HashSet<String> = requests.iter().filter_map(|q| q.slot_id.clone()).collect();
    let bindings = interaction::bindings(bundle);
    let facts = Facts {
        bundle,
        operations: &operations,
        attempts: &r.attempts,
        asks: &r.asks,
        asked_slots: &asked,
        bindings: &bindings,
        final_answer: r.env.phone.answer(),
    };
    let mut verdicts = Vec::new();
    if opts.mode != Mode::Llm {
        let judged = rule::judge(&r.env.phone, bundle, &asked);
        let decided = bundle
            .criteria
            .iter()
            .zip(judged)
            .map(|(c, j)| (c, j.verdict, j.reason));
        verdicts.extend(rows(bundle, "rule", decided, &facts));
    }
    if let Some(judge) = llm.filter(|_| opts.mode.uses_llm()) {
        let decided = llm_verdicts(world, bundle, steps, &r, judge, opts.mode, &mut usage).await?;
        verdicts.extend(rows(bundle, "llm", decided.into_iter(), &facts));
    }
    let lambda = task_lambda(bundle, opts)?;
    let score = ScoreRow {
        divergent_steps: r.divergences.len() as u32,
        divergence: r.divergences.first().map(|d| d.detail.clone()),
        prompt_tokens_judge: usage.prompt_tokens,
        completion_tokens_judge: usage.completion_tokens,
        cost_judge: llm.map_or(0.0, |j| j.cost(usage)),
        judge: judge_label(opts.mode, opts.matcher, llm.map(LlmJudge::model)),
        ..of_episode(episode, bundle, scores(&verdicts, opts.mode, lambda))
    };
    if let Some(d) = &score.divergence {
        tracing::warn!("episode `{}`: replay diverged: {d}", episode.episode_id);
    }
    let interaction = Interaction {
        episode_id: episode.episode_id.clone(),
        task_id: episode.task_id.clone(),
        variant: episode.variant.clone(),
        epoch: episode.epoch,
        judge: score.judge.clone(),
        ..interaction::summarize(&requests, bundle)
    };
    Ok(EpisodeJudgement {
        episode: episode.clone(),
        verdicts,
        score,
        interaction,
        requests,
    })
}

/// The hybrid λ the task gives (else the stage's), which must lie in [0, 1].
fn task_lambda(bundle: &TaskBundle, opts: &JudgeOptions) -> Result<f64, JudgeError> {
    let lambda = bundle.task.lambda.unwrap_or(opts.lambda);
    if !(0.0..=1.0).contains(&lambda) {
        return Err(JudgeError::Input(format!(
            "task `{}`: hybrid λ must lie in [0, 1], got {lambda}; fix the task's `lambda`",
            bundle.task.task_id
        )));
    }
    Ok(lambda)
}

/// `score` with the episode's identity and counts and the task's perturbation and template.
fn of_episode(episode: &EpisodeInfo, bundle: &TaskBundle, score: ScoreRow) -> ScoreRow {
    ScoreRow {
        episode_id: episode.episode_id.clone(),
        task_id: episode.task_id.clone(),
        variant: episode.variant.clone(),
        epoch: episode.epoch,
        agent: episode.agent.clone(),
        perturbation: bundle.task.perturbation.as_str().to_string(),
        template: bundle.task.template.clone(),
        status: episode.status.clone(),
        steps: episode.steps,
        ask_user_calls: episode.ask_user_calls,
        ..score
    }
}

async fn match_requests(
    r: &Replay<'_>,
    bundle: &TaskBundle,
    matcher: MatcherName,
    llm: Option<&LlmJudge<'_>>,
    usage: &mut Usage,
) -> Result<Vec<Request>, JudgeError> {
    let mut per_ask: Vec<(Vec<Piece>, &'static str)> = Vec::new();
    let offline =
        crate::tasks::matcher::TaskMatcher::for_task(bundle, r.env.phone.state().catalog());
    for ask in &r.asks {
        let scripted = || offline.pieces(&ask.question);
        let pieces = match (matcher, llm) {
            (MatcherName::Llm, Some(judge)) => {
                let (pieces, u) = judge.pieces(&ask.question, bundle).await?;
                add(usage, u);
                match pieces {
                    Some(p) => (p, "llm"),
                    None => (scripted(), "scripted_fallback"),
                }
            }
            _ => (scripted(), "scripted"),
        };
        per_ask.push(pieces);
    }
    let mut it = per_ask.into_iter();
    let cat = &r.env.phone.state().catalog();
    Ok(interaction::requests(&r.asks, bundle, cat, |_| {
        it.next().unwrap_or_default()
    }))
}

fn add(total: &mut Usage, u: Usage) {
    total.prompt_tokens += u.prompt_tokens;
    total.completion_tokens += u.completion_tokens;
}

/// The LLM judge's verdicts on the criteria `mode` gives it, in criterion order.
async fn llm_verdicts<'b>(
    world: &World,
    bundle: &'b TaskBundle,
    steps: &[StepRec],
    r: &Replay<'_>,
    judge: &LlmJudge<'_>,
    mode: Mode,
    usage: &mut Usage,
) -> Result<Vec<(&'b Criterion, Verdict, String)>, JudgeError> {
    let shared = Shared {
        trajectory: llm::trajectory(steps),
        profile: llm::profile(world),
        hidden_context: serde_json::to_string(&bundle.task.hidden_context).unwrap_or_default(),
        now: r.env.phone.clock().to_string(),
    };
    let answer = r.env.phone.answer();
    let mut out = Vec::new();
    for c in bundle.criteria.iter().filter(|c| mode.llm_judges(c)) {
        let (v, reason, u) = judge
            .criterion(&llm::context(bundle, c, &shared, answer))
            .await?;
        add(usage, u);
        out.push((c, v, reason));
    }
    Ok(out)
}

fn rows<'b>(
    bundle: &TaskBundle,
    mode: &'static str,
    decided: impl Iterator<Item = (&'b Criterion, Verdict, String)>,
    facts: &Facts<'_>,
) -> Vec<VerdictRow> {
    decided
        .map(|(c, verdict, reason)| VerdictRow {
            criterion_id: c.criterion_id.clone(),
            kind: c.kind,
            slot_id: c.slot_id.clone(),
            source: source(bundle, c),
            mode,
            verdict,
            reason,
            failure_label: (verdict == Verdict::Fail).then(|| labels::label(c, facts).as_str()),
        })
        .collect()
}

fn source(bundle: &TaskBundle, c: &Criterion) -> Option<Source> {
    c.slot_id
        .as_deref()
        .and_then(|id| bundle.slot(id))
        .map(|s| s.source)
}

/// One criterion's standing: its category and its value in [0, 1] under the mode's judges.
struct Standing {
    kind: CriterionKind,
    source: Option<Source>,
    value: f64,
}

/// Each criterion's value: the rule's or the LLM's verdict (pass 1, fail or unscored 0), or
/// λ·rule + (1−λ)·llm where both judged it. With every criterion judged by both this is the
/// paper's S = λ·S_rule + (1−λ)·S_llm per category; with some (free text only) it mixes just
/// those.
fn standings(verdicts: &[VerdictRow], mode: Mode, lambda: f64) -> Vec<Standing> {
    let pass = |v: &VerdictRow| f64::from(u8::from(v.verdict == Verdict::Pass));
    let mut order: Vec<&str> = Vec::new();
    for v in verdicts {
        if !order.contains(&v.criterion_id.as_str()) {
            order.push(&v.criterion_id);
        }
    }
    order
        .into_iter()
        .filter_map(|id| {
            let of = |m: &str| {
                verdicts
                    .iter()
                    .find(|v| v.criterion_id == id && v.mode == m)
            };
            let (rule, llm) = match mode {
                Mode::Rule => (of("rule"), None),
                Mode::Llm => (None, of("llm")),
                Mode::Hybrid | Mode::HybridText => (of("rule"), of("llm")),
            };
            let value = match (rule, llm) {
                (Some(r), Some(l)) => lambda * pass(r) + (1.0 - lambda) * pass(l),
                (Some(one), None) | (None, Some(one)) => pass(one),
                (None, None) => return None,
            };
            let any = rule.or(llm)?;
            Some(Standing {
                kind: any.kind,
                source: any.source,
                value,
            })
        })
        .collect()
}

fn scores(verdicts: &[VerdictRow], mode: Mode, lambda: f64) -> ScoreRow {
    let used: Vec<&VerdictRow> = verdicts
        .iter()
        .filter(|v| match mode {
            Mode::Rule => v.mode == "rule",
            Mode::Llm => v.mode == "llm",
            Mode::Hybrid | Mode::HybridText => true,
        })
        .collect();
    let unscored = used
        .iter()
        .filter(|v| v.verdict == Verdict::Unscored)
        .count() as u32;
    let all = standings(verdicts, mode, lambda);
    let frac = |keep: &dyn Fn(&Standing) -> bool| {
        let of: Vec<&Standing> = all.iter().filter(|s| keep(s)).collect();
        (!of.is_empty()).then(|| of.iter().map(|s| s.value).sum::<f64>() / of.len() as f64)
    };
    let personal = |s: &Standing| s.kind == CriterionKind::Personalization;
    let mixed = matches!(mode, Mode::Hybrid | Mode::HybridText);
    ScoreRow {
        success: (unscored == 0).then(|| used.iter().all(|v| v.verdict == Verdict::Pass)),
        action: frac(&|s| s.kind == CriterionKind::Action),
        personalization: frac(&personal),
        inferable: frac(&|s| personal(s) && s.source == Some(Source::Inferable)),
        ask_only: frac(&|s| personal(s) && s.source == Some(Source::AskOnly)),
        score: frac(&|_| true).unwrap_or(0.0),
        lambda: mixed.then_some(lambda),
        unscored,
        ..ScoreRow::default()
    }
}

/// Judges many episodes with `opts` (rule mode, scripted matcher: no model calls) on `threads`
/// threads, each driving [`judge_episode`] on its own single-threaded runtime; results are in
/// `episodes` order.
pub fn judge_batch(
    world: &World,
    index: &JudgeIndex,
    episodes: &[EpisodeInfo],
    opts: &JudgeOptions,
    threads: usize,
) -> Vec<Result<EpisodeJudgement, JudgeError>> {
    let chunk = episodes.len().div_ceil(threads.max(1)).max(1);
    let one = |ep: &EpisodeInfo| {
        let bundle = index.bundle(ep)?;
        Ok::<_, JudgeError>((bundle, index.steps_of(&ep.episode_id)))
    };
    let part_of = |part: &[EpisodeInfo]| -> Vec<Result<EpisodeJudgement, JudgeError>> {
        let runtime = match tokio::runtime::Builder::new_current_thread().build() {
            Ok(rt) => rt,
            Err(e) => {
                let why = format!("cannot start a judging runtime: {e}");
                return part
                    .iter()
                    .map(|_| Err(JudgeError::Input(why.clone())))
                    .collect();
            }
        };
        part.iter()
            .map(|ep| {
                let (bundle, steps) = one(ep)?;
                runtime.block_on(judge_episode(world, bundle, ep, steps, opts, None))
            })
            .collect()
    };
    std::thread::scope(|s| {
        let handles: Vec<_> = episodes
            .chunks(chunk)
            .map(|part| {
                let h = s.spawn(move || part_of(part));
                (part.len(), h)
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|(n, h)| {
                h.join().unwrap_or_else(|_| {
                    (0..n)
                        .map(|_| Err(JudgeError::Input("a judging thread panicked".into())))
                        .collect()
                })
            })
            .collect()
    })
}
