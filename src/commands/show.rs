//! `prefflow show`: a stage's tables from the latest successful run, the last run's errors
//! (`errors`), or what the runs' model calls cost (`runs`).

use clap::ValueEnum;
use prefflow_engine::inspect;
use prefflow_engine::store::Store;
use prefflow_engine::Error;

use super::session::Session;
use crate::format::{self, Format, Limits};

/// The arguments of `prefflow show`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// STAGE, STAGE.TABLE, STAGE.* (every table), `errors`, or `runs`.
    target: String,
    /// Pipeline name (default: the most recently run).
    #[arg(long, short)]
    pipeline: Option<String>,
    /// Variant name, for swept stages.
    #[arg(long)]
    variant: Option<String>,
    /// Rows to print; 0 for all (default: 20 in `table` and `markdown`, all in `csv`, `json`).
    #[arg(long)]
    head: Option<usize>,
    /// Output format; no format cuts a cell or drops a column.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Cut text cells of `table` and `markdown` to this many characters (default: never).
    #[arg(long)]
    width: Option<usize>,
    /// Print the Parquet file path instead of rows.
    #[arg(long)]
    path: bool,
}

impl Args {
    /// Rows and cell width to print: `--head` (0: all; default 20 for text formats) and
    /// `--width`.
    fn limits(&self) -> Limits {
        Limits {
            rows: match (self.head, self.format) {
                (Some(0), _) => None,
                (Some(n), _) => Some(n),
                (None, Format::Table | Format::Markdown) => Some(20),
                (None, _) => None,
            },
            width: self.width,
        }
    }
}

/// Prints what `target` names.
pub(crate) fn run(args: &Args, session: &Session) -> anyhow::Result<u8> {
    let store = session.store()?;
    let pipeline = args.pipeline.as_deref();
    match args.target.as_str() {
        "errors" => show_errors(store.as_ref(), pipeline)?,
        "runs" => show_runs(store.as_ref(), pipeline, (args.format, args.limits()))?,
        _ => show_tables(store.as_ref(), args)?,
    }
    Ok(0)
}

/// `prefflow show errors`: the last run's errors, one tab-separated line each.
fn show_errors(store: &dyn Store, pipeline: Option<&str>) -> anyhow::Result<()> {
    let record = inspect::last_errors(store, pipeline)?;
    if record.errors.is_empty() {
        println!("no errors in the last run of `{}`", record.pipeline);
    }
    for e in &record.errors {
        let variant = if e.variant.is_empty() {
            String::new()
        } else {
            format!("[{}]", e.variant)
        };
        // Where a cluster ran it (`slurm JOB_TASK`), when it did: a column of its own.
        let ran_in = e
            .ran_in
            .as_deref()
            .map(|r| format!("{r}\t"))
            .unwrap_or_default();
        println!(
            "{}{variant}\t{}\t{}\t{} attempt(s)\t{ran_in}{}",
            e.stage,
            e.item.as_deref().unwrap_or("-"),
            e.kind,
            e.attempts,
            e.message
        );
    }
    Ok(())
}

/// `prefflow show runs`: tokens, cost and requests by pipeline, role and model, for what the
/// last run spent and what the latest results cost (summed from their manifests).
fn show_runs(
    store: &dyn Store,
    pipeline: Option<&str>,
    (format, limits): (Format, Limits),
) -> anyhow::Result<()> {
    let mut rows = inspect::run_usage(store, pipeline)?;
    if rows.is_empty() {
        println!("no model calls recorded in this store's runs");
        return Ok(());
    }
    if !matches!(format, Format::Csv | Format::Json) {
        rows = with_model_totals(rows);
    }
    let text = |f: fn(&inspect::UsageRow) -> String| rows.iter().map(f).collect::<Vec<_>>();
    let count = |f: fn(&prefflow_engine::UsageCounts) -> u64| {
        rows.iter().map(|r| f(&r.counts)).collect::<Vec<_>>()
    };
    let df = polars::df!(
        "pipeline" => text(|r| r.pipeline.clone()),
        "run" => text(|r| r.run_id.clone()),
        "scope" => text(|r| r.scope.to_string()),
        "model" => text(|r| r.model.clone()),
        "role" => text(|r| r.role.clone()),
        "requests" => count(|c| c.requests),
        "replayed" => count(|c| c.replayed),
        "prompt_tokens" => count(|c| c.prompt_tokens),
        "completion_tokens" => count(|c| c.completion_tokens),
        "cached_prompt_tokens" => count(|c| c.cached_prompt_tokens),
        "cost" => rows.iter().map(|r| r.counts.cost).collect::<Vec<_>>(),
    )?;
    if !matches!(format, Format::Csv | Format::Json) {
        println!(
            "model usage: `spent` = the last run's calls (cached results cost nothing); \
             `results` = what the latest results cost when computed"
        );
    }
    print!("{}", format::render(&df, format, limits)?);
    Ok(())
}

/// `show runs` rows (grouped by pipeline, scope and model) with a total row after each model
/// that served more than one role, for reading on a terminal (CSV and JSON keep only the
/// per-role rows, so summing them never counts twice).
fn with_model_totals(rows: Vec<inspect::UsageRow>) -> Vec<inspect::UsageRow> {
    let mut out: Vec<inspect::UsageRow> = Vec::with_capacity(rows.len());
    let mut block: Vec<inspect::UsageRow> = Vec::new();
    let flush = |block: &mut Vec<inspect::UsageRow>, out: &mut Vec<inspect::UsageRow>| {
        if block.len() > 1 {
            let mut total = block[0].clone();
            total.role = "(all roles)".into();
            total.counts = Default::default();
            for r in block.iter() {
                total.counts.add(&r.counts);
            }
            block.push(total);
        }
        out.append(block);
    };
    for row in rows {
        let same = block.last().is_some_and(|b| {
            (&b.pipeline, b.scope, &b.model) == (&row.pipeline, row.scope, &row.model)
        });
        if !same {
            flush(&mut block, &mut out);
        }
        block.push(row);
    }
    flush(&mut block, &mut out);
    out
}

/// The tables `args.target` names, from the latest successful run: their paths with `--path`,
/// else their rows (CSV and JSON print one table only).
fn show_tables(store: &dyn Store, args: &Args) -> anyhow::Result<()> {
    let record = inspect::record_for_show(store, args.pipeline.as_deref())?;
    let tables = inspect::find_tables(&record, &args.target, args.variant.as_deref())?;
    let one_table = matches!(args.format, Format::Csv | Format::Json) && !args.path;
    if tables.len() > 1 && one_table {
        let names: Vec<String> = tables.iter().map(|(l, t, _)| format!("{l}.{t}")).collect();
        return Err(Error::Usage(format!(
            "--format {} prints one table; `{}` names {}: {}; pick one as STAGE.TABLE",
            args.format
                .to_possible_value()
                .map(|v| v.get_name().to_string())
                .unwrap_or_default(),
            args.target,
            names.len(),
            names.join(", ")
        ))
        .into());
    }
    for (label, table, entry) in tables {
        if args.path {
            print_path(store, &entry.blob)?;
        } else {
            print_table(store, (&label, &table), &entry.blob, args)?;
        }
    }
    Ok(())
}

/// The absolute path of a stored table's Parquet file (a local store only).
fn print_path(store: &dyn Store, blob: &str) -> anyhow::Result<()> {
    let key = prefflow_engine::artifact::blob_path(blob);
    let Some(p) = store.local_path(&key) else {
        return Err(Error::Usage(format!(
            "show --path needs a local store; {} has no local files: print the table with \
             --format csv or --format json instead",
            store.describe()
        ))
        .into());
    };
    println!("{}", std::path::absolute(&p).unwrap_or(p).display());
    Ok(())
}

/// One stored table in `--format`: CSV and JSON bare; text formats under a title line, laid
/// out by the domain's renderer where the table has a layout of its own.
fn print_table(
    store: &dyn Store,
    (label, table): (&str, &str),
    blob: &str,
    args: &Args,
) -> anyhow::Result<()> {
    let (format, limits) = (args.format, args.limits());
    let df = prefflow_engine::artifact::load_table(store, blob)?;
    if matches!(format, Format::Csv | Format::Json) {
        print!("{}", format::render(&df, format, limits)?);
        return Ok(());
    }
    println!(
        "{label}.{table}: {} rows × {} columns",
        df.height(),
        df.width()
    );
    // Tables with a layout of their own (Table 1, a world summary) print laid out.
    if let Some(text) = (format == Format::Table)
        .then(|| prefflow_stages::report::text::render(table, &df))
        .flatten()
    {
        print!("{text}");
        return Ok(());
    }
    print!("{}", format::render(&df, format, limits)?);
    Ok(())
}
