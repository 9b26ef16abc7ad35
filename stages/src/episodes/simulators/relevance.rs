//! Which profile entries a model-backed user is told for one task (issue 25: the simulator
//! prompt holds only the entries relevant to the task plus its ask-only values — not every line
//! of the profile, no salary or blood type for a dinner booking).
//!
//! Relevance is read from the task's own data and the persona's, never from a hand list:
//!
//! - an entry a slot of the task names (`Slot::profile_entry`) is relevant;
//! - an entry whose value is a field of a table the task's operations work on — the operation's
//!   entity and the tables its fields refer to, for every operation the reference solution calls
//!   or a criterion names — is relevant (a dinner booking's restaurant table carries cuisine,
//!   seating, time and price);
//! - an entry whose evidence lives in an app the task is carried out in (its history templates'
//!   apps against the task's apps) is relevant, when that app is one of the entry's own: an app
//!   that evidences entries of many dimensions (a calendar, messages) links only entries of the
//!   dimensions the two rules above already found.

use std::collections::{BTreeSet, HashSet};

use serde_json::Value;

use crate::tasks::TaskBundle;
use crate::world::persona::{EventTemplate, ProfileEntry, Want};
use crate::world::types::{FieldKind, TableId};
use crate::world::World;

/// The entries of `world`'s persona that are relevant to `bundle`'s task, in profile order.
pub fn relevant_entries<'w>(world: &'w World, bundle: &TaskBundle) -> Vec<&'w ProfileEntry> {
    let task = TaskData::of(world, bundle);
    let profile = &world.persona.profile;
    let direct: Vec<bool> = profile
        .iter()
        .map(|e| task.entries.contains(e.id.as_str()) || !task.tables.is_disjoint(&value_tables(e)))
        .collect();
    let dimensions: HashSet<&str> = profile
        .iter()
        .zip(&direct)
        .filter(|(_, d)| **d)
        .map(|(e, _)| e.dimension.as_str())
        .collect();
    let spread = app_dimensions(world);
    profile
        .iter()
        .zip(&direct)
        .filter(|(e, d)| {
            **d || evidence_apps(e).iter().any(|app| {
                task.apps.contains(app.as_str())
                    && (spread.get(app.as_str()).map_or(0, BTreeSet::len) <= 1
                        || dimensions.contains(e.dimension.as_str()))
            })
        })
        .map(|(e, _)| e)
        .collect()
}

/// What a task works on: the profile entries its slots name, its apps, and the tables its
/// operations touch.
struct TaskData<'b> {
    entries: HashSet<&'b str>,
    apps: HashSet<String>,
    tables: HashSet<TableId>,
}

impl<'b> TaskData<'b> {
    fn of(world: &World, bundle: &'b TaskBundle) -> Self {
        let entries = bundle
            .slots
            .iter()
            .filter_map(|s| s.profile_entry.as_deref())
            .collect();
        let mut tools: Vec<String> = bundle
            .task
            .reference_solution
            .iter()
            .filter_map(|step| step.get("tool").and_then(Value::as_str))
            .map(str::to_string)
            .collect();
        for c in &bundle.criteria {
            let v = serde_json::to_value(&c.predicate).unwrap_or_default();
            collect_tools(&v, &mut tools);
        }
        let mut apps: HashSet<String> = bundle.task.apps.iter().cloned().collect();
        let mut tables = HashSet::new();
        for tool in &tools {
            let Some((app_id, op)) = tool.split_once('.') else {
                continue;
            };
            let Some(app) = world.catalog.app(app_id) else {
                continue;
            };
            apps.insert(app_id.to_string());
            let Some(op) = app.operation(op) else {
                continue;
            };
            tables.extend(op.entity);
            tables.extend(op.fields.iter().filter_map(|f| match f.kind {
                FieldKind::Ref(t) => Some(t),
                _ => None,
            }));
        }
        Self {
            entries,
            apps,
            tables,
        }
    }
}

/// Every `tool` (`app.operation`) a predicate names, at any depth.
fn collect_tools(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                match (k.as_str(), x) {
                    ("tool", Value::String(t)) => out.push(t.clone()),
                    _ => collect_tools(x, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|x| collect_tools(x, out)),
        _ => {}
    }
}

/// The entry's history templates: evidence and counter-evidence.
fn templates(e: &ProfileEntry) -> impl Iterator<Item = &EventTemplate> {
    e.evidence.iter().chain(&e.counter)
}

/// The tables whose field holds the entry's value (a binding that filters on `$value`).
fn value_tables(e: &ProfileEntry) -> HashSet<TableId> {
    templates(e)
        .flat_map(|t| &t.binds)
        .filter(|b| b.filters.iter().any(|(_, w)| *w == Want::Value))
        .map(|b| b.table)
        .collect()
}

/// The apps the entry's evidence appears in.
fn evidence_apps(e: &ProfileEntry) -> BTreeSet<&String> {
    templates(e).map(|t| &t.app).collect()
}

/// For each app, the profile dimensions whose evidence appears in it.
fn app_dimensions(world: &World) -> std::collections::HashMap<&str, BTreeSet<&str>> {
    let mut out: std::collections::HashMap<&str, BTreeSet<&str>> = Default::default();
    for e in &world.persona.profile {
        for app in evidence_apps(e) {
            out.entry(app.as_str())
                .or_default()
                .insert(e.dimension.as_str());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::testkit::{candidates, world};

    /// Over every candidate task: the entries its slots name are always told, nothing else of
    /// the profile is told wholesale, and a dinner booking is told dining entries but neither
    /// salary nor blood type.
    #[test]
    fn a_task_is_told_its_own_entries_and_not_the_whole_profile() {
        let w = world();
        let all = w.persona.profile.len();
        let mut sizes = Vec::new();
        for b in candidates() {
            let keys: Vec<&str> = relevant_entries(w, b)
                .iter()
                .map(|e| e.id.as_str())
                .collect();
            for s in b.slots.iter().filter_map(|s| s.profile_entry.as_deref()) {
                if w.persona.entry(s).is_some() {
                    assert!(
                        keys.contains(&s),
                        "{}: slot entry {s} missing",
                        b.task.task_id
                    );
                }
            }
            sizes.push(keys.len());
        }
        sizes.sort_unstable();
        let max = *sizes.last().expect("candidates");
        assert!(
            max * 4 < all,
            "at most a quarter of {all} entries, got {max}"
        );
        let dinner = candidates()
            .iter()
            .find(|b| b.task.apps == ["dinespot"] && b.task.instruction.contains("dinner"))
            .expect("a dinner booking");
        let keys: Vec<&str> = relevant_entries(w, dinner)
            .iter()
            .map(|e| e.key.as_str())
            .collect();
        assert!(keys.contains(&"favourite_cuisine"), "{keys:?}");
        for never in ["annual_salary", "blood_type"] {
            assert!(
                !keys.contains(&never),
                "{}: {keys:?}",
                dinner.task.instruction
            );
        }
    }
}
