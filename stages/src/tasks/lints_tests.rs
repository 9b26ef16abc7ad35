//! Each content lint rejects a fixture of its flaw class with its own reason, and stays quiet
//! on the fixed version of the same task.

use super::lints::SetView;
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
    let set = SetView::of(&[a.clone(), b.clone()]);
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

const PORTIONS: &str = r#"templates:
  - id: portions
    instruction: "%"
    slots:
      quantity: { ask: 3, keywords: [portions, servings], about: "How many portions to order", default: dashbite.place_order.quantity }
    criteria:
      - { id: ordered, rubric: "Ordered.", check: { inserted: dashbite.orders, where: { dish: d-pad-see-ew } } }
      - { id: quantity, slot: quantity, rubric: "Portions.", check: { inserted: dashbite.orders, where: { quantity: "{slot.quantity}" } } }
    solution:
      - ask: "How many portions should I order?"
      - { call: dashbite.place_order, args: { dish: d-pad-see-ew, quantity: "{slot.quantity}" } }
    variants: [{}]
"#;

/// Issue 25: counts a careful agent guesses right from the pronouns. "Get us …" suggests two,
/// "… for Priya and me" two, "for Sam, Priya and me" three; a request only about "me"
/// suggests one.
#[test]
fn an_ask_only_count_the_pronouns_give_away_is_rejected() {
    let tickets = |i: &str, n: i64| {
        fixture(
            &TICKETS
                .replace('%', i)
                .replace("ask: 3", &format!("ask: {n}")),
        )
    };
    let us = tickets("Get us tickets for Improv Thursdays.", 2);
    let r = reason(&us, Check::GuessableCount);
    assert!(r.contains("\"us\" suggests two"), "{r}");
    assert!(has(
        &tickets("Get tickets for Improv Thursdays for Priya and me.", 2),
        Check::GuessableCount,
        Some("quantity")
    ));
    assert!(has(
        &tickets("Get tickets for Improv Thursdays for Sam, Priya and me.", 3),
        Check::GuessableCount,
        Some("quantity")
    ));
    // Vague amounts have a usual reading: "a few" is three, "a couple" two.
    let few = tickets("Get a few tickets for Improv Thursdays.", 3);
    let r = reason(&few, Check::GuessableCount);
    assert!(r.contains("\"a few\" reads as 3"), "{r}");
    assert!(has(
        &tickets("Get a couple of tickets for Improv Thursdays.", 2),
        Check::GuessableCount,
        Some("quantity")
    ));
    assert!(!has(
        &tickets("Get a few tickets for Improv Thursdays.", 5),
        Check::GuessableCount,
        Some("quantity")
    ));
    // The count is not the guess: the user must be asked, and the task stands.
    assert!(!has(
        &tickets("Get us tickets for Improv Thursdays.", 4),
        Check::GuessableCount,
        Some("quantity")
    ));
    assert!(!has(
        &tickets("Get tickets for Improv Thursdays for Sam, Priya and me.", 4),
        Check::GuessableCount,
        Some("quantity")
    ));

    let portions = |i: &str| fixture(&PORTIONS.replace('%', i));
    // All first person, yet three portions: the wording says one.
    let alone = portions("Order dinner delivered tonight, but mild; my stomach is off.");
    let r = reason(&alone, Check::GuessableCount);
    assert!(r.contains("speaks only of the user"), "{r}");
    // Someone else in the request: more than one is a reading, so it must be asked.
    assert!(!has(
        &portions("Order dinner delivered tonight and let Sam know what's coming."),
        Check::GuessableCount,
        Some("quantity")
    ));
    // One more person joining the two of "us" makes three; a guest and the user make two.
    let brother =
        portions("Order dinner delivered tonight and tell Sam; his brother is joining us.");
    let r = reason(&brother, Check::GuessableCount);
    assert!(r.contains("make three"), "{r}");
    assert!(!has(
        &portions(
            "Order dinner delivered tonight and tell Sam; his brother's family is joining us."
        ),
        Check::GuessableCount,
        Some("quantity")
    ));
    assert!(!has(
        &portions("Order dinner delivered tonight, Priya's coming over."),
        Check::GuessableCount,
        Some("quantity")
    ));
    // "the … tee" is one tee.
    let tee = fixture(&TICKETS.replace('%', "Get me the Improv Thursdays ticket."));
    assert!(
        has(&tee, Check::Quantity, Some("quantity")),
        "{:?}",
        checks_of(&tee)
    );
}

const OCCASION: &str = r#"templates:
  - id: occasion
    instruction: "Book dinner at Baan Thai on Saturday."
    %
    slots:
      occasion: { ask: "{occasion}", keywords: [occasion, celebrating], about: "What the dinner celebrates", default: dinespot.book_table.occasion }
    criteria:
      - { id: booked, rubric: "Booked.", check: { inserted: dinespot.reservations, where: { date: "2025-10-04" } } }
      - { id: occasion, slot: occasion, rubric: "Occasion.", check: { inserted: dinespot.reservations, where: { occasion: "{slot.occasion}" } } }
    solution:
      - ask: "Is it for a special occasion?"
      - { call: dinespot.book_table, args: { restaurant: baan-thai, date: "2025-10-04", occasion: "{slot.occasion}" } }
    variants: [{ occasion: "{value}" }]
"#;

/// Issue 25: an ask-only option a careful agent copies from the phone — her latest reservation
/// is a date night — or reads in her history.
#[test]
fn an_ask_only_choice_her_latest_record_or_her_history_shows_is_rejected() {
    let t = |value: &str, overrides: &str| {
        fixture(&OCCASION.replace("{value}", value).replace('%', overrides))
    };
    // res-0920, her latest reservation, is a date night.
    let copied = t("date_night", "");
    let r = reason(&copied, Check::VisibleChoice);
    assert!(r.contains("res-0920") && r.contains("latest"), "{r}");
    // An anniversary is neither her latest booking's occasion nor in her history.
    let fresh = t("anniversary", "");
    assert!(
        !has(&fresh, Check::VisibleChoice, Some("occasion")),
        "{:?}",
        checks_of(&fresh)
    );
    // Named in her history, in the app she books in: an agent can read it.
    let told = t(
        "anniversary",
        r#"overrides: { history: [{ time: "2025-09-10T20:00", app: dinespot, text: "Booked a quiet corner table for their anniversary" }] }"#,
    );
    let r = reason(&told, Check::VisibleChoice);
    assert!(r.contains("named in her history"), "{r}");
}

const TRIP: &str = r#"templates:
  - id: trip
    instruction: "Will I need an umbrella on the first day of my Portland trip?"
    task_type: qa
    @OVERRIDES@
    slots:
      dates: { ask: "2025-10-17 to 2025-10-20", keywords: [dates, trip dates], about: "The dates of the Portland trip" }
    criteria:
      - { id: forecast, slot: dates, rubric: "Rain on the 17th.", check: { answer_contains: ["80%"] } }
    solution:
      - ask: "What are the dates of your Portland trip?"
      - { call: weather.list_forecasts, args: { where: { location: loc-pdx } } }
      - answer: "Yes: 80% chance of rain on October 17."
        plain: "I don't know."
    variants: [{}]
"#;

/// Issue 25: an ask-only date the phone already holds — a hotel booked in Portland from that
/// day — is not only the user's to say.
#[test]
fn an_ask_only_date_read_off_her_bookings_is_rejected() {
    let booked = fixture(&TRIP.replace(
        "@OVERRIDES@",
        r#"overrides: { app_data: [{ op: insert, table: staywell.bookings, id: sb-pdx, values: { hotel: h-juniper, check_in: "2025-10-17", nights: 3, room: standard_queen, room_preference: high_floor, breakfast: true, guests: 1, card: card-sapphire } }] }"#,
    ));
    let r = reason(&booked, Check::Derivable);
    assert!(
        r.contains("staywell.bookings sb-pdx") && r.contains("2025-10-17"),
        "{r}"
    );
    let open = fixture(&TRIP.replace("@OVERRIDES@", ""));
    assert!(
        !has(&open, Check::Derivable, Some("dates")),
        "{:?}",
        checks_of(&open)
    );
}

/// Issue 25: two tasks with one instruction are one task; the later id is rejected, the
/// earlier stays.
#[test]
fn an_instruction_given_twice_is_rejected_once() {
    let ix = WorldIndex::new(world());
    let first = candidates()
        .iter()
        .find(|b| b.task.task_id == "dinespot_dinner-01")
        .cloned()
        .expect("dinespot_dinner-01");
    let mut second = first.clone();
    second.task.task_id = "dinespot_dinner-09".into();
    second.task.instruction = format!("{}  ", first.task.instruction.to_uppercase());
    let set = SetView::of(&[first.clone(), second.clone()]);
    let dup = |b: &TaskBundle| {
        validate_in_set(&ix, b, &set)
            .into_iter()
            .filter(|r| r.check == Check::DuplicateInstruction)
            .count()
    };
    assert_eq!(dup(&second), 1);
    assert_eq!(dup(&first), 0);
    second.task.instruction = "Book us a table for dinner on Friday, somewhere new.".into();
    let set = SetView::of(&[first, second.clone()]);
    assert_eq!(
        validate_in_set(&ix, &second, &set)
            .into_iter()
            .filter(|r| r.check == Check::DuplicateInstruction)
            .count(),
        0
    );
}

const FOLLOW_UP: &str = r#"templates:
  - id: follow_up
    instruction: "Book Baan Thai %W and text Sam the time."
    slots:
      party_size: { ask: 4, keywords: [people, party size], about: "How many people", default: dinespot.book_table.party_size }
    criteria:
      - { id: booked, rubric: "Booked.", check: { inserted: dinespot.reservations, where: { restaurant: baan-thai, date: "%D" } } }
      - { id: party_size, slot: party_size, rubric: "Four.", check: { inserted: dinespot.reservations, where: { party_size: "{slot.party_size}" } } }
      - { id: told, rubric: "Sam gets a text.", check: { inserted: messages.messages, where: { thread: th-sam%TEXT% } } }
    solution:
      - ask: "How many people?"
      - { call: dinespot.book_table, args: { restaurant: baan-thai, date: "%D", party_size: "{slot.party_size}" } }
      - { call: messages.send_message, args: { thread: th-sam, text: "Baan Thai on Friday at 19:00" } }
    variants: [{}]
"#;

/// Issue 25: a step after the first must be scored on what it says, not only on where it went
/// ("text Sam the time" passes with any text otherwise).
#[test]
fn a_second_step_scored_only_by_its_recipient_is_rejected() {
    let follow_up = FOLLOW_UP
        .replace("%W", "on Friday")
        .replace("%D", "2025-10-03");
    let bare = fixture(&follow_up.replace("%TEXT%", ""));
    let r = reason(&bare, Check::UnscoredStep);
    assert!(
        r.contains("messages.send_message") && r.contains("messages.messages"),
        "{r}"
    );
    let scored = fixture(&follow_up.replace("%TEXT%", ", text: { contains: \"19:00\" }"));
    assert!(
        !checks_of(&scored)
            .iter()
            .any(|(c, ..)| *c == Check::UnscoredStep),
        "{:?}",
        checks_of(&scored)
    );
}

/// Issue 25 item 1: "on Friday", said on Thursday 2 October, means Friday 3 October; a task
/// scoring Friday 10 October scores the careful agent wrong. "next Friday" is next week's.
#[test]
fn a_weekday_that_reads_as_another_date_than_the_scored_one_is_rejected() {
    // The follow-up fixture, its text scored: only the day is in question here.
    let t = |words: &str, date: &str| {
        fixture(
            &FOLLOW_UP
                .replace("%W", words)
                .replace("%D", date)
                .replace("%TEXT%", ", text: { contains: \"19:00\" }"),
        )
    };
    let weekday_date = |b: &TaskBundle| {
        checks_of(b)
            .into_iter()
            .filter(|(c, ..)| *c == Check::WeekdayDate)
            .map(|(_, _, r)| r)
            .collect::<Vec<_>>()
    };
    // The released flaw: a bare Friday scored a week later.
    let bare = weekday_date(&t("on Friday", "2025-10-10"));
    assert_eq!(bare.len(), 1, "{bare:?}");
    assert!(
        bare[0].contains("2025-10-03")
            && bare[0].contains("2025-10-10")
            && bare[0].contains("next friday"),
        "{}",
        bare[0]
    );
    assert!(weekday_date(&t("on Friday", "2025-10-03")).is_empty());
    assert!(weekday_date(&t("this Friday", "2025-10-03")).is_empty());
    assert!(weekday_date(&t("this coming Friday", "2025-10-03")).is_empty());
    // "next Friday" on a Thursday is next week's Friday, not tomorrow.
    assert!(weekday_date(&t("next Friday", "2025-10-10")).is_empty());
    assert_eq!(weekday_date(&t("next Friday", "2025-10-03")).len(), 1);
    assert_eq!(weekday_date(&t("this Friday", "2025-10-10")).len(), 1);
    // Next week's Monday is also the coming one; "a week from Saturday" is the 11th.
    assert!(weekday_date(&t("next Monday", "2025-10-06")).is_empty());
    assert!(weekday_date(&t("on Monday", "2025-10-06")).is_empty());
    assert!(weekday_date(&t("a week from Saturday", "2025-10-11")).is_empty());
    assert_eq!(weekday_date(&t("on Saturday", "2025-10-11")).len(), 1);
    // Possessive weekdays are read too; today's own weekday means next week's unless today is scored.
    assert_eq!(
        weekday_date(&t("for Friday's dinner", "2025-10-10")).len(),
        1
    );
    assert!(weekday_date(&t("on Thursday", "2025-10-09")).is_empty());
    // A weekday no scored day has is the premise lint's finding, not this one's.
    assert!(weekday_date(&t("on Tuesday", "2025-10-10")).is_empty());
}

/// The reading rule itself, on a Thursday and on a Sunday, forwards and into the past.
#[test]
fn weekday_readings_follow_the_stated_rule() {
    use super::lints::weekday_reading;
    use crate::world::clock::Date;
    let d = |s: &str| Date::parse(s).unwrap();
    let thu = d("2025-10-02");
    assert_eq!(weekday_reading(thu, 4, None, false), d("2025-10-03"));
    assert_eq!(
        weekday_reading(thu, 4, Some("next"), false),
        d("2025-10-10")
    );
    assert_eq!(weekday_reading(thu, 3, None, false), d("2025-10-09"));
    assert_eq!(
        weekday_reading(thu, 6, Some("this"), false),
        d("2025-10-05")
    );
    assert_eq!(
        weekday_reading(thu, 6, Some("next"), false),
        d("2025-10-12")
    );
    assert_eq!(weekday_reading(thu, 6, None, true), d("2025-09-28"));
    assert_eq!(weekday_reading(thu, 4, Some("last"), true), d("2025-09-26"));
    let sun = d("2025-10-05");
    assert_eq!(weekday_reading(sun, 0, None, false), d("2025-10-06"));
    assert_eq!(
        weekday_reading(sun, 0, Some("next"), false),
        d("2025-10-06")
    );
    assert_eq!(weekday_reading(sun, 6, None, false), d("2025-10-12"));
}

#[test]
fn an_ask_only_rubric_saying_the_value_is_hers_must_require_that_she_was_asked() {
    // The rubric says she gave the count; the check passes a right guess never asked for.
    let unasked = TICKETS.replace(
        r#"rubric: "Three.", check: { inserted: tixly.orders, where: { quantity: "{slot.quantity}" } }"#,
        r#"rubric: "She gets {slot.quantity}, as she said.", check: { inserted: tixly.orders, where: { quantity: "{slot.quantity}" } }"#,
    );
    assert_ne!(unasked, TICKETS, "the fixture's criterion line changed");
    let t = |y: &str| fixture(&y.replace('%', "Get us tickets for Improv Thursdays."));
    let r = reason(&t(&unasked), Check::UnaskedOwnValue);
    assert!(
        r.contains("as she said") && r.contains("asked: quantity"),
        "{r}"
    );
    // With the condition, the same rubric stands.
    let asked = unasked.replace(
        r#"check: { inserted: tixly.orders, where: { quantity: "{slot.quantity}" } }"#,
        r#"check: { all: [{ asked: quantity }, { inserted: tixly.orders, where: { quantity: "{slot.quantity}" } }] }"#,
    );
    assert!(!has(&t(&asked), Check::UnaskedOwnValue, Some("quantity")));
    // A rubric about the value alone is judged on the outcome (iPrefBench §3.3).
    assert!(!has(&t(TICKETS), Check::UnaskedOwnValue, Some("quantity")));
}
