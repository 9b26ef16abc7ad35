//! Times and ranges as values (issue 29 items 1 and 3): a meeting preference's window and length
//! are checked against the event as scheduled (its start–end interval and duration), not
//! against times the notes mention; a proactive habit's window is checked as a range (the
//! action's time inside the trigger's `time_range`, as KnowU's WeeklyReport and
//! MorningPaperReading check it).

use serde_json::json;

use super::checks_tests::call;
use super::prefs::{check_scheduled, parse, slot, Scheduled};
use super::tests::{ask, generated, persona_from, play, reference, task, world_for};
use super::KnowuTask;

/// A persona (written for this test) with KnowU's user's meeting preference, worded as that
/// profile words it, and KnowU's weekly-report and paper-reading habits on windows of her own.
const IDA: &str = r#"
user_profile:
  identity: { full_name: Ida Berg, age: 39, occupation: "Research lead" }
  locations: { home: { address: "Storgatan 1", label: Home }, work: { address: "KTH lab 4", label: Lab } }
  habits:
    weekly_report:
      description: "Sends the weekly report to her director on Thursday afternoons."
      trigger: { day_of_week: Thursday, time_range: ["15:00", "15:20"] }
      action: { type: send_email, recipient: "director@lab.example" }
    morning_routine:
      description: "Checks AlphaXiv and HuggingFace Papers every morning."
      trigger: { time_range: ["07:40", "07:50"] }
  preferences:
    social:
      meeting_preference:
        scheduling: "Avoids meetings between 9:00 - 11:30 (Deep work block)"
        duration: "Prefers 30 min max"
"#;

fn at(hhmm: &str, minutes: u16) -> Scheduled {
    let (h, m) = hhmm.split_once(':').unwrap();
    Scheduled {
        start: h.parse::<u16>().unwrap() * 60 + m.parse::<u16>().unwrap(),
        minutes,
    }
}

#[test]
fn a_meeting_window_and_length_are_checked_against_the_scheduled_interval() {
    let req = parse(&json!({
        "scheduling": "Avoids meetings between 9:00 - 11:30 (Deep work block)",
        "duration": "Prefers 30 min max"
    }));
    let share = |s: Scheduled, notes: &str| check_scheduled(&req, notes, Some(s)).share();
    assert_eq!(share(at("14:00", 30), ""), 1.0);
    assert_eq!(share(at("11:30", 30), ""), 1.0, "right after the block");
    assert_eq!(share(at("08:30", 30), ""), 1.0, "ends as the block starts");
    // Inside, overlapping its start or its end: the window fails, whatever the notes say.
    assert!(share(at("10:00", 30), "at 14:00") < 1.0);
    assert!(share(at("08:45", 30), "") < 1.0);
    assert!(share(at("11:15", 30), "") < 1.0);
    // Too long: the bound fails.
    assert!(share(at("14:00", 60), "") < 1.0);
    // The slot a reference agent takes meets both.
    let s = slot(&req, 30);
    assert_eq!(share(s, ""), 1.0, "{s:?}");
    // A wanted window holds only for an interval inside it whole.
    let only = parse(&json!("Meetings only between 14:00 and 16:00"));
    assert_eq!(
        check_scheduled(&only, "", Some(at("15:00", 60))).share(),
        1.0
    );
    assert!(check_scheduled(&only, "", Some(at("15:30", 60))).share() < 1.0);
}

fn meeting(start: &str, minutes: u64, notes: &str) -> Vec<crate::world::phone::Action> {
    vec![call(
        "calendar.create_event",
        json!({ "title": "Project discussion", "date": "2026-02-10", "start": start, "duration": minutes, "notes": notes }),
    )]
}

#[test]
fn the_meeting_task_scores_the_event_as_scheduled() {
    let ida = persona_from("ida", IDA);
    let world = world_for(&ida);
    let g = generated(&ida, &world);
    let t = task(&g, "CalendarScheduleGroupMeetingTask");
    let score = |actions| play(&world, t, actions).0.unwrap();
    assert_eq!(score(reference(t)), 1.0);
    assert_eq!(score(meeting("14:00", 30, "Project sync")), 1.0);
    // λ (0.4) for the event, and the judged part by the share of her requirements met.
    let lambda = t.info.lambda.unwrap();
    let wrong = [
        meeting("10:00", 30, "Project sync at 14:00, 30 min"),
        meeting("14:00", 90, "Project sync"),
        meeting("08:30", 60, "Project sync"),
    ];
    for w in wrong {
        let s = score(w.clone());
        assert!(s >= lambda && s < 1.0, "{w:?}: {s}");
    }
    // The plain agent's default (09:00 for an hour) misses both.
    let plain = super::tests::actions(&t.bundle.task.defaults_solution);
    assert!((score(plain) - lambda).abs() < 1e-9);
    // The general twin spells the preference out and passes or fails as a whole.
    let twin = task(&g, "CalendarScheduleGroupMeetingGeneralTask");
    assert_eq!(play(&world, twin, meeting("11:30", 30, "")).0, Some(1.0));
    assert_eq!(play(&world, twin, meeting("10:00", 30, "")).0, Some(0.0));
}

/// `t` with its situation's clock moved to `clock` (the same day).
fn at_clock(t: &KnowuTask, clock: &str) -> KnowuTask {
    let mut moved = t.clone();
    if let Some(s) = moved.info.situation.as_mut() {
        s.clock = Some(clock.to_string());
    }
    moved
}

#[test]
fn a_habits_window_is_checked_as_a_range() {
    let ida = persona_from("ida", IDA);
    let world = world_for(&ida);
    let g = generated(&ida, &world);
    // WeeklyReport: Thursday 15:00–15:20 (KnowU: the sent time inside the trigger's range).
    let report = task(&g, "WeeklyReportRoutineTask");
    let clock = report
        .info
        .situation
        .as_ref()
        .unwrap()
        .clock
        .clone()
        .unwrap();
    assert_eq!(clock, "2026-02-19T15:00");
    for (at, want) in [
        ("2026-02-19T15:00", 1.0),
        ("2026-02-19T15:20", 1.0),
        ("2026-02-19T15:21", 0.0),
        ("2026-02-19T14:59", 0.0),
        ("2026-02-20T15:10", 0.0), // the right time on the wrong day
    ] {
        let moved = at_clock(report, at);
        assert_eq!(
            play(&world, &moved, reference(&moved)).0,
            Some(want),
            "{at}"
        );
    }
    // MorningPaperReading: both sites inside 07:40–07:50.
    let papers = task(&g, "MorningPaperReadingTask");
    let open = |url: &str| call("browser.open_url", json!({ "url": url }));
    let both = vec![
        ask("Shall I open your papers?"),
        open("https://www.alphaxiv.org"),
        open("https://huggingface.co/papers"),
    ];
    for (at, want) in [("2026-02-10T07:45", 1.0), ("2026-02-10T08:25", 0.0)] {
        let moved = at_clock(papers, at);
        assert_eq!(play(&world, &moved, both.clone()).0, Some(want), "{at}");
    }
    assert_eq!(play(&world, papers, reference(papers)).0, Some(1.0));
}
