//! Which phone tools an episode offers a model. Hosted APIs cap a request's function list (OpenAI:
//! 128) while the phone has ~220 tools, so a capped episode offers a subset — and the subset must
//! never make the task impossible. The benchmark (not the agent) chooses it, per task:
//!
//! 1. every operation of the task's reference solution (and of its defaults-only plan);
//! 2. the `list_`/`get_` reads of every table of the apps the task touches, and of the owner's
//!    card ([`OWNER_CARD`]);
//! 3. the `list_`/`get_` reads of every table an offered operation's ref fields point at, so
//!    every id the model must pass can be discovered — this holds for the tools of step 4 too;
//! 4. then, while they fit under the cap, each with its reads: the other operations of the
//!    task's apps (an unavailable-option task whose reference only asks and answers still gets
//!    the operation it should try), the tools most relevant to the instruction (BM25 over
//!    name, description and parameter names), and the rest of the catalog in order.
//!
//! The result keeps catalog order, so the offered list reads like the phone's own.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::Value;

use crate::tasks::TaskBundle;
use crate::world::phone::ToolSpec;

/// The reads of the owner's own card: who the user is (her name, her number), which every phone
/// knows and a model may need for any task (a signature, a booking name).
pub const OWNER_CARD: [&str; 2] = ["contacts.list_owner", "contacts.get_owner"];

/// The tools offered for `task`: all of them without a cap (or when the catalog fits under it),
/// else the selection described in the module docs. When the must-have tools alone exceed the
/// cap they are all offered anyway (a task must stay solvable) and a warning says so.
pub fn offered(tools: &Arc<[ToolSpec]>, task: &TaskBundle, max: Option<usize>) -> Arc<[ToolSpec]> {
    let Some(max) = max.filter(|&m| m < tools.len()) else {
        return tools.clone();
    };
    let catalog = Catalog::new(tools);
    let mut keep = BTreeSet::new();
    for name in solution_tools(task) {
        if let Some(&i) = catalog.by_name.get(name.as_str()) {
            keep.extend(catalog.closure(i));
        }
    }
    for app in &task.task.apps {
        keep.extend(catalog.reads_of_app(app));
    }
    keep.extend(
        OWNER_CARD
            .iter()
            .filter_map(|t| catalog.by_name.get(t).copied()),
    );
    if keep.len() > max {
        tracing::warn!(
            "task {}: its reference tools and their reads are {} tools, over max_tools {max}; offering all of them",
            task.task.task_id,
            keep.len()
        );
    }
    let apps_first = catalog.tools_of_apps(&task.task.apps);
    for i in apps_first
        .into_iter()
        .chain(catalog.by_relevance(&task.task.instruction))
    {
        let new: Vec<usize> = catalog
            .closure(i)
            .into_iter()
            .filter(|j| !keep.contains(j))
            .collect();
        if keep.len() + new.len() <= max {
            keep.extend(new);
        }
        if keep.len() >= max {
            break;
        }
    }
    keep.into_iter().map(|i| tools[i].clone()).collect()
}

/// The phone tools the task's reference solution and defaults-only plan call, in first-use order
/// (`ask_user`, `answer` and `finish` are not phone tools and always offered).
pub fn solution_tools(task: &TaskBundle) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let steps = task
        .task
        .reference_solution
        .iter()
        .chain(&task.task.defaults_solution);
    for step in steps {
        if let Some(tool) = step.get("tool").and_then(Value::as_str) {
            if !out.iter().any(|t| t == tool) {
                out.push(tool.to_string());
            }
        }
    }
    out
}

/// The catalog's tools indexed by name, with what each one needs beside it.
struct Catalog<'t> {
    tools: &'t [ToolSpec],
    by_name: HashMap<&'t str, usize>,
}

impl<'t> Catalog<'t> {
    fn new(tools: &'t [ToolSpec]) -> Self {
        let by_name = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.as_str(), i))
            .collect();
        Self { tools, by_name }
    }

    /// Tool `i` with the reads that make it usable: for an operation, the `list_`/`get_` of
    /// every table its ref fields point at; for a read, its sibling read of the same table.
    fn closure(&self, i: usize) -> Vec<usize> {
        let tool = &self.tools[i];
        let mut out = vec![i];
        let mut add_table = |table: &str| {
            if let Some((app, name)) = table.split_once('.') {
                for read in [format!("{app}.list_{name}"), format!("{app}.get_{name}")] {
                    if let Some(&j) = self.by_name.get(read.as_str()) {
                        out.push(j);
                    }
                }
            }
        };
        match read_table(&tool.name) {
            Some(table) => add_table(&table),
            None => tool
                .params
                .iter()
                .filter_map(|p| p.refers_to.as_deref())
                .for_each(&mut add_table),
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The `list_`/`get_` reads of every table of `app`.
    fn reads_of_app(&self, app: &str) -> Vec<usize> {
        self.tools
            .iter()
            .enumerate()
            .filter(|(_, t)| {
                t.name
                    .split_once('.')
                    .is_some_and(|(a, _)| a == app && read_table(&t.name).is_some())
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// Every tool of the given apps, in catalog order.
    fn tools_of_apps(&self, apps: &[String]) -> Vec<usize> {
        (0..self.tools.len())
            .filter(|&i| {
                self.tools[i]
                    .name
                    .split_once('.')
                    .is_some_and(|(a, _)| apps.iter().any(|x| x == a))
            })
            .collect()
    }

    /// Every tool, the ones relevant to `query` first (best first), then the rest in catalog
    /// order.
    fn by_relevance(&self, query: &str) -> Vec<usize> {
        let texts = self.tools.iter().map(|t| {
            let params: Vec<&str> = t.params.iter().map(|p| p.name.as_str()).collect();
            format!(
                "{} {} {}",
                t.name.replace(['.', '_'], " "),
                t.description,
                params.join(" ")
            )
        });
        let mut order = super::retrieval::TextIndex::new(texts).top_k(query, self.tools.len());
        let ranked: BTreeSet<usize> = order.iter().copied().collect();
        order.extend((0..self.tools.len()).filter(|i| !ranked.contains(i)));
        order
    }
}

/// `app.table` when `name` is a read (`app.list_<table>` or `app.get_<table>`).
fn read_table(name: &str) -> Option<String> {
    let (app, rest) = name.split_once('.')?;
    let table = rest
        .strip_prefix("list_")
        .or_else(|| rest.strip_prefix("get_"))?;
    Some(format!("{app}.{table}"))
}

#[cfg(test)]
mod tests;
