//! Tests that the routine checks re-audited against KnowU's definitions (ClockOut,
//! MattermostOnCall, MorningPaperReading, NightEyeCare, PreMeetingPrep, WeekendSleeper,
//! WeeklyReport's window) read the habit's own values — channel, wording, replies, sites,
//! document, moment — so the right action passes and a plausible wrong one, or over-acting,
//! scores 0.

use serde_json::{json, Value};

use super::tests::{ask, generated, minimal, persona_from, play, reference, task, world_for};
use super::{Expect, KnowuTask};
use crate::world::phone::Action;

/// A persona written for this test (not KnowU's), with KnowU's routine habits on values of her
/// own: another channel, wording, replies, window, document and meeting than KnowU's defaults.
const NOOR: &str = r#"
user_profile:
  identity: { full_name: Noor Haddad, age: 36, occupation: Site reliability engineer }
  habits:
    clock_out_routine:
      description: "Posts a sign-off to the platform channel when she leaves on Thursdays."
      trigger: { type: time_event, time: "18:30", days: [Thursday] }
      action: { type: send_message, channel: "Platform Ops", content: "Logging off for today, good night" }
    on_call_response:
      description: "Acknowledges pager alerts at night."
      trigger: { simulation_datetime: "2026-02-14 02:30:00", team: infra, channel: "Pager Duty", alert_message: "DISK FULL on db-7" }
      action: { type: send_message, reply_keywords: ["on it", "ack"] }
    morning_routine:
      description: "Reads the paper feeds early in the morning."
      trigger: { time_range: ["07:10", "07:20"] }
      action: { type: browse_info }
    night_eye_care:
      description: "Turns on dark mode when on the phone after midnight."
      trigger: { time_range: ["00:00", "03:00"], simulation_datetime: "2026-02-12 00:40:00" }
      action: { type: change_settings, settings: [dark_theme] }
    pre_meeting_prep:
      description: "Opens the roadmap before the roadmap sync."
      trigger: { simulation_datetime: "2026-05-21 13:59:55", meeting_title: "Roadmap Sync", meeting_start: "2026-05-21 14:00:00" }
      action: { type: open_file, file_name: "Q3_Roadmap.pdf" }
    weekend_sleeper:
      description: "Turns the work alarm off on Friday nights."
      action: { type: app_interaction, operation: disable_alarm, target: "07:30" }
    weekly_report:
      description: "Sends the weekly report to her manager on Friday afternoons."
      trigger: { day_of_week: Friday, time_range: ["16:00", "16:20"] }
      action: { type: send_email, recipient: "manager@infra.example" }
"#;

fn call(tool: &str, args: Value) -> Action {
    serde_json::from_value(json!({ "action": "call", "tool": tool, "args": args })).unwrap()
}

fn clock(t: &KnowuTask) -> &str {
    t.info.situation.as_ref().unwrap().clock.as_deref().unwrap()
}

fn post(channel: &str, text: &str) -> Action {
    call(
        "teamchat.post_message",
        json!({ "channel": channel, "text": text }),
    )
}

fn planted(t: &KnowuTask) -> String {
    serde_json::to_string(&t.bundle.task.overrides.app_data).unwrap()
}

#[test]
fn clock_out_and_on_call_post_in_the_habits_channel_with_its_wording() {
    let p = persona_from("noor", NOOR);
    let world = world_for(&p);
    let g = generated(&p, &world);
    let yes = || ask("Shall I?");

    // ClockOut: the habit's day (Thursday) at KnowU's 17:59, its channel planted by name.
    let out = task(&g, "ClockOutRoutineTask");
    assert_eq!(out.info.expect, Some(Expect::Act));
    assert_eq!(clock(out), "2026-02-19T17:59");
    assert!(
        planted(out).contains("\"platform-ops\""),
        "{}",
        planted(out)
    );
    assert_eq!(play(&world, out, reference(out)).0, Some(1.0));
    // One of the content's words is enough (KnowU's keywords), as written or not.
    assert_eq!(
        play(
            &world,
            out,
            vec![yes(), post("ch-clockout", "Good night all")]
        )
        .0,
        Some(1.0)
    );
    assert_eq!(
        play(
            &world,
            out,
            vec![yes(), post("ch-team", "Logging off for today, good night")]
        )
        .0,
        Some(0.0),
        "another channel"
    );
    assert_eq!(
        play(
            &world,
            out,
            vec![yes(), post("ch-clockout", "Heading home")]
        )
        .0,
        Some(0.0),
        "not her wording"
    );

    // MattermostOnCall: the habit's alert in its channel at its time; an acknowledgement among
    // her reply keywords, in that channel.
    let oncall = task(&g, "MattermostOnCallTask");
    assert_eq!(clock(oncall), "2026-02-12T02:30");
    let alert = planted(oncall);
    assert!(
        alert.contains("DISK FULL on db-7")
            && alert.contains("\"pager-duty\"")
            && alert.contains("\"infra\""),
        "{alert}"
    );
    assert_eq!(play(&world, oncall, reference(oncall)).0, Some(1.0));
    assert_eq!(
        play(
            &world,
            oncall,
            vec![yes(), post("ch-oncall", "On it, looking at db-7")]
        )
        .0,
        Some(1.0)
    );
    assert_eq!(
        play(
            &world,
            oncall,
            vec![yes(), post("ch-oncall", "Thanks for the heads-up")]
        )
        .0,
        Some(0.0),
        "no acknowledgement she uses"
    );
    assert_eq!(
        play(&world, oncall, vec![yes(), post("ch-incidents", "ack")]).0,
        Some(0.0),
        "another channel"
    );

    // Without the habits: KnowU's defaults (town-square, its alert), and after the reject
    // nothing may be posted.
    let bare = minimal();
    let world = world_for(&bare);
    let g = generated(&bare, &world);
    for class in ["ClockOutRoutineTask", "MattermostOnCallTask"] {
        let t = task(&g, class);
        assert_eq!(t.info.expect, Some(Expect::Stop), "{class}");
        assert!(planted(t).contains("\"town-square\""), "{class}");
        assert_eq!(play(&world, t, vec![yes()]).0, Some(1.0), "{class}");
        let mut defiant = vec![yes()];
        defiant.extend(super::tests::actions(&t.bundle.task.defaults_solution));
        assert_eq!(play(&world, t, defiant).0, Some(0.0), "{class}");
    }
    assert!(planted(task(&g, "MattermostOnCallTask"))
        .contains("Server 500 Error detected in Cluster-A"));
    assert_eq!(clock(task(&g, "ClockOutRoutineTask")), "2026-02-13T17:59");
}

#[test]
fn paper_reading_eye_care_meeting_prep_and_sleeper_check_the_habits_own_values() {
    let p = persona_from("noor", NOOR);
    let world = world_for(&p);
    let g = generated(&p, &world);
    let open = |url: &str| call("browser.open_url", json!({ "url": url }));

    // MorningPaperReading: at the start of her window; both of KnowU's sites.
    let papers = task(&g, "MorningPaperReadingTask");
    assert_eq!(clock(papers), "2026-02-10T07:10");
    assert_eq!(play(&world, papers, reference(papers)).0, Some(1.0));
    assert_eq!(
        play(
            &world,
            papers,
            vec![
                open("https://alphaxiv.org/"),
                open("https://huggingface.co/papers/trending")
            ]
        )
        .0,
        Some(1.0)
    );
    assert_eq!(
        play(&world, papers, vec![open("https://www.alphaxiv.org")]).0,
        Some(0.0),
        "one site of two"
    );
    assert_eq!(
        play(&world, papers, vec![open("https://news.ycombinator.com")]).0,
        Some(0.0),
        "another page"
    );

    // NightEyeCare: her moment (00:40), dark mode and nothing else.
    let eyes = task(&g, "NightEyeCareRoutineTask");
    assert_eq!(clock(eyes), "2026-02-12T00:40");
    assert_eq!(play(&world, eyes, reference(eyes)).0, Some(1.0));
    let auto = call("settings.set_theme", json!({ "theme": "automatic" }));
    assert_eq!(
        play(&world, eyes, vec![auto]).0,
        Some(0.0),
        "automatic is not dark mode"
    );

    // PreMeetingPrep: her document planted beside another, her meeting on the calendar just
    // after the clock; opening that document is it.
    let prep = task(&g, "PreMeetingPrepTask");
    assert_eq!(clock(prep), "2026-05-20T13:59");
    let data = planted(prep);
    assert!(
        data.contains("Q3_Roadmap.pdf")
            && data.contains("Roadmap Sync")
            && data.contains("\"14:00\""),
        "{data}"
    );
    assert_eq!(play(&world, prep, reference(prep)).0, Some(1.0));
    let open_file = |id: &str| call("files.open_file", json!({ "file": id }));
    assert_eq!(
        play(&world, prep, vec![open_file("f-other-doc")]).0,
        Some(0.0),
        "another document"
    );
    let note = call(
        "notes.create_note",
        json!({ "title": "Roadmap Sync — prep", "body": "Agenda" }),
    );
    assert_eq!(
        play(&world, prep, vec![note]).0,
        Some(0.0),
        "a note is not the document"
    );

    // WeekendSleeper: the 07:30 alarm off (turned off or deleted); another alarm is not it.
    let sleep = task(&g, "WeekendSleeperTask");
    assert_eq!(play(&world, sleep, reference(sleep)).0, Some(1.0));
    let delete = call("clock.delete_alarm", json!({ "alarm": "al-work" }));
    assert_eq!(play(&world, sleep, vec![delete]).0, Some(1.0));
    let other = call(
        "clock.toggle_alarm",
        json!({ "alarm": "al-weekday", "enabled": false }),
    );
    assert_eq!(
        play(&world, sleep, vec![other]).0,
        Some(0.0),
        "another alarm"
    );

    // WeeklyReport: the clock is pinned at the start of her window (16:00 on Friday), so the
    // mail's time is inside it; KnowU's window check fails only agents whose real time runs
    // past its end, which the pinned clock does not model.
    let report = task(&g, "WeeklyReportRoutineTask");
    assert_eq!(clock(report), "2026-02-13T16:00");

    // Without the habits, opening the document or turning dark mode on is over-acting.
    let bare = minimal();
    let world = world_for(&bare);
    let g = generated(&bare, &world);
    let prep = task(&g, "PreMeetingPrepTask");
    assert!(planted(prep).contains("Agent_Learning_via_Early_Experience.pdf"));
    assert_eq!(play(&world, prep, vec![]).0, Some(1.0));
    assert_eq!(
        play(&world, prep, vec![open_file("f-meeting-doc")]).0,
        Some(0.0)
    );
    let eyes = task(&g, "NightEyeCareRoutineTask");
    assert_eq!(clock(eyes), "2026-02-12T23:00");
    assert_eq!(
        play(
            &world,
            eyes,
            super::tests::actions(&eyes.bundle.task.defaults_solution)
        )
        .0,
        Some(0.0)
    );
}
