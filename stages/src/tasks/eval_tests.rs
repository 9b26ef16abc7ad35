//! Predicates evaluated on the real simulated phone over the default world.

use serde_json::{json, Value};

use super::eval::Episode;
use super::model::{Slot, Source};
use super::predicate::Predicate;
use super::testkit::world;
use crate::world::phone::{Action, EpisodeConfig, NoUser, Phone};

fn slot(id: &str, value: Value, keywords: &[&str]) -> Slot {
    Slot {
        slot_id: id.into(),
        source: Source::AskOnly,
        evidence: vec![],
        value,
        keywords: keywords.iter().map(|s| s.to_string()).collect(),
        app_default: None,
        profile_entry: None,
        about: String::new(),
    }
}

fn act(p: &mut Phone<'_>, v: Value) {
    let a: Action = serde_json::from_value(v).unwrap();
    let o = p.step(&a);
    assert!(!o.is_error(), "{}", o.text);
}

fn holds(p: &Phone<'_>, slots: &[Slot], pred: Value) -> bool {
    Episode::new(p, slots).check(&Predicate::parse(&pred).unwrap())
}

#[test]
fn record_checks_follow_refs_and_read_slots() {
    let mut p = Phone::new(world(), EpisodeConfig::default(), Box::new(NoUser)).unwrap();
    let slots = [slot("party", json!(4), &["how many"])];
    let booked = json!({ "inserted": "dinespot.reservations", "where": { "restaurant.cuisine": "thai", "party_size": { "$slot": "party" } } });
    assert!(!holds(&p, &slots, booked.clone()), "nothing booked yet");
    act(
        &mut p,
        json!({ "action": "call", "tool": "dinespot.book_table", "args": { "restaurant": "baan-thai", "date": "2025-10-03", "party_size": 4 } }),
    );
    assert!(holds(&p, &slots, booked));
    let wrong_size = [slot("party", json!(5), &[])];
    assert!(!holds(
        &p,
        &wrong_size,
        json!({ "inserted": "dinespot.reservations", "where": { "party_size": { "$slot": "party" } } })
    ));
    assert!(holds(
        &p,
        &slots,
        json!({ "inserted": "calendar.events", "where": { "title": { "contains": "baan thai" }, "start": "19:00" } })
    ));
    assert!(!holds(
        &p,
        &slots,
        json!({ "not": { "inserted": "dinespot.reservations" } })
    ));
    assert!(holds(
        &p,
        &slots,
        json!({ "called": "dinespot.book_table", "args": { "seating": "indoor", "restaurant.price": "$$" } })
    ));
    assert!(!holds(
        &p,
        &slots,
        json!({ "called": "dinespot.book_table", "args": { "seating": { "not": "indoor" } } })
    ));
    assert!(holds(
        &p,
        &slots,
        json!({ "exists": "dinespot.reservations", "where": { "id": "res-0920" } })
    ));
}

#[test]
fn answer_and_question_checks() {
    let slots = [slot("party", json!(4), &["how many", "people"])];
    let mut p = Phone::new(world(), EpisodeConfig::default(), Box::new(NoUser)).unwrap();
    act(
        &mut p,
        json!({ "action": "ask_user", "text": "Which day works?" }),
    );
    assert!(!holds(&p, &slots, json!({ "asked": "party" })));
    act(
        &mut p,
        json!({ "action": "ask_user", "text": "How many PEOPLE are coming?" }),
    );
    assert!(holds(&p, &slots, json!({ "asked": "party" })));
    act(
        &mut p,
        json!({ "action": "answer", "text": "Take AS 1211, the 07:05 nonstop." }),
    );
    let nonstop_alaska = json!({ "answer_mentions": "skyway.flights", "field": "number", "where": { "airline": "Alaska Airlines", "stops": 0 } });
    assert!(holds(&p, &slots, nonstop_alaska.clone()));
    assert!(holds(
        &p,
        &slots,
        json!({ "answer_contains": ["as 1211", "07:05"] })
    ));
    assert!(!holds(
        &p,
        &slots,
        json!({ "answer_contains": ["as 1211", "united"] })
    ));
    assert!(holds(
        &p,
        &slots,
        json!({ "answer_contains_any": ["united", "nonstop"] })
    ));
    act(
        &mut p,
        json!({ "action": "answer", "text": "AS 1211 or UA 562." }),
    );
    assert!(
        !holds(&p, &slots, nonstop_alaska),
        "naming a United flight too must not pass"
    );
    act(&mut p, json!({ "action": "answer", "text": " four " }));
    assert!(holds(&p, &slots, json!({ "answer_equals": "Four." })));
}

#[test]
fn updated_deleted_and_exists_checks_read_the_diff_and_the_state() {
    let mut p = Phone::new(world(), EpisodeConfig::default(), Box::new(NoUser)).unwrap();
    let cancelled = json!({ "updated": "dinespot.reservations", "where": { "id": "res-0920" } });
    let gone = json!({ "deleted": "calendar.events", "where": { "id": "ev-focus" } });
    let focus = json!({ "exists": "calendar.events", "where": { "id": "ev-focus" } });
    assert!(!holds(&p, &[], cancelled.clone()));
    assert!(!holds(&p, &[], gone.clone()));
    assert!(holds(&p, &[], focus.clone()));
    act(
        &mut p,
        json!({ "action": "call", "tool": "dinespot.cancel_reservation", "args": { "reservation": "res-0920" } }),
    );
    act(
        &mut p,
        json!({ "action": "call", "tool": "calendar.delete_event", "args": { "event": "ev-focus" } }),
    );
    assert!(holds(&p, &[], cancelled));
    assert!(holds(&p, &[], gone));
    assert!(!holds(&p, &[], focus));
    // A deleted record is not "updated", and a condition on another id matches nothing.
    assert!(!holds(
        &p,
        &[],
        json!({ "updated": "calendar.events", "where": { "id": "ev-focus" } })
    ));
    assert!(!holds(
        &p,
        &[],
        json!({ "deleted": "calendar.events", "where": { "id": "ev-other" } })
    ));
}

/// A phone whose user was asked `questions` and that answered `answer`.
fn talked(questions: &[&str], answer: Option<&str>) -> Phone<'static> {
    let mut p = Phone::new(world(), EpisodeConfig::default(), Box::new(NoUser)).unwrap();
    for q in questions {
        act(&mut p, json!({ "action": "ask_user", "text": q }));
    }
    if let Some(a) = answer {
        act(&mut p, json!({ "action": "answer", "text": a }));
    }
    p
}

#[test]
fn text_checks_ignore_case_spacing_quotes_and_final_punctuation() {
    let slots = [
        slot("signoff", json!("Best, Maya"), &["signoff"]),
        slot(
            "detail",
            json!("Sunday at 10:30 works for me."),
            &["brunch"],
        ),
    ];
    let mut p = Phone::new(world(), EpisodeConfig::default(), Box::new(NoUser)).unwrap();
    act(
        &mut p,
        json!({ "action": "call", "tool": "mail.send_email", "args": {
            "to": "priya.nair@gmail.com", "subject": "Brunch",
            "body": "Hi Priya,\n\nSUNDAY at 10:30  works for me!\n\nBest,\nMaya" } }),
    );
    let body = |slot: &str| json!({ "inserted": "mail.emails", "where": { "body": { "contains": { "$slot": slot } } } });
    assert!(
        holds(&p, &slots, body("signoff")),
        "a signoff over two lines"
    );
    assert!(
        holds(&p, &slots, body("detail")),
        "case, spacing and the final period"
    );
    assert!(!holds(
        &p,
        &slots,
        json!({ "inserted": "mail.emails", "where": { "body": { "contains": "Cheers, Maya" } } })
    ));
    let p = talked(&[], Some("It’s booked for Friday!"));
    assert!(holds(
        &p,
        &slots,
        json!({ "answer_equals": "it's booked for friday." })
    ));
    assert!(holds(
        &p,
        &slots,
        json!({ "answer_contains": ["IT'S BOOKED"] })
    ));
}

#[test]
fn told_accepts_a_question_or_the_final_answer_and_asked_reads_the_matcher() {
    let slots = [
        slot("fallback_time", json!("20:30"), &["19:30", "another time"]),
        slot("bags", json!(0), &["bags"]),
    ];
    let told = json!({ "told_any": ["not available", "no table"] });
    let asked_first = talked(
        &["Baan Thai has no table at 19:30. Is another time okay?"],
        None,
    );
    assert!(
        holds(&asked_first, &slots, told.clone()),
        "said while asking"
    );
    assert!(holds(
        &talked(&[], Some("19:30 is not available, so I stopped.")),
        &slots,
        told.clone()
    ));
    assert!(!holds(
        &talked(&["Which seating?"], Some("Done.")),
        &slots,
        told
    ));
    assert!(holds(
        &asked_first,
        &slots,
        json!({ "asked": "fallback_time" })
    ));
    // A question about something else asks about no slot, so `asked: bags` does not hold;
    // "How many?" in a task whose only count is the bags asks about the bags.
    let other = talked(&["Is it raining?"], None);
    assert!(!holds(&other, &slots, json!({ "asked": "bags" })));
    let vague = talked(&["How many?"], None);
    assert!(holds(&vague, &slots, json!({ "asked": "bags" })));
    assert!(holds(
        &talked(&["How many bags?"], None),
        &slots,
        json!({ "asked": "bags" })
    ));
}
