//! The built-in agents on the validated candidate tasks, judged with the rule predicates: the
//! orderings the papers report must hold (numbers are printed for the record, not pinned).

use std::collections::HashSet;

use crate::episodes::agent::AgentFactory;
use crate::episodes::exposure::{self, Exposure, LogKind};
use crate::episodes::{run_episode, EpisodeRow, EpisodeSpec, PhoneEnv, ScriptedUser};
use crate::tasks::eval::Episode;
use crate::tasks::testkit::{block_on, candidates, world};
use crate::tasks::validate::validate;
use crate::tasks::world_index::WorldIndex;
use crate::tasks::{CriterionKind, Source, TaskBundle};
use crate::world::history::HistoryEvent;
use crate::world::phone::{ActionSpace, EpisodeConfig};

use super::{AskAll, Defaults, Heuristic, Oracle};

/// Pass counts of one agent configuration over the task set.
#[derive(Debug, Default)]
struct Score {
    criteria: (u32, u32),
    action: (u32, u32),
    inferable: (u32, u32),
    ask_only: (u32, u32),
    /// Ask-only slots disclosed by some question / all ask-only slots.
    recall: (u32, u32),
    /// Questions that matched an ask-only slot / all questions.
    precision: (u32, u32),
    /// Questions asked in the clarification phase.
    clarify_asks: u32,
    /// Episodes that ran out of steps.
    out_of_steps: u32,
}

fn rate((n, d): (u32, u32)) -> f64 {
    if d == 0 {
        0.0
    } else {
        f64::from(n) / f64::from(d)
    }
}

fn add(c: &mut (u32, u32), pass: bool) {
    c.0 += u32::from(pass);
    c.1 += 1;
}

fn tasks() -> Vec<&'static TaskBundle> {
    let ix = WorldIndex::new(world());
    candidates()
        .iter()
        .filter(|b| validate(&ix, b).is_empty())
        .collect()
}

fn measure(factory: &dyn AgentFactory, history: Exposure, clarify: bool) -> Score {
    let mut score = Score::default();
    for bundle in tasks() {
        let task = &bundle.task;
        let config = EpisodeConfig {
            space: ActionSpace::Tools,
            clock: None,
            overrides: task.overrides.clone(),
        };
        let mut env = PhoneEnv::new(world(), config).unwrap_or_else(|e| panic!("{e}"));
        let extra: Vec<HistoryEvent> = env.phone.extra_history().to_vec();
        let mut all: Vec<&HistoryEvent> = world().history.iter().chain(&extra).collect();
        all.sort_by_key(|e| e.time);
        let shown = exposure::select(
            &all,
            history,
            LogKind::Noisy,
            &task.instruction,
            &Default::default(),
        );
        let mut agent = factory.make(bundle, 0);
        let mut user = ScriptedUser::new(&bundle.slots);
        let spec = EpisodeSpec {
            indexes: Default::default(),
            row: EpisodeRow::default(),
            instruction: task.instruction.clone(),
            space: ActionSpace::Tools,
            max_steps: 30,
            clarify,
        };
        let run = block_on(run_episode(
            &mut env,
            agent.as_mut(),
            &mut user,
            &shown,
            spec,
        ));
        assert_ne!(
            run.episode.status, "error",
            "{}: {:?}",
            task.task_id, run.episode.error
        );
        score.out_of_steps += u32::from(run.episode.status == "max_steps");
        let judge = Episode::new(&env.phone, &bundle.slots);
        for c in &bundle.criteria {
            let pass = judge.check(&c.predicate);
            add(&mut score.criteria, pass);
            let source = c
                .slot_id
                .as_deref()
                .and_then(|s| bundle.slot(s))
                .map(|s| s.source);
            match (c.kind, source) {
                (CriterionKind::Action, _) => add(&mut score.action, pass),
                (_, Some(Source::AskOnly)) => add(&mut score.ask_only, pass),
                _ => add(&mut score.inferable, pass),
            }
        }
        let mut disclosed = HashSet::new();
        for s in run.steps.iter().filter(|s| s.action_type == "ask_user") {
            add(&mut score.precision, !s.disclosed_slots.is_empty());
            score.clarify_asks += u32::from(s.phase == "clarify");
            disclosed.extend(s.disclosed_slots.iter().cloned());
        }
        for s in bundle.slots.iter().filter(|s| s.source == Source::AskOnly) {
            add(&mut score.recall, disclosed.contains(&s.slot_id));
        }
    }
    score
}

fn report(name: &str, s: &Score) {
    println!(
        "{name:<22} all {:.3} action {:.3} inferable {:.3} ask_only {:.3} | questions {} recall {:.3} precision {:.3}",
        rate(s.criteria),
        rate(s.action),
        rate(s.inferable),
        rate(s.ask_only),
        s.precision.1,
        rate(s.recall),
        rate(s.precision)
    );
}

#[test]
fn the_baselines_order_as_the_papers_report() {
    let configs: [(&str, &dyn AgentFactory, Exposure, bool); 9] = [
        ("oracle", &Oracle, Exposure::All, false),
        ("defaults", &Defaults, Exposure::All, false),
        ("ask_all", &AskAll, Exposure::All, false),
        ("ask_all clarify", &AskAll, Exposure::All, true),
        ("heuristic none", &Heuristic, Exposure::None, false),
        ("heuristic top_k:10", &Heuristic, Exposure::TopK(10), false),
        ("heuristic top_k:50", &Heuristic, Exposure::TopK(50), false),
        ("heuristic all", &Heuristic, Exposure::All, false),
        ("heuristic all clarify", &Heuristic, Exposure::All, true),
    ];
    let scores: Vec<Score> = std::thread::scope(|s| {
        let handles: Vec<_> = configs
            .iter()
            .map(|&(_, f, e, c)| s.spawn(move || measure(f, e, c)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| panic!("a measurement panicked"))
            })
            .collect()
    });
    let [oracle, defaults, ask_all, ask_all_clarify, heur_none, heur_10, heur_50, heur_all, heur_clarify] =
        &scores[..]
    else {
        panic!("nine scores")
    };
    println!("validated candidates: {}", tasks().len());
    for ((name, ..), s) in configs.iter().zip(&scores) {
        report(name, s);
    }

    assert_eq!(
        oracle.criteria.0, oracle.criteria.1,
        "the oracle passes every criterion"
    );
    for ((name, ..), s) in configs.iter().zip(&scores) {
        assert_eq!(
            s.out_of_steps, 0,
            "{name}: every episode ends within 30 steps"
        );
    }
    let personalization = (
        defaults.inferable.0 + defaults.ask_only.0,
        defaults.inferable.1 + defaults.ask_only.1,
    );
    assert!(
        rate(personalization) < 0.05,
        "defaults ≈ 0 on personalization: {personalization:?}"
    );
    assert_eq!(defaults.precision.1, 0, "defaults never asks");

    // The scripted user answers questions about inferable details too (iPrefBench C.3), so
    // asking is not punished by silence: ask_all gets inferable details right by asking, and
    // over-asking shows in precision instead.
    assert!(
        rate(ask_all.inferable) > 0.2,
        "asked inferable details are answered"
    );
    assert!(
        rate(ask_all.precision) < rate(oracle.precision),
        "asking about everything costs precision"
    );
    // More history, fewer questions.
    let asked = |s: &Score| s.precision.1;
    assert!(asked(heur_all) < asked(heur_50) && asked(heur_50) < asked(heur_10));
    assert!(asked(heur_10) <= asked(heur_none));
    assert!(
        rate(heur_all.inferable) > rate(defaults.inferable),
        "history is used"
    );

    assert!(
        ask_all.precision.1 > heur_all.precision.1,
        "ask_all asks more"
    );
    assert!(
        rate(ask_all.recall) > rate(heur_all.recall),
        "ask_all recalls more ask-only details"
    );
    assert!(rate(ask_all.ask_only) > rate(defaults.ask_only));

    // Clarifying up front asks the same questions, so it scores the same; a field two operations
    // of one task share (two grocery orders) may be asked once more or less up front.
    assert_eq!(ask_all_clarify.criteria, ask_all.criteria);
    let (up_front, as_needed) = (ask_all_clarify.precision.1, ask_all.precision.1);
    assert!(
        up_front.abs_diff(as_needed) * 50 <= as_needed,
        "{up_front} vs {as_needed} questions"
    );
    assert_eq!(heur_clarify.criteria, heur_all.criteria);
    assert_eq!(ask_all.clarify_asks + heur_all.clarify_asks, 0);
    assert!(ask_all_clarify.clarify_asks > 0 && heur_clarify.clarify_asks > 0);
}

/// Plays one task with the scripted user and returns the run and whether each criterion passed.
fn play(
    factory: &dyn AgentFactory,
    bundle: &TaskBundle,
    history: Exposure,
) -> (crate::episodes::EpisodeRun, Vec<(String, bool)>) {
    play_with_user(factory, bundle, &bundle.slots, history)
}

/// [`play`] with the agent given `bundle` and the scripted user answering from `user_slots`.
fn play_with_user(
    factory: &dyn AgentFactory,
    bundle: &TaskBundle,
    user_slots: &[crate::tasks::Slot],
    history: Exposure,
) -> (crate::episodes::EpisodeRun, Vec<(String, bool)>) {
    play_log(factory, bundle, user_slots, history, LogKind::Noisy)
}

/// [`play`] on the signal events only: for tests about what the agent does once it holds her
/// usual value, not about how well it infers that value through the noise.
fn play_clean(
    factory: &dyn AgentFactory,
    bundle: &TaskBundle,
) -> (crate::episodes::EpisodeRun, Vec<(String, bool)>) {
    play_log(
        factory,
        bundle,
        &bundle.slots,
        Exposure::All,
        LogKind::Clean,
    )
}

/// [`play_with_user`] on the log `log` shows.
fn play_log(
    factory: &dyn AgentFactory,
    bundle: &TaskBundle,
    user_slots: &[crate::tasks::Slot],
    history: Exposure,
    log: LogKind,
) -> (crate::episodes::EpisodeRun, Vec<(String, bool)>) {
    let task = &bundle.task;
    let config = EpisodeConfig {
        space: ActionSpace::Tools,
        clock: None,
        overrides: task.overrides.clone(),
    };
    let mut env = PhoneEnv::new(world(), config).unwrap_or_else(|e| panic!("{e}"));
    let all: Vec<&HistoryEvent> = world().history.iter().collect();
    let shown = exposure::select(&all, history, log, &task.instruction, &Default::default());
    let mut agent = factory.make(bundle, 0);
    let mut user = ScriptedUser::new(user_slots);
    let spec = EpisodeSpec {
        indexes: Default::default(),
        row: EpisodeRow::default(),
        instruction: task.instruction.clone(),
        space: ActionSpace::Tools,
        max_steps: 30,
        clarify: false,
    };
    let run = block_on(run_episode(
        &mut env,
        agent.as_mut(),
        &mut user,
        &shown,
        spec,
    ));
    let judge = Episode::new(&env.phone, &bundle.slots);
    let passed = bundle
        .criteria
        .iter()
        .map(|c| (c.criterion_id.clone(), judge.check(&c.predicate)))
        .collect();
    (run, passed)
}

fn task(id: &str) -> TaskBundle {
    candidates()
        .iter()
        .find(|b| b.task.task_id == id)
        .cloned()
        .unwrap_or_else(|| panic!("no candidate {id}"))
}

#[test]
fn an_unavailable_choice_is_surfaced_and_the_users_alternative_is_booked() {
    let bundle = task("dinespot_time_gone-01");
    // Her usual time must be known for it to be found taken: the signal log, so that a redraw of
    // the decoys cannot make this test about inference.
    let (run, passed) = play_clean(&Heuristic, &bundle);
    let surfaced = run
        .steps
        .iter()
        .find(|s| s.action_type == "ask_user" && s.arguments.contains("not available"))
        .unwrap_or_else(|| panic!("no surfacing question in {:#?}", run.steps));
    assert!(
        surfaced.arguments.contains("19:30"),
        "{}",
        surfaced.arguments
    );
    assert_eq!(surfaced.disclosed_slots, ["fallback_time"]);
    // What this test is about: the booking happens, at the time the user chose, and lands on
    // the calendar. `seating` is an inference from the history, where decoys carrying other
    // seatings may outvote the heuristic's count; that is the noise doing its job.
    let about: Vec<_> = passed.iter().filter(|(id, _)| id != "seating").collect();
    assert_eq!(about.len(), 3, "{passed:?}");
    assert!(about.iter().all(|(_, p)| *p), "{passed:?}");
}

#[test]
fn when_the_user_wants_no_alternative_the_agent_stops_and_says_so() {
    let mut bundle = task("dinespot_time_gone-01");
    let slot = bundle
        .slot_mut("fallback_time")
        .unwrap_or_else(|| panic!("fallback slot"));
    slot.value = serde_json::json!("no other time");
    let (run, _) = play_clean(&Heuristic, &bundle);
    let answer = run.episode.final_answer.unwrap_or_default();
    assert!(
        answer.contains("not available") && answer.contains("19:30"),
        "{answer}"
    );
    let calls = run
        .steps
        .iter()
        .filter(|s| s.action_type == "dinespot.book_table")
        .count();
    assert_eq!(calls, 1, "the failed attempt only, no substitute booking");
    let diff: serde_json::Value = serde_json::from_str(&run.diff).unwrap_or_default();
    let tables = diff["tables"]
        .as_array()
        .unwrap_or_else(|| panic!("a world diff: {}", run.diff));
    assert!(tables.is_empty(), "nothing booked or added: {}", run.diff);
}

#[test]
fn the_baselines_never_read_the_answers_only_the_users_replies() {
    for id in [
        "dinespot_dinner-01",
        "tixly_show-01",
        "freshcart_store_gone-01",
    ] {
        let honest = task(id);
        let mut blind = honest.clone();
        blind.task.reference_solution.clear();
        blind.criteria.clear();
        for s in blind
            .slots
            .iter_mut()
            .filter(|s| s.source == Source::Inferable)
        {
            s.value = serde_json::json!("zzz-not-the-answer");
            s.evidence.clear();
        }
        for factory in [&AskAll as &dyn AgentFactory, &Heuristic] {
            // The user answers from the honest slots either way: only what the agent is given
            // differs.
            let steps = |b: &TaskBundle| -> Vec<(String, String)> {
                play_with_user(factory, b, &honest.slots, Exposure::All)
                    .0
                    .steps
                    .into_iter()
                    .map(|s| (s.action_type, s.arguments))
                    .collect()
            };
            assert_eq!(steps(&honest), steps(&blind), "{id} / {}", factory.name());
        }
    }
}
