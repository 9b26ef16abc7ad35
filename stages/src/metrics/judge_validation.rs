//! Judge validation on the authored, labelled episodes (iPrefBench §4.5): each judge that ran on
//! them against the gold labels — criterion verdicts, task success, recall (was each ask-only
//! slot asked) and extra requests per episode — with Cohen's κ; the two annotation passes
//! against each other; and the user simulator's replies over the question–answer pairs (answered
//! what was asked, grounded, nothing volunteered). See `datasets/judge-labels/README.md`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use polars::prelude::*;
use prefflow_engine::StageError;

use super::judge_agreement::AgreementRow;
use super::judge_labels::{Judgements, Key, Level};
use super::kappa::agreement;
use super::pertask::input_error;
use crate::episodes::labelled::{fingerprint, AuthoredEpisode, ByTask, Freshness};
use crate::episodes::simulator::is_dont_know;
use crate::judging::StepRec;
use crate::tables::aggregate::{JudgeErrorsRow, LabelledEpisodesRow, SimulatorCheckRow};
use crate::tables::judging::{INTERACTION, REQUESTS, SCORES, VERDICTS};
use crate::tasks::matcher::phrase_in;
use crate::tasks::user::spoken;
use crate::tasks::{Source, TaskBundle};
use crate::world::phone::Action;

/// Every authored episode with the task it names and whether its labels still apply.
pub struct AuthoredSet<'a> {
    /// The episodes, by id.
    pub episodes: BTreeMap<String, (&'a AuthoredEpisode, u32, Freshness)>,
    /// The task of each *fresh* episode.
    pub tasks: HashMap<String, &'a TaskBundle>,
    /// Ask steps per episode.
    pub asks: HashMap<String, usize>,
    /// `(task_id, epoch)` → episode id.
    pub by_run: HashMap<(String, u32), String>,
}

impl<'a> AuthoredSet<'a> {
    /// Indexes `episodes` against the released `bundles`.
    pub fn new(episodes: &'a ByTask, bundles: &'a HashMap<String, TaskBundle>) -> Self {
        let mut set = AuthoredSet {
            episodes: BTreeMap::new(),
            tasks: HashMap::new(),
            asks: HashMap::new(),
            by_run: HashMap::new(),
        };
        for (task_id, eps) in episodes {
            let bundle = bundles.get(task_id);
            for (epoch, ep) in eps.iter().enumerate() {
                let fresh = Freshness::of(ep, bundle);
                let asks = ep
                    .actions
                    .iter()
                    .filter(|a| matches!(a, Action::AskUser { .. }))
                    .count();
                set.asks.insert(ep.id.clone(), asks);
                if let (Freshness::Fresh, Some(b)) = (fresh, bundle) {
                    set.tasks.insert(ep.id.clone(), b);
                }
                set.by_run
                    .insert((task_id.clone(), epoch as u32), ep.id.clone());
                set.episodes
                    .insert(ep.id.clone(), (ep, epoch as u32, fresh));
            }
        }
        set
    }

    /// `labelled`: episode, task_id, epoch, status, fingerprint (the task's now), stored,
    /// behaviour, asks.
    pub fn frame(&self, bundles: &HashMap<String, TaskBundle>) -> PolarsResult<DataFrame> {
        let rows: Vec<LabelledEpisodesRow> = self
            .episodes
            .values()
            .map(|(e, epoch, freshness)| LabelledEpisodesRow {
                episode: e.id.clone(),
                task_id: e.task_id.clone(),
                epoch: *epoch,
                status: freshness.as_str().to_string(),
                fingerprint: bundles.get(&e.task_id).map(fingerprint),
                stored: e.fingerprint.clone(),
                behaviour: e.behaviour.join(","),
                asks: self.asks.get(&e.id).copied().unwrap_or(0) as u32,
            })
            .collect();
        LabelledEpisodesRow::to_frame(&rows)
    }
}

crate::tables::row! {
    /// A judged episode's success, as judge validation reads `scores`.
    struct ScoredRun of SCORES {
        episode_id: String,
        task_id: String,
        epoch: u32,
        success: Option<bool>,
        judge: String,
    }
}

crate::tables::row! {
    /// A criterion verdict, as judge validation reads `verdicts`.
    struct CriterionVerdict of VERDICTS {
        episode_id: String,
        criterion_id: String,
        verdict: String,
        judge: String,
    }
}

crate::tables::row! {
    /// A request's matched slot, as judge validation reads `requests`.
    struct MatchedRequest of REQUESTS {
        episode_id: String,
        slot_id: Option<String>,
        slot_source: Option<String>,
        judge: String,
    }
}

crate::tables::row! {
    /// An episode's request counts, as judge validation reads `interaction`.
    struct RequestCounts of INTERACTION {
        episode_id: String,
        requests: u32,
        matched_requests: u32,
        judge: String,
    }
}

/// The tables one or more judge stages wrote for the authored episodes.
pub struct Judged<'d> {
    /// `scores` (episode_id, task_id, epoch, success, judge).
    pub scores: &'d DataFrame,
    /// `verdicts` (episode_id, criterion_id, verdict, judge).
    pub verdicts: &'d DataFrame,
    /// `requests` (episode_id, slot_id, slot_source, judge).
    pub requests: &'d DataFrame,
    /// `interaction` (episode_id, requests, matched_requests, judge).
    pub interaction: &'d DataFrame,
}

/// The authored episode a judged episode id plays, and its task, when its labels are fresh.
struct Fresh<'s, 'a> {
    authored: HashMap<String, String>,
    set: &'s AuthoredSet<'a>,
}

impl<'s, 'a> Fresh<'s, 'a> {
    /// Maps each scored episode id to the authored episode of its `(task_id, epoch)`.
    fn new(scores: &[ScoredRun], set: &'s AuthoredSet<'a>) -> Self {
        let authored = scores
            .iter()
            .filter_map(|r| {
                let a = set.by_run.get(&(r.task_id.clone(), r.epoch))?;
                Some((r.episode_id.clone(), a.clone()))
            })
            .collect();
        Self { authored, set }
    }

    fn get(&self, id: &str) -> Option<(&'s String, &'s &'a TaskBundle)> {
        let a = self.authored.get(id)?;
        self.set.tasks.get_key_value(a)
    }
}

fn pass_fail(ok: bool) -> String {
    if ok { "pass" } else { "fail" }.into()
}

/// Each judge's judgements of the authored episodes, by its `judge` label.
pub fn judge_side(
    judged: &Judged<'_>,
    set: &AuthoredSet<'_>,
) -> Result<BTreeMap<String, Judgements>, StageError> {
    let scores = ScoredRun::from_frame(judged.scores).map_err(input_error)?;
    let verdicts = CriterionVerdict::from_frame(judged.verdicts).map_err(input_error)?;
    let requests = MatchedRequest::from_frame(judged.requests).map_err(input_error)?;
    let counts = RequestCounts::from_frame(judged.interaction).map_err(input_error)?;
    let fresh = Fresh::new(&scores, set);
    let mut out: BTreeMap<String, Judgements> = BTreeMap::new();
    success_judgements(&scores, &fresh, &mut out);
    criterion_judgements(&verdicts, &fresh, &mut out);
    recall_judgements(&requests, &counts, &fresh, &mut out);
    Ok(out)
}

/// Task success, per judge and fresh episode.
fn success_judgements(
    scores: &[ScoredRun],
    fresh: &Fresh<'_, '_>,
    out: &mut BTreeMap<String, Judgements>,
) {
    for r in scores {
        let (Some((a, _)), Some(ok)) = (fresh.get(&r.episode_id), r.success) else {
            continue;
        };
        out.entry(r.judge.clone())
            .or_default()
            .insert((a.clone(), Level::Success, String::new()), pass_fail(ok));
    }
}

/// Criteria: pass when every verdict the judge gave passes; unscored leaves it out.
fn criterion_judgements(
    verdicts: &[CriterionVerdict],
    fresh: &Fresh<'_, '_>,
    out: &mut BTreeMap<String, Judgements>,
) {
    let mut crits: BTreeMap<(String, String, String), Option<bool>> = BTreeMap::new();
    for v in verdicts {
        let Some((a, _)) = fresh.get(&v.episode_id) else {
            continue;
        };
        let e = crits
            .entry((v.judge.clone(), a.clone(), v.criterion_id.clone()))
            .or_insert(Some(true));
        *e = match (v.verdict.as_str(), *e) {
            ("unscored", _) | (_, None) => None,
            (x, Some(all)) => Some(all && x == "pass"),
        };
    }
    for ((j, a, c), ok) in crits {
        if let Some(ok) = ok {
            out.entry(j)
                .or_default()
                .insert((a, Level::Criterion, c), pass_fail(ok));
        }
    }
}

/// Recall (an ask-only slot is asked when some request is matched to it) and extra requests,
/// per judge and fresh episode.
fn recall_judgements(
    requests: &[MatchedRequest],
    counts: &[RequestCounts],
    fresh: &Fresh<'_, '_>,
    out: &mut BTreeMap<String, Judgements>,
) {
    let mut asked: BTreeSet<(String, String, String)> = BTreeSet::new();
    for r in requests {
        let (Some((a, _)), Some(sl)) = (fresh.get(&r.episode_id), &r.slot_id) else {
            continue;
        };
        if r.slot_source.as_deref() == Some(Source::AskOnly.as_str()) {
            asked.insert((r.judge.clone(), a.clone(), sl.clone()));
        }
    }
    for c in counts {
        let Some((a, bundle)) = fresh.get(&c.episode_id) else {
            continue;
        };
        let judgements = out.entry(c.judge.clone()).or_default();
        for s in bundle.slots.iter().filter(|s| s.source == Source::AskOnly) {
            let hit = asked.contains(&(c.judge.clone(), a.clone(), s.slot_id.clone()));
            let v = if hit { "asked" } else { "not_asked" };
            judgements.insert((a.clone(), Level::Recall, s.slot_id.clone()), v.into());
        }
        let extra = c.requests.saturating_sub(c.matched_requests);
        judgements.insert((a.clone(), Level::Extra, String::new()), extra.to_string());
    }
}

/// Agreement rows of `rater` against `reference` at every level (pair `name`).
pub fn compare(name: &str, rater: &Judgements, reference: &Judgements) -> Vec<AgreementRow> {
    Level::ALL
        .iter()
        .map(|level| {
            let keys: Vec<_> = reference.keys().filter(|k| k.1 == *level).collect();
            let pairs: Vec<(&str, &str)> = keys
                .iter()
                .filter_map(|k| Some((rater.get(*k)?.as_str(), reference.get(*k)?.as_str())))
                .collect();
            AgreementRow {
                level: level.as_str(),
                pair: name.to_string(),
                excluded: (keys.len() - pairs.len()) as u32,
                agreement: agreement(&pairs),
            }
        })
        .collect()
}

/// `judge_errors`: every gold judgement a judge's value differs from (judge, episode, level,
/// subject, judged, gold), so a low agreement can be read case by case.
pub fn errors_frame(
    judges: &BTreeMap<String, Judgements>,
    gold: &Judgements,
) -> PolarsResult<DataFrame> {
    let mut rows: Vec<(&str, &Key, &str, &str)> = Vec::new();
    for (judge, js) in judges {
        for (key, g) in gold {
            if let Some(v) = js.get(key).filter(|v| *v != g) {
                rows.push((judge, key, v, g));
            }
        }
    }
    let rows: Vec<JudgeErrorsRow> = rows
        .into_iter()
        .map(
            |(judge, (episode, level, subject), judged, gold)| JudgeErrorsRow {
                judge: judge.to_string(),
                episode: episode.clone(),
                level: level.as_str().to_string(),
                subject: subject.clone(),
                judged: judged.to_string(),
                gold: gold.to_string(),
            },
        )
        .collect();
    JudgeErrorsRow::to_frame(&rows)
}

/// One question–answer pair of the simulator check.
#[derive(Debug, Clone, PartialEq)]
pub struct QaCheck {
    /// The episodes' variant (which simulator answered).
    pub simulator: String,
    /// The authored episode.
    pub episode: String,
    /// 1-based ask number.
    pub ask: u32,
    /// The agent's message.
    pub question: String,
    /// The simulator's reply.
    pub reply: String,
    /// Slots the gold pieces request.
    pub asked: Vec<String>,
    /// Slots whose value the reply states.
    pub disclosed: Vec<String>,
    /// Every asked slot's value is in the reply (or nothing was asked).
    pub answered: bool,
    /// The reply states something only when it discloses a slot, or says it does not know.
    pub grounded: bool,
    /// It disclosed a slot nobody asked about.
    pub volunteered: bool,
}

impl QaCheck {
    /// Answered, grounded and nothing volunteered.
    pub fn valid(&self) -> bool {
        self.answered && self.grounded && !self.volunteered
    }
}

/// Checks every reply to an ask of a fresh authored episode whose gold pieces the two passes
/// agree on (`gold_asks`: (episode, ask) → requested slots). `steps` is the episodes' `steps`.
pub fn simulator_check(
    steps: &DataFrame,
    set: &AuthoredSet<'_>,
    gold_asks: &BTreeMap<(String, usize), BTreeSet<String>>,
) -> Result<Vec<QaCheck>, StageError> {
    let mut asks: Vec<StepRec> = StepRec::from_frame(steps)
        .map_err(input_error)?
        .into_iter()
        .filter(|s| s.action_type == "ask_user")
        .collect();
    asks.sort_by(|a, b| (&a.episode_id, a.step).cmp(&(&b.episode_id, b.step)));
    let mut counter: HashMap<&str, u32> = HashMap::new();
    let mut out = Vec::new();
    for s in &asks {
        let n = counter.entry(&s.episode_id).or_default();
        *n += 1;
        let mut parts = s.episode_id.rsplitn(2, '#');
        let (epoch, rest) = (
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
        );
        let Some((task, variant)) = rest.split_once('#') else {
            continue;
        };
        let Ok(epoch) = epoch.parse::<u32>() else {
            continue;
        };
        let Some(episode) = set.by_run.get(&(task.to_string(), epoch)) else {
            continue;
        };
        let (Some(bundle), Some(asked)) = (
            set.tasks.get(episode),
            gold_asks.get(&(episode.clone(), *n as usize)),
        ) else {
            continue;
        };
        let question = serde_json::from_str::<serde_json::Value>(&s.arguments)
            .ok()
            .and_then(|v| v.get("text").and_then(|t| t.as_str()).map(str::to_string))
            .unwrap_or_default();
        let reply = s.user_reply.clone().unwrap_or_default();
        out.push(check_pair(
            variant, episode, *n, question, reply, asked, bundle,
        ));
    }
    Ok(out)
}

fn check_pair(
    simulator: &str,
    episode: &str,
    ask: u32,
    question: String,
    reply: String,
    asked: &BTreeSet<String>,
    bundle: &TaskBundle,
) -> QaCheck {
    let lower = reply.to_lowercase();
    let disclosed: Vec<String> = bundle
        .slots
        .iter()
        .filter(|s| phrase_in(&lower, &spoken(&s.value)))
        .map(|s| s.slot_id.clone())
        .collect();
    let answered = asked.iter().all(|s| disclosed.contains(s));
    let volunteered = disclosed.iter().any(|d| !asked.contains(d));
    let grounded = !disclosed.is_empty() || is_dont_know(&lower);
    QaCheck {
        simulator: simulator.to_string(),
        episode: episode.to_string(),
        ask,
        question,
        reply,
        asked: asked.iter().cloned().collect(),
        disclosed,
        answered,
        grounded,
        volunteered,
    }
}

/// The simulator summary rows for the agreement table: level `simulator`, pair the simulator,
/// `agree` the valid pairs.
pub fn simulator_rows(checks: &[QaCheck]) -> Vec<AgreementRow> {
    let sims: BTreeSet<&str> = checks.iter().map(|c| c.simulator.as_str()).collect();
    sims.into_iter()
        .map(|sim| {
            let of: Vec<&QaCheck> = checks.iter().filter(|c| c.simulator == sim).collect();
            let pairs: Vec<(&str, &str)> = of
                .iter()
                .map(|c| (if c.valid() { "valid" } else { "invalid" }, "valid"))
                .collect();
            let mut a = agreement(&pairs);
            a.kappa = None;
            AgreementRow {
                level: "simulator",
                pair: format!("{sim}~valid"),
                agreement: a,
                excluded: 0,
            }
        })
        .collect()
}

/// `simulator`: one row per checked question–answer pair.
pub fn simulator_frame(checks: &[QaCheck]) -> PolarsResult<DataFrame> {
    let rows: Vec<SimulatorCheckRow> = checks
        .iter()
        .map(|c| SimulatorCheckRow {
            simulator: c.simulator.clone(),
            episode: c.episode.clone(),
            ask: c.ask,
            question: c.question.clone(),
            reply: c.reply.clone(),
            asked: c.asked.join(","),
            disclosed: c.disclosed.join(","),
            answered: c.answered,
            grounded: c.grounded,
            volunteered: c.volunteered,
            valid: c.valid(),
        })
        .collect();
    SimulatorCheckRow::to_frame(&rows)
}
