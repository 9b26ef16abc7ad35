//! Judge validation (iPrefBench §4.5): human labels imported from CSV, compared with the rule
//! judge, the LLM judge and each other at criterion level, task-success level (an episode
//! succeeds when every labelled criterion passes) and slot level (was an ask-only slot asked —
//! what interaction recall counts).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use polars::prelude::*;
use prefflow_engine::StageError;

use super::kappa::{agreement, Agreement};
use super::pertask::input_error;
use crate::tables::aggregate::{AgreementRow as A, LabelsRow as L};
use crate::tables::judging::{REQUESTS, VERDICTS};

/// What a human label is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Subject {
    /// A criterion's verdict: label `pass` (true) or `fail`.
    Criterion(String),
    /// Whether the agent asked for a slot: `asked` (true) or `not_asked`.
    Slot(String),
}

/// One human judgement, with where it came from so errors and reports can point at it.
#[derive(Debug, Clone, PartialEq)]
pub struct HumanLabel {
    /// The labelled episode.
    pub episode_id: String,
    /// Criterion or slot.
    pub subject: Subject,
    /// pass / asked.
    pub positive: bool,
    /// The CSV file, as shown to users.
    pub file: String,
    /// 1-based line in the file (the header is line 1).
    pub line: u32,
}

/// The CSV files under `path` (a file, or a directory's `*.csv` sorted by name).
fn label_files(path: &Path, shown: &str) -> Result<Vec<PathBuf>, StageError> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    crate::files::sorted_files(path, &["csv"]).map_err(|e| {
        StageError::Input(format!(
            "labels `{shown}`: {e}; point `labels` at a CSV file or a directory of CSV files"
        ))
    })
}

/// Reads every label file under `path` (`shown` is the path as the user wrote it).
pub fn read_labels(path: &Path, shown: &str) -> Result<Vec<HumanLabel>, StageError> {
    let mut labels = Vec::new();
    for file in label_files(path, shown)? {
        let name = file
            .strip_prefix(path)
            .map(|rel| Path::new(shown).join(rel))
            .unwrap_or_else(|_| file.clone())
            .display()
            .to_string();
        labels.extend(read_file(&file, &name)?);
    }
    Ok(labels)
}

fn read_file(file: &Path, name: &str) -> Result<Vec<HumanLabel>, StageError> {
    let df = CsvReadOptions::default()
        .with_has_header(true)
        .with_infer_schema_length(Some(0))
        .try_into_reader_with_file_path(Some(file.to_path_buf()))
        .and_then(|r| r.finish())
        .map_err(|e| StageError::Input(format!("labels file `{name}`: {e}")))?;
    let has = |c: &str| df.schema().contains(c);
    if !has(L::episode_id) || !has(L::label) || !(has(L::criterion_id) || has(L::slot_id)) {
        return Err(StageError::Input(format!(
            "labels file `{name}`: the header must have `episode_id`, `criterion_id` and/or `slot_id`, and `label`"
        )));
    }
    let text = |c: &str| -> Result<Vec<String>, StageError> {
        if !has(c) {
            return Ok(vec![String::new(); df.height()]);
        }
        Ok(df
            .column(c)?
            .str()?
            .iter()
            .map(|v| v.unwrap_or_default().trim().to_string())
            .collect())
    };
    let (episodes, criteria) = (text(L::episode_id)?, text(L::criterion_id)?);
    let (slots, values) = (text(L::slot_id)?, text(L::label)?);
    (0..df.height())
        .map(|i| {
            let at = format!("labels file `{name}` line {}", i + 2);
            parse_row(&at, &episodes[i], &criteria[i], &slots[i], &values[i]).map(
                |(subject, positive)| HumanLabel {
                    episode_id: episodes[i].clone(),
                    subject,
                    positive,
                    file: name.to_string(),
                    line: i as u32 + 2,
                },
            )
        })
        .collect()
}

fn parse_row(
    at: &str,
    episode: &str,
    criterion: &str,
    slot: &str,
    label: &str,
) -> Result<(Subject, bool), StageError> {
    if episode.is_empty() {
        return Err(StageError::Input(format!("{at}: `episode_id` is empty")));
    }
    let subject = match (criterion.is_empty(), slot.is_empty()) {
        (false, true) => Subject::Criterion(criterion.to_string()),
        (true, false) => Subject::Slot(slot.to_string()),
        _ => {
            return Err(StageError::Input(format!(
                "{at}: fill exactly one of `criterion_id` and `slot_id`"
            )))
        }
    };
    let positive = match (&subject, label.to_ascii_lowercase().as_str()) {
        (Subject::Criterion(_), "pass") | (Subject::Slot(_), "asked") => true,
        (Subject::Criterion(_), "fail") | (Subject::Slot(_), "not_asked" | "not") => false,
        (Subject::Criterion(_), other) => {
            return Err(StageError::Input(format!(
                "{at}: label `{other}` for a criterion; write `pass` or `fail`"
            )))
        }
        (Subject::Slot(_), other) => {
            return Err(StageError::Input(format!(
                "{at}: label `{other}` for a slot; write `asked` or `not_asked`"
            )))
        }
    };
    Ok((subject, positive))
}

/// The labels as a table: episode_id, criterion_id?, slot_id?, label, file, line.
pub fn labels_frame(labels: &[HumanLabel]) -> PolarsResult<DataFrame> {
    let rows: Vec<L> = labels
        .iter()
        .map(|l| L {
            episode_id: l.episode_id.clone(),
            criterion_id: match &l.subject {
                Subject::Criterion(c) => Some(c.clone()),
                Subject::Slot(_) => None,
            },
            slot_id: match &l.subject {
                Subject::Slot(s) => Some(s.clone()),
                Subject::Criterion(_) => None,
            },
            label: match (&l.subject, l.positive) {
                (Subject::Criterion(_), true) => "pass",
                (Subject::Criterion(_), false) => "fail",
                (Subject::Slot(_), true) => "asked",
                (Subject::Slot(_), false) => "not_asked",
            }
            .to_string(),
            file: l.file.clone(),
            line: l.line,
        })
        .collect();
    L::to_frame(&rows)
}

/// (episode, criterion) → verdict per mode (`pass` → true; unscored left out).
type JudgeVerdicts = HashMap<(String, String), BTreeMap<String, bool>>;

crate::tables::row! {
    /// A verdict of one mode, as judge agreement reads `verdicts`.
    struct ModeVerdict of VERDICTS {
        episode_id: String,
        criterion_id: String,
        mode: String,
        verdict: String,
    }
}

crate::tables::row! {
    /// A request's matched slot, as judge agreement reads `requests`.
    struct AskedSlot of REQUESTS {
        episode_id: String,
        slot_id: Option<String>,
    }
}

/// The rows of `df` whose `id` column is one of `episodes` (a join, so 500,000 rows never
/// reach a Rust loop).
fn of_episodes(df: &DataFrame, id: &str, episodes: &[String]) -> PolarsResult<LazyFrame> {
    let wanted = DataFrame::new(episodes.len(), vec![Column::new(id.into(), episodes)])?;
    Ok(df.clone().lazy().join(
        wanted.lazy(),
        [col(id)],
        [col(id)],
        JoinArgs::new(JoinType::Inner),
    ))
}

/// The scored verdicts of the labelled episodes.
fn judge_verdicts(verdicts: &DataFrame, episodes: &[String]) -> Result<JudgeVerdicts, StageError> {
    type V = ModeVerdict;
    V::check(verdicts).map_err(input_error)?;
    let df = of_episodes(verdicts, V::episode_id, episodes)?
        .filter(col(V::verdict).neq(lit("unscored")))
        .select([
            col(V::episode_id),
            col(V::criterion_id),
            col(V::mode),
            col(V::verdict),
        ])
        .collect()?;
    let mut out = JudgeVerdicts::new();
    for v in V::from_frame(&df).map_err(input_error)? {
        out.entry((v.episode_id, v.criterion_id))
            .or_default()
            .insert(v.mode, v.verdict == "pass");
    }
    Ok(out)
}

/// (episode, slot) pairs the interaction judge matched a request to.
fn asked_slots(
    requests: &DataFrame,
    episodes: &[String],
) -> Result<BTreeSet<(String, String)>, StageError> {
    type R = AskedSlot;
    R::check(requests).map_err(input_error)?;
    let df = of_episodes(requests, R::episode_id, episodes)?
        .filter(col(R::slot_id).is_not_null())
        .select([col(R::episode_id), col(R::slot_id)])
        .collect()?;
    Ok(R::from_frame(&df)
        .map_err(input_error)?
        .into_iter()
        .filter_map(|r| Some((r.episode_id, r.slot_id?)))
        .collect())
}

/// One row of the `agreement` table.
#[derive(Debug, Clone, PartialEq)]
pub struct AgreementRow {
    /// `criterion`, `success` or `slot`.
    pub level: &'static str,
    /// e.g. `rule~human`.
    pub pair: String,
    /// The statistics.
    pub agreement: Agreement,
    /// Labelled items left out because a rater had no (scored) verdict for them.
    pub excluded: u32,
}

const fn label(b: bool) -> &'static str {
    if b {
        "pos"
    } else {
        "neg"
    }
}

/// A rater's label of a labelled criterion: pass (true), fail, or none given.
type Rater<'a> = Box<dyn Fn(&HumanLabel, &str) -> Option<bool> + 'a>;

/// Agreement at every level, for the rule judge, the LLM judge (when present) and humans.
pub fn judge_agreement(
    labels: &[HumanLabel],
    verdicts: &DataFrame,
    requests: Option<&DataFrame>,
) -> Result<Vec<AgreementRow>, StageError> {
    let episodes: Vec<String> = labels
        .iter()
        .map(|l| l.episode_id.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let judged = judge_verdicts(verdicts, &episodes)?;
    let criteria: Vec<(&HumanLabel, &str)> = labels
        .iter()
        .filter_map(|l| match &l.subject {
            Subject::Criterion(c) => Some((l, c.as_str())),
            Subject::Slot(_) => None,
        })
        .collect();
    let raters = raters(&judged);
    // Pairs: each judge mode against humans, then judge modes against each other.
    let pairs: Vec<(usize, usize)> = (1..raters.len())
        .map(|j| (j, 0))
        .chain((1..raters.len()).flat_map(|a| (a + 1..raters.len()).map(move |b| (a, b))))
        .collect();
    let mut rows: Vec<AgreementRow> = pairs
        .into_iter()
        .flat_map(|(a, b)| pair_rows(&raters[a], &raters[b], &criteria))
        .collect();
    if let Some(requests) = requests {
        rows.push(slot_row(labels, &asked_slots(requests, &episodes)?));
    }
    Ok(rows)
}

/// Humans, then each judge mode that gave a scored verdict.
fn raters(judged: &JudgeVerdicts) -> Vec<(String, Rater<'_>)> {
    let modes: BTreeSet<&str> = judged
        .values()
        .flat_map(|m| m.keys().map(String::as_str))
        .collect();
    let human = |l: &HumanLabel, _: &str| Some(l.positive);
    let mut raters: Vec<(String, Rater<'_>)> = vec![("human".into(), Box::new(human))];
    for m in modes {
        let of = move |l: &HumanLabel, c: &str| -> Option<bool> {
            judged
                .get(&(l.episode_id.clone(), c.to_string()))?
                .get(m)
                .copied()
        };
        raters.push((m.to_string(), Box::new(of)));
    }
    raters
}

/// The criterion-level and task-success-level rows of one pair of raters.
fn pair_rows(
    (name_a, ra): &(String, Rater<'_>),
    (name_b, rb): &(String, Rater<'_>),
    criteria: &[(&HumanLabel, &str)],
) -> [AgreementRow; 2] {
    let pair = format!("{name_a}~{name_b}");
    let both: Vec<(bool, bool)> = criteria
        .iter()
        .filter_map(|(l, c)| Some((ra(l, c)?, rb(l, c)?)))
        .collect();
    // Task-success level: every labelled criterion of the episode passes.
    let mut by_episode: BTreeMap<&str, Vec<(&HumanLabel, &str)>> = BTreeMap::new();
    for (l, c) in criteria {
        by_episode.entry(&l.episode_id).or_default().push((l, c));
    }
    let success: Vec<(bool, bool)> = by_episode
        .values()
        .filter_map(|items| {
            let all = |r: &dyn Fn(&HumanLabel, &str) -> Option<bool>| {
                // Like `scores.success`: undefined when any criterion is unscored.
                items.iter().try_fold(true, |acc, (l, c)| {
                    let passed = r(l, c)?;
                    Some(acc && passed)
                })
            };
            Some((all(ra.as_ref())?, all(rb.as_ref())?))
        })
        .collect();
    [
        row("criterion", &pair, &both, criteria.len()),
        row("success", &pair, &success, by_episode.len()),
    ]
}

/// The slot-level row: the interaction judge against the humans' asked / not-asked labels.
fn slot_row(labels: &[HumanLabel], asked: &BTreeSet<(String, String)>) -> AgreementRow {
    let slots: Vec<(bool, bool)> = labels
        .iter()
        .filter_map(|l| match &l.subject {
            Subject::Slot(s) => Some((
                asked.contains(&(l.episode_id.clone(), s.clone())),
                l.positive,
            )),
            Subject::Criterion(_) => None,
        })
        .collect();
    row("slot", "interaction~human", &slots, slots.len())
}

fn row(level: &'static str, pair: &str, both: &[(bool, bool)], labelled: usize) -> AgreementRow {
    let pairs: Vec<(&str, &str)> = both.iter().map(|&(a, b)| (label(a), label(b))).collect();
    AgreementRow {
        level,
        pair: pair.to_string(),
        agreement: agreement(&pairs),
        excluded: labelled.saturating_sub(both.len()) as u32,
    }
}

/// `agreement`: level, pair, n, agree, p_o, p_e, kappa (null when undefined), excluded.
pub fn agreement_frame(rows: &[AgreementRow]) -> PolarsResult<DataFrame> {
    let rows: Vec<A> = rows
        .iter()
        .map(|r| A {
            level: r.level.to_string(),
            pair: r.pair.clone(),
            n: r.agreement.n,
            agree: r.agreement.agree,
            p_o: r.agreement.p_o,
            p_e: r.agreement.p_e,
            kappa: r.agreement.kappa,
            excluded: r.excluded,
        })
        .collect();
    A::to_frame(&rows)
}
