//! The report's episodes: a list with one row per episode (task, perturbation subset, variant,
//! outcome and the failure labels of its failed criteria) that the page filters by variant,
//! by subset and to failures only, and one page per episode — the conversation (the request,
//! every action with its arguments, what the phone answered, failed calls marked, the user's
//! replies, the model's unparsed output) and every criterion's verdict with the judge's reason.

use std::collections::{BTreeSet, HashMap};

use polars::prelude::*;
use serde::Serialize;

use super::palette::color_of;
use super::view::text_column;
use crate::tables::episodes::{PlayedEpisode as E, PlayedStep as S};
use crate::tables::judging::{Score as Sc, Verdict as V};
use crate::tables::tasks::{INSTRUCTION, PERTURBATION, TASK_ID};

/// Characters of an observation shown on an episode page; the rest is counted, not shown, so
/// a report of many models stays small.
pub const OBSERVATION_CHARS: usize = 1500;

/// One step of a trajectory, as the episode page shows it.
#[derive(Debug, Clone, Serialize, Default)]
pub struct StepView {
    /// 1-based step.
    pub step: String,
    /// `clarify` or `act` (empty when the table does not say).
    pub phase: String,
    /// `call` (a phone action), `ask`, `answer`, `finish` or `unparsed`.
    pub kind: &'static str,
    /// The action type (tool name, `ask_user`, …).
    pub action_type: String,
    /// The action's arguments (JSON), or the question / answer text for `ask` and `answer`.
    pub arguments: String,
    /// What the phone returned (cut at [`OBSERVATION_CHARS`]); empty for asks, whose answer is
    /// the user's reply.
    pub observation: String,
    /// Characters of the observation not shown.
    pub observation_cut: usize,
    /// The phone said the call failed (`observation_status = error`).
    pub failed: bool,
    /// The simulated user's reply to a question.
    pub user_reply: String,
    /// The model's own output when it says more than the action (GUI text, unparsable output).
    pub raw: String,
}

/// One criterion verdict.
#[derive(Debug, Clone, Serialize)]
pub struct VerdictView {
    /// Criterion id.
    pub criterion_id: String,
    /// `action` | `personalization`.
    pub kind: String,
    /// `rule` | `llm`.
    pub mode: String,
    /// `pass` | `fail` | `unscored`.
    pub verdict: String,
    /// The judge's reason.
    pub reason: String,
    /// Failure label of a failed criterion.
    pub failure_label: String,
}

/// One episode: its row in the list and its page.
#[derive(Debug, Clone, Serialize)]
pub struct EpisodeView {
    /// Its anchor on the page (`e12`).
    pub anchor: String,
    /// Episode id.
    pub episode_id: String,
    /// Task id.
    pub task_id: String,
    /// The task's instruction, when the tasks table is given.
    pub instruction: String,
    /// Perturbation subset (`none`, `preference_shift`, …), when known.
    pub perturbation: String,
    /// The subset's position in the page's subset filter (set by the report).
    pub si: usize,
    /// Variant.
    pub variant: String,
    /// The variant's position in the report's variant order (its filter and colour).
    pub vi: usize,
    /// The variant's colour.
    pub color: String,
    /// Epoch.
    pub epoch: String,
    /// Runner status (`ok`, `max_steps`, `error`).
    pub status: String,
    /// `pass`, `fail` or `na` (not scored).
    pub outcome: &'static str,
    /// The failure labels of its failed criteria, each once.
    pub labels: Vec<String>,
    /// Steps taken.
    pub steps_taken: String,
    /// Questions asked.
    pub asks: String,
    /// The last `answer` text.
    pub final_answer: String,
    /// Why the episode failed, when it did.
    pub error: String,
    /// Tokens and money of its model calls, when any (`agent 1,234 + 56 tokens; user …`).
    pub usage: String,
    /// The trajectory.
    pub steps: Vec<StepView>,
    /// The verdicts.
    pub verdicts: Vec<VerdictView>,
}

/// The drill-down's inputs; all but `episodes` optional.
pub struct DrillInputs<'a> {
    /// `episodes` (which episodes exist).
    pub episodes: &'a DataFrame,
    /// `steps`.
    pub steps: Option<&'a DataFrame>,
    /// `verdicts`.
    pub verdicts: Option<&'a DataFrame>,
    /// `scores` (success and perturbation per episode).
    pub scores: Option<&'a DataFrame>,
    /// `tasks` (instruction, perturbation).
    pub tasks: Option<&'a DataFrame>,
}

/// A frame's columns as text, and its rows grouped by `episode_id`.
struct ByEpisode {
    cols: Vec<Vec<Option<String>>>,
    rows: HashMap<String, Vec<usize>>,
}

impl ByEpisode {
    fn new(df: Option<&DataFrame>, cols: &[&str]) -> PolarsResult<Self> {
        let Some(df) = df else {
            return Ok(Self {
                cols: Vec::new(),
                rows: HashMap::new(),
            });
        };
        let mut rows: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, id) in text_column(df, E::episode_id)?.into_iter().enumerate() {
            rows.entry(id.unwrap_or_default()).or_default().push(i);
        }
        let cols = cols
            .iter()
            .map(|c| text_column(df, c))
            .collect::<PolarsResult<_>>()?;
        Ok(Self { cols, rows })
    }

    /// Row `i`'s value of column `c` (empty when null or absent).
    fn get(&self, c: usize, i: usize) -> String {
        self.cols
            .get(c)
            .and_then(|col| col.get(i).cloned().flatten())
            .unwrap_or_default()
    }

    fn of(&self, episode: &str) -> &[usize] {
        self.rows.get(episode).map_or(&[], Vec::as_slice)
    }
}

/// The episodes of the first `max_tasks` tasks (by id), ordered by task, then variant in
/// `variants` order (unknown variants after, by name), then epoch.
pub fn drilldown(
    inputs: &DrillInputs<'_>,
    variants: &[String],
    max_tasks: usize,
) -> PolarsResult<Vec<EpisodeView>> {
    let sources = Sources::read(inputs, variants)?;
    let order = sources.order(max_tasks);
    Ok(order
        .into_iter()
        .enumerate()
        .map(|(n, i)| sources.view(n, i))
        .collect())
}

/// The `episodes` columns an episode's row and page show, as text.
struct EpisodeColumns {
    id: Vec<Option<String>>,
    task: Vec<Option<String>>,
    variant: Vec<Option<String>>,
    epoch: Vec<Option<String>>,
    status: Vec<Option<String>>,
    answer: Vec<Option<String>>,
    error: Vec<Option<String>>,
    taken: Vec<Option<String>>,
    asks: Vec<Option<String>>,
    /// Agent and user tokens (prompt, completion) and costs, for [`usage_line`].
    tokens: [Vec<Option<String>>; 6],
}

impl EpisodeColumns {
    fn read(ep: &DataFrame) -> PolarsResult<Self> {
        let col = |c: &str| text_column(ep, c);
        let (id, task, variant, epoch, status) = (
            col(E::episode_id)?,
            col(E::task_id)?,
            col(E::variant)?,
            col(E::epoch)?,
            col(E::status)?,
        );
        let [answer, error, taken, asks] =
            [E::final_answer, E::error, E::steps, E::ask_user_calls].map(col);
        let [pa, ca, pu, cu, cost_a, cost_u] = [
            E::prompt_tokens_agent,
            E::completion_tokens_agent,
            E::prompt_tokens_user,
            E::completion_tokens_user,
            E::cost_agent,
            E::cost_user,
        ]
        .map(col);
        Ok(Self {
            id,
            task,
            variant,
            epoch,
            status,
            answer: answer?,
            error: error?,
            taken: taken?,
            asks: asks?,
            tokens: [pa?, ca?, pu?, cu?, cost_a?, cost_u?],
        })
    }
}

/// Row `i` of column `c` (empty when null).
fn text(c: &[Option<String>], i: usize) -> String {
    c[i].clone().unwrap_or_default()
}

/// Everything the episode views are made of: the episodes' columns and the other tables'
/// rows by episode (or task).
struct Sources<'v> {
    ep: EpisodeColumns,
    steps: ByEpisode,
    verdicts: ByEpisode,
    scores: ByEpisode,
    /// Instruction and perturbation by task id.
    info: HashMap<String, (String, String)>,
    variants: &'v [String],
}

impl<'v> Sources<'v> {
    fn read(inputs: &DrillInputs<'_>, variants: &'v [String]) -> PolarsResult<Self> {
        let steps = ByEpisode::new(
            inputs.steps,
            &[
                S::step,
                S::phase,
                S::action_type,
                S::arguments,
                S::observation,
                S::observation_status,
                S::user_reply,
                S::raw,
            ],
        );
        let verdicts = ByEpisode::new(
            inputs.verdicts,
            &[
                V::criterion_id,
                V::kind,
                V::mode,
                V::verdict,
                V::reason,
                V::failure_label,
            ],
        );
        Ok(Self {
            ep: EpisodeColumns::read(inputs.episodes)?,
            steps: steps?,
            verdicts: verdicts?,
            scores: ByEpisode::new(inputs.scores, &[Sc::success, Sc::perturbation])?,
            info: task_info(inputs.tasks)?,
            variants,
        })
    }

    /// The variant's position in `variants` (unknown ones last).
    fn rank(&self, v: &str) -> usize {
        self.variants
            .iter()
            .position(|x| x == v)
            .unwrap_or(usize::MAX)
    }

    /// The rows shown, in page order: the first `max_tasks` tasks by id; by task, variant
    /// rank and name, then epoch.
    fn order(&self, max_tasks: usize) -> Vec<usize> {
        let ep = &self.ep;
        let mut kept: BTreeSet<String> = ep.task.iter().flatten().cloned().collect();
        if kept.len() > max_tasks {
            kept = kept.into_iter().take(max_tasks).collect();
        }
        let mut order: Vec<usize> = (0..ep.task.len())
            .filter(|&i| ep.task[i].as_ref().is_some_and(|t| kept.contains(t)))
            .collect();
        let key = |i: usize| {
            let v = text(&ep.variant, i);
            (text(&ep.task, i), self.rank(&v), v)
        };
        order.sort_by(|&a, &b| {
            key(a).cmp(&key(b)).then_with(|| {
                let e = |i: usize| text(&ep.epoch, i).parse::<u64>().unwrap_or(0);
                e(a).cmp(&e(b))
            })
        });
        order
    }

    /// Row `i`'s view, the `n`-th on the page.
    fn view(&self, n: usize, i: usize) -> EpisodeView {
        let ep = &self.ep;
        let (eid, tid, v) = (text(&ep.id, i), text(&ep.task, i), text(&ep.variant, i));
        let (instruction, perturbation) = self.info.get(&tid).cloned().unwrap_or_default();
        let scored = self.scores.of(&eid).first().copied();
        let perturbation = match (perturbation.is_empty(), scored) {
            (true, Some(r)) => self.scores.get(1, r),
            _ => perturbation,
        };
        let outcome = match scored.map(|r| self.scores.get(0, r)).as_deref() {
            Some("true") => "pass",
            Some("false") => "fail",
            _ => "na",
        };
        let verdicts = self.verdict_views(&eid);
        let labels: BTreeSet<String> = verdicts
            .iter()
            .filter(|v| v.verdict == "fail" && !v.failure_label.is_empty())
            .map(|v| v.failure_label.clone())
            .collect();
        EpisodeView {
            anchor: format!("e{n}"),
            steps: self.step_views(&eid),
            episode_id: eid,
            task_id: tid,
            instruction,
            perturbation,
            si: 0,
            vi: self.rank(&v).min(self.variants.len()),
            color: color_of(self.variants, &v),
            variant: v,
            epoch: text(&ep.epoch, i),
            status: text(&ep.status, i),
            outcome,
            labels: labels.into_iter().collect(),
            steps_taken: text(&ep.taken, i),
            asks: text(&ep.asks, i),
            final_answer: text(&ep.answer, i),
            error: text(&ep.error, i),
            usage: usage_line(&ep.tokens, i),
            verdicts,
        }
    }

    fn verdict_views(&self, eid: &str) -> Vec<VerdictView> {
        let rows = self.verdicts.of(eid).iter();
        rows.map(|&r| verdict_view(&self.verdicts, r)).collect()
    }

    /// The episode's steps, by step number.
    fn step_views(&self, eid: &str) -> Vec<StepView> {
        let mut rows: Vec<usize> = self.steps.of(eid).to_vec();
        rows.sort_by_key(|&r| self.steps.get(0, r).parse::<u64>().unwrap_or(0));
        rows.into_iter()
            .map(|r| step_view(&self.steps, r))
            .collect()
    }
}

/// `agent 1,234 + 56 tokens, user 300 + 20 tokens, $0.0012`, or empty when no model ran.
fn usage_line(tokens: &[Vec<Option<String>>; 6], i: usize) -> String {
    let num = |c: usize| -> u64 {
        tokens[c][i]
            .as_deref()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    };
    let cost = |c: usize| -> f64 {
        tokens[c][i]
            .as_deref()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0.0)
    };
    let mut parts = Vec::new();
    for (role, p, c) in [("agent", 0, 1), ("user", 2, 3)] {
        if num(p) + num(c) > 0 {
            parts.push(format!("{role} {} + {} tokens", num(p), num(c)));
        }
    }
    let money = cost(4) + cost(5);
    if money > 0.0 {
        parts.push(format!("${money:.4}"));
    }
    parts.join(", ")
}

fn step_view(steps: &ByEpisode, r: usize) -> StepView {
    let action_type = steps.get(2, r);
    let arguments = steps.get(3, r);
    let kind = match action_type.as_str() {
        "ask_user" => "ask",
        "answer" => "answer",
        "finish" => "finish",
        "unknown" => "unparsed",
        _ => "call",
    };
    let text_arg = || {
        serde_json::from_str::<serde_json::Value>(&arguments)
            .ok()
            .and_then(|v| v.get("text").and_then(|t| t.as_str()).map(str::to_string))
            .unwrap_or_else(|| arguments.clone())
    };
    let (arguments, observation) = match kind {
        // The observation of a question is the user's reply, shown once as the reply.
        "ask" => (text_arg(), String::new()),
        "answer" => (text_arg(), steps.get(4, r)),
        _ => (arguments.clone(), steps.get(4, r)),
    };
    let total = observation.chars().count();
    let shown: String = observation.chars().take(OBSERVATION_CHARS).collect();
    let raw = steps.get(7, r);
    // Tools mode records the calls as JSON, which the action already shows.
    let raw = if raw.trim_start().starts_with('[') && kind != "unparsed" {
        String::new()
    } else {
        raw
    };
    StepView {
        step: steps.get(0, r),
        phase: steps.get(1, r),
        kind,
        failed: steps.get(5, r) == "error",
        action_type,
        arguments,
        observation: shown,
        observation_cut: total.saturating_sub(OBSERVATION_CHARS),
        user_reply: steps.get(6, r),
        raw,
    }
}

fn verdict_view(v: &ByEpisode, r: usize) -> VerdictView {
    VerdictView {
        criterion_id: v.get(0, r),
        kind: v.get(1, r),
        mode: v.get(2, r),
        verdict: v.get(3, r),
        reason: v.get(4, r),
        failure_label: v.get(5, r),
    }
}

/// task_id → (instruction, perturbation).
fn task_info(tasks: Option<&DataFrame>) -> PolarsResult<HashMap<String, (String, String)>> {
    let Some(tasks) = tasks else {
        return Ok(HashMap::new());
    };
    let id = text_column(tasks, TASK_ID)?;
    let instruction = text_column(tasks, INSTRUCTION)?;
    let perturbation = text_column(tasks, PERTURBATION)?;
    Ok((0..tasks.height())
        .filter_map(|i| {
            Some((
                id[i].clone()?,
                (
                    instruction[i].clone().unwrap_or_default(),
                    perturbation[i].clone().unwrap_or_default(),
                ),
            ))
        })
        .collect())
}

/// Variants whose episodes cover fewer tasks than the task set (a `--tasks`, `--sample` or
/// `--limit` run): `(variant, tasks played, tasks in the set)`.
pub fn coverage(
    episodes: &DataFrame,
    tasks: Option<&DataFrame>,
) -> PolarsResult<Vec<(String, usize, usize)>> {
    let Some(tasks) = tasks else {
        return Ok(Vec::new());
    };
    let all: BTreeSet<String> = text_column(tasks, TASK_ID)?.into_iter().flatten().collect();
    let variant = text_column(episodes, E::variant)?;
    let task = text_column(episodes, E::task_id)?;
    let mut played: Vec<(String, BTreeSet<String>)> = Vec::new();
    for (v, t) in variant.into_iter().zip(task) {
        let (v, Some(t)) = (v.unwrap_or_default(), t) else {
            continue;
        };
        match played.iter_mut().find(|(x, _)| *x == v) {
            Some((_, set)) => {
                set.insert(t);
            }
            None => played.push((v, BTreeSet::from([t]))),
        }
    }
    Ok(played
        .into_iter()
        .map(|(v, set)| (v, set.intersection(&all).count(), all.len()))
        .filter(|(_, n, total)| n < total)
        .collect())
}
