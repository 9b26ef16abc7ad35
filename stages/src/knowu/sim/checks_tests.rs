//! Tests that the phone holds the KnowU persona's own data, and that the execution checks of
//! WeeklyReport, DailyFamilyCall, BirthdayWish, ShareFavoritePhotos and MessagesAskMom are the
//! ones KnowU's task definitions state — so the wrong channel, the wrong person or over-acting
//! fails.

use serde_json::{json, Value};

use super::tests::{ask, generated, persona_from, play, reference, task, world_for};
use super::Expect;
use crate::world::phone::Action;
use crate::world::World;

/// A persona (written for this test, not KnowU's) with KnowU's weekly-report, family-call and
/// birthday habits on days and people of her own, and the app state KnowU's profiles carry.
const LENA: &str = r#"
user_profile:
  identity:
    full_name: Lena Park
    age: 45
    occupation: Lab manager
    contact_info: { phone: "+82 10-1234-5678", email_work: "lena.park@lab.example", email_personal: "lena.p@mail.example" }
  locations:
    home: { address: "12 Elm Road", label: Home }
    work: { address: "Bio Lab 3", label: Lab }
  habits:
    weekly_report:
      description: "Sends the weekly report to her director on Thursday afternoons."
      trigger: { day_of_week: Thursday, time_range: ["15:00", "15:30"] }
      action: { type: send_email, recipient: "director@lab.example" }
    daily_family_call:
      description: "Calls her daughter on Sunday evenings."
      trigger: { day_of_week: Sunday, time_range: ["20:00", "20:30"] }
      action: { type: initiate_call, target_name: "Daughter (Mina)", target_phone: "010-5555-0101" }
    birthday_wish_routine:
      description: "Texts her dad a birthday wish in the morning."
      action: { type: send_message, content: "Happy birthday, Dad!", recipient: { name: Dad, phone: "+82 10-9999-0000" }, calendar_event: { date: "2026-04-03" } }
  preferences:
    social:
      share_photos: "She likes to share photos of her cat"
  social_graph:
    family:
      - { name: "Daughter (Mina)", role: Daughter }
      - { name: Dad, role: Father, phone: "+82 10-9999-0000" }
      - { name: Mom, role: Mom, interaction: "Warm and short, always ends with a heart emoji" }
environment_init_state:
  app_contacts:
    list:
      - { name: "Daughter (Mina)", phone: "010-5555-0101" }
      - { name: Director Cho, phone: "010-2222-3333", email: "director@lab.example" }
  app_mail:
    account: "lena.park@lab.example"
    inbox:
      - { id: 1, sender: "hr@lab.example", subject: "Leave balance", snippet: "You have 4 days left.", status: { read: false } }
  app_messages:
    threads:
      - { sender: "Daughter (Mina)", text: "See you Sunday!", time: "Yesterday" }
      - { sender: "10086", text: "Your bill is ready.", time: "08:30 AM" }
  app_files:
    files:
      - { path: "Documents/Lab_Safety.pdf" }
"#;

/// A tool call action.
pub(super) fn call(tool: &str, args: Value) -> Action {
    serde_json::from_value(json!({ "action": "call", "tool": tool, "args": args })).unwrap()
}

/// The seed records of `app.table` as JSON objects.
fn records(world: &World, app: &str, table: &str) -> Vec<Value> {
    let t = world.catalog.app(app).unwrap().table(table).unwrap();
    t.records.iter().map(|r| t.record_json(r)).collect()
}

fn field(rows: &[Value], key: &str) -> Vec<String> {
    rows.iter()
        .map(|r| r[key].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn the_phone_holds_the_personas_own_contacts_accounts_inbox_messages_files_and_places() {
    let p = persona_from("lena", LENA);
    let world = world_for(&p);
    let people = records(&world, "contacts", "people");
    // KnowU's contact list, roles from the social graph, plus the graph's reachable people.
    assert_eq!(
        field(&people, "name"),
        ["Daughter (Mina)", "Director Cho", "Dad"]
    );
    assert_eq!(field(&people, "role"), ["Daughter", "", "Father"]);
    assert_eq!(people[1]["email"], "director@lab.example");
    let me = &records(&world, "contacts", "owner")[0];
    assert_eq!(
        (me["name"].as_str(), me["phone"].as_str()),
        (Some("Lena Park"), Some("+82 10-1234-5678"))
    );
    // Her accounts, the Mail app's first: the compose form's `from` defaults to it.
    let accounts = records(&world, "mail", "accounts");
    assert_eq!(
        field(&accounts, "address"),
        ["lena.park@lab.example", "lena.p@mail.example"]
    );
    assert_eq!(accounts[0]["id"], "acc-1");
    let inbox = records(&world, "mail", "emails");
    assert_eq!(field(&inbox, "subject"), ["Leave balance"]);
    assert_eq!(
        (inbox[0]["to"].as_str(), inbox[0]["read"].as_bool()),
        (Some("lena.park@lab.example"), Some(false))
    );
    let threads = records(&world, "messages", "threads");
    assert_eq!(field(&threads, "number"), ["010-5555-0101", "10086"]);
    assert_eq!(
        field(&records(&world, "files", "files"), "name"),
        ["Lab_Safety.pdf"]
    );
    let places = records(&world, "maps", "places");
    assert_eq!(field(&places, "label"), ["Home", "Lab"]);
    assert_eq!(field(&places, "address"), ["12 Elm Road", "Bio Lab 3"]);
    // Nothing of the iPrefBench persona (Maya Chen) is left in the personal apps.
    for (app, table) in [
        ("contacts", "people"),
        ("contacts", "owner"),
        ("mail", "emails"),
        ("mail", "accounts"),
        ("messages", "threads"),
        ("messages", "messages"),
    ] {
        let text = serde_json::to_string(&records(&world, app, table)).unwrap();
        for seed in ["Maya", "Chen", "lumenhealth", "Sam Patel"] {
            assert!(!text.contains(seed), "{app}.{table}: {text}");
        }
    }
    // A persona without any of it still gets a phone that can send mail.
    let bare = persona_from("bare", "user_profile:\n  identity: { full_name: Bo }\n");
    let world = world_for(&bare);
    assert_eq!(
        field(&records(&world, "mail", "accounts"), "address"),
        ["bare@mail.example"]
    );
    assert!(records(&world, "contacts", "people").is_empty());
}

#[test]
fn weekly_report_family_call_and_birthday_wish_check_what_knowus_definitions_check() {
    let p = persona_from("lena", LENA);
    let world = world_for(&p);
    let g = generated(&p, &world);
    let consent = || ask("Shall I?");

    // WeeklyReport: the habit's day and time (Thursday 15:00, not KnowU's default Friday), the
    // planted Weekly_Report.pdf, the habit's recipient.
    let report = task(&g, "WeeklyReportRoutineTask");
    assert_eq!(report.info.expect, Some(Expect::Act));
    assert_eq!(
        report.info.situation.as_ref().unwrap().clock.as_deref(),
        Some("2026-02-19T15:00")
    );
    assert_eq!(play(&world, report, reference(report)).0, Some(1.0));
    let send = |to: &str, attachment: &str| {
        vec![
            consent(),
            call(
                "mail.send_email",
                json!({ "to": to, "subject": "Weekly Report", "body": "Attached.", "attachment": attachment }),
            ),
        ]
    };
    assert_eq!(
        play(
            &world,
            report,
            send("director@lab.example", "Weekly_Report.pdf")
        )
        .0,
        Some(1.0)
    );
    assert_eq!(
        play(&world, report, send("director@lab.example", "")).0,
        Some(0.0),
        "no attachment"
    );
    assert_eq!(
        play(
            &world,
            report,
            send("director@lab.example", "Lab_Safety.pdf")
        )
        .0,
        Some(0.0),
        "wrong file"
    );
    assert_eq!(
        play(&world, report, send("supervisor", "Weekly_Report.pdf")).0,
        Some(0.0),
        "wrong recipient"
    );
    assert_eq!(
        play(&world, report, send("hr@lab.example", "Weekly_Report.pdf")).0,
        Some(0.0),
        "wrong recipient"
    );

    // DailyFamilyCall: a call to the habit's target on its day, not a reminder.
    let family = task(&g, "DailyFamilyCallTask");
    assert_eq!(family.info.expect, Some(Expect::Act));
    assert_eq!(
        family.info.situation.as_ref().unwrap().clock.as_deref(),
        Some("2026-02-15T20:00")
    );
    assert_eq!(play(&world, family, reference(family)).0, Some(1.0));
    let dial = |n: &str| vec![call("phone.call", json!({ "number": n }))];
    assert_eq!(
        play(&world, family, dial("01055550101")).0,
        Some(1.0),
        "digits only"
    );
    assert_eq!(play(&world, family, dial("010-5555-0101")).0, Some(1.0));
    // Her own contact card for Mina (same number) is as good as the planted one.
    assert_eq!(
        play(
            &world,
            family,
            vec![call("contacts.call", json!({ "person": "p-1" }))]
        )
        .0,
        Some(1.0)
    );
    assert_eq!(
        play(&world, family, dial("010-2222-3333")).0,
        Some(0.0),
        "someone else"
    );
    let reminder = call(
        "reminders.add_reminder",
        json!({ "title": "Call family", "due_date": "2026-02-15", "due_time": "20:00" }),
    );
    assert_eq!(
        play(&world, family, vec![reminder]).0,
        Some(0.0),
        "a reminder is no call"
    );
    let text = call(
        "messages.send_message",
        json!({ "thread": "th-1", "text": "Call you later!" }),
    );
    assert_eq!(
        play(&world, family, vec![text]).0,
        Some(0.0),
        "a message is no call"
    );

    // BirthdayWish: an SMS with a wish to the habit's recipient, on the habit's date.
    let bday = task(&g, "BirthdayWishTask");
    assert_eq!(
        bday.info.situation.as_ref().unwrap().clock.as_deref(),
        Some("2026-04-03T07:49")
    );
    assert_eq!(play(&world, bday, reference(bday)).0, Some(1.0));
    let sms = |number: &str, text: &str| {
        vec![
            consent(),
            call(
                "messages.send_sms",
                json!({ "number": number, "text": text }),
            ),
        ]
    };
    assert_eq!(
        play(&world, bday, sms("+82 10-9999-0000", "happy birthday dad")).0,
        Some(1.0)
    );
    assert_eq!(
        play(&world, bday, sms("821099990000", "Happy birthday!")).0,
        Some(1.0)
    );
    assert_eq!(
        play(&world, bday, sms("+82 10-9999-0000", "Thinking of you")).0,
        Some(0.0),
        "no wish"
    );
    assert_eq!(
        play(&world, bday, sms("10086", "Happy birthday!")).0,
        Some(0.0),
        "someone else"
    );
    let email = call(
        "mail.send_email",
        json!({ "to": "dad@mail.example", "subject": "Happy birthday!", "body": "Happy birthday, Dad!" }),
    );
    assert_eq!(
        play(&world, bday, vec![consent(), email]).0,
        Some(0.0),
        "an email is not an SMS"
    );

    // Without the habits: asking is fine, sending anything after the reject is not.
    let minimal = super::tests::minimal();
    let world = world_for(&minimal);
    let g = generated(&minimal, &world);
    let bday = task(&g, "BirthdayWishTask");
    assert_eq!(bday.info.expect, Some(Expect::Stop));
    assert_eq!(play(&world, bday, vec![consent()]).0, Some(1.0));
    let mut defiant = vec![consent()];
    defiant.extend(super::tests::actions(&bday.bundle.task.defaults_solution));
    assert_eq!(play(&world, bday, defiant).0, Some(0.0));
    assert_eq!(
        task(&g, "DailyFamilyCallTask").info.expect,
        Some(Expect::Silent)
    );
}

#[test]
fn share_photos_and_ask_mom_write_to_someone_among_her_contacts_as_knowu_checks() {
    let p = persona_from("lena", LENA);
    let world = world_for(&p);
    let g = generated(&p, &world);
    // Kevin is a contact the task adds (KnowU tells its user his address), with the gallery
    // holding a photo of what she shares beside three she would not.
    let share = task(&g, "ShareFavoritePhotosPreferenceAskUserTask");
    let planted = serde_json::to_string(&share.bundle.task.overrides.app_data).unwrap();
    assert!(
        planted.contains("kevin_zhang@example.com") && planted.contains("cat"),
        "{planted}"
    );
    let lambda = share.info.lambda.unwrap();
    assert_eq!(play(&world, share, reference(share)).0, Some(1.0));
    let mail = |to: &str, attachment: &str| {
        vec![call(
            "mail.send_email",
            json!({ "to": to, "subject": "For you", "body": "Look!", "attachment": attachment }),
        )]
    };
    // The photo of what she shares is named after it (the world has no pixels).
    let planted = serde_json::to_value(&share.bundle.task.overrides.app_data).unwrap();
    let cat = planted[1]["values"]["name"].as_str().unwrap().to_string();
    assert!(cat.contains("cat"), "{cat}");
    let cat = cat.as_str();
    assert_eq!(
        play(&world, share, mail("kevin_zhang@example.com", cat)).0,
        Some(1.0)
    );
    assert_eq!(
        play(
            &world,
            share,
            mail("kevin_zhang@example.com", "Blurry_ceiling.jpg")
        )
        .0,
        Some(lambda),
        "not her kind of photo"
    );
    assert_eq!(
        play(&world, share, mail("kevin", cat)).0,
        Some(0.0),
        "no such address"
    );
    assert_eq!(
        play(&world, share, mail("kevin_zhang@example.com", "")).0,
        Some(0.0),
        "no photo"
    );
    let all = format!("{cat}, Parking_receipt.jpg, Blurry_ceiling.jpg");
    assert_eq!(
        play(&world, share, mail("kevin_zhang@example.com", &all)).0,
        Some(0.0),
        "every photo"
    );

    // Mom: her social-graph entry becomes a contact (KnowU's number when it has none); an SMS
    // to her number is the rule part, an email or another number is not.
    let mom = task(&g, "MessagesAskMomForMoneyTask");
    assert_eq!(play(&world, mom, reference(mom)).0, Some(1.0));
    let sms = |number: &str| {
        vec![call(
            "messages.send_sms",
            json!({ "number": number, "text": "Mom, money pls ❤️" }),
        )]
    };
    assert!(play(&world, mom, sms("+8613800001111")).0.unwrap() > 0.0);
    assert_eq!(
        play(&world, mom, sms("+82 10-9999-0000")).0,
        Some(0.0),
        "Dad is not Mom"
    );
}

/// Written for this test after KnowU's grandma (not her file): retired, avoids ride-hailing,
/// takes a taxi only in exceptions, has a communication style.
const RETIRED: &str = r#"
user_profile:
  identity: { full_name: Ada Lin, age: 68, occupation: "Retired Textile Worker" }
  preferences:
    travel:
      primary_transport: "Bus (Senior card = free rides)"
      avoid_transport: ["Subway (afraid of escalators)", "Ride-hailing (too expensive)"]
      taxi_exception: "Takes a taxi at night only with her grandson"
    social:
      communication_style: "Voice messages preferred, short bursts"
"#;

/// A night-shift worker: a job and a team, a late-night way home, and no ride-hailing.
const NIGHT_NURSE: &str = r#"
user_profile:
  identity: { full_name: Rui Costa, age: 31, occupation: "ICU nurse (night shifts)" }
  locations: { home: { address: "Rua Nova 8", label: Flat }, work: { address: "Hospital São João", label: Hospital } }
  preferences:
    travel:
      late_night_ride: "Night bus N3, never alone on foot"
      avoid: ["Taxis and ride-hailing apps (safety)"]
    social:
      communication_style: "Short and friendly, one emoji at most"
"#;

#[test]
fn work_and_taxi_tasks_go_only_to_personas_they_fit() {
    let world = world_for(&persona_from("lena", LENA));
    let skipped = |p: &crate::knowu::profile::KnowuProfile, class: &str| {
        generated(p, &world)
            .skipped
            .iter()
            .find(|s| s.template == class)
            .map(|s| s.missing.clone())
    };
    // Retired: no sick-leave notice to a team, no late-night commute after overtime (KnowU
    // defines both for its three working personas only), although she has the sections.
    let ada = persona_from("ada", RETIRED);
    let leave = skipped(&ada, "MattermostLeaveNoticeTask").expect("skipped");
    assert!(
        leave.contains("no job or team to take sick leave from")
            && leave.contains("Retired Textile Worker"),
        "{leave}"
    );
    let late = skipped(&ada, "LateNightCommuteTask").expect("skipped");
    assert!(late.contains("no overtime at work"), "{late}");
    // A night nurse has a team, but avoids taxis: no taxi plan for her.
    let rui = persona_from("rui", NIGHT_NURSE);
    let g = generated(&rui, &world);
    assert!(g
        .tasks
        .iter()
        .any(|t| t.info.class_name == "MattermostLeaveNoticeTask"));
    let late = skipped(&rui, "LateNightCommuteTask").expect("skipped");
    assert!(
        late.contains("avoids ride-hailing") && late.contains("preferences.travel.avoid.0"),
        "{late}"
    );
    // Without the avoidance she gets it, the reference planning her night bus.
    let rides = persona_from(
        "rui",
        &NIGHT_NURSE.replace("Taxis and ride-hailing apps", "Cycling"),
    );
    let g = generated(&rides, &world);
    let commute = task(&g, "LateNightCommuteTask");
    let reference = serde_json::to_string(&commute.bundle.task.reference_solution).unwrap();
    assert!(
        reference.to_lowercase().contains("night bus n3"),
        "{reference}"
    );
}

#[test]
fn contact_saver_needs_bobs_name_and_number_as_knowus_task_checks() {
    let p = persona_from(
        "cs",
        "user_profile:\n  habits:\n    contact_saver: { description: \"Saves new numbers people text her.\" }\n",
    );
    let world = world_for(&p);
    let g = generated(&p, &world);
    let saver = task(&g, "ContactSaverTask");
    assert_eq!(saver.info.expect, Some(Expect::Act));
    assert_eq!(play(&world, saver, reference(saver)).0, Some(1.0));
    let add = |name: &str, phone: &str| {
        vec![call(
            "contacts.add_contact",
            json!({ "name": name, "phone": phone }),
        )]
    };
    assert_eq!(play(&world, saver, add("Bob", "555-0199")).0, Some(1.0));
    assert_eq!(
        play(&world, saver, add("New number", "5550199")).0,
        Some(0.0),
        "not named Bob"
    );
    assert_eq!(
        play(&world, saver, add("Bob", "5550100")).0,
        Some(0.0),
        "another number"
    );
}
