//! Unit tests of KnowU task generation, consent and scoring, on the shipped templates and apps
//! and a hand-written persona; the three KnowU personas when `../shared` is present.

use std::path::{Path, PathBuf};

use super::consent::KnowuUser;
use super::generate::{generate, Generated};
use super::matching::HabitMatch;
use super::template::{load_dir, Template};
use super::world::{persona_apps, persona_stub, PROFILE_KIND};
use super::{Decision, Expect, KnowuTask, Split};
use crate::episodes::agents::ScriptedAgent;
use crate::episodes::simulator::Simulator;
use crate::episodes::{run_episode, EpisodeRow, EpisodeSpec, PhoneEnv};
use crate::knowu::interop::rules::{parse_decision, Decision as MetricDecision};
use crate::knowu::profile::KnowuProfile;
use crate::tables::world::SourceRow;
use crate::tasks::testkit::block_on;
use crate::world::from_tables::world_from_tables;
use crate::world::phone::{Action, ActionSpace, EpisodeConfig};
use crate::world::{tables, World};

pub(super) fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn templates() -> Vec<Template> {
    load_dir(
        &repo().join("datasets/knowu/templates"),
        "datasets/knowu/templates",
    )
    .unwrap()
}

/// A persona with two habits (one empty, which does not count), two diet preferences and no
/// travel section.
const MINIMAL: &str = r#"
user_profile:
  identity: { full_name: Test Person, age: 40, occupation: Baker }
  locations: { home: { address: "1 Main St" } }
  habits:
    low_battery_saver:
      description: "Turns on power saving when the battery is low."
      trigger: { condition: "Battery <= 15%" }
      action: { type: change_settings }
    weekly_report: {}
  preferences:
    diet:
      delivery_platform: "Tuantuan (fast in my area)"
      delivery_general_remark: "Leave it at the door, no bell."
"#;

pub(super) fn minimal() -> KnowuProfile {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("baker.yaml");
    std::fs::write(&path, MINIMAL).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    KnowuProfile::parse("baker.yaml", &text).unwrap()
}

/// The world a KnowU persona runs in, rebuilt from tables as `run_episodes` does.
pub(super) fn world_for(p: &KnowuProfile) -> World {
    let apps = persona_apps(
        &[
            repo().join("datasets/apps").as_path(),
            repo().join("datasets/knowu/apps").as_path(),
        ],
        p,
    )
    .unwrap();
    let source = |kind: &str, name: String, text: String| SourceRow {
        kind: kind.into(),
        name,
        text,
    };
    let mut rows: Vec<SourceRow> = apps
        .iter()
        .map(|a| source("app", a.0.clone(), a.1.clone()))
        .collect();
    let log = crate::knowu::log::parse(
        "baker.json",
        r#"[{"time": "2026-01-05T07:10:00+08:00", "location": "Home", "action": "Turned on power saving at 14% battery.", "label": "signal", "category": "habit"}]"#,
    )
    .unwrap();
    rows.push(source(
        "persona",
        format!("{}.json", p.id),
        persona_stub(p, &log),
    ));
    rows.push(source(
        PROFILE_KIND,
        format!("{}.yaml", p.id),
        MINIMAL.to_string(),
    ));
    let sources = SourceRow::to_frame(&rows).unwrap();
    world_from_tables(&sources, &tables::history_events(&log).unwrap()).unwrap()
}

/// The shipped scoring table (λ per class).
pub(super) fn scoring_table() -> super::scoring::ScoringTable {
    super::scoring::load(
        &repo().join("datasets/knowu/scoring.csv"),
        "datasets/knowu/scoring.csv",
    )
    .unwrap()
}

pub(super) fn generated(p: &KnowuProfile, world: &World) -> Generated {
    let table = scoring_table();
    let scoring = super::generate::Scoring {
        table: &table,
        label: "datasets/knowu/scoring.csv",
    };
    generate(&templates(), p, &world.catalog, &scoring).unwrap()
}

pub(super) fn task<'a>(g: &'a Generated, class: &str) -> &'a KnowuTask {
    g.tasks
        .iter()
        .find(|t| t.info.class_name == class)
        .unwrap_or_else(|| panic!("no task {class}"))
}

/// Plays `actions` (then finish) on `bundle` with the KnowU user; returns the score and the
/// user's replies.
pub(super) fn play(
    world: &World,
    t: &KnowuTask,
    actions: Vec<Action>,
) -> (Option<f64>, Vec<String>) {
    let bundle = &t.bundle;
    let config = EpisodeConfig {
        space: ActionSpace::Tools,
        clock: t.info.clock(),
        overrides: bundle.task.overrides.clone(),
    };
    let mut env = PhoneEnv::new(world, config).unwrap();
    let mut agent = ScriptedAgent::new(actions);
    let mut user = KnowuUser::new(bundle, &t.info);
    let spec = EpisodeSpec {
        indexes: Default::default(),
        row: EpisodeRow::default(),
        instruction: bundle.task.instruction.clone(),
        space: ActionSpace::Tools,
        max_steps: 10,
        clarify: false,
    };
    let run = block_on(run_episode(&mut env, &mut agent, &mut user, &[], spec));
    let replies = run
        .steps
        .iter()
        .filter_map(|s| s.user_reply.clone())
        .collect();
    let score = super::score::score(bundle, &t.info, &env.phone, &run.steps);
    (Some(score), replies)
}

pub(super) fn reference(t: &KnowuTask) -> Vec<Action> {
    actions(&t.bundle.task.reference_solution)
}

pub(super) fn actions(steps: &[serde_json::Value]) -> Vec<Action> {
    steps
        .iter()
        .map(|s| serde_json::from_value(s.clone()).unwrap())
        .collect()
}

pub(super) fn ask(text: &str) -> Action {
    Action::AskUser { text: text.into() }
}

#[test]
fn a_persona_lacking_sections_skips_those_templates_with_the_section_named() {
    let p = minimal();
    let world = world_for(&p);
    let g = generated(&p, &world);
    // Every proactive template applies (a missing habit means "stay silent"), 16 of them.
    let proactive = g.tasks.iter().filter(|t| t.info.split == Split::Proactive);
    assert_eq!(proactive.count(), 16);
    // The diet templates it has sections for are there, with their general twin.
    assert!(g
        .tasks
        .iter()
        .any(|t| t.bundle.task.task_id == "TakeoutReamarkPreferenceAskUserTask@baker"));
    assert!(g
        .tasks
        .iter()
        .any(|t| t.bundle.task.task_id == "TakeoutRemarkGeneralTask@baker"));
    assert!(g
        .tasks
        .iter()
        .any(|t| t.bundle.task.task_id == "OrderLunchTradeoffTask@baker"));
    // Travel templates are skipped, naming the travel paths and the persona.
    let commute = g
        .skipped
        .iter()
        .find(|s| s.template == "CommuteRoutingSunnyTask")
        .unwrap();
    assert_eq!(commute.persona, "baker");
    assert!(
        commute.missing.contains("preferences.travel"),
        "{}",
        commute.missing
    );
    let mom = g
        .skipped
        .iter()
        .find(|s| s.template == "MessagesAskMomForMoneyTask")
        .unwrap();
    assert_eq!(
        mom.missing,
        "`social_graph` key about interaction | instruction | tone | style in an entry naming mom | mother | mum"
    );
    // Nothing both generated and skipped.
    for s in &g.skipped {
        assert!(
            !g.tasks.iter().any(|t| t.bundle.task.template == s.template),
            "{}",
            s.template
        );
    }
}

pub(super) fn expect(t: &KnowuTask) -> Option<Expect> {
    t.info.expect
}

#[test]
fn habits_decide_the_expected_bucket_and_the_consent_decision() {
    let p = minimal();
    let world = world_for(&p);
    let g = generated(&p, &world);
    let battery = task(&g, "BatterySaverRoutineTask");
    assert_eq!(expect(battery), Some(Expect::Act));
    // An empty habit mapping does not count; the report needs consent → ask, then stop.
    let report = task(&g, "WeeklyReportRoutineTask");
    assert_eq!(expect(report), Some(Expect::Stop));
    // No habit, no consent needed → silent.
    assert_eq!(
        expect(task(&g, "NightEyeCareRoutineTask")),
        Some(Expect::Silent)
    );
    // The user's replies carry KnowU's decision tag, which KnowU's metrics parse back.
    let accept = block_on(
        KnowuUser::new(&battery.bundle, &battery.info).reply("Shall I turn on power saving?"),
    )
    .unwrap();
    assert_eq!(parse_decision(&accept.text), Some(MetricDecision::Accept));
    assert!(
        accept.text.contains("power saving when the battery is low"),
        "{}",
        accept.text
    );
    let reject =
        block_on(KnowuUser::new(&report.bundle, &report.info).reply("Shall I send the report?"))
            .unwrap();
    assert_eq!(parse_decision(&reject.text), Some(MetricDecision::Reject));
    assert_eq!(report.info.decision, Some(Decision::Reject));
}

#[test]
fn proactive_rules_score_act_silent_and_stop() {
    let p = minimal();
    let world = world_for(&p);
    let g = generated(&p, &world);
    let battery = task(&g, "BatterySaverRoutineTask");
    let saver = actions(&battery.bundle.task.defaults_solution);
    // Act: doing it scores; staying silent does not.
    assert_eq!(play(&world, battery, saver.clone()).0, Some(1.0));
    assert_eq!(play(&world, battery, vec![]).0, Some(0.0));
    // Silent: leaving the phone alone scores; acting anyway does not.
    let night = task(&g, "NightEyeCareRoutineTask");
    assert_eq!(play(&world, night, vec![]).0, Some(1.0));
    let dark = actions(&night.bundle.task.defaults_solution);
    assert_eq!(play(&world, night, dark).0, Some(0.0));
    // Stop: asking is fine and the user rejects; acting after the reject is wrong.
    let report = task(&g, "WeeklyReportRoutineTask");
    let (score, replies) = play(
        &world,
        report,
        vec![ask("Shall I send your weekly report?")],
    );
    assert_eq!(score, Some(1.0));
    assert!(
        replies[0].starts_with("<decision>reject</decision>"),
        "{replies:?}"
    );
    let mut defiant = vec![ask("Shall I send your weekly report?")];
    defiant.extend(actions(&report.bundle.task.defaults_solution));
    assert_eq!(play(&world, report, defiant).0, Some(0.0));
}

#[test]
fn the_reference_solution_is_the_oracle_on_every_generated_task() {
    let p = minimal();
    let world = world_for(&p);
    for t in &generated(&p, &world).tasks {
        let (score, _) = play(&world, t, reference(t));
        assert_eq!(score, Some(1.0), "{}", t.bundle.task.task_id);
    }
}

#[test]
fn personalized_tasks_are_hybrid_scored() {
    let p = minimal();
    let world = world_for(&p);
    let g = generated(&p, &world);
    let remark = task(&g, "TakeoutReamarkPreferenceAskUserTask");
    let lambda = remark.info.lambda.unwrap();
    assert!(
        remark.bundle.criteria.len() >= 2,
        "an effect check plus key terms"
    );
    // The plain order has the effect but not the preference: λ exactly.
    let plain = actions(&remark.bundle.task.defaults_solution);
    assert_eq!(play(&world, remark, plain).0, Some(lambda));
    // Nothing done: 0 even though nothing contradicts the preference.
    assert_eq!(play(&world, remark, vec![]).0, Some(0.0));
    // Asking the user gives the preference, and using it gives full marks.
    let (_, replies) = play(&world, remark, vec![ask("Any remark for the rider?")]);
    assert_eq!(replies, vec!["Leave it at the door, no bell.".to_string()]);
    // The general twin is all-or-nothing: the plain order fails it.
    let twin = task(&g, "TakeoutRemarkGeneralTask");
    assert!(
        twin.bundle
            .task
            .instruction
            .contains("Leave it at the door"),
        "{}",
        twin.bundle.task.instruction
    );
    let plain = actions(&remark.bundle.task.defaults_solution);
    assert_eq!(play(&world, twin, plain).0, Some(0.0));
}

fn shared_profile(test: &str, name: &str) -> Option<KnowuProfile> {
    let dir = crate::knowu::data::for_tests(test)?;
    let path = dir.join(format!("user_profile/{name}.yaml"));
    let text = std::fs::read_to_string(&path).expect("a shipped profile");
    Some(KnowuProfile::parse(&format!("{name}.yaml"), &text).unwrap())
}

#[test]
fn the_shipped_personas_yield_knowu_proportions() {
    let test = "the_shipped_personas_yield_knowu_proportions";
    let Some(first) = shared_profile(test, "developer") else {
        return;
    };
    let world = world_for(&first);
    let dir = crate::knowu::data::for_tests(test).unwrap();
    let names = crate::knowu::interop::tasks::read_names(&dir.join("tasks.csv")).unwrap();
    let mut totals = [0usize; 3];
    for name in ["developer", "student", "user"] {
        let p = shared_profile(test, name).unwrap();
        let g = generated(&p, &world);
        // Persona fit: every KnowU personalized class generated for her is one KnowU's task list
        // gives her (no leave notice or late-night taxi where KnowU has none).
        for t in g
            .tasks
            .iter()
            .filter(|t| t.info.split == Split::Personalized)
        {
            let id = &t.bundle.task.task_id;
            assert!(
                !t.info.in_knowu || names.contains(id),
                "{id} is not in KnowU's task list"
            );
        }
        let count = |s: Split| g.tasks.iter().filter(|t| t.info.split == s).count();
        let counts = [
            count(Split::General),
            count(Split::Personalized),
            count(Split::Proactive),
        ];
        // KnowU: 42 / 86 / 64 over 4 personas, i.e. about 10–11 / 21–22 / 16 per persona.
        let expected = match name {
            "developer" => [10, 20, 16],
            // LateNightCommute with her roommates (her ride-hailing's "only if").
            "student" => [10, 23, 16],
            _ => [11, 23, 16],
        };
        assert_eq!(counts, expected, "{name}");
        for (t, c) in totals.iter_mut().zip(counts) {
            *t += c;
        }
        // Proactive expectations follow the profile's habits.
        for t in g.tasks.iter().filter(|t| t.info.split == Split::Proactive) {
            let has = t.info.habit_keys.iter().any(|k| p.habit(k).is_some());
            let id = &t.bundle.task.task_id;
            assert_eq!(t.info.expect == Some(Expect::Act), has, "{id}");
        }
    }
    eprintln!("general / personalized / proactive over 3 personas: {totals:?}");
}

#[test]
fn bad_profiles_and_templates_are_named_errors() {
    let e = KnowuProfile::parse("x.yaml", "version: 1\n").unwrap_err();
    assert!(
        e.to_string().contains("x.yaml") && e.to_string().contains("user_profile"),
        "{e}"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.yaml"),
        "templates:\n  - id: X\n    split: sideways\n",
    )
    .unwrap();
    let e = load_dir(dir.path(), "tpl").unwrap_err().to_string();
    assert!(e.contains("tpl/bad.yaml"), "{e}");
    let missing = load_dir(Path::new("/nonexistent-knowu"), "nowhere").unwrap_err();
    assert!(missing.to_string().contains("nowhere"), "{missing}");
}

/// A night nurse whose profile has every standard section, each fact under a key no shipped
/// persona uses.
const NURSE: &str = r#"
user_profile:
  identity: { full_name: Maria Rossi, age: 52, occupation: Night nurse }
  locations: { home: { address: "Via Roma 3" }, work: { address: "Ospedale Maggiore" } }
  habits:
    sleep_in_after_nights: { description: "After a week of night shifts, turns off the 07:30 alarm on Friday night to sleep in.", trigger: { time: "23:00", day: Friday } }
    power_guard: { description: "Switches on battery saver when the battery runs low.", trigger: { condition: "battery below 20%" } }
    sunday_call_home: { description: "Calls her mother every Sunday evening.", trigger: { day: Sunday, time: "19:00" } }
  preferences:
    diet:
      favourite_cuisines: [Italian, Greek]
      takeout_app: "Chilemei (cheaper delivery fees)"
      rider_remark: "Ring twice, I'm often asleep."
      evening_meal: "Minestrone soup"
      hot_drinks: "Green tea, no sugar"
      fizzy_drinks: "San Pellegrino"
      eating_style: "Mediterranean, low salt"
    shopping:
      laptop: "Lightweight Chromebook under 400 EUR"
      footwear: { size_eu: 39, colour: navy }
      preferred_courier: "DHL"
      favourite_store_app: "Taodian"
      clothing: "Only dark colours"
      how_i_pay: "Credit card"
    travel:
      everyday_transport: "Tram line 9"
      when_it_rains: "Taxi"
      late_night_rides: "Hospital shuttle"
      seat_choice: "Window"
    social:
      writing_style: "Warm and short, always signs with 'M.'"
      meetings: "Only after 14:00, never on Mondays"
      sharing_pictures: "Shares photos of her garden"
      topics_followed: "Nursing research; opera"
      posting: "Posts recipes"
    apps:
      work_chat: { team_channel: "ward-7" }
      file_browser: { sort_files_by: "Size (largest first)" }
  social_graph:
    family: [ { name: Mother, role: Mom, interaction: "Calls in Italian, affectionate" } ]
"#;

/// A retired man with a thin profile: a few diet facts under odd keys, a tone, no shopping or
/// travel; only a weekend *alarm*, KnowU's alternative scam key, and a dark-mode habit under a
/// key of his own.
const RETIREE: &str = r#"
user_profile:
  identity: { full_name: Tom Baker, age: 70, occupation: Retired postman }
  habits:
    weekend_alarm: { wakeup_time: "6:00", ringtone: Krypton }
    fraud_sms_block: { description: "Blocks numbers that send prize scams." }
    dark_screen_evenings: { description: "Switches the phone to dark mode after 21:00." }
  preferences:
    diet:
      meals: { lunch: "Fish and chips", dinner: "Soup and bread" }
      no_go_foods: [Chili]
      delivery_service: "Tuantuan"
      notes_for_driver: "Leave it with the neighbour"
    travel:
      usual_way_around: "Bus 12"
    social:
      tone_of_voice: "Formal, full sentences"
"#;

pub(super) fn persona_from(name: &str, yaml: &str) -> KnowuProfile {
    KnowuProfile::parse(&format!("{name}.yaml"), yaml).unwrap()
}

fn counts(g: &Generated) -> [usize; 3] {
    let count = |s: Split| g.tasks.iter().filter(|t| t.info.split == s).count();
    [
        count(Split::General),
        count(Split::Personalized),
        count(Split::Proactive),
    ]
}

/// The profile path each task's preference came from.
fn sources(g: &Generated) -> std::collections::BTreeMap<String, String> {
    g.tasks
        .iter()
        .filter_map(|t| {
            let slot = t.bundle.slots.first()?;
            Some((t.info.class_name.clone(), slot.profile_entry.clone()?))
        })
        .collect()
}

#[test]
fn personas_with_unseen_keys_get_tasks_by_meaning() {
    let world = world_for(&minimal());
    let nurse = persona_from("maria", NURSE);
    let g = generated(&nurse, &world);
    // Every standard section present: every template applies (KnowU: ~10.5 / 21.5 / 16).
    assert!(g.skipped.is_empty(), "{:?}", g.skipped);
    assert_eq!(counts(&g), [11, 25, 16]);
    let from = sources(&g);
    for (class, path) in [
        (
            "OrderLunchPreferenceTask",
            "preferences.diet.favourite_cuisines",
        ),
        ("OrderLunchTradeoffTask", "preferences.diet.takeout_app"),
        (
            "TakeoutReamarkPreferenceAskUserTask",
            "preferences.diet.rider_remark",
        ),
        ("BuyColaPreferenceTask", "preferences.diet.fizzy_drinks"),
        (
            "BuyComputerPreferenceAskUserTask",
            "preferences.shopping.laptop",
        ),
        (
            "NoteTheCourierForDeliveryPreferenceAskUserTask",
            "preferences.shopping.preferred_courier",
        ),
        (
            "CommuteRoutingSunnyTask",
            "preferences.travel.everyday_transport",
        ),
        (
            "CommuteRoutingBadWeatherTask",
            "preferences.travel.when_it_rains",
        ),
        (
            "LateNightCommuteTask",
            "preferences.travel.late_night_rides",
        ),
        (
            "MattermostLeaveNoticeTask",
            "preferences.social.writing_style",
        ),
        (
            "CalendarScheduleGroupMeetingTask",
            "preferences.social.meetings",
        ),
        (
            "ShareFavoritePhotosPreferenceAskUserTask",
            "preferences.social.sharing_pictures",
        ),
        (
            "SearchTopInfoPreferenceAskUserTask",
            "preferences.social.topics_followed",
        ),
        (
            "MessagesAskMomForMoneyTask",
            "social_graph.family[0].interaction",
        ),
        (
            "SortFilesByHabitPreferenceAskUserTask",
            "preferences.apps.file_browser.sort_files_by",
        ),
    ] {
        assert_eq!(from.get(class).map(String::as_str), Some(path), "{class}");
    }
    // Habits under keys of her own, found by what they say; KnowU's bucket keys gain the key.
    let sleeper = task(&g, "WeekendSleeperTask");
    assert_eq!(expect(sleeper), Some(Expect::Act));
    let habit = sleeper.info.habit.as_ref().unwrap();
    assert_eq!(
        (habit.key.as_str(), habit.how),
        ("sleep_in_after_nights", HabitMatch::Meaning)
    );
    assert_eq!(
        sleeper.info.habit_keys,
        ["weekend_sleeper", "weekend_alarm", "sleep_in_after_nights"]
    );
    assert_eq!(
        expect(task(&g, "BatterySaverRoutineTask")),
        Some(Expect::Act)
    );
    assert_eq!(expect(task(&g, "DailyFamilyCallTask")), Some(Expect::Act));
    assert_eq!(
        expect(task(&g, "NightEyeCareRoutineTask")),
        Some(Expect::Silent)
    );

    let retiree = persona_from("tom", RETIREE);
    let g = generated(&retiree, &world);
    // A retiree gets no sick-leave notice to a team (persona fit), nor its general twin.
    assert_eq!(counts(&g), [2, 4, 16]);
    let from = sources(&g);
    assert_eq!(
        from["OrderLunchPreferenceTask"],
        "preferences.diet.meals.lunch"
    );
    assert_eq!(
        from["OrderLunchTradeoffTask"],
        "preferences.diet.delivery_service"
    );
    assert_eq!(
        from["TakeoutReamarkPreferenceAskUserTask"],
        "preferences.diet.notes_for_driver"
    );
    assert_eq!(
        from["PrefflowDinnerComfortFoodPreferenceTask"],
        "preferences.diet.meals.dinner"
    );
    assert!(!from.contains_key("MattermostLeaveNoticeTask"));
    // 21 skipped, each naming the section and what it looked for, or why it does not fit.
    assert_eq!(g.skipped.len(), 21, "{:?}", g.skipped);
    let leave = g
        .skipped
        .iter()
        .find(|s| s.template == "MattermostLeaveNoticeTask")
        .unwrap();
    assert!(
        leave.missing.contains("Retired postman"),
        "{}",
        leave.missing
    );
    let commute = g
        .skipped
        .iter()
        .find(|s| s.template == "CommuteRoutingSunnyTask")
        .unwrap();
    assert!(
        commute
            .missing
            .starts_with("`preferences.travel` key about primary mode"),
        "{}",
        commute.missing
    );
    assert!(g
        .skipped
        .iter()
        .any(|s| s.missing.starts_with("`preferences.shopping` key about")));
    assert_eq!(
        expect(task(&g, "ScamSmsInterceptRoutineTask")),
        Some(Expect::Act),
        "KnowU's own alternative key"
    );
    let eye = task(&g, "NightEyeCareRoutineTask");
    assert_eq!(
        eye.info.habit.as_ref().map(|h| h.how),
        Some(HabitMatch::Meaning)
    );
}

#[test]
fn weekend_sleeper_follows_what_the_user_wants_on_a_weekend_morning() {
    let world = world_for(&minimal());
    // A sleeper habit: turn the alarm off (KnowU's task: should_act).
    let student = persona_from(
        "sleeper",
        "user_profile:\n  habits:\n    weekend_sleeper: { description: 'Disables the 07:30 alarm on Friday nights.' }\n",
    );
    let g = generated(&student, &world);
    let t = task(&g, "WeekendSleeperTask");
    assert_eq!(expect(t), Some(Expect::Act));
    let off = reference(t);
    assert_eq!(play(&world, t, off.clone()).0, Some(1.0));
    assert_eq!(play(&world, t, vec![]).0, Some(0.0), "passive");
    // Only a weekend alarm (grandma's case: she wants it at 6:00): stay silent. KnowU's metric
    // still buckets this "need" (its key map lists weekend_alarm) — the quirk knowu_metrics
    // reproduces and flags; the task itself expects silence, as KnowU's task definition does.
    let early = persona_from(
        "early",
        "user_profile:\n  habits:\n    weekend_alarm: { wakeup_time: '6:00am', favoriate_ringtone: Krypton }\n",
    );
    let g = generated(&early, &world);
    let t = task(&g, "WeekendSleeperTask");
    assert_eq!(expect(t), Some(Expect::Silent));
    assert_eq!(t.info.decision, Some(Decision::Reject));
    assert_eq!(t.info.habit_keys, ["weekend_sleeper", "weekend_alarm"]);
    assert!(t.bundle.task.reference_solution.is_empty());
    assert_eq!(play(&world, t, vec![]).0, Some(1.0));
    assert_eq!(
        play(&world, t, off).0,
        Some(0.0),
        "turning her alarm off is wrong"
    );
}

#[test]
fn template_classes_agree_with_knowu_task_list() {
    let Some(dir) = crate::knowu::data::for_tests("template_classes_agree_with_knowu_task_list")
    else {
        return;
    };
    let path = dir.join("tasks.csv");
    let index = crate::knowu::interop::tasks::read(&path).unwrap();
    let names = crate::knowu::interop::tasks::read_names(&path).unwrap();
    let classes: std::collections::BTreeSet<&str> =
        names.iter().map(|n| n.split('@').next().unwrap()).collect();
    for t in templates() {
        let ids = std::iter::once((t.id.as_str(), t.split.as_str(), t.difficulty.as_str())).chain(
            t.twin
                .iter()
                .map(|w| (w.id.as_str(), "general", w.difficulty.as_str())),
        );
        for (id, split, difficulty) in ids {
            if !t.in_knowu() {
                assert!(id.starts_with("Prefflow") && !classes.contains(id), "{id}");
                continue;
            }
            assert!(
                classes.contains(id),
                "{id} is not a KnowU class; mark it origin: prefflow"
            );
            let meta = index.get(id).unwrap();
            assert_eq!(
                (meta.split.as_str(), meta.difficulty.as_str()),
                (split, difficulty),
                "{id}"
            );
            if split == "proactive" {
                assert_eq!(meta.habit_keys, t.habit_keys, "{id}: KnowU's bucket keys");
            }
        }
    }
}

#[test]
fn every_task_takes_lambda_from_the_scoring_table_which_cites_knowu() {
    let table = scoring_table();
    // KnowU's values the issue names: 0.4 + 0.6·judge, 0.5 for the lunch orders, pure judge
    // for the commute plans, pure rule for general and routine classes.
    for (class, lambda) in [
        ("BuyColaPreferenceTask", 0.4),
        ("SearchWhiteSneakersCheckoutPreferenceAskUserTask", 0.4),
        ("NoteTheCourierForDeliveryPreferenceAskUserTask", 0.4),
        ("TakeoutReamarkPreferenceAskUserTask", 0.4),
        ("SearchTopInfoPreferenceAskUserTask", 0.4),
        ("MessagesAskMomForMoneyTask", 0.4),
        ("MattermostLeaveNoticeTask", 0.4),
        ("CalendarScheduleGroupMeetingTask", 0.4),
        ("ShareFavoritePhotosPreferenceAskUserTask", 0.4),
        ("OrderLunchTradeoffTask", 0.5),
        ("OrderLunchPreferenceTask", 0.5),
        ("CommuteRoutingSunnyTask", 0.0),
        ("CommuteRoutingBadWeatherTask", 0.0),
        ("LateNightCommuteTask", 0.0),
        ("BuyColaGeneralTask", 1.0),
        ("CommuteRoutingBadWeatherGeneralTask", 0.0),
        ("GalleryCleanupTask", 1.0),
    ] {
        let row = table
            .get(class)
            .unwrap_or_else(|| panic!("no row for {class}"));
        assert_eq!(row.lambda, lambda, "{class}");
        assert!(row
            .source
            .starts_with("KnowU-Bench src/knowu_bench/tasks/definitions/"));
        assert!(row.source.contains(class), "{class}: {}", row.source);
    }
    // Every template class (and twin) has a row of its split; prefflow's own say so.
    for t in templates() {
        let twins = t.twin.iter().map(|w| (w.id.as_str(), Split::General));
        for (id, split) in std::iter::once((t.id.as_str(), t.split)).chain(twins) {
            let row = table.get(id).unwrap_or_else(|| panic!("no row for {id}"));
            assert_eq!(row.split, split, "{id}");
            assert_eq!(
                row.source.starts_with("prefflow-only"),
                !t.in_knowu(),
                "{id}"
            );
        }
    }
    // The generated tasks carry the table's λ, into the generic task the judges read too.
    let p = minimal();
    let world = world_for(&p);
    for t in &generated(&p, &world).tasks {
        let want = table.get(&t.info.class_name).map(|r| r.lambda);
        assert_eq!(t.info.lambda, want, "{}", t.info.class_name);
        assert_eq!(t.bundle.task.lambda, want, "{}", t.info.class_name);
    }
}

#[test]
fn the_scoring_table_refuses_uncited_or_inconsistent_rows() {
    let dir = tempfile::tempdir().unwrap();
    let head = "class,split,lambda,judge_weight,rule_part,judge_part,source\n";
    let cases = [
        (
            "A,personalized,0.4,0.5,r,j,KnowU-Bench x.py A\n",
            "is not 1",
        ),
        (
            "A,personalized,1.4,-0.4,r,j,KnowU-Bench x.py A\n",
            "from 0 to 1",
        ),
        (
            "A,personalized,0.4,0.6,r,j,my guess\n",
            "must cite KnowU's definition",
        ),
        (
            "PrefflowX,personalized,0.4,0.6,r,j,KnowU-Bench x.py PrefflowX\n",
            "prefflow-only",
        ),
        (
            "A,routine,1,0,r,j,KnowU-Bench x.py A\n",
            "use general, personalized or proactive",
        ),
        (
            "A,general,1,0,r,j,KnowU-Bench x.py A\nA,general,1,0,r,j,KnowU-Bench x.py A\n",
            "two rows",
        ),
    ];
    for (rows, want) in cases {
        let path = dir.path().join("s.csv");
        std::fs::write(&path, format!("{head}{rows}")).unwrap();
        let err = super::scoring::load(&path, "s.csv")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(want) && err.starts_with("s.csv"),
            "{rows}: {err}"
        );
    }
    let ok = super::scoring::load(&repo().join("datasets/knowu/scoring.csv"), "x").unwrap();
    let err = ok.lambda("NoSuchTask", "x.csv").unwrap_err();
    assert!(err.contains("no row for class `NoSuchTask`"), "{err}");
}

#[test]
fn the_scoring_table_covers_every_knowu_class_with_its_split() {
    let Some(dir) = crate::knowu::data::for_tests("the_scoring_table_covers_every_knowu_class")
    else {
        return;
    };
    let path = dir.join("tasks.csv");
    let index = crate::knowu::interop::tasks::read(&path).unwrap();
    let table = scoring_table();
    let mut classes = std::collections::BTreeSet::new();
    for name in crate::knowu::interop::tasks::read_names(&path).unwrap() {
        let class = name.split('@').next().unwrap().to_string();
        let row = table
            .get(&class)
            .unwrap_or_else(|| panic!("no row for {class}"));
        assert_eq!(
            row.split.as_str(),
            index.get(&name).unwrap().split,
            "{class}"
        );
        classes.insert(class);
    }
    // Every KnowU class of the table is one of tasks.csv's: nothing invented.
    for (class, row) in table.iter() {
        assert_eq!(
            classes.contains(class),
            !row.source.starts_with("prefflow-only"),
            "{class}"
        );
    }
}

/// The tasks generated for the persona profile at `path` (named `name`).
pub(super) fn generated_for(name: &str, path: &Path) -> Generated {
    let text = std::fs::read_to_string(path).unwrap();
    let p = KnowuProfile::parse(&format!("{name}.yaml"), &text).unwrap();
    let world = world_for(&p);
    generated(&p, &world)
}

/// A persona with KnowU's gallery, scam and weather habits (the scam sender in its trigger).
const HABITS: &str = r#"
user_profile:
  identity: { full_name: Ana Ruiz, age: 61 }
  habits:
    gallery_cleanup: { description: "Deletes screenshots older than 30 days.", action: { cleanup_policy: { mode: delete_older_than, older_than_days: 30 } } }
    scam_sms_intercept: { description: "Blocks suspicious SMS senders after confirmation.", trigger: { sender_phone: "+8617099887766" } }
    morning_weather: { description: "Checks the weather every morning at 7." }
"#;

#[test]
fn proactive_checks_follow_knowus_definitions_so_over_acting_fails() {
    let p = persona_from("ana", HABITS);
    let world = world_for(&p);
    let g = generated(&p, &world);
    let call = |tool: &str, args: serde_json::Value| -> Action {
        serde_json::from_value(serde_json::json!({"action": "call", "tool": tool, "args": args}))
            .unwrap()
    };
    // Gallery: two stale screenshots and a recent one are planted; deleting the stale ones is
    // right, deleting everything (the recent one too) is over-acting.
    let gallery = task(&g, "GalleryCleanupTask");
    assert_eq!(gallery.info.expect, Some(Expect::Act));
    assert_eq!(play(&world, gallery, reference(gallery)).0, Some(1.0));
    let mut all = reference(gallery);
    all.push(call(
        "gallery.delete_photo",
        serde_json::json!({"photo": "ph-recent"}),
    ));
    assert_eq!(
        play(&world, gallery, all).0,
        Some(0.0),
        "the recent screenshot must stay"
    );
    // Scam: the sender is the habit's own number; blocking another number does not count.
    let scam = task(&g, "ScamSmsInterceptRoutineTask");
    assert!(scam
        .info
        .situation
        .as_ref()
        .unwrap()
        .notification
        .contains("+8617099887766"));
    let right = call(
        "device.block_number",
        serde_json::json!({"number": "+8617099887766", "reason": "scam"}),
    );
    let wrong = call(
        "device.block_number",
        serde_json::json!({"number": "+86 170-9999-0000", "reason": "scam"}),
    );
    assert_eq!(play(&world, scam, vec![right]).0, Some(1.0));
    assert_eq!(play(&world, scam, vec![wrong]).0, Some(0.0));
    // Weather: an answer with the day's temperature, not merely opening a page.
    let weather = task(&g, "MorningWeatherCheckTask");
    assert_eq!(play(&world, weather, reference(weather)).0, Some(1.0));
    let tab = call(
        "browser.open_url",
        serde_json::json!({"url": "https://www.weather.com/today"}),
    );
    assert_eq!(play(&world, weather, vec![tab]).0, Some(0.0));
    let vague: Action = serde_json::from_value(
        serde_json::json!({"action": "answer", "text": "It will be a nice day."}),
    )
    .unwrap();
    assert_eq!(play(&world, weather, vec![vague]).0, Some(0.0));
}
