//! The human labels of the authored episodes (`datasets/judge-labels/labels/`, README there):
//! two independent passes of per-criterion, per-success and per-piece labels, and the
//! adjudication of their disagreements. Each pass is turned into the judgements the figures
//! use — criterion verdicts, task success, each ask-only slot's recall (asked or not) and each
//! episode's extra requests (pieces that do not newly request an ask-only slot) — and the gold
//! standard is the passes where they agree, the adjudication where they do not.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use polars::prelude::*;
use prefflow_engine::StageError;

use crate::tables::aggregate::{adjudication_csv, label_csv, CsvHeader, DisagreementsRow};
use crate::tasks::{Source, TaskBundle};

/// What a judgement is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// A criterion's verdict: `pass` | `fail`.
    Criterion,
    /// The episode's task success: `pass` | `fail`.
    Success,
    /// Whether an ask-only slot was asked: `asked` | `not_asked`.
    Recall,
    /// How many requests did not newly ask for an ask-only slot: a count.
    Extra,
}

impl Level {
    /// The table spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Criterion => "criterion",
            Level::Success => "success",
            Level::Recall => "recall",
            Level::Extra => "extra",
        }
    }

    /// Every level, in report order.
    pub const ALL: [Level; 4] = [
        Level::Criterion,
        Level::Success,
        Level::Recall,
        Level::Extra,
    ];

    fn parse(s: &str) -> Option<Self> {
        Level::ALL.into_iter().find(|l| l.as_str() == s)
    }
}

/// `(episode, level, subject)`: one judgement's identity.
pub type Key = (String, Level, String);
/// Judgements by key; values are spelled as in the label files.
pub type Judgements = BTreeMap<Key, String>;

/// One row of a pass file.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelRow {
    /// `<task_id>/<name>`.
    pub episode: String,
    /// `criterion`, `success` or `piece`.
    pub level: String,
    /// Criterion id, empty, or `ASK.PIECE`.
    pub subject: String,
    /// `pass`/`fail`, or a slot id / `none` for pieces.
    pub label: String,
    /// Who labelled.
    pub annotator: String,
    /// `file line N`, for messages.
    pub at: String,
}

/// Reads every CSV of a pass directory (none when it does not exist).
pub fn read_pass(dir: &Path, shown: &str) -> Result<Vec<LabelRow>, StageError> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let files = crate::files::sorted_files(dir, &["csv"])
        .map_err(|e| StageError::Input(format!("labels `{shown}`: {e}")))?;
    let mut rows = Vec::new();
    for file in files {
        let name = format!("{shown}/{}", file_name(&file));
        let cols = csv_columns(&file, &name, &label_csv::HEADER)?;
        for (i, episode) in cols[label_csv::EPISODE].iter().enumerate() {
            rows.push(LabelRow {
                episode: episode.clone(),
                level: cols[label_csv::LEVEL][i].to_lowercase(),
                subject: cols[label_csv::SUBJECT][i].clone(),
                label: cols[label_csv::LABEL][i].clone(),
                annotator: cols[label_csv::ANNOTATOR][i].clone(),
                at: format!("{name} line {}", i + 2),
            });
        }
    }
    Ok(rows)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default()
}

/// The named columns of a CSV file as trimmed strings (`optional` ones empty when absent).
fn csv_columns(
    file: &Path,
    name: &str,
    header: &CsvHeader,
) -> Result<HashMap<String, Vec<String>>, StageError> {
    let (required, optional) = (header.required, header.optional);
    let df = CsvReadOptions::default()
        .with_has_header(true)
        .with_infer_schema_length(Some(0))
        .try_into_reader_with_file_path(Some(file.to_path_buf()))
        .and_then(|r| r.finish())
        .map_err(|e| StageError::Input(format!("labels file `{name}`: {e}")))?;
    let mut out = HashMap::new();
    for c in required.iter().chain(optional) {
        let values = match df.column(c) {
            Ok(col) => col
                .str()?
                .iter()
                .map(|v| v.unwrap_or_default().trim().to_string())
                .collect(),
            Err(_) if optional.contains(c) => vec![String::new(); df.height()],
            Err(_) => {
                return Err(StageError::Input(format!(
                    "labels file `{name}`: no column `{c}`; the header must hold {} (datasets/judge-labels/README.md)",
                    required.join(", ")
                )))
            }
        };
        out.insert(c.to_string(), values);
    }
    Ok(out)
}

/// A labelled piece: its `(ask, piece)` place and its label.
type Piece = ((usize, usize), String);

/// A pass's judgements. `tasks` gives each labelled episode's task (episodes missing from it —
/// stale or unknown — are skipped); `asks` the number of `ask` steps of each episode. Bad rows
/// are errors naming the file and line.
pub fn judgements(
    rows: &[LabelRow],
    tasks: &HashMap<String, &TaskBundle>,
    asks: &HashMap<String, usize>,
) -> Result<Judgements, StageError> {
    let mut out = Judgements::new();
    let mut pieces: BTreeMap<&str, Vec<Piece>> = BTreeMap::new();
    let mut labelled: BTreeSet<&str> = BTreeSet::new();
    for r in rows {
        let Some(bundle) = tasks.get(&r.episode) else {
            if !asks.contains_key(&r.episode) {
                return Err(bad(r, format!(
                    "episode `{}` is not an authored episode (datasets/judge-labels/episodes/<task_id>/<name>.yaml)",
                    r.episode
                )));
            }
            continue; // stale or unknown task: reported by the episodes table
        };
        labelled.insert(&r.episode);
        if r.level == "piece" {
            let p = piece(r, bundle, asks)?;
            pieces.entry(&r.episode).or_default().push(p);
        } else {
            verdict(r, bundle, &mut out)?;
        }
    }
    for episode in labelled {
        let bundle = tasks[episode];
        let mut ps = pieces.remove(episode).unwrap_or_default();
        ps.sort();
        for (k, v) in interaction_of(&ps, bundle) {
            out.insert((episode.to_string(), k.0, k.1), v);
        }
    }
    Ok(out)
}

/// A label row's complaint, at its file and line.
fn bad(r: &LabelRow, m: String) -> StageError {
    StageError::Input(format!("{}: {m}", r.at))
}

/// A `criterion` or `success` label, checked and added to `out`.
fn verdict(r: &LabelRow, bundle: &TaskBundle, out: &mut Judgements) -> Result<(), StageError> {
    let key = match r.level.as_str() {
        "criterion" => {
            if !bundle.criteria.iter().any(|c| c.criterion_id == r.subject) {
                return Err(bad(
                    r,
                    format!(
                        "task `{}` has no criterion `{}`",
                        bundle.task.task_id, r.subject
                    ),
                ));
            }
            (r.episode.clone(), Level::Criterion, r.subject.clone())
        }
        "success" => (r.episode.clone(), Level::Success, String::new()),
        other => {
            return Err(bad(
                r,
                format!("level `{other}`; write `criterion`, `success` or `piece`"),
            ))
        }
    };
    let v = pass_fail(&r.label).map_err(|m| bad(r, m))?;
    insert(out, key, v, r)
}

/// A `piece` label (`ASK.PIECE` → a slot id or `none`), checked against the episode's asks
/// and the task's slots.
fn piece(
    r: &LabelRow,
    bundle: &TaskBundle,
    asks: &HashMap<String, usize>,
) -> Result<Piece, StageError> {
    let at = piece_at(&r.subject).ok_or_else(|| {
        bad(
            r,
            format!("piece subject `{}`: write ASK.PIECE, e.g. `1.2`", r.subject),
        )
    })?;
    let n_asks = asks.get(&r.episode).copied().unwrap_or(0);
    if at.0 == 0 || at.0 > n_asks {
        return Err(bad(
            r,
            format!(
                "piece `{}`: the episode has {n_asks} ask step(s)",
                r.subject
            ),
        ));
    }
    let label = r.label.to_lowercase();
    if label != "none" && bundle.slot(&r.label).is_none() {
        return Err(bad(
            r,
            format!(
                "piece label `{}`: task `{}` has no such slot; write a slot id or `none`",
                r.label, bundle.task.task_id
            ),
        ));
    }
    Ok((at, r.label.clone()))
}

fn insert(out: &mut Judgements, key: Key, v: &str, r: &LabelRow) -> Result<(), StageError> {
    match out.insert(key, v.to_string()) {
        Some(old) if old != v => Err(StageError::Input(format!(
            "{}: `{}` {} labelled both `{old}` and `{v}` in one pass",
            r.at, r.episode, r.subject
        ))),
        _ => Ok(()),
    }
}

fn pass_fail(label: &str) -> Result<&'static str, String> {
    match label.to_lowercase().as_str() {
        "pass" => Ok("pass"),
        "fail" => Ok("fail"),
        other => Err(format!("label `{other}`; write `pass` or `fail`")),
    }
}

fn piece_at(subject: &str) -> Option<(usize, usize)> {
    let (a, p) = subject.split_once('.')?;
    Some((a.trim().parse().ok()?, p.trim().parse().ok()?))
}

/// Recall and extra-request judgements from an episode's pieces in order: each ask-only slot is
/// `asked` when some piece requests it; pieces that are not the first request of an ask-only
/// slot (inferable, `none`, repeats) are extra.
fn interaction_of(pieces: &[Piece], bundle: &TaskBundle) -> Vec<((Level, String), String)> {
    let ask_only: Vec<&str> = bundle
        .slots
        .iter()
        .filter(|s| s.source == Source::AskOnly)
        .map(|s| s.slot_id.as_str())
        .collect();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut extra = 0u32;
    for (_, label) in pieces {
        let l = label.as_str();
        if ask_only.contains(&l) && seen.insert(l) {
            continue;
        }
        extra += 1;
    }
    let mut out: Vec<((Level, String), String)> = ask_only
        .iter()
        .map(|s| {
            let v = if seen.contains(s) {
                "asked"
            } else {
                "not_asked"
            };
            ((Level::Recall, s.to_string()), v.to_string())
        })
        .collect();
    out.push(((Level::Extra, String::new()), extra.to_string()));
    out
}

/// One row of `adjudication.csv`.
#[derive(Debug, Clone, PartialEq)]
pub struct Adjudication {
    /// The judgement.
    pub key: Key,
    /// Its resolved value.
    pub resolved: String,
}

/// Reads the adjudication file (none when it does not exist).
pub fn read_adjudication(file: &Path, shown: &str) -> Result<Vec<Adjudication>, StageError> {
    if !file.is_file() {
        return Ok(Vec::new());
    }
    use adjudication_csv::{EPISODE, LEVEL, RESOLVED, SUBJECT};
    let cols = csv_columns(file, shown, &adjudication_csv::HEADER)?;
    (0..cols[EPISODE].len())
        .map(|i| {
            let at = format!("{shown} line {}", i + 2);
            let level = Level::parse(&cols[LEVEL][i].to_lowercase()).ok_or_else(|| {
                StageError::Input(format!(
                    "{at}: level `{}`; write criterion, success, recall or extra",
                    cols[LEVEL][i]
                ))
            })?;
            Ok(Adjudication {
                key: (cols[EPISODE][i].clone(), level, cols[SUBJECT][i].clone()),
                resolved: cols[RESOLVED][i].to_lowercase(),
            })
        })
        .collect()
}

/// One disagreement of the passes.
#[derive(Debug, Clone, PartialEq)]
pub struct Disagreement {
    /// The judgement.
    pub key: Key,
    /// Pass 1's value (empty: not labelled).
    pub pass1: String,
    /// Pass 2's value.
    pub pass2: String,
    /// The adjudicated value, if any.
    pub resolved: Option<String>,
}

/// The gold standard: both passes where they agree, the adjudication where they do not (a
/// judgement one pass lacks counts as a disagreement). Also every disagreement.
pub fn gold(
    pass1: &Judgements,
    pass2: &Judgements,
    adjudicated: &[Adjudication],
) -> (Judgements, Vec<Disagreement>) {
    let resolved: HashMap<&Key, &str> = adjudicated
        .iter()
        .map(|a| (&a.key, a.resolved.as_str()))
        .collect();
    let keys: BTreeSet<&Key> = pass1.keys().chain(pass2.keys()).collect();
    let mut out = Judgements::new();
    let mut disagreements = Vec::new();
    for key in keys {
        let (a, b) = (pass1.get(key), pass2.get(key));
        if a.is_some() && a == b {
            out.insert(key.clone(), a.cloned().unwrap_or_default());
            continue;
        }
        let r = resolved.get(key).map(|s| s.to_string());
        if let Some(v) = &r {
            out.insert(key.clone(), v.clone());
        }
        disagreements.push(Disagreement {
            key: key.clone(),
            pass1: a.cloned().unwrap_or_default(),
            pass2: b.cloned().unwrap_or_default(),
            resolved: r,
        });
    }
    (out, disagreements)
}

/// `disagreements`: episode, level, subject, pass1, pass2, resolved (null: unresolved).
pub fn disagreements_frame(rows: &[Disagreement]) -> PolarsResult<DataFrame> {
    let rows: Vec<DisagreementsRow> = rows
        .iter()
        .map(|d| DisagreementsRow {
            episode: d.key.0.clone(),
            level: d.key.1.as_str().to_string(),
            subject: d.key.2.clone(),
            pass1: d.pass1.clone(),
            pass2: d.pass2.clone(),
            resolved: d.resolved.clone(),
        })
        .collect();
    DisagreementsRow::to_frame(&rows)
}

/// The gold pieces of each ask: the slots requested at ask `k` (1-based) where both passes
/// agree on that set (asks they split differently are left out of the simulator check).
pub fn asked_per_ask(
    pass1: &[LabelRow],
    pass2: &[LabelRow],
) -> BTreeMap<(String, usize), BTreeSet<String>> {
    let sets = |rows: &[LabelRow]| {
        let mut m: BTreeMap<(String, usize), BTreeSet<String>> = BTreeMap::new();
        for r in rows.iter().filter(|r| r.level == "piece") {
            if let Some((ask, _)) = piece_at(&r.subject) {
                let e = m.entry((r.episode.clone(), ask)).or_default();
                if !r.label.eq_ignore_ascii_case("none") {
                    e.insert(r.label.clone());
                }
            }
        }
        m
    };
    let (a, b) = (sets(pass1), sets(pass2));
    a.into_iter().filter(|(k, v)| b.get(k) == Some(v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(episode: &str, level: &str, subject: &str, label: &str) -> LabelRow {
        LabelRow {
            episode: episode.into(),
            level: level.into(),
            subject: subject.into(),
            label: label.into(),
            annotator: "a".into(),
            at: "f line 2".into(),
        }
    }

    #[test]
    fn pieces_give_recall_and_extra_requests_with_repeats_counted() {
        // Slots: cuisine, seating, time (inferable), party_size (ask-only).
        let mut bundle = crate::tasks::testkit::candidates()
            .iter()
            .find(|b| b.task.task_id == "dinespot_dinner-03")
            .expect("dinespot_dinner-03")
            .clone();
        bundle.slot_mut("time").expect("time").source = Source::AskOnly;
        let tasks = HashMap::from([("t/e".to_string(), &bundle)]);
        let asks = HashMap::from([("t/e".to_string(), 2usize)]);
        let rows = [
            row("t/e", "piece", "1.1", "party_size"),
            row("t/e", "piece", "1.2", "seating"),
            row("t/e", "piece", "2.1", "party_size"),
            row("t/e", "piece", "2.2", "none"),
        ];
        let j = judgements(&rows, &tasks, &asks).unwrap();
        let get = |l: Level, s: &str| j.get(&("t/e".into(), l, s.into())).cloned();
        assert_eq!(get(Level::Recall, "party_size").as_deref(), Some("asked"));
        assert_eq!(get(Level::Recall, "time").as_deref(), Some("not_asked"));
        // seating (inferable), the repeat of party_size, and the irrelevant piece.
        assert_eq!(get(Level::Extra, "").as_deref(), Some("3"));
        let bad = [row("t/e", "piece", "3.1", "party_size")];
        assert!(judgements(&bad, &tasks, &asks).is_err());
        let bad = [row("t/e", "criterion", "nope", "pass")];
        assert!(judgements(&bad, &tasks, &asks).is_err());
    }

    #[test]
    fn gold_takes_agreement_and_adjudication_and_lists_disagreements() {
        let k = |s: &str| ("e".to_string(), Level::Criterion, s.to_string());
        let p1 = Judgements::from([(k("a"), "pass".into()), (k("b"), "pass".into())]);
        let p2 = Judgements::from([
            (k("a"), "pass".into()),
            (k("b"), "fail".into()),
            (k("c"), "fail".into()),
        ]);
        let adj = [Adjudication {
            key: k("b"),
            resolved: "fail".into(),
        }];
        let (g, d) = gold(&p1, &p2, &adj);
        assert_eq!(g.get(&k("a")).map(String::as_str), Some("pass"));
        assert_eq!(g.get(&k("b")).map(String::as_str), Some("fail"));
        assert!(!g.contains_key(&k("c")), "unresolved: left out");
        assert_eq!(d.len(), 2);
        assert_eq!(d[1].resolved, None);
    }
}
