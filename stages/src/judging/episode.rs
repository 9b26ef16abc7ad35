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
use super::{rule, JudgeError, Verdict};
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
}

impl Mode {
    /// Whether an LLM is needed.
    pub fn uses_llm(self) -> bool {
        self != Mode::Rule
    }
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

/// One `scores` row's values.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScoreRow {
    /// Every criterion passes; null when any is unscored.
    pub success: Option<bool>,
    /// Fraction of action criteria passed.
    pub action: Option<f64>,
    /// Fraction of personalization criteria passed.
    pub personalization: Option<f64>,
    /// … of those on inferable slots.
    pub inferable: Option<f64>,
    /// … of those on ask-only slots.
    pub ask_only: Option<f64>,
    /// Fraction of all criteria passed (hybrid: λ·S_rule + (1−λ)·S_llm).
    pub score: f64,
    /// λ used (hybrid only).
    pub lambda: Option<f64>,
    /// LLM verdicts that could not be read.
    pub unscored: u32,
    /// Steps that did not replay as recorded.
    pub divergent_steps: u32,
    /// The first divergence, in words.
    pub divergence: Option<String>,
    /// Judge tokens.
    pub usage: Usage,
    /// Judge cost.
    pub cost: f64,
}

/// Everything judging one episode produced.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeJudgement {
    /// The episode judged.
    pub episode: EpisodeInfo,
    /// The task's perturbation.
    pub perturbation: &'static str,
    /// The template the task was instantiated from (the bootstrap's cluster).
    pub template: String,
    /// Verdict rows, criterion order (hybrid: rule rows, then llm rows).
    pub verdicts: Vec<VerdictRow>,
    /// Scores.
    pub score: ScoreRow,
    /// Information requests.
    pub requests: Vec<Request>,
    /// Interaction counts.
    pub interaction: Interaction,
}

/// Judges one episode. `llm` is needed for `llm`/`hybrid` mode and the `llm` matcher.
pub fn judge_episode(
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
    let requests = match_requests(&r, bundle, opts.matcher, llm, &mut usage)?;
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
        let decided = judged.into_iter().map(|j| (j.verdict, j.reason));
        verdicts.extend(rows(bundle, "rule", decided, &facts));
    }
    if let Some(judge) = llm.filter(|_| opts.mode.uses_llm()) {
        let decided = llm_verdicts(world, bundle, steps, &r, judge, &mut usage)?;
        verdicts.extend(rows(bundle, "llm", decided.into_iter(), &facts));
    }
    let lambda = bundle.task.lambda.unwrap_or(opts.lambda);
    if !(0.0..=1.0).contains(&lambda) {
        return Err(JudgeError::Input(format!(
            "task `{}`: hybrid λ must lie in [0, 1], got {lambda}; fix the task's `lambda`",
            bundle.task.task_id
        )));
    }
    let mut score = scores(&verdicts, opts.mode, lambda);
    score.divergent_steps = r.divergences.len() as u32;
    score.divergence = r.divergences.first().map(|d| d.detail.clone());
    score.usage = usage;
    score.cost = llm.map_or(0.0, |j| j.cost(usage));
    if let Some(d) = &score.divergence {
        tracing::warn!("episode `{}`: replay diverged: {d}", episode.episode_id);
    }
    Ok(EpisodeJudgement {
        episode: episode.clone(),
        perturbation: bundle.task.perturbation.as_str(),
        template: bundle.task.template.clone(),
        verdicts,
        score,
        interaction: interaction::summarize(&requests, bundle),
        requests,
    })
}

fn match_requests(
    r: &Replay<'_>,
    bundle: &TaskBundle,
    matcher: MatcherName,
    llm: Option<&LlmJudge<'_>>,
    usage: &mut Usage,
) -> Result<Vec<Request>, JudgeError> {
    let mut per_ask: Vec<(Vec<Piece>, &'static str)> = Vec::new();
    for ask in &r.asks {
        let scripted = || interaction::scripted_pieces(&ask.question, &bundle.slots);
        let pieces = match (matcher, llm) {
            (MatcherName::Llm, Some(judge)) => {
                let (pieces, u) = judge.pieces(&ask.question, bundle)?;
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

fn llm_verdicts(
    world: &World,
    bundle: &TaskBundle,
    steps: &[StepRec],
    r: &Replay<'_>,
    judge: &LlmJudge<'_>,
    usage: &mut Usage,
) -> Result<Vec<(Verdict, String)>, JudgeError> {
    let shared = Shared {
        trajectory: llm::trajectory(steps),
        profile: llm::profile(world),
        hidden_context: serde_json::to_string(&bundle.task.hidden_context).unwrap_or_default(),
        now: r.env.phone.clock().to_string(),
    };
    let answer = r.env.phone.answer();
    let mut out = Vec::new();
    for c in &bundle.criteria {
        let (v, reason, u) = judge.criterion(&llm::context(bundle, c, &shared, answer))?;
        add(usage, u);
        out.push((v, reason));
    }
    Ok(out)
}

fn rows(
    bundle: &TaskBundle,
    mode: &'static str,
    decided: impl Iterator<Item = (Verdict, String)>,
    facts: &Facts<'_>,
) -> Vec<VerdictRow> {
    bundle
        .criteria
        .iter()
        .zip(decided)
        .map(|(c, (verdict, reason))| VerdictRow {
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

/// Fractions of one judge's verdicts, per category.
#[derive(Default)]
struct Fractions {
    all: Option<f64>,
    action: Option<f64>,
    personalization: Option<f64>,
    inferable: Option<f64>,
    ask_only: Option<f64>,
    success: Option<bool>,
}

fn fractions(rows: &[&VerdictRow]) -> Fractions {
    let frac = |keep: &dyn Fn(&VerdictRow) -> bool| {
        let of: Vec<&&VerdictRow> = rows.iter().filter(|r| keep(r)).collect();
        let pass = of.iter().filter(|r| r.verdict == Verdict::Pass).count();
        (!of.is_empty()).then(|| pass as f64 / of.len() as f64)
    };
    let personal = |r: &VerdictRow| r.kind == CriterionKind::Personalization;
    let unscored = rows.iter().any(|r| r.verdict == Verdict::Unscored);
    Fractions {
        all: frac(&|_| true),
        action: frac(&|r| r.kind == CriterionKind::Action),
        personalization: frac(&personal),
        inferable: frac(&|r| personal(r) && r.source == Some(Source::Inferable)),
        ask_only: frac(&|r| personal(r) && r.source == Some(Source::AskOnly)),
        success: (!unscored).then(|| rows.iter().all(|r| r.verdict == Verdict::Pass)),
    }
}

fn scores(verdicts: &[VerdictRow], mode: Mode, lambda: f64) -> ScoreRow {
    let of = |m: &str| -> Vec<&VerdictRow> { verdicts.iter().filter(|v| v.mode == m).collect() };
    let unscored = verdicts
        .iter()
        .filter(|v| v.verdict == Verdict::Unscored)
        .count() as u32;
    let one = |f: Fractions, lambda: Option<f64>| ScoreRow {
        success: f.success,
        action: f.action,
        personalization: f.personalization,
        inferable: f.inferable,
        ask_only: f.ask_only,
        score: f.all.unwrap_or(0.0),
        lambda,
        unscored,
        ..ScoreRow::default()
    };
    match mode {
        Mode::Rule => one(fractions(&of("rule")), None),
        Mode::Llm => one(fractions(&of("llm")), None),
        Mode::Hybrid => {
            let (r, l) = (fractions(&of("rule")), fractions(&of("llm")));
            let mix = |a: Option<f64>, b: Option<f64>| Some(lambda * a? + (1.0 - lambda) * b?);
            one(
                Fractions {
                    all: mix(r.all, l.all),
                    action: mix(r.action, l.action),
                    personalization: mix(r.personalization, l.personalization),
                    inferable: mix(r.inferable, l.inferable),
                    ask_only: mix(r.ask_only, l.ask_only),
                    success: r.success.zip(l.success).map(|(a, b)| a && b),
                },
                Some(lambda),
            )
        }
    }
}

/// Judges many episodes with `opts` (rule mode, scripted matcher: no model calls) on `threads`
/// threads; results are in `episodes` order.
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
        judge_episode(
            world,
            bundle,
            ep,
            index.steps_of(&ep.episode_id),
            opts,
            None,
        )
    };
    std::thread::scope(|s| {
        let handles: Vec<_> = episodes
            .chunks(chunk)
            .map(|part| {
                let h = s.spawn(move || part.iter().map(one).collect::<Vec<_>>());
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
