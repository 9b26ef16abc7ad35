//! Which phone tools an episode offers a model. Hosted APIs cap a request's function list (OpenAI:
//! 128) while the phone has 221 tools, so a capped episode offers a subset. The subset must never
//! make the task impossible, and must never tell the model how to solve it: it is chosen by the
//! task's **domain group** (`datasets/tasks/_domains.yaml`: the core apps — messages, mail,
//! calendar, wallet, … — plus the domain's own, e.g. travel adds SkyWay, StayWell, ZipRide,
//! MetroMap and Settings), never by the reference solution. Every task of a domain gets the same
//! offer; generation checks that the domain offers every app the reference needs.
//!
//! The offer is every tool of the domain's apps, plus the `list_`/`get_` reads of every table an
//! offered operation's ref fields point at (so every id the model must pass can be discovered)
//! and the owner's card ([`OWNER_CARD`]), in catalog order. A task without a domain (KnowU,
//! remote devices) is offered apps in catalog order while they fit.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::Value;

use crate::tasks::TaskBundle;
use crate::world::phone::ToolSpec;

/// The reads of the owner's own card: who the user is (her name, her number), which every phone
/// knows and a model may need for any task (a signature, a booking name).
pub const OWNER_CARD: [&str; 2] = ["contacts.list_owner", "contacts.get_owner"];

/// The tools offered for `task`: all of them without a cap (or when the catalog fits under it),
/// else its domain's (module docs). When the domain's tools exceed the cap they are all offered
/// anyway (a task must stay solvable) and a warning says so.
pub fn offered(tools: &Arc<[ToolSpec]>, task: &TaskBundle, max: Option<usize>) -> Arc<[ToolSpec]> {
    let Some(max) = max.filter(|&m| m < tools.len()) else {
        return tools.clone();
    };
    let catalog = Catalog::new(tools);
    let apps = &task.task.offered_apps;
    let mut keep = BTreeSet::new();
    keep.extend(
        OWNER_CARD
            .iter()
            .filter_map(|t| catalog.by_name.get(t).copied()),
    );
    if apps.is_empty() {
        // No domain: whole apps in catalog order while they fit.
        for app in catalog.apps() {
            let new: BTreeSet<usize> = catalog
                .tools_of_apps(&[app])
                .into_iter()
                .flat_map(|i| catalog.closure(i))
                .filter(|j| !keep.contains(j))
                .collect();
            if keep.len() + new.len() <= max {
                keep.extend(new);
            }
        }
    } else {
        for i in catalog.tools_of_apps(apps) {
            keep.extend(catalog.closure(i));
        }
        if keep.len() > max {
            tracing::warn!(
                "task {}: domain `{}` offers {} tools, over max_tools {max}; offering all of them",
                task.task.task_id,
                task.task.domain,
                keep.len()
            );
        }
    }
    keep.into_iter().map(|i| tools[i].clone()).collect()
}

/// The apps an offer covers, in the order their tools come.
pub fn apps_of(tools: &[ToolSpec]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in tools {
        if let Some((app, _)) = t.name.split_once('.') {
            if !out.iter().any(|a| a == app) {
                out.push(app.to_string());
            }
        }
    }
    out
}

/// The first tools-mode observation (the phone's app overview, one `- Name (id): what it is for`
/// line per app) cut to the apps whose tools are offered, so the first message names only apps
/// the model can use. Any other observation (a GUI screen) is returned as it is.
pub fn overview_for(observation: &str, offered: &[ToolSpec]) -> String {
    let apps = apps_of(offered);
    let mut lines = observation.lines();
    let Some(head) = lines.next() else {
        return observation.to_string();
    };
    if !head.starts_with(crate::world::phone::APPS_OVERVIEW_HEAD) {
        return observation.to_string();
    }
    let mut out = head.to_string();
    for line in lines {
        let id = line
            .split_once(" (")
            .and_then(|(_, rest)| rest.split_once("):"))
            .map(|(id, _)| id);
        if id.is_some_and(|id| apps.iter().any(|a| a == id)) {
            out.push('\n');
            out.push_str(line);
        }
    }
    out
}

/// The phone tools the task's reference solution and defaults-only plan call, in first-use order
/// (`ask_user`, `answer` and `finish` are not phone tools and always offered). Tests and checks
/// use it; the offer does not.
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

    /// The apps of the catalog, in order.
    fn apps(&self) -> Vec<String> {
        apps_of(self.tools)
    }

    /// Every tool of the given apps, in catalog order.
    fn tools_of_apps<S: AsRef<str>>(&self, apps: &[S]) -> Vec<usize> {
        (0..self.tools.len())
            .filter(|&i| {
                self.tools[i]
                    .name
                    .split_once('.')
                    .is_some_and(|(a, _)| apps.iter().any(|x| x.as_ref() == a))
            })
            .collect()
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
