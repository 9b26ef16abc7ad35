//! Candidate generation: every variant of every template, instantiated over the world, then a
//! seeded, template-stratified draw of `count` of them, ordered by task id.

use std::collections::{BTreeMap, HashSet};

use super::error::TaskError;
use super::instantiate::instantiate;
use super::model::TaskBundle;
use super::template::{place, Domains, LoadedFile};
use super::world_index::WorldIndex;
use crate::world::World;

/// Instantiates every variant of every template in `files`, offering each task its domain's
/// apps (`domains`).
pub fn instantiate_all(
    world: &World,
    files: &[LoadedFile],
    domains: &Domains,
) -> Result<Vec<TaskBundle>, TaskError> {
    let ix = WorldIndex::new(world);
    let mut seen: HashSet<&str> = HashSet::new();
    let mut out = Vec::new();
    for f in files {
        for t in &f.file.templates {
            if !seen.insert(t.value.id.as_str()) {
                return Err(TaskError::Template {
                    at: place(&f.name, t),
                    message: format!(
                        "template id `{}` is used twice; ids must be unique across files",
                        t.value.id
                    ),
                });
            }
            if t.value.variants.is_empty() {
                return Err(TaskError::Template {
                    at: place(&f.name, t),
                    message: format!("template `{}` has no variants", t.value.id),
                });
            }
            for n in 0..t.value.variants.len() {
                out.push(instantiate(&ix, &f.name, t, n, domains)?);
            }
        }
    }
    Ok(out)
}

/// Draws `count` tasks: templates take turns (in id order), each giving its variants in a
/// seeded order, so every template is represented before any gives a second task. The result
/// is sorted by task id. Fewer instances than `count` is an error.
pub fn select(all: Vec<TaskBundle>, count: usize, seed: u64) -> Result<Vec<TaskBundle>, TaskError> {
    if all.len() < count {
        return Err(TaskError::File {
            file: "templates".into(),
            message: format!(
                "the templates yield {} tasks, fewer than count = {count}; add variants or lower `count`",
                all.len()
            ),
        });
    }
    let mut groups: BTreeMap<String, Vec<TaskBundle>> = BTreeMap::new();
    for b in all {
        groups.entry(b.task.template.clone()).or_default().push(b);
    }
    let mut rng = fastrand::Rng::with_seed(seed);
    for g in groups.values_mut() {
        rng.shuffle(g);
        g.reverse(); // pop() takes from the end: keep the shuffled order
    }
    let mut picked = Vec::with_capacity(count);
    while picked.len() < count {
        for g in groups.values_mut() {
            if picked.len() == count {
                break;
            }
            if let Some(b) = g.pop() {
                picked.push(b);
            }
        }
    }
    picked.sort_by(|a, b| a.task.task_id.cmp(&b.task.task_id));
    Ok(picked)
}
