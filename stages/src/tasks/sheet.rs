//! Review sheets (iPrefBench D.1): one CSV row per task, with read-only columns that show the
//! task and decision columns a reviewer fills. Parsing checks every cell against the tasks under
//! review and reports the first problem as `file: row N, column C: …` (row 1 is the header), so a
//! bad sheet is fixed where it is, and nothing of it is applied.

use std::collections::HashMap;
use std::path::Path;

use polars::prelude::*;
use serde::Deserialize;
use serde_json::Value;

use super::error::TaskError;
use super::model::{Source, TaskBundle};
use crate::tables::tasks::SheetCells as C;
use crate::world::types::display;

/// Which review round a sheet belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Round {
    /// Reviewers refine candidates: accept or reject, rewrite, fix sources and values.
    Refinement,
    /// Validators confirm or flag refined tasks (and may still correct them).
    Validation,
}

impl Round {
    /// The table spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Round::Refinement => "refinement",
            Round::Validation => "validation",
        }
    }

    /// Allowed `decision` values: keep first, drop second.
    pub fn decisions(self) -> [&'static str; 2] {
        match self {
            Round::Refinement => ["accept", "reject"],
            Round::Validation => ["confirm", "flag"],
        }
    }
}

/// Columns that show the task; only `instruction` is checked on import (edits go to
/// `new_instruction`).
pub const INFO_COLUMNS: [&str; 8] = [
    C::task_id,
    C::template,
    C::apps,
    C::perturbation,
    C::cross_app,
    C::instruction,
    C::slots,
    C::criteria,
];

/// Columns a reviewer fills.
pub const DECISION_COLUMNS: [&str; 6] = [
    C::decision,
    C::new_instruction,
    C::set_source,
    C::set_value,
    C::reviewer,
    C::note,
];

/// One parsed sheet row.
#[derive(Debug, Clone, PartialEq)]
pub struct SheetRow {
    /// The sheet, as named in the pipeline.
    pub file: String,
    /// Spreadsheet row (2 = first task).
    pub row: usize,
    /// The task.
    pub task_id: String,
    /// Whether the task is kept.
    pub keep: bool,
    /// The decision as written.
    pub decision: String,
    /// A rewritten instruction.
    pub new_instruction: Option<String>,
    /// New resolution sources by slot.
    pub set_source: Vec<(String, Source)>,
    /// Corrected values by slot.
    pub set_value: Vec<(String, Value)>,
    /// Who decided.
    pub reviewer: String,
    /// Why.
    pub note: String,
}

/// The sheet for `bundles`: info columns filled, decision columns empty.
pub fn export_frame(bundles: &[TaskBundle]) -> Result<DataFrame, TaskError> {
    let rows: Vec<C> = bundles
        .iter()
        .map(|b| C {
            task_id: b.task.task_id.clone(),
            template: b.task.template.clone(),
            apps: b.task.apps.join(" "),
            perturbation: b.task.perturbation.as_str().into(),
            cross_app: b.task.cross_app.to_string(),
            instruction: b.task.instruction.clone(),
            slots: slots_cell(b),
            criteria: criteria_cell(b),
            decision: String::new(),
            new_instruction: String::new(),
            set_source: String::new(),
            set_value: String::new(),
            reviewer: String::new(),
            note: String::new(),
        })
        .collect();
    C::to_frame(&rows).map_err(TaskError::from)
}

fn slots_cell(b: &TaskBundle) -> String {
    b.slots
        .iter()
        .map(|s| {
            let extra = match (s.source, &s.app_default) {
                (Source::Inferable, _) => format!("{} events", s.evidence.len()),
                (Source::AskOnly, Some(d)) => format!("app default {:?}", display(d)),
                (Source::AskOnly, None) => "no app default".into(),
            };
            format!(
                "{} = {} [{}, {extra}]",
                s.slot_id,
                display(&s.value),
                s.source.as_str()
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn criteria_cell(b: &TaskBundle) -> String {
    b.criteria
        .iter()
        .map(|c| {
            let tag = match &c.slot_id {
                Some(s) => format!("{} → {s}", c.kind.as_str()),
                None => c.kind.as_str().to_string(),
            };
            format!("{} [{tag}]: {}", c.criterion_id, c.rubric)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Writes a sheet as CSV (atomically: a temporary file renamed into place).
pub fn write_csv(df: &DataFrame, path: &Path, shown: &str) -> Result<(), TaskError> {
    let err = |message: String| TaskError::File {
        file: shown.to_string(),
        message,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| err(e.to_string()))?;
    }
    let tmp = path.with_extension("csv.tmp");
    let file = std::fs::File::create(&tmp).map_err(|e| err(e.to_string()))?;
    let mut df = df.clone();
    CsvWriter::new(file)
        .finish(&mut df)
        .map_err(|e| err(e.to_string()))?;
    std::fs::rename(&tmp, path).map_err(|e| err(e.to_string()))
}

/// Reads a sheet and checks every row against the tasks under review.
pub fn read_sheet(
    path: &Path,
    shown: &str,
    round: Round,
    tasks: &HashMap<&str, &TaskBundle>,
) -> Result<Vec<SheetRow>, TaskError> {
    let df = read_strings(path, shown)?;
    let columns = check_header(&df, shown)?;
    let cell = |name: &str, i: usize| -> String {
        columns
            .get(name)
            .and_then(|c| c.get(i))
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    (0..df.height())
        .map(|i| parse_row(shown, i + 2, round, tasks, &|name| cell(name, i)))
        .collect()
}

fn read_strings(path: &Path, shown: &str) -> Result<DataFrame, TaskError> {
    let text = prefflow_engine::input::read_text(path, shown).map_err(|e| {
        let at = e.place();
        match e {
            prefflow_engine::input::TextError::Encoding { what, .. } => TaskError::Sheet {
                file: shown.to_string(),
                row: at.line as usize,
                column: String::new(),
                message: format!("{what}; re-save the sheet as UTF-8 CSV"),
            },
            io => TaskError::File {
                file: shown.to_string(),
                message: io.to_string(),
            },
        }
    })?;
    CsvReadOptions::default()
        .with_has_header(true)
        .with_infer_schema_length(Some(0))
        .into_reader_with_file_handle(std::io::Cursor::new(text.as_bytes()))
        .finish()
        .map_err(|e| match prefflow_engine::input::csv_problem(&text) {
            Some(p) => TaskError::Sheet {
                file: shown.to_string(),
                row: p.row as usize,
                column: p.column.unwrap_or_default(),
                message: format!("(line {}) {}", p.line, p.message),
            },
            None => TaskError::File {
                file: shown.to_string(),
                message: format!(
                    "not a readable CSV sheet: {e}; export a fresh sheet with export_review"
                ),
            },
        })
}

type Columns<'a> = HashMap<String, &'a StringChunked>;

fn check_header<'a>(df: &'a DataFrame, shown: &str) -> Result<Columns<'a>, TaskError> {
    let header_err = |column: &str, message: String| TaskError::Sheet {
        file: shown.to_string(),
        row: 1,
        column: column.to_string(),
        message,
    };
    let mut out = HashMap::new();
    for c in df.columns() {
        let name = c.name().trim_start_matches('\u{feff}').trim().to_string();
        let known =
            INFO_COLUMNS.contains(&name.as_str()) || DECISION_COLUMNS.contains(&name.as_str());
        if !known {
            return Err(header_err(
                &name,
                format!(
                    "unknown column; a sheet has {} (decision columns: {})",
                    INFO_COLUMNS.join(", "),
                    DECISION_COLUMNS.join(", ")
                ),
            ));
        }
        let values = c.str().map_err(|e| header_err(&name, e.to_string()))?;
        out.insert(name, values);
    }
    for required in [C::task_id, C::decision, C::reviewer] {
        if !out.contains_key(required) {
            return Err(header_err(
                required,
                "required column is missing; export a fresh sheet".into(),
            ));
        }
    }
    Ok(out)
}

fn parse_row(
    file: &str,
    row: usize,
    round: Round,
    tasks: &HashMap<&str, &TaskBundle>,
    cell: &dyn Fn(&str) -> String,
) -> Result<SheetRow, TaskError> {
    let err = |column: &str, message: String| TaskError::Sheet {
        file: file.to_string(),
        row,
        column: column.to_string(),
        message,
    };
    let task_id = cell(C::task_id);
    let bundle = *tasks.get(task_id.as_str()).ok_or_else(|| {
        let round = round.as_str();
        err(
            C::task_id,
            format!("unknown task `{task_id}`: it is not among the tasks under {round} review"),
        )
    })?;
    let (decision, keep) = decision(round, &cell(C::decision)).map_err(|m| err(C::decision, m))?;
    let reviewer = cell(C::reviewer);
    if reviewer.is_empty() {
        return Err(err(
            C::reviewer,
            "empty; every decision needs the reviewer's id".into(),
        ));
    }
    let shown = cell(C::instruction);
    if !shown.is_empty() && shown != bundle.task.instruction.trim() {
        return Err(err(
            C::instruction,
            "differs from the task's instruction: this column only shows the task, so write a rewrite in `new_instruction` (or re-export the sheet if the task changed since)".into(),
        ));
    }
    Ok(SheetRow {
        file: file.to_string(),
        row,
        keep,
        decision,
        new_instruction: Some(cell(C::new_instruction)).filter(|s| !s.is_empty()),
        set_source: sources(bundle, &cell(C::set_source)).map_err(|m| err(C::set_source, m))?,
        set_value: values(bundle, &cell(C::set_value)).map_err(|m| err(C::set_value, m))?,
        reviewer,
        note: cell(C::note),
        task_id,
    })
}

/// The decision as written and whether it keeps the task.
fn decision(round: Round, text: &str) -> Result<(String, bool), String> {
    let [keep, drop] = round.decisions();
    if text == keep || text == drop {
        Ok((text.to_string(), text == keep))
    } else {
        Err(format!(
            "`{text}` is not a decision; write `{keep}` or `{drop}`"
        ))
    }
}

/// Parses `slot=inferable; slot2=ask_only`.
fn sources(bundle: &TaskBundle, text: &str) -> Result<Vec<(String, Source)>, String> {
    assignments(text)?
        .into_iter()
        .map(|(slot, v)| {
            check_slot(bundle, &slot)?;
            Source::parse(&v).map(|s| (slot.clone(), s)).ok_or_else(|| {
                format!("`{v}` is not a source for `{slot}`; write inferable or ask_only")
            })
        })
        .collect()
}

/// Parses `slot=value; …`, each value typed like the slot's current one.
fn values(bundle: &TaskBundle, text: &str) -> Result<Vec<(String, Value)>, String> {
    assignments(text)?
        .into_iter()
        .map(|(slot, v)| {
            let old = check_slot(bundle, &slot)?;
            typed_like(old, &v)
                .map(|value| (slot.clone(), value))
                .map_err(|m| format!("`{slot}`: {m}"))
        })
        .collect()
}

/// Splits `a=x; b=y` into pairs; an empty cell gives none.
fn assignments(text: &str) -> Result<Vec<(String, String)>, String> {
    text.split(';')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            p.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .filter(|(k, _)| !k.is_empty())
                .ok_or_else(|| format!("`{p}` is not `slot=value`; separate several with `;`"))
        })
        .collect()
}

fn check_slot<'b>(bundle: &'b TaskBundle, slot: &str) -> Result<&'b Value, String> {
    bundle.slot(slot).map(|s| &s.value).ok_or_else(|| {
        let ids: Vec<&str> = bundle.slots.iter().map(|s| s.slot_id.as_str()).collect();
        format!(
            "task `{}` has no slot `{slot}` (slots: {})",
            bundle.task.task_id,
            ids.join(", ")
        )
    })
}

/// Parses `text` as a value of the same JSON type as `old`.
fn typed_like(old: &Value, text: &str) -> Result<Value, String> {
    match old {
        Value::Number(_) => text
            .parse::<i64>()
            .map(Value::from)
            .or_else(|_| text.parse::<f64>().map(Value::from))
            .map_err(|_| format!("`{text}` is not a number, and the value is one")),
        Value::Bool(_) => match text {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(format!("`{text}` is not true or false")),
        },
        _ if text.is_empty() => Err("the new value is empty".into()),
        _ => Ok(Value::String(text.to_string())),
    }
}
