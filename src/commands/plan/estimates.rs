//! The end of `prefflow plan`: its estimates of model calls as an aligned table (one row per
//! instance, role and model, then the totals per model and role), their notes, and the
//! problems that would fail the run.

use prefflow_engine::estimate::{EstimateRow, Range};
use prefflow_engine::inspect::PlanLine;

/// What the plan's lines estimate: rows labelled by instance, notes (each once), problems.
#[derive(Default)]
struct Estimates<'a> {
    rows: Vec<(String, &'a EstimateRow)>,
    notes: Vec<String>,
    problems: Vec<&'a String>,
}

/// Prints `plan`'s estimates of model calls with their notes, and the problems that would fail
/// the run (on stderr). Returns how many problems there are.
pub(crate) fn print_estimates(lines: &[PlanLine]) -> usize {
    let estimates = collect(lines);
    if estimates.rows.is_empty() && estimates.notes.is_empty() {
        return 0;
    }
    println!("\nestimated model calls (before any run; ranges from a model that does each task as its reference does to one that uses every step):");
    print_aligned(&table(&estimates.rows));
    for n in &estimates.notes {
        println!("  note: {n}");
    }
    for p in &estimates.problems {
        eprintln!("error: {p}");
    }
    estimates.problems.len()
}

/// The estimates of every line in order; a line whose estimate failed becomes a note.
fn collect(lines: &[PlanLine]) -> Estimates<'_> {
    let mut out = Estimates::default();
    for line in lines {
        match &line.estimate {
            Some(Ok(e)) => {
                out.rows
                    .extend(e.rows.iter().map(|r| (line.label.clone(), r)));
                for n in &e.notes {
                    if !out.notes.contains(n) {
                        out.notes.push(n.clone());
                    }
                }
                out.problems.extend(&e.problems);
            }
            Some(Err(why)) => out
                .notes
                .push(format!("{}: no estimate: {why}", line.label)),
            None => {}
        }
    }
    out
}

/// The table's cells: a header, a row per estimate and, over several, the totals per model
/// and role (`(all stages)`), sorted by model and role.
fn table(rows: &[(String, &EstimateRow)]) -> Vec<Vec<String>> {
    let header: Vec<String> = [
        "stage",
        "role",
        "model",
        "work",
        "requests",
        "prompt tokens",
        "completion tokens",
        "cost",
        "recorded (free)",
    ]
    .map(String::from)
    .to_vec();
    let mut table = vec![header];
    table.extend(rows.iter().map(|(label, r)| cells(label, r)));
    if rows.len() > 1 {
        let mut totals = totals(rows);
        totals.sort_by(|a, b| (&a.model, &a.role).cmp(&(&b.model, &b.role)));
        table.extend(totals.iter().map(|t| cells("(all stages)", t)));
    }
    table
}

/// One estimate's cells.
fn cells(label: &str, r: &EstimateRow) -> Vec<String> {
    vec![
        label.to_string(),
        r.role.clone(),
        r.model.clone(),
        format!("{} {}", r.units, r.unit),
        range(r.requests, &count),
        range(r.prompt_tokens, &tokens),
        range(r.completion_tokens, &tokens),
        money(r.cost),
        r.recorded
            .map_or_else(|| "-".into(), |n| format!("{n} of {}", r.units)),
    ]
}

/// The rows summed per model and role over every stage, in order of first appearance.
fn totals(rows: &[(String, &EstimateRow)]) -> Vec<EstimateRow> {
    let mut totals: Vec<EstimateRow> = Vec::new();
    for (_, r) in rows {
        match totals
            .iter_mut()
            .find(|t| t.model == r.model && t.role == r.role)
        {
            Some(t) => add(t, r),
            None => totals.push((*r).clone()),
        }
    }
    totals
}

/// Adds `r`'s work, requests, tokens, cost and recorded episodes to `t` (a missing cost or
/// count leaves the other side's).
fn add(t: &mut EstimateRow, r: &EstimateRow) {
    t.units += r.units;
    t.requests = t.requests.plus(r.requests);
    t.prompt_tokens = t.prompt_tokens.plus(r.prompt_tokens);
    t.completion_tokens = t.completion_tokens.plus(r.completion_tokens);
    t.cost = match (t.cost, r.cost) {
        (Some(a), Some(b)) => Some(a.plus(b)),
        (a, b) => a.or(b),
    };
    t.recorded = match (t.recorded, r.recorded) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    };
}

/// Prints the cells in columns as wide as their widest cell, two spaces apart.
fn print_aligned(table: &[Vec<String>]) {
    let widths: Vec<usize> = (0..table[0].len())
        .map(|c| {
            table
                .iter()
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in table {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c}{}", " ".repeat(w - c.chars().count())))
            .collect();
        println!("  {}", cells.join("  ").trim_end());
    }
}

/// `low–high`, or one value when both ends print alike.
fn range(r: Range, f: &dyn Fn(f64) -> String) -> String {
    let (low, high) = (f(r.low), f(r.high));
    if low == high {
        low
    } else {
        format!("{low}–{high}")
    }
}

/// A cost range in dollars, or `no prices`.
fn money(r: Option<Range>) -> String {
    r.map_or_else(
        || "no prices".to_string(),
        |r| range(r, &|v| format!("${v:.2}")),
    )
}

/// `12,345`.
fn count(v: f64) -> String {
    let n = v.round() as u64;
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// `950`, `12.3k`, `4.56M`, `1.2G`.
fn tokens(v: f64) -> String {
    match v {
        v if v >= 1e9 => format!("{:.2}G", v / 1e9),
        v if v >= 1e6 => format!("{:.2}M", v / 1e6),
        v if v >= 1e4 => format!("{:.1}k", v / 1e3),
        v => count(v),
    }
}
