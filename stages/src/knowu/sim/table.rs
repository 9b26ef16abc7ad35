//! The `knowu_tasks` table: one row per generated task with tasks.csv's columns (so
//! `knowu_metrics` reads it in place of a tasks.csv) and the KnowU facts the episodes need
//! (expectation, consent decision and reason, the situation), so `run_knowu_episodes` rebuilds
//! every task's [`KnowuTaskInfo`] from tables alone.

use std::collections::HashMap;

use polars::prelude::*;

use super::matching::HabitMatch;
use super::{Decision, Difficulty, Expect, HabitFound, KnowuTask, KnowuTaskInfo, Situation, Split};
use crate::knowu::columns;
use crate::knowu::error::KnowuError;

/// The table's name, in errors.
const TABLE: &str = "knowu_tasks";

/// The `knowu_tasks` table of `tasks`.
pub fn frame(tasks: &[KnowuTask]) -> PolarsResult<DataFrame> {
    let col = |f: &dyn Fn(&KnowuTask) -> String| tasks.iter().map(f).collect::<Vec<_>>();
    let opt = |f: &dyn Fn(&KnowuTask) -> Option<String>| tasks.iter().map(f).collect::<Vec<_>>();
    df!(
        "task_name" => col(&|t| t.bundle.task.task_id.clone()),
        "class_name" => col(&|t| t.info.class_name.clone()),
        "split" => col(&|t| t.info.split.as_str().to_string()),
        "difficulty" => col(&|t| t.info.difficulty.as_str().to_string()),
        "profile" => col(&|t| t.bundle.task.persona.clone()),
        "tags" => col(&|t| format!("{};{}", t.info.difficulty.as_str(), t.info.split.as_str())),
        "apps" => col(&|t| t.bundle.task.apps.join(";")),
        "habit_keys" => col(&|t| t.info.habit_keys.join(";")),
        "goal" => col(&|t| t.bundle.task.instruction.clone()),
        "expect" => col(&|t| t.info.expect.map(Expect::as_str).unwrap_or_default().to_string()),
        "lambda" => tasks.iter().map(|t| t.info.lambda).collect::<Vec<_>>(),
        "decision" => opt(&|t| t.info.decision.map(|d| d.as_str().to_string())),
        "reason" => col(&|t| t.info.reason.clone()),
        "clock" => opt(&|t| t.info.situation.as_ref().and_then(|s| s.clock.clone())),
        "notification" => opt(&|t| t.info.situation.as_ref().map(|s| s.notification.clone())),
        "in_knowu" => tasks.iter().map(|t| t.info.in_knowu).collect::<Vec<_>>(),
        "habit" => opt(&|t| t.info.habit.as_ref().map(|h| h.key.clone())),
        "habit_match" => opt(&|t| t.info.habit.as_ref().map(|h| h.how.as_str().to_string())),
        "preference" => opt(&|t| t.info.preference.as_ref().map(|v| v.to_string())),
        "judged" => opt(&|t| t.info.judged.clone()),
    )
}

/// Every task's KnowU facts, by task id, from a `knowu_tasks` table.
pub fn read(df: &DataFrame) -> Result<HashMap<String, KnowuTaskInfo>, KnowuError> {
    let get = |name: &str| columns::strings(df, TABLE, name);
    let (ids, classes, splits, levels) = (
        get("task_name")?,
        get("class_name")?,
        get("split")?,
        get("difficulty")?,
    );
    let (keys, expects, decisions, reasons) = (
        get("habit_keys")?,
        get("expect")?,
        get("decision")?,
        get("reason")?,
    );
    let (clocks, notes) = (get("clock")?, get("notification")?);
    let lambdas = columns::f64s(df, TABLE, "lambda")?;
    let (habits, matches) = (get("habit")?, get("habit_match")?);
    let in_knowu = columns::bools(df, TABLE, "in_knowu")?;
    // Tables written before these columns existed have none: no preference check.
    let optional = |name: &str| match df.column(name) {
        Ok(_) => get(name),
        Err(_) => Ok(vec![None; df.height()]),
    };
    let (prefs, judged) = (optional("preference")?, optional("judged")?);
    let mut out = HashMap::with_capacity(df.height());
    for row in 0..df.height() {
        let text = |v: &[Option<String>]| v[row].clone().unwrap_or_default();
        let bad = |column: &str, value: &str, allowed: &str| {
            KnowuError::table(
                TABLE,
                format!("row {row}: column `{column}` is {value:?}; use one of {allowed} (write the table with `generate_knowu_tasks`)"),
            )
        };
        let split = Split::parse(&text(&splits))
            .ok_or_else(|| bad("split", &text(&splits), "general, personalized, proactive"))?;
        let difficulty = Difficulty::parse(&text(&levels))
            .ok_or_else(|| bad("difficulty", &text(&levels), "easy, hard"))?;
        let expect = match text(&expects).as_str() {
            "" => None,
            e => Some(Expect::parse(e).ok_or_else(|| bad("expect", e, "act, silent, stop"))?),
        };
        let decision = match text(&decisions).as_str() {
            "" => None,
            "accept" => Some(Decision::Accept),
            "reject" => Some(Decision::Reject),
            d => return Err(bad("decision", d, "accept, reject")),
        };
        let habit = match (&habits[row], matches[row].as_deref()) {
            (Some(key), Some(how)) => Some(HabitFound {
                key: key.clone(),
                how: HabitMatch::parse(how)
                    .ok_or_else(|| bad("habit_match", how, "key, meaning"))?,
            }),
            _ => None,
        };
        let situation = notes[row].clone().map(|notification| Situation {
            clock: clocks[row].clone(),
            notification,
        });
        let info = KnowuTaskInfo {
            class_name: text(&classes),
            split,
            difficulty,
            lambda: lambdas[row],
            habit_keys: text(&keys)
                .split(';')
                .filter(|k| !k.is_empty())
                .map(str::to_string)
                .collect(),
            expect,
            decision,
            reason: text(&reasons),
            situation,
            in_knowu: in_knowu[row].unwrap_or(true),
            habit,
            preference: match prefs[row].as_deref() {
                Some(json) => Some(serde_json::from_str(json).map_err(|e| {
                    KnowuError::table(TABLE, format!("row {row}: column `preference` is not JSON ({e}); write the table with `generate_knowu_tasks`"))
                })?),
                None => None,
            },
            judged: judged[row].clone(),
        };
        out.insert(text(&ids), info);
    }
    Ok(out)
}
