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
use super::pertask::require;
use crate::episodes::labelled::{fingerprint, AuthoredEpisode, ByTask, Freshness};
use crate::episodes::simulator::is_dont_know;
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
        let rows: Vec<_> = self.episodes.values().collect();
        df!(
            "episode" => rows.iter().map(|(e, _, _)| e.id.clone()).collect::<Vec<_>>(),
            "task_id" => rows.iter().map(|(e, _, _)| e.task_id.clone()).collect::<Vec<_>>(),
            "epoch" => rows.iter().map(|(_, n, _)| *n).collect::<Vec<_>>(),
            "status" => rows.iter().map(|(_, _, f)| f.as_str()).collect::<Vec<_>>(),
            "fingerprint" => rows.iter().map(|(e, _, _)| bundles.get(&e.task_id).map(fingerprint)).collect::<Vec<_>>(),
            "stored" => rows.iter().map(|(e, _, _)| e.fingerprint.clone()).collect::<Vec<_>>(),
            "behaviour" => rows.iter().map(|(e, _, _)| e.behaviour.join(",")).collect::<Vec<_>>(),
            "asks" => rows.iter().map(|(e, _, _)| self.asks.get(&e.id).copied().unwrap_or(0) as u32).collect::<Vec<_>>(),
        )
    }
}

fn strings(df: &DataFrame, c: &str) -> PolarsResult<Vec<String>> {
    Ok(df
        .column(c)?
        .cast(&DataType::String)?
        .str()?
        .iter()
        .map(|v| v.unwrap_or_default().to_string())
        .collect())
}

fn opt_strings(df: &DataFrame, c: &str) -> PolarsResult<Vec<Option<String>>> {
    Ok(df
        .column(c)?
        .cast(&DataType::String)?
        .str()?
        .iter()
        .map(|v| v.map(str::to_string))
        .collect())
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

/// Each judge's judgements of the authored episodes, by its `judge` label.
pub fn judge_side(
    judged: &Judged<'_>,
    set: &AuthoredSet<'_>,
) -> Result<BTreeMap<String, Judgements>, StageError> {
    require(
        judged.scores,
        "scores",
        &["episode_id", "task_id", "epoch", "success", "judge"],
    )?;
    require(
        judged.verdicts,
        "verdicts",
        &["episode_id", "criterion_id", "verdict", "judge"],
    )?;
    require(
        judged.requests,
        "requests",
        &["episode_id", "slot_id", "slot_source", "judge"],
    )?;
    require(
        judged.interaction,
        "interaction",
        &["episode_id", "requests", "matched_requests", "judge"],
    )?;
    // episode_id → authored id, from the scores rows.
    let s = judged.scores;
    let (ids, tasks) = (strings(s, "episode_id")?, strings(s, "task_id")?);
    let epochs: Vec<u32> = s
        .column("epoch")?
        .cast(&DataType::UInt32)?
        .u32()?
        .iter()
        .map(|v| v.unwrap_or(0))
        .collect();
    let mut authored: HashMap<String, String> = HashMap::new();
    for i in 0..ids.len() {
        if let Some(a) = set.by_run.get(&(tasks[i].clone(), epochs[i])) {
            authored.insert(ids[i].clone(), a.clone());
        }
    }
    let fresh = |id: &str| -> Option<(&String, &&TaskBundle)> {
        let a = authored.get(id)?;
        set.tasks.get_key_value(a)
    };
    let mut out: BTreeMap<String, Judgements> = BTreeMap::new();
    // Success.
    let (judges, success) = (strings(s, "judge")?, s.column("success")?.bool()?.clone());
    for (i, id) in ids.iter().enumerate() {
        let (Some((a, _)), Some(ok)) = (fresh(id), success.get(i)) else {
            continue;
        };
        let v = if ok { "pass" } else { "fail" };
        out.entry(judges[i].clone())
            .or_default()
            .insert((a.clone(), Level::Success, String::new()), v.into());
    }
    // Criteria: pass when every verdict the judge gave passes; unscored leaves it out.
    let v = judged.verdicts;
    let (vid, crit, verdict, vj) = (
        strings(v, "episode_id")?,
        strings(v, "criterion_id")?,
        strings(v, "verdict")?,
        strings(v, "judge")?,
    );
    let mut crits: BTreeMap<(String, String, String), Option<bool>> = BTreeMap::new();
    for i in 0..vid.len() {
        let Some((a, _)) = fresh(&vid[i]) else {
            continue;
        };
        let e = crits
            .entry((vj[i].clone(), a.clone(), crit[i].clone()))
            .or_insert(Some(true));
        *e = match (verdict[i].as_str(), *e) {
            ("unscored", _) | (_, None) => None,
            (x, Some(all)) => Some(all && x == "pass"),
        };
    }
    for ((j, a, c), ok) in crits {
        if let Some(ok) = ok {
            let v = if ok { "pass" } else { "fail" };
            out.entry(j)
                .or_default()
                .insert((a, Level::Criterion, c), v.into());
        }
    }
    // Recall: an ask-only slot is asked when some request is matched to it.
    let r = judged.requests;
    let (rid, slot, source, rj) = (
        strings(r, "episode_id")?,
        opt_strings(r, "slot_id")?,
        opt_strings(r, "slot_source")?,
        strings(r, "judge")?,
    );
    let mut asked: BTreeSet<(String, String, String)> = BTreeSet::new();
    for i in 0..rid.len() {
        let (Some((a, _)), Some(sl)) = (fresh(&rid[i]), &slot[i]) else {
            continue;
        };
        if source[i].as_deref() == Some(Source::AskOnly.as_str()) {
            asked.insert((rj[i].clone(), a.clone(), sl.clone()));
        }
    }
    let it = judged.interaction;
    let (iid, ij) = (strings(it, "episode_id")?, strings(it, "judge")?);
    let n = it
        .column("requests")?
        .cast(&DataType::UInt32)?
        .u32()?
        .clone();
    let m = it
        .column("matched_requests")?
        .cast(&DataType::UInt32)?
        .u32()?
        .clone();
    for i in 0..iid.len() {
        let Some((a, bundle)) = fresh(&iid[i]) else {
            continue;
        };
        let judgements = out.entry(ij[i].clone()).or_default();
        for s in bundle.slots.iter().filter(|s| s.source == Source::AskOnly) {
            let hit = asked.contains(&(ij[i].clone(), a.clone(), s.slot_id.clone()));
            let v = if hit { "asked" } else { "not_asked" };
            judgements.insert((a.clone(), Level::Recall, s.slot_id.clone()), v.into());
        }
        let extra = n.get(i).unwrap_or(0).saturating_sub(m.get(i).unwrap_or(0));
        judgements.insert((a.clone(), Level::Extra, String::new()), extra.to_string());
    }
    Ok(out)
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
    df!(
        "judge" => rows.iter().map(|r| r.0).collect::<Vec<_>>(),
        "episode" => rows.iter().map(|r| r.1 .0.clone()).collect::<Vec<_>>(),
        "level" => rows.iter().map(|r| r.1 .1.as_str()).collect::<Vec<_>>(),
        "subject" => rows.iter().map(|r| r.1 .2.clone()).collect::<Vec<_>>(),
        "judged" => rows.iter().map(|r| r.2).collect::<Vec<_>>(),
        "gold" => rows.iter().map(|r| r.3).collect::<Vec<_>>(),
    )
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
    require(
        steps,
        "steps",
        &[
            "episode_id",
            "step",
            "action_type",
            "arguments",
            "user_reply",
        ],
    )?;
    let ids = strings(steps, "episode_id")?;
    let kinds = strings(steps, "action_type")?;
    let args = strings(steps, "arguments")?;
    let replies = opt_strings(steps, "user_reply")?;
    let step_no: Vec<u32> = steps
        .column("step")?
        .cast(&DataType::UInt32)?
        .u32()?
        .iter()
        .map(|v| v.unwrap_or(0))
        .collect();
    let mut order: Vec<usize> = (0..ids.len()).filter(|&i| kinds[i] == "ask_user").collect();
    order.sort_by(|&a, &b| (&ids[a], step_no[a]).cmp(&(&ids[b], step_no[b])));
    let mut counter: HashMap<&str, u32> = HashMap::new();
    let mut out = Vec::new();
    for i in order {
        let n = counter.entry(&ids[i]).or_default();
        *n += 1;
        let mut parts = ids[i].rsplitn(2, '#');
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
        let question = serde_json::from_str::<serde_json::Value>(&args[i])
            .ok()
            .and_then(|v| v.get("text").and_then(|t| t.as_str()).map(str::to_string))
            .unwrap_or_default();
        let reply = replies[i].clone().unwrap_or_default();
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
    df!(
        "simulator" => checks.iter().map(|c| c.simulator.clone()).collect::<Vec<_>>(),
        "episode" => checks.iter().map(|c| c.episode.clone()).collect::<Vec<_>>(),
        "ask" => checks.iter().map(|c| c.ask).collect::<Vec<_>>(),
        "question" => checks.iter().map(|c| c.question.clone()).collect::<Vec<_>>(),
        "reply" => checks.iter().map(|c| c.reply.clone()).collect::<Vec<_>>(),
        "asked" => checks.iter().map(|c| c.asked.join(",")).collect::<Vec<_>>(),
        "disclosed" => checks.iter().map(|c| c.disclosed.join(",")).collect::<Vec<_>>(),
        "answered" => checks.iter().map(|c| c.answered).collect::<Vec<_>>(),
        "grounded" => checks.iter().map(|c| c.grounded).collect::<Vec<_>>(),
        "volunteered" => checks.iter().map(|c| c.volunteered).collect::<Vec<_>>(),
        "valid" => checks.iter().map(QaCheck::valid).collect::<Vec<_>>(),
    )
}
