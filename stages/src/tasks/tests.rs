//! Tests over the authored templates in `datasets/tasks/` on the default world, and of
//! validation on deliberately broken tasks.

use serde_json::json;

use super::model::{CriterionKind, Source, TaskBundle};
use super::predicate::Predicate;
use super::testkit::{candidates, world};
use super::validate::{validate, Check};
use super::world_index::WorldIndex;

fn checks(b: &TaskBundle) -> Vec<(Check, Option<String>)> {
    let ix = WorldIndex::new(world());
    validate(&ix, b)
        .into_iter()
        .map(|r| (r.check, r.subject))
        .collect()
}

fn task(id: &str) -> TaskBundle {
    candidates()
        .iter()
        .find(|b| b.task.task_id == id)
        .cloned()
        .unwrap_or_else(|| panic!("no candidate {id}"))
}

#[test]
fn every_template_instantiates_and_only_the_known_flawed_candidates_fail_validation() {
    let ix = WorldIndex::new(world());
    let mut failing: Vec<&str> = candidates()
        .iter()
        .filter(|b| !validate(&ix, b).is_empty())
        .map(|b| b.task.task_id.as_str())
        .collect();
    failing.sort();
    // Every instance passes validation on the default world: the third pass (issue 25) reworded
    // or re-valued the variants that failed (a plain choice the form lacks, a one-hotel city,
    // pickup places history mentions), and review decides among the rest. Two candidates say
    // "on Friday" (tomorrow) for a Friday a week later: the validation sheets rewrite them to
    // "next Friday" (yuki.csv, zane.csv), so the released tasks pass `weekday_date`.
    assert_eq!(failing, ["calendar_focus-02", "cleaning_work_block-02"]);
    assert!(candidates().len() >= 188, "{}", candidates().len());
}

#[test]
fn candidates_cover_every_family_and_keep_ask_only_values_off_app_defaults() {
    use super::model::{Perturbation, TaskType};
    let all = candidates();
    for p in Perturbation::ALL {
        assert!(all.iter().any(|b| b.task.perturbation == p), "{p:?}");
    }
    assert!(all.iter().any(|b| b.task.task_type == TaskType::Qa));
    assert!(all.iter().any(|b| b.task.cross_app));
    let apps: std::collections::BTreeSet<&String> = all.iter().flat_map(|b| &b.task.apps).collect();
    assert_eq!(apps.len(), 26);
    for b in all {
        for s in b.slots.iter().filter(|s| s.source == Source::AskOnly) {
            assert_ne!(
                Some(&s.value),
                s.app_default.as_ref(),
                "{} {}",
                b.task.task_id,
                s.slot_id
            );
        }
        for s in b.slots.iter().filter(|s| s.source == Source::Inferable) {
            let entry = s.profile_entry.as_deref().unwrap_or_default();
            let supported = world()
                .history
                .iter()
                .chain(&b.task.overrides.history)
                .filter(|e| s.evidence.contains(&e.event_id))
                .all(|e| e.supports.iter().any(|x| x == entry));
            assert!(
                supported && !s.evidence.is_empty(),
                "{} {}",
                b.task.task_id,
                s.slot_id
            );
        }
    }
}

#[test]
fn a_good_task_passes_every_check() {
    assert_eq!(checks(&task("dinespot_dinner-01")), vec![]);
}

#[test]
fn a_silent_default_that_satisfies_a_preference_is_rejected() {
    let mut b = task("dinespot_dinner-01");
    b.task.defaults_solution[0]["args"]["restaurant"] = json!("baan-thai");
    assert_eq!(checks(&b), vec![(Check::Defaults, Some("cuisine".into()))]);
}

#[test]
fn a_defaults_solution_that_sets_an_optional_field_is_rejected() {
    let mut b = task("dinespot_dinner-01");
    b.task.defaults_solution[0]["args"]["seating"] = json!("patio");
    assert_eq!(checks(&b), vec![(Check::Defaults, None)]);
}

#[test]
fn a_reference_that_misses_a_criterion_is_rejected() {
    let mut b = task("dinespot_dinner-01");
    let c = b
        .criteria
        .iter_mut()
        .find(|c| c.criterion_id == "seating")
        .unwrap();
    c.predicate = Predicate::parse(
        &json!({ "inserted": "dinespot.reservations", "where": { "seating": "bar" } }),
    )
    .unwrap();
    assert_eq!(checks(&b), vec![(Check::Reference, Some("seating".into()))]);
}

#[test]
fn a_criterion_that_holds_before_the_agent_acts_is_rejected() {
    let mut b = task("dinespot_dinner-01");
    let c = b
        .criteria
        .iter_mut()
        .find(|c| c.criterion_id == "on_calendar")
        .unwrap();
    c.predicate =
        Predicate::parse(&json!({ "exists": "calendar.events", "where": { "id": "ev-standup" } }))
            .unwrap();
    assert_eq!(
        checks(&b),
        vec![(Check::InitialState, Some("on_calendar".into()))]
    );
}

#[test]
fn evidence_missing_from_history_is_rejected() {
    let mut b = task("dinespot_dinner-01");
    b.slot_mut("cuisine")
        .unwrap()
        .evidence
        .push("ev_9999".into());
    let rejected = checks(&b);
    assert_eq!(rejected, vec![(Check::Evidence, Some("cuisine".into()))]);
    b.slot_mut("cuisine").unwrap().evidence.clear();
    assert_eq!(checks(&b), rejected);
}

#[test]
fn an_ask_only_value_found_in_history_is_rejected() {
    let mut b = task("dinespot_dinner-01");
    let s = b.slot_mut("seating").unwrap();
    s.source = Source::AskOnly;
    s.evidence.clear();
    let got = checks(&b);
    assert!(
        got.contains(&(Check::Leak, Some("seating".into()))),
        "{got:?}"
    );
    assert!(
        got.contains(&(Check::ReferenceAsks, Some("seating".into()))),
        "{got:?}"
    );
}

#[test]
fn a_reference_using_the_unavailable_option_is_rejected() {
    let mut b = task("dinespot_time_gone-01");
    assert_eq!(checks(&b), vec![]);
    b.slot_mut("fallback_time").unwrap().value = json!("19:30");
    let got = checks(&b);
    assert!(
        got.contains(&(Check::Unavailable, Some("time".into()))),
        "{got:?}"
    );
    assert!(
        got.contains(&(Check::Reference, None)),
        "19:30 is gone, so booking it fails: {got:?}"
    );
}

#[test]
fn overrides_that_do_not_apply_are_rejected() {
    let mut b = task("dinespot_time_gone-01");
    b.task.overrides.app_data[0] = serde_json::from_value(
        json!({ "op": "delete", "table": "dinespot.restaurants", "id": "nowhere" }),
    )
    .unwrap();
    assert_eq!(checks(&b), vec![(Check::Overrides, None)]);
}

#[test]
fn personalization_criteria_point_at_slots_and_actions_do_not() {
    for b in candidates() {
        for c in &b.criteria {
            match c.kind {
                CriterionKind::Action => assert!(c.slot_id.is_none()),
                CriterionKind::Personalization => {
                    assert!(c.slot_id.as_deref().and_then(|s| b.slot(s)).is_some())
                }
            }
        }
    }
}

#[test]
fn a_task_is_its_table_row_written_as_declared_and_read_back_whole() {
    use super::model::Task;
    use crate::tables::tasks::TASKS;
    use polars::prelude::*;

    let tasks: Vec<Task> = candidates().iter().map(|b| b.task.clone()).collect();
    let df = Task::to_frame(&tasks).unwrap();
    assert_eq!(TASKS.violations(&df), []);
    let first = &tasks[0];
    assert_eq!(
        df.column(Task::perturbation).unwrap().str().unwrap().get(0),
        Some(first.perturbation.as_str())
    );
    assert_eq!(
        df.column(Task::overrides).unwrap().str().unwrap().get(0),
        Some(serde_json::to_string(&first.overrides).unwrap().as_str())
    );
    // λ is no column: a task read back from the table has none.
    let without_lambda: Vec<Task> = tasks
        .iter()
        .cloned()
        .map(|t| Task { lambda: None, ..t })
        .collect();
    assert_eq!(Task::from_frame(&df).unwrap(), without_lambda);

    let mut bad = df.clone();
    let mut words: Vec<String> = vec!["none".into(); df.height()];
    words[1] = "sideways".into();
    bad.with_column(Column::new(Task::perturbation.into(), words))
        .unwrap();
    let err = Task::from_frame(&bad).unwrap_err().to_string();
    assert!(
        err.starts_with("table `tasks`, column `perturbation`: row 1: not a value"),
        "{err}"
    );
}

#[test]
fn a_whole_row_covers_every_column_in_order_and_codecs_spell_as_serde_does() {
    use crate::tables::row::{covers, Codec, Json, Spelled};
    use crate::tables::tasks::TASKS;
    use crate::tasks::{Perturbation, Task};

    assert!(covers(&TASKS, Task::COLUMNS));
    assert!(!covers(&TASKS, &Task::COLUMNS[1..]), "a column short");
    let mut swapped = Task::COLUMNS.to_vec();
    swapped.swap(0, 1);
    assert!(!covers(&TASKS, &swapped), "out of order");

    let word = <Spelled as Codec<Perturbation>>::encode(&Perturbation::PreferenceShift);
    assert_eq!(word.as_deref(), Ok("preference_shift"));
    assert_eq!(
        <Spelled as Codec<Perturbation>>::decode("preference_shift".into()),
        Ok(Perturbation::PreferenceShift)
    );
    let not_a_word = <Spelled as Codec<Vec<u32>>>::encode(&vec![1]);
    assert_eq!(
        not_a_word,
        Err("[1] is not spelled as one word".to_string())
    );
    let json = <Json as Codec<Vec<u32>>>::encode(&vec![1, 2]);
    assert_eq!(json.as_deref(), Ok("[1,2]"));
    assert!(<Json as Codec<Vec<u32>>>::decode("{".into()).is_err());
}
