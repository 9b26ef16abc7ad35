//! `prefflow dag`: print the stage graph as text, Graphviz dot or Mermaid.

use std::path::PathBuf;

use clap::ValueEnum;
use prefflow_engine::plan::Plan;

use crate::pipeline::load_plan;

/// The arguments of `prefflow dag`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// Pipeline YAML file.
    pipeline: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: DagFormat,
    /// Parameter overrides.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

/// `--format`.
#[derive(Clone, Copy, ValueEnum)]
enum DagFormat {
    Text,
    Dot,
    Mermaid,
}

/// Prints the graph of the pipeline's plan.
pub(crate) fn run(args: &Args) -> anyhow::Result<u8> {
    let plan = load_plan(&args.pipeline, &args.set)?;
    print!(
        "{}",
        match args.format {
            DagFormat::Text => text(&plan),
            DagFormat::Dot => dot(&plan),
            DagFormat::Mermaid => mermaid(&plan),
        }
    );
    Ok(0)
}

/// One line per stage: name, kind, inputs, per-item column, sweep dimensions, variants.
fn text(plan: &Plan) -> String {
    let mut out = String::new();
    for s in &plan.stages {
        let inputs = if s.upstream.is_empty() {
            String::new()
        } else {
            format!(" ← {}", s.upstream.join(", "))
        };
        let item = s
            .per_item
            .as_ref()
            .map(|c| format!(" per_item={c}"))
            .unwrap_or_default();
        let sweep = if s.sweep_dims.is_empty() {
            String::new()
        } else {
            format!(" sweep={}", s.sweep_dims.join(","))
        };
        let n = plan.instances_of(&s.name).count();
        let n = if n > 1 {
            format!(" ({n} variants)")
        } else {
            String::new()
        };
        out.push_str(&format!(
            "{} [{}]{inputs}{item}{sweep}{n}\n",
            s.name, s.kind
        ));
    }
    out
}

/// A Graphviz digraph, left to right, one box per stage.
fn dot(plan: &Plan) -> String {
    let mut out = format!("digraph \"{}\" {{\n  rankdir=LR;\n", plan.name);
    for s in &plan.stages {
        out.push_str(&format!(
            "  \"{}\" [label=\"{}\\n{}\" shape=box];\n",
            s.name, s.name, s.kind
        ));
        for u in &s.upstream {
            out.push_str(&format!("  \"{u}\" -> \"{}\";\n", s.name));
        }
    }
    out.push_str("}\n");
    out
}

/// A Mermaid flowchart, left to right.
fn mermaid(plan: &Plan) -> String {
    let mut out = String::from("graph LR\n");
    for s in &plan.stages {
        out.push_str(&format!("  {}[\"{}: {}\"]\n", s.name, s.name, s.kind));
        for u in &s.upstream {
            out.push_str(&format!("  {u} --> {}\n", s.name));
        }
    }
    out
}
