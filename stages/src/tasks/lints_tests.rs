//! Each content lint rejects a fixture of its flaw class with its own reason, and stays quiet
//! on the fixed version of the same task.

use super::lints::SlotSource;
use super::model::{Source, TaskBundle};
use super::template::parse;
use super::testkit::{candidates, world};
use super::validate::{validate, validate_in_set, Check};
use super::world_index::WorldIndex;

/// Instantiates variant 1 of the single template in `yaml`.
fn fixture(yaml: &str) -> TaskBundle {
    let file = parse("fixture.yaml", yaml).unwrap_or_else(|e| panic!("{e}"));
    let ix = WorldIndex::new(world());
    let domains = super::template::Domains::default();
    super::instantiate::instantiate(&ix, "fixture.yaml", &file.templates[0], 0, &domains)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn checks_of(b: &TaskBundle) -> Vec<(Check, Option<String>, String)> {
    let ix = WorldIndex::new(world());
    validate(&ix, b)
        .into_iter()
        .map(|r| (r.check, r.subject, r.reason))
        .collect()
}

/// The reason of the task's first rejection by `check`; panics (listing all) when there is none.
fn reason(b: &TaskBundle, check: Check) -> String {
    let all = checks_of(b);
    all.iter()
        .find(|(c, ..)| *c == check)
        .map(|(_, _, r)| r.clone())
        .unwrap_or_else(|| panic!("no {check:?} rejection: {all:?}"))
}

fn has(b: &TaskBundle, check: Check, subject: Option<&str>) -> bool {
    checks_of(b)
        .iter()
        .any(|(c, s, _)| *c == check && s.as_deref() == subject)
}

const TICKETS: &str = r#"templates:
  - id: tickets
    instruction: "{instruction}"
    slots:
      quantity: { ask: 3, keywords: [tickets], about: "How many tickets to buy", default: tixly.buy_tickets.quantity }
    criteria:
      - { id: bought, rubric: "Bought.", check: { inserted: tixly.orders, where: { event: tx-chapel-improv } } }
      - { id: quantity, slot: quantity, rubric: "Three.", check: { inserted: tixly.orders, where: { quantity: "{slot.quantity}" } } }
    solution:
      - ask: "How many tickets should I get?"
      - { call: tixly.buy_tickets, args: { event: tx-chapel-improv, quantity: "{slot.quantity}" } }
    variants: [{ instruction: "%" }]
"#;

#[test]
fn an_ask_only_count_the_wording_contradicts_or_states_is_rejected() {
    let t = |i: &str| fixture(&TICKETS.replace('%', i));
    let singular = t("Get me a ticket for Improv Thursdays.");
    let reason = reason(&singular, Check::Quantity);
    assert!(
        reason.contains("says 1") && reason.contains("a … ticket"),
        "{reason}"
    );
    let stated = t("Get three tickets for Improv Thursdays.");
    assert!(has(&stated, Check::Quantity, Some("quantity")));
    // Plural and uncounted: the count is the user's to give.
    assert!(!has(
        &t("Get us tickets for Improv Thursdays."),
        Check::Quantity,
        Some("quantity")
    ));
    // "my ticket place" is about a place, not a number of tickets.
    assert!(!has(
        &t("Get tickets for Improv Thursdays from my ticket place."),
        Check::Quantity,
        Some("quantity")
    ));
}

const RUN: &str = r#"templates:
  - id: run
    instruction: "Log my run from {when}."
    slots:
      minutes: { ask: 58, keywords: [minutes, how long], about: "How long the run took, in minutes", default: fitpulse.log_workout.minutes }
    criteria:
      - { id: logged, rubric: "A run is logged.", check: { inserted: fitpulse.workouts, where: { kind: run } } }
      - { id: date, rubric: "Dated.", check: { inserted: fitpulse.workouts, where: { date: "{date}" } } }
      - { id: minutes, slot: minutes, rubric: "Minutes.", check: { inserted: fitpulse.workouts, where: { minutes: "{slot.minutes}" } } }
    solution:
      - ask: "How many minutes did the run take?"
      - { call: fitpulse.log_workout, args: { kind: run, date: "{date}", distance_km: 10, minutes: "{slot.minutes}" } }
    variants: [{ when: "%w", date: "%d" }]
"#;

#[test]
fn a_premise_already_true_in_app_data_or_contradicted_by_the_clock_is_rejected() {
    let t = |when: &str, date: &str| fixture(&RUN.replace("%w", when).replace("%d", date));
    // Sunday's run (w-0928) is already logged.
    let done = t("Sunday", "2025-09-28");
    let reason = reason(&done, Check::Premise);
    assert!(
        reason.contains("already holds") && reason.contains("fitpulse.workouts"),
        "{reason}"
    );
    // "Monday" while the criteria want Wednesday 2025-10-01.
    let wrong_day = t("Monday", "2025-10-01");
    assert!(checks_of(&wrong_day)
        .iter()
        .any(|(c, _, r)| *c == Check::Premise && r.contains("wednesday")));
    assert!(!has(&t("Wednesday", "2025-10-01"), Check::Premise, None));
    assert!(!has(
        &t("Wednesday", "2025-10-01"),
        Check::Premise,
        Some("logged")
    ));
    // "yesterday" is not checked; "today" is the clock's day (Thursday 2025-10-02).
    assert!(checks_of(&t("today", "2025-10-01"))
        .iter()
        .any(|(c, _, r)| *c == Check::Premise && r.contains("\"today\"")));
}

const HOTEL: &str = r#"templates:
  - id: hotel
    instruction: "Book a hotel in Portland for my trip."
    overrides:
      app_data:
        - { op: insert, table: notes.notes, id: n-trip, values: { title: "Portland trip", folder: fo-travel, body: "%", updated: "2025-09-20T10:00" } }
    slots:
      nights: { ask: 3, keywords: [nights], about: "How many nights to stay", default: staywell.book_hotel.nights }
    criteria:
      - { id: booked, rubric: "Booked.", check: { inserted: staywell.bookings, where: { hotel.city: Portland } } }
      - { id: nights, slot: nights, rubric: "Three nights.", check: { inserted: staywell.bookings, where: { nights: "{slot.nights}" } } }
    solution:
      - ask: "How many nights should I book?"
      - { call: staywell.book_hotel, args: { hotel: h-juniper, check_in: "2025-10-17", nights: "{slot.nights}" } }
    variants: [{}]
"#;

#[test]
fn an_ask_only_value_app_data_about_the_task_reveals_is_rejected() {
    let leaky = fixture(&HOTEL.replace('%', "Staying 3 nights, back on the 20th."));
    let reason = reason(&leaky, Check::Derivable);
    assert!(reason.contains("notes.notes n-trip"), "{reason}");
    // A 3 that is not a number of nights reveals nothing.
    let quiet = fixture(&HOTEL.replace('%', "Pack 3 tops and the rain jacket."));
    assert!(!has(&quiet, Check::Derivable, Some("nights")));
}

const SIGNOFF: &str = r#"templates:
  - id: signoff
    instruction: "Email Priya about the book club."
    overrides:
      app_data:
        - { op: update, table: mail.emails, id: m-08, values: { body: "Top themes attached.\n\n%" } }
        - { op: update, table: mail.emails, id: m-09, values: { body: "I'll bring the khao soi!\n\n%" } }
    slots:
      signoff: { profile: com_signoff, keywords: [signoff, signature] }
    criteria:
      - { id: sent, rubric: "Sent.", check: { inserted: mail.emails, where: { to: { contains: priya.nair } } } }
      - { id: signoff, slot: signoff, rubric: "Signed as she signs.", check: { inserted: mail.emails, where: { body: { contains: "{slot.signoff}" } } } }
    solution:
      - { call: mail.send_email, args: { to: priya.nair@gmail.com, subject: Book club, body: "See you there!\n\n{slot.signoff}" }, plain: { body: "See you there!" } }
    variants: [{}]
"#;

#[test]
fn a_criterion_her_own_records_fail_is_rejected_and_spacing_is_not_a_conflict() {
    let conflict = fixture(&SIGNOFF.replace('%', "Cheers,\\nMaya"));
    let reason = reason(&conflict, Check::Artefacts);
    assert!(
        reason.contains("Best, Maya") && reason.contains("Cheers"),
        "{reason}"
    );
    // Her mails sign "Best,\nMaya": the same signoff over two lines, which the predicates'
    // normalisation accepts.
    let same = fixture(&SIGNOFF.replace('%', "Best,\\nMaya"));
    assert!(
        !has(&same, Check::Artefacts, Some("signoff")),
        "{:?}",
        checks_of(&same)
    );
}

#[test]
fn a_slot_whose_source_differs_across_variants_without_a_reason_is_rejected() {
    let ix = WorldIndex::new(world());
    let sibling = |id: &str| {
        candidates()
            .iter()
            .find(|b| b.task.task_id == id)
            .cloned()
            .unwrap_or_else(|| panic!("no candidate {id}"))
    };
    let (a, mut b) = (sibling("dinespot_dinner-01"), sibling("dinespot_dinner-02"));
    b.slot_mut("time").expect("time").source = Source::AskOnly;
    b.sync_hidden_context();
    let set: Vec<SlotSource> = [&a, &b]
        .iter()
        .flat_map(|t| {
            t.slots.iter().map(|s| SlotSource {
                task_id: t.task.task_id.clone(),
                slot_id: s.slot_id.clone(),
                source: s.source,
            })
        })
        .collect();
    let mismatch = |t: &TaskBundle| {
        validate_in_set(&ix, t, &set)
            .into_iter()
            .find(|r| r.check == Check::SourceMismatch)
    };
    let r = mismatch(&b).unwrap_or_else(|| panic!("no source_mismatch rejection"));
    assert_eq!(r.subject.as_deref(), Some("time"));
    assert!(r.reason.contains("dinespot_dinner-01"), "{}", r.reason);
    assert!(
        mismatch(&a).is_none(),
        "the variant with the natural source stays"
    );
    // Saying why in the instruction makes it a visible reason.
    b.task.instruction =
        "Book us a table for dinner on Saturday; the time is different this week.".into();
    assert!(mismatch(&b).is_none());
}
