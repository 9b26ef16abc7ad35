//! KnowU's hybrid weight per task class, from one table (`datasets/knowu/scoring.csv`): the
//! score is S = λ·S_rule + (1−λ)·S_judge (KnowU-Bench §3.5), and λ differs per class in KnowU's
//! task definitions (0.4 + 0.6·judge for most personalized classes, 0.5 for the lunch orders,
//! pure judge for the commute plans, pure rule for general and routine classes). Each row cites
//! the KnowU definition (file and class) it comes from; prefflow-only classes say they are
//! prefflow's own. Generation takes λ from here for every task, so no template can drift from
//! KnowU's value.

use std::collections::BTreeMap;
use std::path::Path;

use polars::prelude::*;

use super::template::Split;
use crate::knowu::error::KnowuError;

/// The columns the table must have.
const COLUMNS: [&str; 7] = [
    "class",
    "split",
    "lambda",
    "judge_weight",
    "rule_part",
    "judge_part",
    "source",
];

/// How one class is scored.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassScoring {
    /// The class's split.
    pub split: Split,
    /// Weight of the rule part.
    pub lambda: f64,
    /// What the rule part checks.
    pub rule_part: String,
    /// What the judge part weighs (KnowU's rubric split).
    pub judge_part: String,
    /// The KnowU definition it is taken from, or why it is prefflow's own.
    pub source: String,
}

/// The table, by class name.
#[derive(Debug, Clone, Default)]
pub struct ScoringTable {
    classes: BTreeMap<String, ClassScoring>,
}

impl ScoringTable {
    /// How `class` is scored, if the table has it.
    pub fn get(&self, class: &str) -> Option<&ClassScoring> {
        self.classes.get(class)
    }

    /// Every class and its scoring, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &ClassScoring)> {
        self.classes.iter()
    }

    /// λ of `class`, or an error naming the class and the table (`label`) and the fix.
    pub fn lambda(&self, class: &str, label: &str) -> Result<f64, String> {
        self.get(class).map(|c| c.lambda).ok_or_else(|| {
            format!(
                "{label}: no row for class `{class}`; add one with its λ and the KnowU definition it comes from (or `prefflow-only …` for a class of prefflow's own)"
            )
        })
    }
}

/// Reads the table at `path` (`label` names it in errors): every row's λ in [0, 1], its judge
/// weight 1 − λ, its split one of KnowU's, and its source a citation (`KnowU-Bench <file>
/// <Class>…`) or, for `Prefflow…` classes, `prefflow-only …`.
pub fn load(path: &Path, label: &str) -> Result<ScoringTable, KnowuError> {
    let err = |message: String| KnowuError::Content {
        path: label.into(),
        message,
    };
    let df = CsvReadOptions::default()
        .with_has_header(true)
        .with_infer_schema_length(Some(0))
        .try_into_reader_with_file_path(Some(path.to_path_buf()))
        .and_then(|r| r.finish())
        .map_err(|e| err(format!("not a readable CSV: {e}")))?;
    let mut cols = Vec::new();
    for name in COLUMNS {
        let c = df
            .column(name)
            .and_then(|c| c.str().cloned())
            .map_err(|_| {
                err(format!(
                    "missing column `{name}`; the header is {}",
                    COLUMNS.join(",")
                ))
            })?;
        cols.push(
            c.iter()
                .map(|v| v.unwrap_or("").trim().to_string())
                .collect::<Vec<_>>(),
        );
    }
    let mut table = ScoringTable::default();
    for row in 0..df.height() {
        let at = |message: String| {
            err(format!(
                "row {} (class `{}`): {message}",
                row + 2,
                cols[0][row]
            ))
        };
        let (class, scoring) = parse_row(&cols, row).map_err(at)?;
        if table.classes.insert(class.clone(), scoring).is_some() {
            return Err(err(format!("class `{class}` has two rows; keep one")));
        }
    }
    Ok(table)
}

fn parse_row(cols: &[Vec<String>], row: usize) -> Result<(String, ClassScoring), String> {
    let get = |i: usize| cols[i][row].as_str();
    let class = get(0).to_string();
    let split = Split::parse(get(1))
        .ok_or_else(|| format!("split {:?}; use general, personalized or proactive", get(1)))?;
    let number = |i: usize| {
        get(i)
            .parse::<f64>()
            .ok()
            .filter(|v| (0.0..=1.0).contains(v))
            .ok_or_else(|| {
                format!(
                    "`{}` is {:?}; write a number from 0 to 1",
                    COLUMNS[i],
                    get(i)
                )
            })
    };
    let (lambda, judge) = (number(2)?, number(3)?);
    if (lambda + judge - 1.0).abs() > 1e-9 {
        return Err(format!(
            "lambda {lambda} + judge_weight {judge} is not 1; the judge weight is 1 − λ"
        ));
    }
    let source = get(6).to_string();
    let own = class.starts_with(super::template::PREFFLOW_PREFIX);
    let cited = if own {
        source.starts_with("prefflow-only")
    } else {
        source.starts_with("KnowU-Bench ") && source.contains(&class)
    };
    if !cited {
        return Err(if own {
            "a prefflow-only class's source starts with `prefflow-only` and says why its λ".into()
        } else {
            format!("`source` must cite KnowU's definition: `KnowU-Bench <file> {class}…`")
        });
    }
    Ok((
        class,
        ClassScoring {
            split,
            lambda,
            rule_part: get(4).to_string(),
            judge_part: get(5).to_string(),
            source,
        },
    ))
}
