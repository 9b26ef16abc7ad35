//! The `knowu_tasks` table: one row per generated task with tasks.csv's columns (so
//! `knowu_metrics` reads it in place of a tasks.csv) and the KnowU facts the episodes need
//! (expectation, consent decision and reason, the situation), so `run_knowu_episodes` rebuilds
//! every task's [`KnowuTaskInfo`] from tables alone.

use std::collections::HashMap;

use polars::prelude::*;

use super::matching::HabitMatch;
use super::task::{Expect, HabitFound, KnowuTask, KnowuTaskInfo, Situation};
use super::template::{Difficulty, Split};
use crate::knowu::error::KnowuError;
use crate::knowu::interop::rules::Decision;
use crate::tables::knowu::{KnowuTaskRow, KNOWU_TASKS};

/// The row, for its column names.
type R = KnowuTaskRow;

/// The task's row.
fn row(t: &KnowuTask) -> KnowuTaskRow {
    let (task, info) = (&t.bundle.task, &t.info);
    let situation = info.situation.as_ref();
    KnowuTaskRow {
        task_name: task.task_id.clone(),
        class_name: info.class_name.clone(),
        split: info.split.as_str().to_string(),
        difficulty: info.difficulty.as_str().to_string(),
        profile: task.persona.clone(),
        tags: format!("{};{}", info.difficulty.as_str(), info.split.as_str()),
        apps: task.apps.join(";"),
        habit_keys: info.habit_keys.join(";"),
        goal: task.instruction.clone(),
        expect: info
            .expect
            .map(Expect::as_str)
            .unwrap_or_default()
            .to_string(),
        lambda: info.lambda,
        decision: info.decision.map(|d| d.as_str().to_string()),
        reason: info.reason.clone(),
        clock: situation.and_then(|s| s.clock.clone()),
        notification: situation.map(|s| s.notification.clone()),
        in_knowu: info.in_knowu,
        habit: info.habit.as_ref().map(|h| h.key.clone()),
        habit_match: info.habit.as_ref().map(|h| h.how.as_str().to_string()),
        preference: info.preference.as_ref().map(|v| v.to_string()),
        judged: info.judged.clone(),
    }
}

/// The `knowu_tasks` table of `tasks`.
pub fn frame(tasks: &[KnowuTask]) -> PolarsResult<DataFrame> {
    let rows: Vec<KnowuTaskRow> = tasks.iter().map(row).collect();
    KnowuTaskRow::to_frame(&rows)
}

/// Every task's KnowU facts, by task id, from a `knowu_tasks` table.
pub fn read(df: &DataFrame) -> Result<HashMap<String, KnowuTaskInfo>, KnowuError> {
    let rows = KnowuTaskRow::from_frame(df).map_err(KnowuError::rows)?;
    rows.into_iter()
        .enumerate()
        .map(|(i, r)| Ok((r.task_name.clone(), info(i, r)?)))
        .collect()
}

/// A value of column `column` in row `row` that is none of `allowed`.
fn bad(row: usize, column: &str, value: &str, allowed: &str) -> KnowuError {
    KnowuError::table(
        KNOWU_TASKS.name,
        format!("row {row}: column `{column}` is {value:?}; use one of {allowed} (write the table with `generate_knowu_tasks`)"),
    )
}

/// One row's KnowU facts, its words parsed back (row `i`, for errors).
fn info(i: usize, r: KnowuTaskRow) -> Result<KnowuTaskInfo, KnowuError> {
    let split = Split::parse(&r.split)
        .ok_or_else(|| bad(i, R::split, &r.split, "general, personalized, proactive"))?;
    let difficulty = Difficulty::parse(&r.difficulty)
        .ok_or_else(|| bad(i, R::difficulty, &r.difficulty, "easy, hard"))?;
    let expect = match r.expect.as_str() {
        "" => None,
        e => Some(Expect::parse(e).ok_or_else(|| bad(i, R::expect, e, "act, silent, stop"))?),
    };
    let decision = match r.decision.as_deref().unwrap_or_default() {
        "" => None,
        "accept" => Some(Decision::Accept),
        "reject" => Some(Decision::Reject),
        d => return Err(bad(i, R::decision, d, "accept, reject")),
    };
    let habit = match (r.habit, r.habit_match.as_deref()) {
        (Some(key), Some(how)) => Some(HabitFound {
            key,
            how: HabitMatch::parse(how)
                .ok_or_else(|| bad(i, R::habit_match, how, "key, meaning"))?,
        }),
        _ => None,
    };
    let preference = match r.preference.as_deref() {
        Some(json) => Some(serde_json::from_str(json).map_err(|e| {
            KnowuError::table(KNOWU_TASKS.name, format!("row {i}: column `{}` is not JSON ({e}); write the table with `generate_knowu_tasks`", R::preference))
        })?),
        None => None,
    };
    Ok(KnowuTaskInfo {
        class_name: r.class_name,
        split,
        difficulty,
        lambda: r.lambda,
        habit_keys: r
            .habit_keys
            .split(';')
            .filter(|k| !k.is_empty())
            .map(str::to_string)
            .collect(),
        expect,
        decision,
        reason: r.reason,
        situation: r.notification.map(|notification| Situation {
            clock: r.clock,
            notification,
        }),
        in_knowu: r.in_knowu,
        habit,
        preference,
        judged: r.judged,
    })
}
