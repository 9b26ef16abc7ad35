//! Per-episode task facts for the metrics: split, difficulty, persona, and for proactive tasks
//! whether the persona's habits say the user wants the agent to act (KnowU's need / noneed).
//!
//! Computed once per distinct (task, persona) pair; persona files are read once each, and only
//! for personas of proactive tasks.
//!
//! **Known quirk, reproduced and flagged.** KnowU maps WeekendSleeperTask to the habit keys
//! (weekend_sleeper, weekend_alarm), so a persona with only `weekend_alarm` is bucketed "need"
//! although the task expects the agent to stay silent. The bucket is kept as KnowU computes it;
//! `need_from_quirk` marks the episodes where only the quirk made it "need".

use std::collections::HashMap;
use std::path::Path;

use polars::prelude::*;

use super::tasks::{TaskIndex, TaskMeta};
use crate::knowu::error::KnowuError;
use crate::knowu::profile::Habits;
use crate::tables::knowu::{ClassifiedEpisode, EpisodeMetricsRow as M};

/// Tasks whose habit-key list includes keys the task itself does not honour: (class, the key
/// the task really checks).
const QUIRKS: [(&str, &str); 1] = [("WeekendSleeperTask", "weekend_sleeper")];

/// Persona KnowU's script assumes when a task name has none.
pub(crate) const DEFAULT_PERSONA: &str = "user";

/// The column saying a `need` bucket comes from [`QUIRKS`] (read by the metrics, which turn it
/// into `episode_metrics.bucket_from_quirk`).
pub(crate) const NEED_FROM_QUIRK: &str = "need_from_quirk";

/// Facts about one (task, persona) pair.
#[derive(Debug, Clone, Default)]
struct Facts {
    class_name: String,
    split: Option<String>,
    difficulty: Option<String>,
    persona: Option<String>,
    habit_should_act: Option<bool>,
    need_from_quirk: bool,
    profile_found: Option<bool>,
}

/// Columns `class_name`, `split`, `difficulty`, `persona`, `habit_should_act`,
/// `need_from_quirk`, `profile_found`, aligned with the rows of `episodes`.
pub fn task_columns(
    episodes: &DataFrame,
    tasks: &TaskIndex,
    personas_dir: &Path,
) -> Result<Vec<Column>, KnowuError> {
    let rows = ClassifiedEpisode::from_frame(episodes).map_err(KnowuError::rows)?;
    let keys: Vec<(String, Option<String>)> = rows
        .into_iter()
        .map(|e| {
            let p = (e.persona).or_else(|| e.task_id.split_once('@').map(|(_, p)| p.to_string()));
            (e.task_id, p)
        })
        .collect();
    let habits = load_needed_habits(&keys, tasks, personas_dir)?;
    let mut cache: HashMap<&(String, Option<String>), Facts> = HashMap::new();
    let facts: Vec<Facts> = keys
        .iter()
        .map(|k| {
            cache
                .entry(k)
                .or_insert_with(|| facts_of(&k.0, k.1.as_deref(), tasks, &habits))
                .clone()
        })
        .collect();
    Ok(to_columns(&facts))
}

fn habit_persona(persona: Option<&str>) -> &str {
    persona.unwrap_or(DEFAULT_PERSONA)
}

fn load_needed_habits(
    keys: &[(String, Option<String>)],
    tasks: &TaskIndex,
    dir: &Path,
) -> Result<HashMap<String, Habits>, KnowuError> {
    let needed = keys.iter().filter_map(|(t, p)| {
        let meta = tasks.get(t)?;
        (meta.split == "proactive" && !meta.habit_keys.is_empty())
            .then(|| habit_persona(p.as_deref()))
    });
    let mut out = HashMap::new();
    for name in needed {
        if !out.contains_key(name) {
            out.insert(
                name.to_string(),
                Habits::load(&dir.join(format!("{name}.yaml")))?,
            );
        }
    }
    Ok(out)
}

fn facts_of(
    task_id: &str,
    persona: Option<&str>,
    tasks: &TaskIndex,
    habits: &HashMap<String, Habits>,
) -> Facts {
    let class_name = task_id
        .split_once('@')
        .map_or(task_id, |(c, _)| c)
        .to_string();
    let mut facts = Facts {
        persona: persona.map(str::to_string),
        ..Facts::default()
    };
    if let Some(meta) = tasks.get(task_id) {
        facts.split = Some(meta.split.clone());
        facts.difficulty = Some(meta.difficulty.clone());
        if let Some(h) = habits.get(habit_persona(persona)) {
            proactive_verdict(&mut facts, &class_name, meta, h);
        }
    }
    facts.class_name = class_name;
    facts
}

/// need/noneed as KnowU decides it, and whether only the quirk made it need.
fn proactive_verdict(facts: &mut Facts, class: &str, meta: &TaskMeta, habits: &Habits) {
    if meta.split != "proactive" || meta.habit_keys.is_empty() {
        return;
    }
    let act = meta.habit_keys.iter().any(|k| habits.has(k));
    facts.habit_should_act = Some(act);
    facts.profile_found = Some(habits.found);
    facts.need_from_quirk = act
        && QUIRKS
            .iter()
            .any(|&(c, real)| c == class && !habits.has(real));
}

fn to_columns(facts: &[Facts]) -> Vec<Column> {
    let strs = |name: &str, f: fn(&Facts) -> Option<&str>| {
        Column::new(name.into(), facts.iter().map(f).collect::<Vec<_>>())
    };
    vec![
        strs(M::class_name, |f| Some(f.class_name.as_str())),
        strs(M::split, |f| f.split.as_deref()),
        strs(M::difficulty, |f| f.difficulty.as_deref()),
        strs(M::persona, |f| f.persona.as_deref()),
        Column::new(
            M::habit_should_act.into(),
            facts.iter().map(|f| f.habit_should_act).collect::<Vec<_>>(),
        ),
        Column::new(
            NEED_FROM_QUIRK.into(),
            facts.iter().map(|f| f.need_from_quirk).collect::<Vec<_>>(),
        ),
        Column::new(
            M::profile_found.into(),
            facts.iter().map(|f| f.profile_found).collect::<Vec<_>>(),
        ),
    ]
}
