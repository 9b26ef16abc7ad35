//! `knowu_leaderboard`: KnowU-Bench's published leaderboard with our runs ranked among them, in
//! the benchmark's column layout (Rank, Model & Date, Approach & Details, Overall, General,
//! Personalized, Proactive — success rates in percent), plus a Markdown rendering.

use std::path::Path;

use polars::prelude::*;
use serde::Deserialize;
use serde_json::Value;

use crate::knowu::columns;
use crate::knowu::error::KnowuError;

/// KnowU's column layout.
pub const LAYOUT: [&str; 7] = [
    "Rank",
    "Model & Date",
    "Approach & Details",
    "Overall",
    "General",
    "Personalized",
    "Proactive",
];

/// Parameters of `knowu_leaderboard`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeaderboardParams {
    /// KnowU-Bench's leaderboard.json.
    pub path: String,
    /// Date shown next to our runs' names (none when absent).
    #[serde(default)]
    pub date: Option<String>,
    /// "Approach & Details" of our runs; defaults to naming the run's variant.
    #[serde(default)]
    pub approach: Option<String>,
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
    /// `KnowU-Bench` for published rows, `prefflow` for ours.
    pub source: &'static str,
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
}

/// The published rows of leaderboard.json.
pub fn read_published(path: &Path) -> Result<Vec<Row>, KnowuError> {
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
            let entry: Entry = serde_json::from_value(item.clone()).map_err(|e| KnowuError::Content {
                path: path.to_path_buf(),
                message: format!("results[{i}]: {e}; each entry needs model, overall, general, personalized, proactive"),
            })?;
            Ok(published_row(entry))
        })
        .collect()
}

fn published_row(e: Entry) -> Row {
    let model = match &e.date {
        Some(d) => format!("{} ({d})", e.model),
        None => e.model.clone(),
    };
    let mut details: Vec<String> = Vec::new();
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
        source: "KnowU-Bench",
    }
}

/// Our runs from `knowu_metrics`: Overall from `overall.overall_SR`, the splits from
/// `splits.SR` where `difficulty` is `all`.
pub fn our_rows(
    overall: &DataFrame,
    splits: &DataFrame,
    params: &LeaderboardParams,
) -> Result<Vec<Row>, KnowuError> {
    if overall.column("scope").is_ok() {
        let scopes = columns::strings(overall, "overall", "scope")?;
        if let Some(other) = scopes.iter().flatten().find(|s| s.as_str() != "knowu") {
            return Err(KnowuError::table(
                "overall",
                format!("comes from a knowu_metrics stage with `classes: {other}`; the leaderboard compares KnowU-Bench's own classes only, so feed it a knowu_metrics stage with `classes: knowu` (the default)"),
            ));
        }
    }
    let variants = columns::strings(overall, "overall", "variant")?;
    let agents = columns::strings(overall, "overall", "agent")?;
    let sr = columns::f64s(overall, "overall", "overall_SR")?;
    let split_sr = SplitRates::read(splits)?;
    Ok((0..overall.height())
        .map(|i| {
            let (variant, agent) = (
                variants[i].clone().unwrap_or_default(),
                agents[i].clone().unwrap_or_default(),
            );
            let rate = |split| split_sr.get(&variant, &agent, split);
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
                    percent(sr[i]),
                    rate("general"),
                    rate("personalized"),
                    rate("proactive"),
                ],
                source: "prefflow",
            }
        })
        .collect())
}

fn percent(rate: Option<f64>) -> Option<f64> {
    rate.map(|r| r * 100.0)
}

/// `splits` rows with difficulty `all`.
struct SplitRates(Vec<(String, String, String, Option<f64>)>);

impl SplitRates {
    fn read(splits: &DataFrame) -> Result<Self, KnowuError> {
        let t = "splits";
        let [v, a, s, d] =
            ["variant", "agent", "split", "difficulty"].map(|c| columns::strings(splits, t, c));
        let (v, a, s, d) = (v?, a?, s?, d?);
        let sr = columns::f64s(splits, t, "SR")?;
        let rows = (0..splits.height())
            .filter(|&i| d[i].as_deref() == Some("all"))
            .map(|i| {
                let text = |x: &Option<String>| x.clone().unwrap_or_default();
                (text(&v[i]), text(&a[i]), text(&s[i]), sr[i])
            })
            .collect();
        Ok(Self(rows))
    }

    fn get(&self, variant: &str, agent: &str, split: &str) -> Option<f64> {
        self.0
            .iter()
            .find(|r| r.0 == variant && r.1 == agent && r.2 == split)
            .and_then(|r| percent(r.3))
    }
}

/// Rows sorted by Overall (highest first, unknown last) with 1-based ranks.
pub fn rank(mut rows: Vec<Row>) -> Vec<(u32, Row)> {
    rows.sort_by(|a, b| {
        let key = |r: &Row| r.rates[0].unwrap_or(f64::NEG_INFINITY);
        key(b).total_cmp(&key(a))
    });
    rows.into_iter().zip(1u32..).map(|(r, i)| (i, r)).collect()
}

pub(crate) fn leaderboard_frame(rows: Vec<(u32, Row)>) -> PolarsResult<DataFrame> {
    let rate = |k: usize| rows.iter().map(|(_, r)| r.rates[k]).collect::<Vec<_>>();
    df!(
        LAYOUT[0] => rows.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
        LAYOUT[1] => rows.iter().map(|(_, r)| r.model.clone()).collect::<Vec<_>>(),
        LAYOUT[2] => rows.iter().map(|(_, r)| r.approach.clone()).collect::<Vec<_>>(),
        LAYOUT[3] => rate(0),
        LAYOUT[4] => rate(1),
        LAYOUT[5] => rate(2),
        LAYOUT[6] => rate(3),
        "source" => rows.iter().map(|(_, r)| r.source).collect::<Vec<_>>(),
    )
}

/// The leaderboard as a Markdown table, rates with one decimal (`-` when unknown).
pub fn render_markdown(board: &DataFrame) -> PolarsResult<String> {
    let mut out = format!(
        "| {} |\n|---:|---|---|---:|---:|---:|---:|\n",
        LAYOUT.join(" | ")
    );
    let rank = board.column(LAYOUT[0])?.u32()?.clone();
    let text =
        |name: &str| -> PolarsResult<StringChunked> { Ok(board.column(name)?.str()?.clone()) };
    let (model, approach) = (text(LAYOUT[1])?, text(LAYOUT[2])?);
    let rates: Vec<Float64Chunked> = LAYOUT[3..]
        .iter()
        .map(|n| Ok(board.column(n)?.f64()?.clone()))
        .collect::<PolarsResult<_>>()?;
    for i in 0..board.height() {
        let cells: Vec<String> = rates
            .iter()
            .map(|r| r.get(i).map_or("-".into(), |v| format!("{v:.1}")))
            .collect();
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            rank.get(i).unwrap_or(0),
            model.get(i).unwrap_or(""),
            approach.get(i).unwrap_or(""),
            cells.join(" | ")
        ));
    }
    Ok(out)
}
