//! Unit tests of KnowU task generation, consent and scoring, on the shipped templates and apps
//! and a hand-written persona; the three KnowU personas when `../shared` is present.

use std::path::{Path, PathBuf};

use polars::prelude::*;

use super::consent::KnowuUser;
use super::generate::{generate, Generated};
use super::template::{load_dir, Template};
use super::world::{app_sources, persona_stub, PROFILE_KIND};
use super::{Decision, Expect, KnowuTask, Split};
use crate::episodes::agents::ScriptedAgent;
use crate::episodes::simulator::Simulator;
use crate::episodes::{run_episode, EpisodeRow, EpisodeSpec, PhoneEnv};
use crate::knowu::interop::rules::{parse_decision, Decision as MetricDecision};
use crate::knowu::profile::KnowuProfile;
use crate::world::from_tables::world_from_tables;
use crate::world::phone::{Action, ActionSpace, EpisodeConfig};
use crate::world::{tables, World};

fn repo() -> PathBuf {
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

fn minimal() -> KnowuProfile {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("baker.yaml");
    std::fs::write(&path, MINIMAL).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    KnowuProfile::parse("baker.yaml", &text).unwrap()
}

/// The world a KnowU persona runs in, rebuilt from tables as `run_episodes` does.
fn world_for(p: &KnowuProfile) -> World {
    let apps = app_sources(&[
        repo().join("datasets/apps").as_path(),
        repo().join("datasets/knowu/apps").as_path(),
    ])
    .unwrap();
    let mut kind = vec!["app"; apps.len()];
    let mut name: Vec<String> = apps.iter().map(|a| a.0.clone()).collect();
    let mut text: Vec<String> = apps.iter().map(|a| a.1.clone()).collect();
    kind.extend(["persona", PROFILE_KIND]);
    name.extend([format!("{}.json", p.id), format!("{}.yaml", p.id)]);
    let log = crate::knowu::log::parse(
        "baker.json",
        r#"[{"time": "2026-01-05T07:10:00+08:00", "location": "Home", "action": "Turned on power saving at 14% battery.", "label": "signal", "category": "habit"}]"#,
    )
    .unwrap();
    text.extend([persona_stub(p, &log), MINIMAL.to_string()]);
    let sources = df!("kind" => kind, "name" => name, "text" => text).unwrap();
    world_from_tables(&sources, &tables::history_events(&log).unwrap()).unwrap()
}

fn generated(p: &KnowuProfile, world: &World) -> Generated {
    generate(&templates(), p, &world.catalog).unwrap()
}

fn task<'a>(g: &'a Generated, class: &str) -> &'a KnowuTask {
    g.tasks
        .iter()
        .find(|t| t.info.class_name == class)
        .unwrap_or_else(|| panic!("no task {class}"))
}

/// Plays `actions` (then finish) on `bundle` with the KnowU user; returns the score and the
/// user's replies.
fn play(world: &World, t: &KnowuTask, actions: Vec<Action>) -> (Option<f64>, Vec<String>) {
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
        row: EpisodeRow::default(),
        instruction: bundle.task.instruction.clone(),
        space: ActionSpace::Tools,
        max_steps: 10,
        clarify: false,
    };
    let run = run_episode(&mut env, &mut agent, &mut user, &[], spec);
    let replies = run
        .steps
        .iter()
        .filter_map(|s| s.user_reply.clone())
        .collect();
    let score = super::score::score(bundle, &t.info, &env.phone, &run.steps);
    (Some(score), replies)
}

fn reference(t: &KnowuTask) -> Vec<Action> {
    actions(&t.bundle.task.reference_solution)
}

fn actions(steps: &[serde_json::Value]) -> Vec<Action> {
    steps
        .iter()
        .map(|s| serde_json::from_value(s.clone()).unwrap())
        .collect()
}

fn ask(text: &str) -> Action {
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
    assert_eq!(mom.missing, "social_graph.financial");
    // Nothing both generated and skipped.
    for s in &g.skipped {
        assert!(
            !g.tasks.iter().any(|t| t.bundle.task.template == s.template),
            "{}",
            s.template
        );
    }
}

fn expect(t: &KnowuTask) -> Option<Expect> {
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
    let accept = KnowuUser::new(&battery.bundle, &battery.info)
        .reply("Shall I turn on power saving?")
        .unwrap();
    assert_eq!(parse_decision(&accept.text), Some(MetricDecision::Accept));
    assert!(
        accept.text.contains("power saving when the battery is low"),
        "{}",
        accept.text
    );
    let reject = KnowuUser::new(&report.bundle, &report.info)
        .reply("Shall I send the report?")
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

fn shared_profile(name: &str) -> Option<KnowuProfile> {
    let path = repo().join(format!("../shared/knowu-bench/user_profile/{name}.yaml"));
    let text = std::fs::read_to_string(&path).ok()?;
    Some(KnowuProfile::parse(&format!("{name}.yaml"), &text).unwrap())
}

#[test]
fn the_shipped_personas_yield_knowu_proportions() {
    let Some(first) = shared_profile("developer") else {
        eprintln!("../shared/knowu-bench is absent; skipping the shipped-persona check");
        return;
    };
    let world = world_for(&first);
    let mut totals = [0usize; 3];
    for name in ["developer", "student", "user"] {
        let p = shared_profile(name).unwrap();
        let g = generated(&p, &world);
        let count = |s: Split| g.tasks.iter().filter(|t| t.info.split == s).count();
        let counts = [
            count(Split::General),
            count(Split::Personalized),
            count(Split::Proactive),
        ];
        // KnowU: 42 / 86 / 64 over 4 personas, i.e. about 10–11 / 21–22 / 16 per persona.
        assert!((9..=12).contains(&counts[0]), "{name}: {counts:?}");
        assert!((19..=24).contains(&counts[1]), "{name}: {counts:?}");
        assert_eq!(counts[2], 16, "{name}");
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
