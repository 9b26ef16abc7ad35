use super::*;
use crate::world::clock::DateTime;
use crate::world::dataset_tests::default_world;

fn event(
    id: &str,
    when: &str,
    app: &str,
    text: &str,
    label: Label,
    supports: &[&str],
) -> HistoryEvent {
    HistoryEvent {
        event_id: id.into(),
        time: DateTime::parse(when).unwrap(),
        utc_offset_minutes: None,
        app: app.into(),
        location: "Home".into(),
        text: text.into(),
        label,
        category: "dining".into(),
        supports: supports.iter().map(|s| s.to_string()).collect(),
        counters: Vec::new(),
    }
}

/// The default world with `history` in place of its own.
fn world_with(history: Vec<HistoryEvent>) -> World {
    let w = default_world();
    World::new(w.catalog.clone(), w.persona.clone(), history)
}

/// The events one rule found.
fn found_by(found: &[(Rule, String)], rule: Rule) -> Vec<String> {
    found
        .iter()
        .filter(|(r, _)| *r == rule)
        .map(|(_, id)| id.clone())
        .collect()
}

fn rules(a: &WorldAudit) -> Vec<(Rule, String)> {
    a.contradictions
        .iter()
        .map(|c| (c.rule, c.event_id.clone()))
        .filter(|(_, id)| !id.starts_with("app:"))
        .collect()
}

#[test]
fn each_rule_finds_its_contradiction_and_only_it() {
    let s = Label::Signal;
    let w = world_with(vec![
        // After the Japanese → Thai shift (2025-06-14), a booking at a Japanese restaurant.
        event(
            "ev_1",
            "2025-07-02T19:00",
            "dinespot",
            "Reserved Ume Izakaya for 19:30 on DineSpot",
            s,
            &["din_time"],
        ),
        // Before the shift the same booking is fine.
        event(
            "ev_2",
            "2025-04-02T19:00",
            "dinespot",
            "Reserved Ume Izakaya for 19:30 on DineSpot",
            s,
            &["din_time"],
        ),
        // A steakhouse she avoids, as someone else's evidence.
        event(
            "ev_3",
            "2025-05-02T19:00",
            "dinespot",
            "Asked for patio seating at Harbor Chophouse",
            s,
            &["din_seating"],
        ),
        // The avoid-list's own evidence names the steakhouse to reject it: no contradiction.
        event(
            "ev_4",
            "2025-05-03T21:00",
            "tasterank",
            "Gave Harbor Chophouse 2 stars: \"too heavy\"",
            s,
            &["din_avoid"],
        ),
        // Tickets in March for a November show.
        event(
            "ev_5",
            "2025-03-05T20:00",
            "tixly",
            "Saved Hamilton at Orpheum Theatre to the wishlist",
            s,
            &["ent_x"],
        ),
        // One birthday booked twice on the same app; the calendar entry is another app.
        event(
            "ev_6",
            "2025-04-10T12:00",
            "dinespot",
            "Booked Lucca Osteria for Sam's birthday dinner",
            s,
            &["din_special"],
        ),
        event(
            "ev_7",
            "2025-04-11T12:00",
            "calendar",
            "Added Sam's birthday dinner to the calendar",
            s,
            &["din_special"],
        ),
        event(
            "ev_8",
            "2025-08-10T12:00",
            "dinespot",
            "Booked Lucca Osteria again for Sam's birthday",
            s,
            &["din_special"],
        ),
        // Noise that mentions a Japanese place after the shift is not her choice.
        event(
            "ev_9",
            "2025-08-12T12:00",
            "messages",
            "Tom said Ume Izakaya was packed",
            Label::Noise,
            &[],
        ),
    ]);
    let a = audit(&w, 7);
    assert_eq!(
        rules(&a),
        [
            (Rule::Shift, "ev_1".to_string()),
            (Rule::Avoid, "ev_3".to_string()),
            (Rule::BeforeExists, "ev_5".to_string()),
            (Rule::OneOffRepeated, "ev_8".to_string()),
        ]
    );
    let detail = &a
        .contradictions
        .iter()
        .find(|c| c.event_id == "ev_1")
        .unwrap()
        .detail;
    assert!(
        detail.contains("ume-izakaya") && detail.contains("2025-06-14"),
        "{detail}"
    );
}

#[test]
fn app_records_are_checked_against_shifts_and_avoids() {
    // dinespot's seed reservation res-0920 (2025-09-20) is at a Japanese restaurant, after the
    // shift; the rule must see app data, not just history text.
    let w = default_world();
    let mut cat = w.catalog.clone();
    let id = cat.table_id("dinespot.reservations", None).unwrap();
    let t = &mut cat.apps[id.app as usize].tables[id.table as usize];
    let f = t.field_idx("restaurant").unwrap();
    t.records[0].values[f] = serde_json::json!("ume-izakaya");
    let d = t.field_idx("date").unwrap();
    t.records[0].values[d] = serde_json::json!("2025-09-20");
    let moved = World::new(cat, w.persona.clone(), Vec::new());
    let hits = audit(&moved, 7).contradictions;
    assert!(
        hits.iter()
            .any(|c| c.rule == Rule::Shift && c.event_id.starts_with("app:dinespot.reservations/")),
        "{hits:?}"
    );
}

#[test]
fn separability_is_one_for_disjoint_words_and_chance_for_shared_ones() {
    let mut disjoint = Vec::new();
    let mut shared = Vec::new();
    for i in 0..200 {
        let (label, word) = if i % 2 == 0 {
            (Label::Signal, "booked")
        } else {
            (Label::Noise, "weather")
        };
        let id = format!("ev_{i}");
        disjoint.push(event(
            &id,
            "2025-04-01T10:00",
            "notes",
            &format!("{word} thing {i}"),
            label,
            &[],
        ));
        shared.push(event(
            &id,
            "2025-04-01T10:00",
            "notes",
            "checked the same thing",
            label,
            &[],
        ));
    }
    let s = separability(&disjoint, 7).unwrap();
    assert_eq!(s.balanced_accuracy, 1.0);
    assert_eq!(s.train + s.test, 200);
    let s = separability(&shared, 7).unwrap();
    assert!((s.balanced_accuracy - 0.5).abs() < 1e-9, "{s:?}");
    assert!(separability(&disjoint[..1], 7).is_none());
}

#[test]
fn distinct_ratio_and_agreement_count_what_they_say() {
    let s = Label::Signal;
    let mut counter = event(
        "ev_3",
        "2025-04-03T20:00",
        "dinespot",
        "Moved dinner to 20:15, Sam ran late",
        s,
        &[],
    );
    counter.counters = vec!["din_time".into()];
    let w = world_with(vec![
        event(
            "ev_1",
            "2025-04-01T19:00",
            "dinespot",
            "Reserved Dosa Corner for 19:30",
            s,
            &["din_time"],
        ),
        event(
            "ev_2",
            "2025-04-02T19:00",
            "dinespot",
            "Reserved Dosa Corner for 19:30",
            s,
            &["din_time"],
        ),
        counter,
    ]);
    let a = audit(&w, 7);
    assert_eq!((a.events, a.distinct_texts), (3, 2));
    let t = a.entries.iter().find(|e| e.entry == "din_time").unwrap();
    assert_eq!((t.supporting, t.counter), (2, 1));
    assert!((t.agreement - 2.0 / 3.0).abs() < 1e-9);
    let rows = rows(&a);
    assert!(rows
        .iter()
        .any(|r| r.section == "entry_agreement" && r.key == "din_time"));
    assert!(rows.iter().any(|r| r.section == "total"
        && r.key == "distinct_ratio"
        && (r.value - 2.0 / 3.0).abs() < 1e-9));
}

/// Signal "Booked <place> for <name> with <other>", noise "Booked <place> with <other> for
/// <name>": the same bag of words, told apart only by what the text ends with.
fn same_words_different_endings() -> Vec<HistoryEvent> {
    let names = ["Tom", "Priya", "Lena", "Marco", "Aisha", "Sam", "Ben"];
    let places = ["Lotus", "Kaiyo", "Dosa", "Siam", "Hinodeya"];
    (0..400)
        .map(|i| {
            let (p, a, b) = (places[i % 5], names[i % 7], names[(i / 7) % 7]);
            let (label, text) = if i % 2 == 0 {
                (Label::Signal, format!("Booked {p} for {a} with {b}"))
            } else {
                (Label::Noise, format!("Booked {p} with {b} for {a}"))
            };
            event(
                &format!("ev_{i}"),
                "2025-04-01T10:00",
                "dinespot",
                &text,
                label,
                &[],
            )
        })
        .collect()
}

#[test]
fn a_fixed_position_phrase_escapes_naive_bayes_but_not_the_single_feature_rule() {
    let h = same_words_different_endings();
    let nb = separability(&h, 7).unwrap();
    assert!(nb.balanced_accuracy < 0.6, "{nb:?}");
    let rule = rule_separability(&h, 7).unwrap();
    assert!(rule.balanced_accuracy > 0.99, "{rule:?}");
    assert!(rule.feature.ends_with(" $"), "{rule:?}");
}

#[test]
fn the_single_feature_rule_is_chance_when_texts_are_shared() {
    let h: Vec<HistoryEvent> = (0..200)
        .map(|i| {
            let label = if i % 2 == 0 {
                Label::Signal
            } else {
                Label::Noise
            };
            event(
                &format!("ev_{i}"),
                "2025-04-01T10:00",
                "notes",
                "Checked the same thing",
                label,
                &[],
            )
        })
        .collect();
    let rule = rule_separability(&h, 7).unwrap();
    assert!((rule.balanced_accuracy - 0.5).abs() < 1e-9, "{rule:?}");
    assert!(rule_separability(&h[..1], 7).is_none());
}

#[test]
fn the_audit_table_reports_the_rule_with_its_feature() {
    let w = World::new(
        default_world().catalog.clone(),
        default_world().persona.clone(),
        same_words_different_endings(),
    );
    let rows = rows(&audit(&w, 7));
    let r = rows
        .iter()
        .find(|r| r.section == "separability" && r.key == "rule_balanced_accuracy")
        .expect("rule row");
    assert!(r.value > 0.99 && r.detail.contains(" $` → "), "{r:?}");
}

/// The phone's coherence rules (issue 25): a flight flown before its day, a show bought that the
/// app holds no order of, one flight booked twice, a restaurant rated twice — each found by its
/// own rule, and the coherent tellings of the same records by none.
#[test]
fn purchases_completions_and_one_offs_are_checked_against_the_phone() {
    let s = Label::Signal;
    let w = world_with(vec![
        // AS 1205 (2025-04-18) is her booking bk-0418: booked in the weeks before, flown on the
        // day — coherent.
        event(
            "ev_1",
            "2025-03-30T20:00",
            "skyway",
            "Booked Alaska Airlines AS 1205 from SFO to PDX",
            s,
            &[],
        ),
        event(
            "ev_2",
            "2025-04-18T09:00",
            "skyway",
            "Flew AS 1205 to PDX in a window seat",
            s,
            &[],
        ),
        // Flown eight weeks before it departs.
        event(
            "ev_3",
            "2025-09-28T09:00",
            "skyway",
            "Flew DL 1562 to JFK for a work trip",
            s,
            &[],
        ),
        // Bought, but Tixly holds no order of Hamilton.
        event(
            "ev_4",
            "2025-09-10T20:00",
            "tixly",
            "Bought tickets for Hamilton at Orpheum Theatre",
            s,
            &[],
        ),
        // AS 1205 booked a second time.
        event(
            "ev_5",
            "2025-04-02T20:00",
            "skyway",
            "Booked Alaska Airlines AS 1205 again for the trip",
            s,
            &[],
        ),
        // Someone else's booking, and one she almost made, are no purchase of hers.
        event(
            "ev_6",
            "2025-09-12T20:00",
            "skyway",
            "Lena booked Delta DL 880 to PDX",
            Label::Noise,
            &[],
        ),
        event(
            "ev_7",
            "2025-09-13T20:00",
            "skyway",
            "Almost booked United UA 562 to PDX",
            Label::Noise,
            &[],
        ),
        // A flight is flown on its day (or lands the next morning), not a week later.
        event(
            "ev_10",
            "2025-04-19T08:00",
            "skyway",
            "Landed in PDX on AS 1205",
            s,
            &[],
        ),
        event(
            "ev_11",
            "2025-05-23T15:00",
            "skyway",
            "Flew out of SFO on AS 1346",
            s,
            &[],
        ),
        // One rating per place, however it is worded around.
        event(
            "ev_8",
            "2025-05-01T21:00",
            "tasterank",
            "Rated Baan Thai 5 stars on TasteRank after dinner there",
            s,
            &[],
        ),
        event(
            "ev_9",
            "2025-06-01T21:00",
            "tasterank",
            "Rated Baan Thai 5 stars on TasteRank on a rainy evening",
            s,
            &[],
        ),
    ]);
    let found = rules(&audit(&w, 7));
    let only = |rule: Rule| found_by(&found, rule);
    assert_eq!(
        only(Rule::CompletedBeforeDate),
        ["ev_3", "ev_11"],
        "{found:?}"
    );
    assert_eq!(only(Rule::PurchaseAbsent), ["ev_4"], "{found:?}");
    assert_eq!(only(Rule::RepeatedPurchase), ["ev_5"], "{found:?}");
    // Landing the next morning is on time, but it tells ev_2's flight a second time.
    assert_eq!(only(Rule::RepeatedCompletion), ["ev_10"], "{found:?}");
    assert_eq!(only(Rule::OneOffRepeated), ["ev_9"], "{found:?}");
}

#[test]
fn what_an_event_says_she_did_with_a_record() {
    use crate::world::rules::{act_on, Act};
    let cases = [
        (
            "Booked Alaska Airlines AS 1205 from SFO to PDX",
            Act::Purchase,
        ),
        ("This time, booked AS 1205 to PDX", Act::Purchase),
        (
            "Bought tickets for a comedy night, Improv Night at The Chapel",
            Act::Purchase,
        ),
        ("Flew AS 1205 to PDX in a window seat", Act::Completed),
        (
            "Saw Improv Night at The Chapel at The Chapel",
            Act::Completed,
        ),
        ("Lena booked AS 1205 and shared the itinerary", Act::Other),
        ("Almost booked AS 1205 for the trip", Act::Other),
        ("Set a fare alert on AS 1205 to PDX", Act::Other),
        ("Picked the window seat on AS 1205 to PDX", Act::Other),
    ];
    for (text, want) in cases {
        let label = if text.contains("AS 1205") {
            "as 1205"
        } else {
            "improv night at the chapel"
        };
        assert_eq!(act_on(text, label), want, "{text}");
    }
}

#[test]
fn a_core_text_drops_what_varies_between_tellings() {
    let w = default_world();
    let d = decorations(&w.catalog, &w.persona);
    let a = core_text(
        "Booked Baan Thai (Thai) on DineSpot with Aisha and Marco on Tuesday evening",
        &d,
    );
    let b = core_text(
        "This time, booked Baan Thai (Thai) on DineSpot (Friday morning)",
        &d,
    );
    assert_eq!(a, "booked baan thai thai on dinespot");
    assert_eq!(a, b);
    // A circumstance is what happened, not decoration.
    let c = core_text(
        "Booked Baan Thai (Thai) on DineSpot after a long week at work",
        &d,
    );
    assert_ne!(a, c);
}

#[test]
fn the_logistic_regression_finds_words_that_tell_the_classes_apart_and_no_others() {
    let mut telling = Vec::new();
    let mut shared = Vec::new();
    for i in 0..300 {
        let label = if i % 4 == 0 {
            Label::Noise
        } else {
            Label::Signal
        };
        let word = if label == Label::Noise {
            "browsed"
        } else {
            "booked"
        };
        let id = format!("ev_{i}");
        telling.push(event(
            &id,
            "2025-04-01T10:00",
            "notes",
            &format!("{word} place {}", i % 7),
            label,
            &[],
        ));
        shared.push(event(
            &id,
            "2025-04-01T10:00",
            "notes",
            &format!("booked place {}", i % 7),
            label,
            &[],
        ));
    }
    let t = logistic_separability(&telling, 7).unwrap();
    assert!(t.balanced_accuracy > 0.99, "{t:?}");
    // Balanced weights: the 75/25 prior alone buys nothing.
    let s = logistic_separability(&shared, 7).unwrap();
    assert!(s.balanced_accuracy < 0.6, "{s:?}");
    assert!(logistic_separability(&telling[1..4], 7).is_none());
    // The grams it reports are the telling words, each towards its class.
    let top = logistic_top_grams(&telling, 7);
    let towards = |noise: bool| -> Vec<&str> {
        top.iter()
            .filter(|g| (g.1 > 0.0) == noise)
            .take(2)
            .map(|g| g.0.as_str())
            .collect()
    };
    assert!(towards(true).contains(&"browsed"), "{top:?}");
    assert!(towards(false).contains(&"booked"), "{top:?}");
    assert!(logistic_top_grams(&telling[1..4], 7).is_empty());
}

/// Issue 25 audit: a circumstance must not contradict the clock ("after a long day" at 08:41,
/// "at the end of the day on Sunday morning"); names and plans are not the moment.
#[test]
fn what_a_text_says_of_the_time_of_day_agrees_with_its_hour() {
    use crate::world::rules::fits_clock;
    let text = "Ordered running shoes after a long day of browsing this morning";
    assert!(!fits_clock(text, 8));
    assert!(!fits_clock(text, 20), "two parts of the day at once");
    assert!(!fits_clock(
        "Sent an email at the end of the day on Sunday morning",
        9
    ));
    assert!(fits_clock("Sent an email at the end of the day", 18));
    assert!(!fits_clock("Paid the check this evening", 11));
    assert!(fits_clock("Paid the check this evening", 20));
    assert!(fits_clock("Set the alarm this night", 2));
    assert!(!fits_clock("Checked her inbox during a quiet afternoon", 9));
    assert!(fits_clock("Checked her inbox during a quiet afternoon", 15));
    // Names and plans are not the moment.
    assert!(fits_clock("Played the Sunday Morning playlist", 20));
    assert!(fits_clock("Gave up her Tuesday morning block", 15));
    assert!(fits_clock("Set a reminder before a busy morning", 21));
}

#[test]
fn a_circumstance_may_not_name_another_town_or_a_second_purpose() {
    let s = Label::Signal;
    let w = world_with(vec![
        // AS 1205 goes to PDX: a Seattle circumstance contradicts it, in words or through the
        // flight it names.
        event(
            "ev_1",
            "2025-04-18T09:00",
            "skyway",
            "Landed in PDX on Alaska Airlines AS 1205 to visit Aisha in Seattle",
            s,
            &[],
        ),
        event(
            "ev_2",
            "2025-04-18T10:00",
            "skyway",
            "Flew AS 1205 in a window seat to visit Aisha in Seattle",
            s,
            &[],
        ),
        // One town, said twice (code and name), a stop on the way, and a hotel in the town
        // the flight goes to: coherent.
        event(
            "ev_3",
            "2025-04-18T11:00",
            "skyway",
            "Landed in PDX on AS 1205 for a long weekend in Portland",
            s,
            &[],
        ),
        event(
            "ev_4",
            "2025-08-07T09:00",
            "skyway",
            "Flew UA 1533 to AUS via Denver",
            s,
            &[],
        ),
        event(
            "ev_5",
            "2025-04-10T20:00",
            "staywell",
            "Saved Hotel Juniper ahead of AS 1205",
            s,
            &[],
        ),
        // A purpose after a purpose.
        event(
            "ev_6",
            "2025-05-10T20:00",
            "staywell",
            "Saved a cabin in Tahoe for a maybe-someday trip for Dev's conference talk",
            Label::Noise,
            &[],
        ),
        event(
            "ev_7",
            "2025-05-11T20:00",
            "zipride",
            "Switched from Standard to a Shared ride to save money to meet Tom at the office",
            s,
            &[],
        ),
        // One purpose, and words that only look like one: what was asked, where it went.
        event(
            "ev_8",
            "2025-05-12T20:00",
            "messages",
            "Asked Priya to check on the cat for one night to keep things easy",
            s,
            &[],
        ),
        event(
            "ev_9",
            "2025-05-13T20:00",
            "skyway",
            "Moved to a window seat on AS 1205 for a family visit",
            s,
            &[],
        ),
        // Whom or what the act serves is a purpose too; a duration is not.
        event(
            "ev_10",
            "2025-05-14T20:00",
            "freshcart",
            "Ordered Tiki Cat Puka Puka Chicken for the cat for a potluck",
            s,
            &[],
        ),
        event(
            "ev_11",
            "2025-05-15T20:00",
            "podwave",
            "Paused the episode for a few minutes to check the traffic",
            s,
            &[],
        ),
    ]);
    let found = rules(&audit(&w, 7));
    let only = |rule: Rule| found_by(&found, rule);
    assert_eq!(only(Rule::PlaceConflict), ["ev_1", "ev_2"], "{found:?}");
    assert_eq!(
        only(Rule::PurposeTwice),
        ["ev_6", "ev_7", "ev_10"],
        "{found:?}"
    );
}

#[test]
fn work_on_a_day_off_and_a_weekday_that_is_not_the_events_own_are_found() {
    // 2025-07-04 is a Friday and a holiday, 07-05 a Saturday, 07-06 a Sunday, 07-08 a Tuesday.
    let s = Label::Signal;
    let at_work = |mut e: HistoryEvent| {
        e.location = default_world().persona.places["work"].clone();
        e
    };
    let w = world_with(vec![
        event(
            "ev_1",
            "2025-07-06T08:00",
            "metromap",
            "Rode the N Judah to work",
            s,
            &[],
        ),
        event(
            "ev_2",
            "2025-07-08T08:00",
            "metromap",
            "Rode the N Judah to work",
            s,
            &[],
        ),
        event(
            "ev_3",
            "2025-07-04T08:00",
            "zipride",
            "Took a ZipRide from home to the office",
            s,
            &[],
        ),
        at_work(event(
            "ev_4",
            "2025-07-05T12:00",
            "newsly",
            "Read a headline",
            s,
            &[],
        )),
        // Not work: shopping for the office, a week at work behind her, an office day planned.
        event(
            "ev_5",
            "2025-07-05T12:00",
            "shopnest",
            "Bought a sweater for the office",
            s,
            &[],
        ),
        event(
            "ev_6",
            "2025-07-05T19:00",
            "dinespot",
            "Booked Baan Thai after a long week at work",
            s,
            &[],
        ),
        // A weekday phrase of the event's own day, or of another day it tells of: fine.
        event(
            "ev_7",
            "2025-07-06T09:00",
            "tunely",
            "Played the Sunday Morning playlist on Sunday, quickly",
            s,
            &[],
        ),
        event(
            "ev_8",
            "2025-07-08T20:00",
            "messages",
            "Told Sam the groceries arrive 10:00-12:00 on Sunday",
            s,
            &[],
        ),
        event(
            "ev_9",
            "2025-07-10T12:00",
            "calendar",
            "Added a recurring Focus block on Tuesday mornings",
            s,
            &[],
        ),
        // Another day than the date: flagged.
        event(
            "ev_10",
            "2025-07-08T12:00",
            "tunely",
            "Played a playlist on Sunday from her phone",
            s,
            &[],
        ),
        event(
            "ev_11",
            "2025-07-08T12:00",
            "health",
            "Logged a 10 km run (Sunday morning)",
            s,
            &[],
        ),
        event(
            "ev_12",
            "2025-07-08T12:00",
            "health",
            "Went for a run on Sunday morning, quickly",
            s,
            &[],
        ),
    ]);
    let found = rules(&audit(&w, 7));
    let only = |rule: Rule| found_by(&found, rule);
    assert_eq!(
        only(Rule::WorkOnDayOff),
        ["ev_1", "ev_3", "ev_4"],
        "{found:?}"
    );
    assert_eq!(
        only(Rule::WeekdayMismatch),
        ["ev_10", "ev_11", "ev_12"],
        "{found:?}"
    );
}
