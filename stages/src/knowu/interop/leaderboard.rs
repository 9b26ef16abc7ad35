//! `knowu_leaderboard`: our runs beside KnowU-Bench's published results, comparably.
//!
//! - The published rows are the paper's Table 2 (`datasets/knowu/published.csv`: all 11 models,
//!   Overall and the difficulty columns — General easy / hard, Personalized easy / hard SR and
//!   Score, Proactive easy / hard); the split columns (General, Personalized, Proactive) are
//!   derived from the difficulty columns over KnowU's task counts (18 + 24, 43 + 43, 32 + 32).
//! - The KnowU site's rows (`leaderboard.json`, optional) appear where they differ from the
//!   paper's, each with a note saying how; a paper row the site agrees with says so.
//! - Every row says its coverage (tasks with a result per split). A run covering fewer tasks
//!   than KnowU's 42 / 86 / 64 is marked partial and not ranked among full runs; so is a run
//!   with no scored episode (warned).
//!
//! Ranked rows come first (by Overall), then the unranked ones; `text` is a Markdown rendering.

use std::path::Path;

use polars::prelude::*;
use serde::Deserialize;
use serde_json::Value;

use crate::knowu::error::KnowuError;
use crate::tables::knowu::{
    LeaderboardSplit, OverallRow as O, RankedRun, RunScope, NOTE, OVERALL, RANKED, SOURCE,
};

/// KnowU's task counts per split (general, personalized, proactive).
pub const KNOWU_TASKS: [u32; 3] = [42, 86, 64];
/// KnowU's task counts per split and difficulty (easy, hard).
pub const KNOWU_DIFFICULTY_TASKS: [[u32; 2]; 3] = [[18, 24], [43, 43], [32, 32]];
const SPLITS: [&str; 3] = ["general", "personalized", "proactive"];

/// The paper's Table 2 difficulty columns.
pub use crate::tables::knowu::LEADERBOARD_DIFFICULTY as DIFFICULTY;
/// KnowU's column layout (then the paper's difficulty columns and the coverage).
pub use crate::tables::knowu::LEADERBOARD_LAYOUT as LAYOUT;

/// Parameters of `knowu_leaderboard`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeaderboardParams {
    /// The paper's Table 2 (default `datasets/knowu/published.csv`).
    #[serde(default = "default_published")]
    pub published: String,
    /// KnowU-Bench's site leaderboard.json (optional): its rows where they differ from the
    /// paper's.
    #[serde(default)]
    pub path: Option<String>,
    /// Date shown next to our runs' names (none when absent).
    #[serde(default)]
    pub date: Option<String>,
    /// "Approach & Details" of our runs; defaults to naming the run's variant.
    #[serde(default)]
    pub approach: Option<String>,
}

fn default_published() -> String {
    "datasets/knowu/published.csv".into()
}

/// One leaderboard row before ranking.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// "Model & Date".
    pub model: String,
    /// "Approach & Details".
    pub approach: String,
    /// Success rates in percent: overall, general, personalized, proactive.
    pub rates: [Option<f64>; 4],
    /// The paper's difficulty columns ([`DIFFICULTY`]): SR in percent, scores in 0–1.
    pub difficulty: [Option<f64>; 8],
    /// Tasks with a result per split (general, personalized, proactive).
    pub tasks: [Option<u32>; 3],
    /// Whether it ranks: a published row, or a run covering every KnowU task with scores.
    pub ranked: bool,
    /// `KnowU-Bench paper`, `KnowU-Bench site` or `prefflow`.
    pub source: String,
    /// What to know about the row (derivations, differences, partial coverage).
    pub note: String,
}

/// A row of the paper's table as the CSV holds it.
#[derive(Debug, Clone)]
struct Paper {
    model: String,
    site_model: String,
    overall: f64,
    difficulty: [f64; 8],
    source: String,
}

/// The paper's rows (`datasets/knowu/published.csv`).
fn read_paper(path: &Path, label: &str) -> Result<Vec<Paper>, KnowuError> {
    let err = |message: String| KnowuError::Content {
        path: label.into(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| KnowuError::read(Path::new(label), e))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let want = [
        "model",
        "site_model",
        "overall",
        "gen_easy",
        "gen_hard",
        "pers_easy_sr",
        "pers_easy_score",
        "pers_hard_sr",
        "pers_hard_score",
        "pro_easy",
        "pro_hard",
        "source",
    ];
    if header != want {
        return Err(err(format!("the header must be {}", want.join(","))));
    }
    lines
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, line)| {
            let cells: Vec<&str> = line.splitn(12, ',').collect();
            let num = |k: usize| {
                cells
                    .get(k)
                    .and_then(|c| c.trim().parse::<f64>().ok())
                    .ok_or_else(|| err(format!("row {}: `{}` is not a number", i + 2, want[k])))
            };
            let mut difficulty = [0.0; 8];
            for (k, d) in difficulty.iter_mut().enumerate() {
                *d = num(3 + k)?;
            }
            Ok(Paper {
                model: cells[0].trim().to_string(),
                site_model: cells
                    .get(1)
                    .map(|s| s.trim().to_string())
                    .unwrap_or_default(),
                overall: num(2)?,
                difficulty,
                source: cells
                    .get(11)
                    .map(|s| s.trim().to_string())
                    .unwrap_or_default(),
            })
        })
        .collect()
}

impl Paper {
    /// Successes per split derived from the difficulty SRs, and notes on rates that are no
    /// whole number of KnowU's tasks (the paper then used another denominator).
    fn successes(&self) -> ([u32; 3], Vec<String>) {
        let sr = [
            [self.difficulty[0], self.difficulty[1]],
            [self.difficulty[2], self.difficulty[4]],
            [self.difficulty[6], self.difficulty[7]],
        ];
        let names = [
            [DIFFICULTY[0], DIFFICULTY[1]],
            ["Pers easy", "Pers hard"],
            [DIFFICULTY[6], DIFFICULTY[7]],
        ];
        let mut out = [0u32; 3];
        let mut odd = Vec::new();
        for s in 0..3 {
            for d in 0..2 {
                let n = KNOWU_DIFFICULTY_TASKS[s][d];
                let exact = sr[s][d] * f64::from(n) / 100.0;
                let k = exact.round();
                if (exact - k).abs() > 0.06 {
                    odd.push(format!(
                        "{} {}% is not a whole number of its {n} tasks (the paper's denominator differs)",
                        names[s][d], sr[s][d]
                    ));
                }
                out[s] += k as u32;
            }
        }
        (out, odd)
    }

    fn row(&self) -> Row {
        let (succ, odd) = self.successes();
        let rate = |s: usize| Some(100.0 * f64::from(succ[s]) / f64::from(KNOWU_TASKS[s]));
        let mut notes = vec![
            "General / Personalized / Proactive derived from the difficulty columns over 18 + 24, 43 + 43, 32 + 32 tasks".to_string(),
        ];
        notes.extend(odd);
        Row {
            model: self.model.clone(),
            approach: self.source.clone(),
            rates: [Some(self.overall), rate(0), rate(1), rate(2)],
            difficulty: self.difficulty.map(Some),
            tasks: KNOWU_TASKS.map(Some),
            ranked: true,
            source: "KnowU-Bench paper".into(),
            note: notes.join("; "),
        }
    }
}

#[derive(Deserialize)]
struct Entry {
    model: String,
    #[serde(default)]
    date: Option<String>,
    #[serde(default)]
    organization: Option<String>,
    #[serde(default)]
    model_type: Option<String>,
    #[serde(default)]
    max_steps: Option<u64>,
    #[serde(default)]
    runs: Option<u64>,
    overall: f64,
    general: f64,
    personalized: f64,
    proactive: f64,
    #[serde(default)]
    general_tasks: Option<u32>,
    #[serde(default)]
    personalized_tasks: Option<u32>,
    #[serde(default)]
    proactive_tasks: Option<u32>,
    #[serde(default)]
    general_successes: Option<u32>,
    #[serde(default)]
    personalized_successes: Option<u32>,
    #[serde(default)]
    proactive_successes: Option<u32>,
}

/// The site's entries of leaderboard.json.
fn read_site(path: &Path) -> Result<Vec<Entry>, KnowuError> {
    let path = &crate::knowu::data::locate(path);
    let bytes = std::fs::read(path).map_err(|e| KnowuError::data(path, e))?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| KnowuError::json(path, &e))?;
    let results = match value.get("results") {
        Some(Value::Array(items)) => items,
        other => {
            let found = other.cloned().unwrap_or(Value::Null);
            return Err(KnowuError::shape(
                path,
                "results",
                "an array of entries",
                &found,
            ));
        }
    };
    results
        .iter()
        .enumerate()
        .map(|(i, item)| {
            serde_json::from_value(item.clone()).map_err(|e| KnowuError::Content {
                path: path.to_path_buf(),
                message: format!("results[{i}]: {e}; each entry needs model, overall, general, personalized, proactive"),
            })
        })
        .collect()
}

/// The published rows: the paper's, then the site's where they differ (with a note).
pub fn published(paper: &Path, label: &str, site: Option<&Path>) -> Result<Vec<Row>, KnowuError> {
    let paper = read_paper(paper, label)?;
    let mut rows: Vec<Row> = paper.iter().map(Paper::row).collect();
    let Some(site) = site else {
        return Ok(rows);
    };
    let entries = read_site(site)?;
    for (p, row) in paper.iter().zip(rows.iter_mut()) {
        if !entries
            .iter()
            .any(|e| e.model == p.site_model || e.model == p.model)
        {
            row.note.push_str("; not on the KnowU site's leaderboard");
        }
    }
    let mut extra = Vec::new();
    for e in entries {
        let found = paper
            .iter()
            .position(|p| e.model == p.site_model || e.model == p.model);
        let differences = match found {
            Some(i) => differences(&paper[i], &e),
            None => vec!["not in the paper's Table 2".into()],
        };
        if differences.is_empty() {
            if let Some(i) = found {
                rows[i]
                    .note
                    .push_str("; the KnowU site's leaderboard has the same numbers");
            }
            continue;
        }
        extra.push(site_row(e, &differences));
    }
    rows.extend(extra);
    Ok(rows)
}

/// How the site's entry differs from the paper's row: the name, Overall, and the successes per
/// split against those the paper's difficulty columns give.
fn differences(p: &Paper, e: &Entry) -> Vec<String> {
    let mut out = Vec::new();
    if e.model != p.model {
        out.push(format!("named `{}` (the paper: `{}`)", e.model, p.model));
    }
    if (e.overall - p.overall).abs() > 0.05 {
        out.push(format!("Overall {} (the paper: {})", e.overall, p.overall));
    }
    let (derived, _) = p.successes();
    let site = [
        e.general_successes,
        e.personalized_successes,
        e.proactive_successes,
    ];
    let rates = [e.general, e.personalized, e.proactive];
    for s in 0..3 {
        let n = KNOWU_TASKS[s];
        let differs = match site[s] {
            Some(k) => k != derived[s],
            None => (rates[s] - 100.0 * f64::from(derived[s]) / f64::from(n)).abs() > 0.05,
        };
        if differs {
            out.push(format!(
                "{} {}{} (the paper's difficulty columns give {}/{n} = {:.1})",
                SPLITS[s],
                rates[s],
                site[s].map(|k| format!(" = {k}/{n}")).unwrap_or_default(),
                derived[s],
                100.0 * f64::from(derived[s]) / f64::from(n)
            ));
        }
    }
    out
}

fn site_row(e: Entry, differences: &[String]) -> Row {
    let model = match &e.date {
        Some(d) => format!("{} ({d})", e.model),
        None => e.model.clone(),
    };
    let mut details: Vec<String> = vec!["KnowU site (leaderboard.json)".into()];
    details.extend(e.model_type.clone());
    details.extend(e.organization.clone());
    details.extend(e.max_steps.map(|m| format!("max {m} steps")));
    details.extend(e.runs.map(|r| format!("{r} run(s)")));
    Row {
        model,
        approach: details.join(", "),
        rates: [
            Some(e.overall),
            Some(e.general),
            Some(e.personalized),
            Some(e.proactive),
        ],
        difficulty: [None; 8],
        tasks: [e.general_tasks, e.personalized_tasks, e.proactive_tasks],
        ranked: false,
        source: "KnowU-Bench site".into(),
        note: format!(
            "differs from the paper's Table 2: {}",
            differences.join("; ")
        ),
    }
}

/// Our runs from `knowu_metrics`: Overall from `overall.overall_SR`, the splits and difficulty
/// columns from `splits`; coverage = episodes with a result per split.
pub fn our_rows(
    overall: &DataFrame,
    splits: &DataFrame,
    params: &LeaderboardParams,
) -> Result<Vec<Row>, KnowuError> {
    if overall.column(O::scope).is_ok() {
        let scopes = RunScope::from_frame(overall).map_err(KnowuError::rows)?;
        if let Some(other) = scopes
            .iter()
            .map(|r| &r.scope)
            .find(|s| s.as_str() != "knowu")
        {
            return Err(KnowuError::table(
                OVERALL.name,
                format!("comes from a knowu_metrics stage with `classes: {other}`; the leaderboard compares KnowU-Bench's own classes only, so feed it a knowu_metrics stage with `classes: knowu` (the default)"),
            ));
        }
    }
    let runs = RankedRun::from_frame(overall).map_err(KnowuError::rows)?;
    let split_rows = SplitRows::read(splits)?;
    Ok(runs
        .into_iter()
        .map(|run| {
            let RankedRun {
                variant,
                agent,
                overall_SR: sr,
            } = run;
            let get =
                |split: &str, difficulty: &str| split_rows.get(&variant, &agent, split, difficulty);
            let rate = |s: &str, d: &str| get(s, d).and_then(|r| percent(r.sr));
            let score = |s: &str, d: &str| get(s, d).and_then(|r| r.score);
            let tasks = SPLITS.map(|s| Some(get(s, "all").map_or(0, |r| r.with_result)));
            let overall_rate = percent(sr);
            let full = tasks
                .iter()
                .zip(KNOWU_TASKS)
                .all(|(t, n)| t.unwrap_or(0) >= n);
            let note = our_note(&agent, overall_rate.is_some(), full, &tasks);
            Row {
                model: match &params.date {
                    Some(d) => format!("{agent} ({d})"),
                    None => agent.clone(),
                },
                approach: params
                    .approach
                    .clone()
                    .unwrap_or_else(|| format!("prefflow run `{variant}`")),
                rates: [
                    overall_rate,
                    rate("general", "all"),
                    rate("personalized", "all"),
                    rate("proactive", "all"),
                ],
                difficulty: [
                    rate("general", "easy"),
                    rate("general", "hard"),
                    rate("personalized", "easy"),
                    score("personalized", "easy"),
                    rate("personalized", "hard"),
                    score("personalized", "hard"),
                    rate("proactive", "easy"),
                    rate("proactive", "hard"),
                ],
                tasks,
                ranked: full && overall_rate.is_some(),
                source: "prefflow".into(),
                note,
            }
        })
        .collect())
}

/// Why one of our rows is (not) ranked; warns for a run without scores or a partial run.
fn our_note(agent: &str, scored: bool, full: bool, tasks: &[Option<u32>; 3]) -> String {
    let covered = format!(
        "{}/42 general, {}/86 personalized, {}/64 proactive tasks with a result",
        tasks[0].unwrap_or(0),
        tasks[1].unwrap_or(0),
        tasks[2].unwrap_or(0)
    );
    if !scored {
        tracing::warn!(
            "knowu leaderboard: run `{agent}` has no scored episode ({covered}); listed unranked"
        );
        return format!("no scored episode ({covered}); not ranked");
    }
    if !full {
        tracing::warn!("knowu leaderboard: run `{agent}` is partial ({covered}); listed unranked, apart from full runs");
        return format!("partial run: {covered}; not ranked among full runs");
    }
    format!("full run: {covered}")
}

fn percent(rate: Option<f64>) -> Option<f64> {
    rate.map(|r| r * 100.0)
}

/// One `splits` row's numbers.
struct SplitRow {
    key: [String; 4],
    sr: Option<f64>,
    score: Option<f64>,
    with_result: u32,
}

/// The `splits` rows.
struct SplitRows(Vec<SplitRow>);

impl SplitRows {
    fn read(splits: &DataFrame) -> Result<Self, KnowuError> {
        let rows = LeaderboardSplit::from_frame(splits)
            .map_err(KnowuError::rows)?
            .into_iter()
            .map(|r| SplitRow {
                with_result: r.episodes.saturating_sub(r.no_result_episodes),
                sr: r.SR,
                score: r.AvgScore,
                key: [r.variant, r.agent, r.split, r.difficulty],
            })
            .collect();
        Ok(Self(rows))
    }

    fn get(&self, variant: &str, agent: &str, split: &str, difficulty: &str) -> Option<&SplitRow> {
        self.0
            .iter()
            .find(|r| r.key == [variant, agent, split, difficulty])
    }
}

/// Ranked rows sorted by Overall (highest first) with 1-based ranks, then the unranked ones
/// (rank `None`) by source and Overall.
pub fn rank(rows: Vec<Row>) -> Vec<(Option<u32>, Row)> {
    let key = |r: &Row| r.rates[0].unwrap_or(f64::NEG_INFINITY);
    let (mut ranked, mut rest): (Vec<Row>, Vec<Row>) = rows.into_iter().partition(|r| r.ranked);
    ranked.sort_by(|a, b| key(b).total_cmp(&key(a)));
    rest.sort_by(|a, b| a.source.cmp(&b.source).then(key(b).total_cmp(&key(a))));
    ranked
        .into_iter()
        .zip(1u32..)
        .map(|(r, i)| (Some(i), r))
        .chain(rest.into_iter().map(|r| (None, r)))
        .collect()
}

pub(crate) fn leaderboard_frame(rows: Vec<(Option<u32>, Row)>) -> PolarsResult<DataFrame> {
    let rate = |k: usize| rows.iter().map(|(_, r)| r.rates[k]).collect::<Vec<_>>();
    let diff = |k: usize| {
        rows.iter()
            .map(|(_, r)| r.difficulty[k])
            .collect::<Vec<_>>()
    };
    let tasks = |k: usize| rows.iter().map(|(_, r)| r.tasks[k]).collect::<Vec<_>>();
    let mut columns = vec![
        Column::new(
            LAYOUT[0].into(),
            rows.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
        ),
        Column::new(
            LAYOUT[1].into(),
            rows.iter()
                .map(|(_, r)| r.model.clone())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            LAYOUT[2].into(),
            rows.iter()
                .map(|(_, r)| r.approach.clone())
                .collect::<Vec<_>>(),
        ),
    ];
    for k in 0..4 {
        columns.push(Column::new(LAYOUT[3 + k].into(), rate(k)));
    }
    for (k, name) in DIFFICULTY.iter().enumerate() {
        columns.push(Column::new((*name).into(), diff(k)));
    }
    for (k, s) in SPLITS.iter().enumerate() {
        columns.push(Column::new(format!("{s}_tasks").into(), tasks(k)));
    }
    columns.push(Column::new(
        RANKED.into(),
        rows.iter().map(|(_, r)| r.ranked).collect::<Vec<_>>(),
    ));
    columns.push(Column::new(
        SOURCE.into(),
        rows.iter()
            .map(|(_, r)| r.source.clone())
            .collect::<Vec<_>>(),
    ));
    columns.push(Column::new(
        NOTE.into(),
        rows.iter().map(|(_, r)| r.note.clone()).collect::<Vec<_>>(),
    ));
    DataFrame::new_infer_height(columns)
}

/// The leaderboard as a Markdown table: KnowU's columns, the paper's difficulty columns
/// (personalized as `SR / Score`), the coverage and the note; rates with one decimal, `-` when
/// unknown, unranked rows with rank `-`.
pub fn render_markdown(board: &DataFrame) -> PolarsResult<String> {
    let head: Vec<&str> = LAYOUT
        .iter()
        .chain(&DIFFICULTY[..2])
        .copied()
        .chain(["Pers easy SR / Score", "Pers hard SR / Score"])
        .chain(DIFFICULTY[6..].iter().copied())
        .chain(["Tasks (gen / pers / pro)", "Note"])
        .collect();
    let mut out = format!(
        "| {} |\n|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n",
        head.join(" | ")
    );
    let rank = board.column(LAYOUT[0])?.u32()?.clone();
    let text =
        |name: &str| -> PolarsResult<StringChunked> { Ok(board.column(name)?.str()?.clone()) };
    let (model, approach, note) = (text(LAYOUT[1])?, text(LAYOUT[2])?, text(NOTE)?);
    let f = |name: &str| -> PolarsResult<Float64Chunked> { Ok(board.column(name)?.f64()?.clone()) };
    let u = |name: &str| -> PolarsResult<UInt32Chunked> { Ok(board.column(name)?.u32()?.clone()) };
    let pct = |c: &Float64Chunked, i: usize| c.get(i).map_or("-".into(), |v| format!("{v:.1}"));
    let score = |c: &Float64Chunked, i: usize| c.get(i).map_or("-".into(), |v| format!("{v:.2}"));
    let rates: Vec<Float64Chunked> = LAYOUT[3..]
        .iter()
        .map(|n| f(n))
        .collect::<PolarsResult<_>>()?;
    let d: Vec<Float64Chunked> = DIFFICULTY
        .iter()
        .map(|n| f(n))
        .collect::<PolarsResult<_>>()?;
    let tasks: Vec<UInt32Chunked> = SPLITS
        .iter()
        .map(|s| u(&format!("{s}_tasks")))
        .collect::<PolarsResult<_>>()?;
    for i in 0..board.height() {
        let mut cells = vec![
            rank.get(i).map_or("-".into(), |r| r.to_string()),
            model.get(i).unwrap_or("").to_string(),
            approach.get(i).unwrap_or("").to_string(),
        ];
        cells.extend(rates.iter().map(|r| pct(r, i)));
        cells.push(pct(&d[0], i));
        cells.push(pct(&d[1], i));
        cells.push(format!("{} / {}", pct(&d[2], i), score(&d[3], i)));
        cells.push(format!("{} / {}", pct(&d[4], i), score(&d[5], i)));
        cells.push(pct(&d[6], i));
        cells.push(pct(&d[7], i));
        let t: Vec<String> = tasks
            .iter()
            .map(|c| c.get(i).map_or("-".into(), |v| v.to_string()))
            .collect();
        cells.push(t.join(" / "));
        cells.push(note.get(i).unwrap_or("").to_string());
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    Ok(out)
}
