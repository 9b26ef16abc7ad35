//! Review rounds applied to real candidates: edits flow into checks and the reference, the audit
//! records each change, conflicts stop the round.

use serde_json::json;

use super::eval::{resolve_json, Episode};
use super::model::Source;
use super::review::apply_round;
use super::sheet::{Round, SheetRow};
use super::testkit::{candidates, world};
use super::TaskError;
use crate::world::phone::{Action, EpisodeConfig, NoUser, Phone};

fn row(task: &str, row: usize, decision: &str) -> SheetRow {
    SheetRow {
        file: "sheet.csv".into(),
        row,
        task_id: task.into(),
        keep: matches!(decision, "accept" | "confirm"),
        decision: decision.into(),
        new_instruction: None,
        set_source: vec![],
        set_value: vec![],
        reviewer: "r1".into(),
        note: String::new(),
    }
}

fn two() -> Vec<super::TaskBundle> {
    candidates()
        .iter()
        .filter(|b| {
            b.task.task_id == "dinespot_dinner-01" || b.task.task_id == "dinespot_dinner-02"
        })
        .cloned()
        .collect()
}

#[test]
fn a_fixed_value_flows_into_checks_reference_rubric_and_hidden_context() {
    let mut fix = row("dinespot_dinner-01", 2, "accept");
    fix.set_value = vec![("party_size".into(), json!(5))];
    fix.new_instruction = Some("Get us a dinner table this Friday.".into());
    let (kept, audit) = apply_round(
        two(),
        &[fix, row("dinespot_dinner-02", 3, "reject")],
        Round::Refinement,
    )
    .unwrap();
    assert_eq!(kept.len(), 1, "the rejected task is dropped");
    let b = &kept[0];
    assert_eq!(b.task.instruction, "Get us a dinner table this Friday.");
    assert_eq!(b.task.hidden_context.ask_only["party_size"], json!(5));
    let rubric = &b
        .criteria
        .iter()
        .find(|c| c.criterion_id == "party_size")
        .unwrap()
        .rubric;
    assert!(rubric.contains("for 5 people"), "{rubric}");
    let fields: Vec<(&str, &str, &str)> = audit
        .iter()
        .map(|a| (a.task_id.as_str(), a.field.as_str(), a.new.as_str()))
        .collect();
    assert_eq!(
        fields,
        [
            ("dinespot_dinner-01", "decision", "accept"),
            (
                "dinespot_dinner-01",
                "instruction",
                "Get us a dinner table this Friday."
            ),
            ("dinespot_dinner-01", "slots.party_size.value", "5"),
            (
                "dinespot_dinner-01",
                "criteria.party_size.rubric",
                rubric.as_str()
            ),
            ("dinespot_dinner-02", "decision", "reject"),
        ]
    );
    // The reference books for 5 now, and the criterion wants 5.
    let mut phone = Phone::new(
        world(),
        EpisodeConfig {
            overrides: b.task.overrides.clone(),
            ..Default::default()
        },
        Box::new(NoUser),
    )
    .unwrap();
    for step in &b.task.reference_solution {
        let a: Action = serde_json::from_value(resolve_json(step, &b.slots).unwrap()).unwrap();
        phone.step(&a);
    }
    let episode = Episode::new(&phone, &b.slots);
    assert!(b.criteria.iter().all(|c| episode.check(&c.predicate)));
}

#[test]
fn a_source_change_to_ask_only_clears_evidence_and_is_audited() {
    let mut r = row("dinespot_dinner-01", 2, "accept");
    r.set_source = vec![("seating".into(), Source::AskOnly)];
    let (kept, audit) = apply_round(two(), &[r], Round::Refinement).unwrap();
    let s = kept[0].slot("seating").unwrap();
    assert_eq!((s.source, s.evidence.len()), (Source::AskOnly, 0));
    assert_eq!(
        kept[0].task.hidden_context.ask_only["seating"],
        json!("patio")
    );
    assert!(audit
        .iter()
        .any(|a| a.field == "slots.seating.evidence" && a.new.is_empty()));
    assert_eq!(kept.len(), 1, "a task without a row is not carried over");
}

#[test]
fn conflicting_rows_stop_the_round_naming_both_places() {
    let mut a = row("dinespot_dinner-01", 4, "accept");
    a.set_value = vec![("party_size".into(), json!(5))];
    let mut b = row("dinespot_dinner-01", 9, "accept");
    b.set_value = vec![("party_size".into(), json!(6))];
    let same = row("dinespot_dinner-01", 11, "accept");
    let err = apply_round(two(), &[a, b, same], Round::Refinement).unwrap_err();
    let TaskError::Sheet {
        row: at,
        column,
        message,
        ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!((*at, column.as_str()), (9, "set_value"));
    assert!(message.contains("sheet.csv row 4"), "{message}");
    let disagree = [
        row("dinespot_dinner-01", 2, "accept"),
        row("dinespot_dinner-01", 3, "reject"),
    ];
    assert!(apply_round(two(), &disagree, Round::Refinement).is_err());
}
