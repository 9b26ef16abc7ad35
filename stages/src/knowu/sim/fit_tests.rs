//! Persona fit over every generated task class (issue 29 item 4): trips go between the
//! persona's own places (a retiree's to her park or market, never a default "Work"), a retiree
//! gets no task about work, a ride-hailing avoider no taxi unless her own exception asks for
//! one, deliveries go to her own places — checked on the four shipped personas (through the
//! KnowU data setting; grandma when the folder has her profile), the repository's full-sentence
//! persona and a retiree written for this test.

use serde_json::Value;

use super::generate::Generated;
use super::prefs::{parse, situation};
use super::tests::{generated, persona_from, play, reference, repo, task, world_for};
use super::Split;
use crate::knowu::profile::{text, KnowuProfile};

/// A retired persona (written for this test, not KnowU's) whose places sit under keys of her
/// own and who has no `work` location at all.
const MEI: &str = r#"
user_profile:
  identity: { full_name: Mei Zhou, age: 71, occupation: "Retired primary-school teacher" }
  locations:
    home: { address: "5 Lotus Lane", label: Home }
    tai_chi: { address: "Riverside Park east gate", label: "Tai Chi Corner, Riverside Park" }
    grocer: { address: "Dongmen Wet Market", label: "Wet Market" }
  preferences:
    travel:
      primary_transport: "Bus (free with her senior card)"
      avoid_transport: ["Ride-hailing apps (too expensive)", "Subway stairs"]
      taxi_exception: "Takes a taxi only if heavy rain or carrying shopping"
    shopping:
      avoid_categories: ["Electronics"]
      courier: "Prefers SF Express over YTO"
    social:
      communication_style: "Voice messages, short bursts"
      meeting_preference: "No meetings before 10:00"
"#;

/// Words that make a task about work: none may appear in a retiree's personalized or general
/// task (instruction or reference).
const WORK_WORDS: [&str; 9] = [
    "work",
    "workplace",
    "office",
    "team",
    "project",
    "overtime",
    "colleague",
    "travel desk",
    "sick",
];

fn says(p: &KnowuProfile, at: &str, words: &[&str]) -> bool {
    p.get(at)
        .map(|v| {
            let t = serde_json::to_string(v).unwrap_or_default().to_lowercase();
            words.iter().any(|w| t.contains(w))
        })
        .unwrap_or(false)
}

fn labels(p: &KnowuProfile) -> Vec<String> {
    super::phone_data::saved_places(p)
        .into_iter()
        .map(|pl| pl.label)
        .collect()
}

/// The args of every tool call of `steps` to `tool`.
fn calls<'a>(steps: &'a [Value], tool: &str) -> Vec<&'a Value> {
    steps
        .iter()
        .filter(|s| s["tool"] == tool)
        .map(|s| &s["args"])
        .collect()
}

fn has_word(text: &str, word: &str) -> bool {
    let t = format!(" {} ", crate::knowu::sim::matching::words(text).join(" "));
    t.contains(&format!(" {word} "))
}

/// Every misfit of `g` for `p`, in words (empty: every task fits her).
fn misfits(p: &KnowuProfile, g: &Generated) -> Vec<String> {
    let retired = says(
        p,
        "identity.occupation",
        &["retired", "retiree", "pensioner"],
    );
    let avoids_rides = p
        .get("preferences.travel")
        .and_then(Value::as_object)
        .is_some_and(|m| {
            m.iter().any(|(k, v)| {
                k.contains("avoid") && {
                    let t = text(v).to_lowercase();
                    ["ride-hailing", "ride hailing", "taxi", "didi"]
                        .iter()
                        .any(|w| t.contains(w))
                }
            })
        });
    let places = labels(p);
    let mut out = Vec::new();
    for t in &g.tasks {
        if t.info.split == Split::Proactive {
            continue;
        }
        let id = &t.bundle.task.task_id;
        let steps = [
            &t.bundle.task.reference_solution[..],
            &t.bundle.task.defaults_solution[..],
        ]
        .concat();
        for route in calls(&steps, "maps.plan_route") {
            let dest = route["destination"].as_str().unwrap_or_default();
            if !places.iter().any(|l| l == dest) {
                out.push(format!(
                    "{id}: route to {dest:?}, not one of her places {places:?}"
                ));
            }
            let mode = route["mode"].as_str().unwrap_or_default().to_lowercase();
            let value = t.info.preference.clone().unwrap_or_default();
            let req =
                parse(&value).in_situation(&situation(&t.bundle.task.instruction, &text(&value)));
            let wants_taxi = req
                .want
                .iter()
                .flatten()
                .any(|w| w.text.to_lowercase().contains("taxi"));
            if avoids_rides && (mode.contains("taxi") || mode.contains("didi")) && !wants_taxi {
                out.push(format!("{id}: a {mode:?} for a ride-hailing avoider"));
            }
        }
        for order in calls(&steps, "shop.place_order") {
            if let Some(addr) = order["address"].as_str() {
                if !places.iter().any(|l| l == addr) {
                    out.push(format!(
                        "{id}: delivered to {addr:?}, not one of her places"
                    ));
                }
            }
        }
        if retired {
            let all = format!(
                "{} {}",
                t.bundle.task.instruction,
                serde_json::to_string(&steps).unwrap_or_default()
            );
            if let Some(w) = WORK_WORDS.iter().find(|w| has_word(&all, w)) {
                out.push(format!("{id}: about {w:?} for a retiree"));
            }
        }
    }
    out
}

#[test]
fn every_task_class_fits_each_personas_profile() {
    let mut personas = vec![
        persona_from("mei", MEI),
        persona_from(
            "rosa",
            &std::fs::read_to_string(repo().join("datasets/knowu/personas/rosa.yaml")).unwrap(),
        ),
    ];
    if let Some(dir) = crate::knowu::data::for_tests("every_task_class_fits_each_personas_profile")
    {
        for name in ["developer", "student", "user", "grandma"] {
            let path = crate::knowu::data::locate(&dir.join(format!("user_profile/{name}.yaml")));
            match std::fs::read_to_string(&path) {
                Ok(t) => personas.push(persona_from(name, &t)),
                // The published folder has three personas; KnowU's repository has grandma too.
                Err(_) => eprintln!("{name}: no profile at {} (skipped)", path.display()),
            }
        }
    }
    for p in &personas {
        let world = world_for(p);
        let g = generated(p, &world);
        let bad = misfits(p, &g);
        assert!(bad.is_empty(), "{}: {bad:#?}", p.id);
    }
}

#[test]
fn a_retirees_trips_go_to_her_park_and_market_never_to_work() {
    let mei = persona_from("mei", MEI);
    let world = world_for(&mei);
    let g = generated(&mei, &world);
    let dest = |class: &str| {
        let t = task(&g, class);
        let call = &calls(&t.bundle.task.reference_solution, "maps.plan_route")[0];
        (
            call["destination"].as_str().unwrap().to_string(),
            t.bundle.task.instruction.clone(),
        )
    };
    // KnowU's PROFILE_DESTINATIONS: grandma to her square-dance park when sunny, to the market
    // in the rain; Mei's are under keys of her own.
    let (sunny, said) = dest("CommuteRoutingSunnyTask");
    assert_eq!(sunny, "Tai Chi Corner, Riverside Park");
    assert!(said.contains("Tai Chi Corner"), "{said}");
    let (rain, said) = dest("CommuteRoutingBadWeatherTask");
    assert_eq!(rain, "Wet Market");
    assert!(
        said.contains("raining") && said.contains("Wet Market"),
        "{said}"
    );
    // Her rain exception makes the taxi what she wants there; the bus does not meet it.
    let rainy = task(&g, "CommuteRoutingBadWeatherTask");
    let route = |mode: &str| {
        vec![super::checks_tests::call(
            "maps.plan_route",
            serde_json::json!({ "destination": "Wet Market", "mode": mode }),
        )]
    };
    let full = play(&world, rainy, route("taxi")).0.unwrap();
    assert_eq!(full, 1.0);
    assert!(play(&world, rainy, route("bus 12")).0.unwrap() < 1.0);
    // The right mode to a default "Work" is not her trip: the rule part fails.
    let to_work = vec![super::checks_tests::call(
        "maps.plan_route",
        serde_json::json!({ "destination": "Work", "mode": "taxi" }),
    )];
    assert_eq!(play(&world, rainy, to_work).0, Some(0.0));
    assert_eq!(
        play(&world, rainy, reference(rainy)).0,
        Some(1.0),
        "the reference"
    );
    // No workplace: no work-bound task at all, each skip saying why.
    for class in [
        "BuyColaPreferenceTask",
        "LateNightCommuteTask",
        "MattermostLeaveNoticeTask",
        "CalendarScheduleGroupMeetingTask",
        "BuyComputerPreferenceAskUserTask",
    ] {
        let skip = g.skipped.iter().find(|s| s.template == class);
        assert!(skip.is_some(), "{class} generated for a retiree");
    }
    let computer = g
        .skipped
        .iter()
        .find(|s| s.template == "BuyComputerPreferenceAskUserTask")
        .unwrap();
    assert!(
        computer.missing.contains("avoids buying electronics"),
        "{}",
        computer.missing
    );
    // A retiree without a park or market gets no commute task (never the working rule's "work").
    let bare = persona_from(
        "lu",
        &MEI.replace("tai_chi", "old_job")
            .replace("Tai Chi Corner, Riverside Park", "Work")
            .replace("grocer", "clinic")
            .replace("Wet Market", "Clinic"),
    );
    let g = generated(&bare, &world_for(&bare));
    let skip = g
        .skipped
        .iter()
        .find(|s| s.template == "CommuteRoutingSunnyTask")
        .expect("skipped");
    assert!(
        skip.missing.contains("dance | park") && skip.missing.contains("retired"),
        "{}",
        skip.missing
    );
}

/// KnowU gives the student LateNightCommute (at the library at 23:30, home to the dorm, transit
/// stopped); her ride-hailing holds only "if splitting with roommates", so the situation says
/// she is with them, and Didi Express (cheapest tier) is what she wants — a premium taxi or the
/// everyday bike is not.
#[test]
fn the_students_late_night_commute_is_set_with_her_roommates() {
    let test = "the_students_late_night_commute_is_set_with_her_roommates";
    let Some(dir) = crate::knowu::data::for_tests(test) else {
        return;
    };
    let text = std::fs::read_to_string(dir.join("user_profile/student.yaml")).unwrap();
    let student = persona_from("student", &text);
    let world = world_for(&student);
    let g = generated(&student, &world);
    let late = task(&g, "LateNightCommuteTask");
    let said = &late.bundle.task.instruction;
    assert!(
        said.contains("Library") && said.contains("Dorm") && said.contains("roommates"),
        "{said}"
    );
    let route = |mode: &str| {
        vec![super::checks_tests::call(
            "maps.plan_route",
            serde_json::json!({ "destination": "Dorm", "mode": mode }),
        )]
    };
    assert_eq!(play(&world, late, reference(late)).0, Some(1.0), "{said}");
    assert_eq!(
        play(&world, late, route("Didi Express, fare split three ways")).0,
        Some(1.0)
    );
    for wrong in ["premium taxi", "shared bike", "Driving"] {
        assert_eq!(play(&world, late, route(wrong)).0, Some(0.0), "{wrong}");
    }
}
