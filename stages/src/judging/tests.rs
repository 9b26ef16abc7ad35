//! Judge tests on real authored tasks in the default world: episodes are played by the real
//! runner (reference, defaults-only or hand-written action lists, answered by the scripted
//! user), written to the real `episodes`/`steps`/`bundles` tables and judged from them.

use serde_json::{json, Value};

use super::episode::VerdictRow;
use super::index::{episodes_from_table, JudgeIndex};
use super::interaction::scripted_pieces;
use super::llm::LlmJudge;
use super::*;
use crate::episodes::agents::{Defaults, Oracle, ScriptedAgent};
use crate::episodes::frames::episode_tables;
use crate::episodes::{run_episode, Agent, AgentFactory, EpisodeRow, EpisodeRun, EpisodeSpec};
use crate::episodes::{PhoneEnv, ScriptedUser};
use crate::llm::mock::{completion, Behavior, ScriptedServer};
use crate::llm::LlmConfig;
use crate::tasks::frames::bundles_table;
use crate::tasks::testkit::{block_on, candidates, datasets, world};
use crate::tasks::validate::validate;
use crate::tasks::world_index::WorldIndex;
use crate::tasks::{CriterionKind, Perturbation, Source, TaskBundle};
use crate::world::phone::{ActionSpace, EpisodeConfig};

/// Candidates that pass validation (the released set is a subset of these).
fn valid() -> Vec<&'static TaskBundle> {
    let ix = WorldIndex::new(world());
    candidates()
        .iter()
        .filter(|b| validate(&ix, b).is_empty())
        .collect()
}

/// The first valid instance of a template.
fn task(template: &str) -> TaskBundle {
    valid()
        .into_iter()
        .find(|b| b.task.template == template)
        .unwrap_or_else(|| panic!("no valid instance of {template}"))
        .clone()
}

fn play_with(b: &TaskBundle, agent: &mut dyn Agent, name: &str) -> EpisodeRun {
    let config = EpisodeConfig {
        space: ActionSpace::Tools,
        clock: None,
        overrides: b.task.overrides.clone(),
    };
    let mut env = PhoneEnv::new(world(), config).unwrap();
    let mut user = ScriptedUser::new(&b.slots);
    let spec = EpisodeSpec {
        indexes: Default::default(),
        row: EpisodeRow {
            episode_id: format!("{}#{name}#0", b.task.task_id),
            task_id: b.task.task_id.clone(),
            agent: name.into(),
            ..EpisodeRow::default()
        },
        instruction: b.task.instruction.clone(),
        space: ActionSpace::Tools,
        max_steps: 30,
        clarify: false,
    };
    block_on(run_episode(&mut env, agent, &mut user, &[], spec))
}

fn play(b: &TaskBundle, factory: &dyn AgentFactory) -> EpisodeRun {
    play_with(b, factory.make(b, 0).as_mut(), &factory.name())
}

/// Plays JSON phone actions (with `$slot` references) on `b`.
fn scripted(b: &TaskBundle, steps: Value) -> EpisodeRun {
    let steps = steps.as_array().unwrap().clone();
    play_with(b, &mut ScriptedAgent::from_solution(&steps, b), "hand")
}

/// Writes runs and bundles to their tables and judges every episode from them.
fn judge_runs(
    runs: &[EpisodeRun],
    bundles: &[TaskBundle],
    opts: &JudgeOptions,
    llm: Option<&LlmJudge<'_>>,
) -> Vec<EpisodeJudgement> {
    let tables = episode_tables(runs).unwrap();
    let index = JudgeIndex::build(&tables[1].1, &bundles_table(bundles).unwrap()).unwrap();
    episodes_from_table(&tables[0].1)
        .unwrap()
        .iter()
        .map(|ep| {
            let b = index.bundle(ep).unwrap();
            block_on(judge_episode(
                world(),
                b,
                ep,
                index.steps_of(&ep.episode_id),
                opts,
                llm,
            ))
            .unwrap()
        })
        .collect()
}

fn judge_one(b: &TaskBundle, run: EpisodeRun) -> EpisodeJudgement {
    judge_runs(
        &[run],
        std::slice::from_ref(b),
        &JudgeOptions::default(),
        None,
    )
    .remove(0)
}

fn verdict<'a>(j: &'a EpisodeJudgement, id: &str) -> &'a VerdictRow {
    j.verdicts
        .iter()
        .find(|v| v.criterion_id == id)
        .unwrap_or_else(|| panic!("no criterion {id}"))
}

/// The dinner booking of `b` (dinespot_dinner) with some arguments replaced.
fn booking(b: &TaskBundle, changes: Value) -> Value {
    let mut call = b
        .task
        .reference_solution
        .iter()
        .find(|s| s["tool"] == "dinespot.book_table")
        .unwrap()
        .clone();
    for (k, v) in changes.as_object().unwrap() {
        call["args"][k] = v.clone();
    }
    call
}

#[test]
fn oracle_episodes_pass_every_criterion_and_ask_every_ask_only_slot() {
    let tasks: Vec<TaskBundle> = valid().into_iter().cloned().collect();
    assert!(tasks.len() > 100, "{} valid tasks", tasks.len());
    let runs: Vec<EpisodeRun> = tasks.iter().map(|b| play(b, &Oracle)).collect();
    for j in judge_runs(&runs, &tasks, &JudgeOptions::default(), None) {
        let id = &j.episode.episode_id;
        for v in &j.verdicts {
            assert_eq!(
                v.verdict,
                Verdict::Pass,
                "{id} {}: {}",
                v.criterion_id,
                v.reason
            );
            assert_eq!(v.failure_label, None);
        }
        assert_eq!(j.score.success, Some(true), "{id}");
        assert_eq!(j.score.score, 1.0, "{id}");
        assert_eq!(j.score.divergent_steps, 0, "{id}: {:?}", j.score.divergence);
        let i = &j.interaction;
        assert_eq!(
            i.matched_ask_only, i.ask_only_slots,
            "{id}: {:?}",
            j.requests
        );
        if i.ask_only_slots > 0 {
            assert_eq!(i.recall, Some(1.0));
        }
    }
}

#[test]
fn defaults_episodes_fail_personalization_with_silent_defaults_and_missed_inferences() {
    let tasks: Vec<TaskBundle> = valid().into_iter().cloned().collect();
    let runs: Vec<EpisodeRun> = tasks.iter().map(|b| play(b, &Defaults)).collect();
    let judged = judge_runs(&runs, &tasks, &JudgeOptions::default(), None);
    let mut silent_defaults = 0;
    for j in &judged {
        assert_eq!(j.interaction.requests, 0);
        assert_eq!(
            j.interaction.precision, None,
            "no request: precision undefined"
        );
        let unavailable = j.score.perturbation == Perturbation::UnavailableOption.as_str();
        for v in j
            .verdicts
            .iter()
            .filter(|v| v.kind == CriterionKind::Personalization)
        {
            assert_eq!(
                v.verdict,
                Verdict::Fail,
                "{} {}",
                j.episode.episode_id,
                v.criterion_id
            );
            let label = v.failure_label.unwrap();
            let unavailable_labels = ["unavailable_substituted", "unavailable_skipped"];
            let allowed: &[&str] = match v.source {
                Some(Source::AskOnly) => &["silent_default", "silent_guess", "action_incomplete"],
                _ => &["missed_inference", "wrong_inference", "action_incomplete"],
            };
            assert!(
                allowed.contains(&label) || (unavailable && unavailable_labels.contains(&label)),
                "{} {}: {label}",
                j.episode.episode_id,
                v.criterion_id
            );
            silent_defaults += usize::from(label == "silent_default");
        }
    }
    assert!(silent_defaults > 10, "{silent_defaults}");
    // Known answers: the dinner is booked for the app's default party of 2 at the default time
    // and indoor seating.
    let b = task("dinespot_dinner");
    let j = judge_one(&b, play(&b, &Defaults));
    assert_eq!(
        verdict(&j, "party_size").failure_label,
        Some("silent_default")
    );
    assert_eq!(
        verdict(&j, "seating").failure_label,
        Some("missed_inference")
    );
    assert_eq!(verdict(&j, "time").failure_label, Some("missed_inference"));
    assert_eq!(verdict(&j, "booked").verdict, Verdict::Pass);
    assert_eq!(j.score.success, Some(false));
    assert_eq!(j.score.ask_only, Some(0.0));
    assert_eq!(j.score.action, Some(1.0));
}

#[test]
fn each_criterion_is_judged_on_its_own_evidence() {
    // Asks the party size, books everything right but on the wrong date: only the date checks fail.
    let b = task("dinespot_dinner");
    let run = scripted(
        &b,
        json!([
            {"action": "ask_user", "text": "How many people should I book for?"},
            booking(&b, json!({"date": "2025-10-20"})),
        ]),
    );
    let j = judge_one(&b, run);
    let got: Vec<(&str, &str, Option<&str>)> = j
        .verdicts
        .iter()
        .map(|v| (v.criterion_id.as_str(), v.verdict.as_str(), v.failure_label))
        .collect();
    assert_eq!(
        got,
        vec![
            ("booked", "fail", Some("action_incomplete")),
            ("on_calendar", "fail", Some("action_incomplete")),
            ("cuisine", "pass", None),
            ("seating", "pass", None),
            ("time", "pass", None),
            ("party_size", "pass", None),
        ]
    );
    assert_eq!(j.score.action, Some(0.0));
    assert_eq!(j.score.personalization, Some(1.0));
    assert_eq!(j.score.score, 4.0 / 6.0);
}

#[test]
fn a_wrong_unasked_ask_only_value_is_a_silent_guess() {
    let b = task("dinespot_dinner");
    let truth = b.slot("party_size").unwrap().value.as_u64().unwrap();
    let wrong = if truth == 9 { 8 } else { 9 };
    let j = judge_one(
        &b,
        scripted(&b, json!([booking(&b, json!({"party_size": wrong}))])),
    );
    let v = verdict(&j, "party_size");
    assert_eq!(
        (v.verdict, v.failure_label),
        (Verdict::Fail, Some("silent_guess"))
    );
    assert_eq!(v.source, Some(Source::AskOnly));
    assert_eq!(verdict(&j, "seating").verdict, Verdict::Pass);
    assert_eq!(j.interaction.recall, Some(0.0));
}

#[test]
fn asking_about_an_inferable_slot_is_over_asking() {
    let b = task("dinespot_dinner");
    let run = scripted(
        &b,
        json!([
            {"action": "ask_user", "text": "Would you like to sit indoor or on the patio?"},
            {"action": "ask_user", "text": "How many people should I book for?"},
            booking(&b, json!({"seating": "indoor"})),
        ]),
    );
    let j = judge_one(&b, run);
    let v = verdict(&j, "seating");
    assert_eq!(
        (v.verdict, v.failure_label),
        (Verdict::Fail, Some("over_ask"))
    );
    let seat = &j.requests[0];
    assert_eq!(seat.slot_id.as_deref(), Some("seating"));
    assert_eq!(seat.slot_source, Some(Source::Inferable));
    assert!(seat.closed_set, "seating is an enum of 4 options");
    assert_eq!(seat.offered_options, Some(true));
    let party = &j.requests[1];
    assert_eq!(party.slot_source, Some(Source::AskOnly));
    assert!(!party.closed_set);
    assert_eq!(party.offered_options, None);
    let i = &j.interaction;
    assert_eq!((i.requests, i.matched_requests), (2, 1));
    assert_eq!((i.precision, i.recall), (Some(0.5), Some(1.0)));
    assert_eq!((i.closed_set_requests, i.offered_options), (1, 1));
}

#[test]
fn a_choice_is_one_request_and_repeats_count_separately() {
    let b = task("shopnest_clothes");
    assert!(b.slots.iter().all(|s| s.source == Source::Inferable));
    let run = scripted(
        &b,
        json!([
            {"action": "ask_user", "text": "Which size, S or M?"},
            {"action": "ask_user", "text": "Sorry, which size, S or M? And standard or express shipping?"},
            {"action": "ask_user", "text": "What shipping do you want?"},
        ]),
    );
    let j = judge_one(&b, run);
    let got: Vec<(u32, Option<&str>, bool, Option<bool>)> = j
        .requests
        .iter()
        .map(|r| (r.step, r.slot_id.as_deref(), r.repeat, r.offered_options))
        .collect();
    assert_eq!(
        got,
        vec![
            (1, Some("size"), false, None),
            (2, Some("size"), true, None),
            (2, Some("shipping"), false, Some(true)),
            (3, Some("shipping"), true, Some(false)),
        ]
    );
    let i = &j.interaction;
    assert_eq!(i.recall, None, "no ask-only slot: recall undefined");
    assert_eq!(i.precision, Some(0.0));
    assert_eq!(
        (i.requests, i.closed_set_requests, i.offered_options),
        (4, 2, 1)
    );
}

#[test]
fn scripted_matching_splits_questions_and_ignores_statements() {
    let b = task("dinespot_dinner");
    let pieces = scripted_pieces(
        "Baan Thai is great. How many people, and what time? Thanks!",
        &b.slots,
    );
    // Two coordinated questions, in the order asked; the statements ask nothing.
    let slots: Vec<Option<&str>> = pieces.iter().map(|p| p.slot_id.as_deref()).collect();
    assert_eq!(slots, vec![Some("party_size"), Some("time")]);
    let texts: Vec<&str> = pieces.iter().map(|p| p.text.as_str()).collect();
    assert_eq!(texts, ["How many people", "what time?"]);
    let none = scripted_pieces("Is it raining?", &b.slots);
    assert_eq!(none.len(), 1);
    assert_eq!(none[0].slot_id, None);
    assert!(scripted_pieces("Booked for 7 pm. Thanks!", &b.slots).is_empty());
    let plain = scripted_pieces("Tell me the party size.", &b.slots);
    assert_eq!(plain[0].slot_id.as_deref(), Some("party_size"));
}

#[test]
fn unavailable_options_mishandled_are_labelled_by_how() {
    let b = task("dinespot_time_gone");
    let u = &b.task.hidden_context.unavailable[0];
    let at = |time: &Value| {
        json!({"action": "call", "tool": "dinespot.book_table",
        "args": {"restaurant": "baan-thai", "date": booking(&b, json!({}))["args"]["date"], "time": time}})
    };
    let label = |steps: Value| {
        let j = judge_one(&b, scripted(&b, steps));
        verdict(&j, "fallback_time").failure_label
    };
    assert_eq!(
        label(json!([at(&u.value), at(&u.value)])),
        Some("unavailable_kept_trying")
    );
    assert_eq!(
        label(json!([at(&json!("17:30"))])),
        Some("unavailable_substituted")
    );
    assert_eq!(label(json!([])), Some("unavailable_skipped"));
    // The seating is not about the missing time: an unasked default seating is a missed inference.
    let j = judge_one(&b, scripted(&b, json!([at(&json!("17:30"))])));
    assert_eq!(
        verdict(&j, "seating").failure_label,
        Some("missed_inference")
    );
}

#[test]
fn a_step_that_replays_differently_is_reported() {
    let b = task("dinespot_dinner");
    let mut run = play(&b, &Oracle);
    let call = run
        .steps
        .iter_mut()
        .find(|s| s.action_type == "dinespot.book_table")
        .unwrap();
    call.observation_status = "error".into();
    let step = call.step;
    let j = judge_one(&b, run);
    assert_eq!(j.score.divergent_steps, 1);
    let d = j.score.divergence.unwrap();
    assert!(
        d.contains(&format!("step {step}")) && d.contains("`error`"),
        "{d}"
    );
}

#[test]
fn batches_over_one_index_match_single_episodes() {
    let tasks: Vec<TaskBundle> = ["dinespot_dinner", "shopnest_clothes"].map(task).to_vec();
    let mut runs: Vec<EpisodeRun> = tasks.iter().map(|b| play(b, &Oracle)).collect();
    runs.extend(tasks.iter().map(|b| play(b, &Defaults)));
    let tables = episode_tables(&runs).unwrap();
    let bundles = bundles_table(&tasks).unwrap();
    let a = JudgeIndex::build(&tables[1].1, &bundles).unwrap();
    let other = episode_tables(&runs[..1]).unwrap();
    let c = JudgeIndex::build(&other[1].1, &bundles).unwrap();
    assert_eq!(c.steps.len(), 1);
    let episodes = episodes_from_table(&tables[0].1).unwrap();
    let opts = JudgeOptions::default();
    let batch: Vec<EpisodeJudgement> = judge_batch(world(), &a, &episodes, &opts, 3)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let single = judge_runs(&runs, &tasks, &opts, None);
    assert_eq!(batch, single);
    assert_eq!(batch[2].score.success, Some(false));
}

fn llm_config(url: &str) -> LlmConfig {
    serde_json::from_value(json!({"base_url": url, "model": "judge", "max_retries": 0})).unwrap()
}

/// A store for a judge model's records, in a temporary directory that lives as long as it.
struct JudgeStore {
    _dir: tempfile::TempDir,
    store: prefflow_engine::store::FsStore,
}

impl JudgeStore {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = prefflow_engine::store::FsStore::new(dir.path());
        Self { _dir: dir, store }
    }

    /// A judge model at `url` recording here, with the shipped prompts.
    fn judge(&self, url: &str) -> LlmJudge<'_> {
        LlmJudge::new(
            llm_config(url),
            &self.store,
            false,
            &datasets().join("prompts"),
        )
        .unwrap()
    }
}

fn reply(v: &str, reason: &str) -> Behavior {
    Behavior::ok(completion(
        &json!({"verdict": v, "reason": reason}).to_string(),
        10,
        2,
    ))
}

#[test]
fn llm_verdicts_are_parsed_unparseable_ones_unscored_and_reruns_come_from_cache() {
    let b = task("dinespot_dinner");
    let run = play(&b, &Oracle);
    let server = ScriptedServer::start(
        vec![
            reply("fail", "no booking on that date"),
            Behavior::ok(completion("Looks fine to me!", 10, 2)),
        ],
        reply("pass", "the trajectory shows it"),
    );
    let store = JudgeStore::new();
    let judge = store.judge(&server.url);
    let opts = JudgeOptions {
        mode: Mode::Llm,
        ..JudgeOptions::default()
    };
    let first = judge_runs(
        std::slice::from_ref(&run),
        std::slice::from_ref(&b),
        &opts,
        Some(&judge),
    )
    .remove(0);
    let n = b.criteria.len();
    assert_eq!(server.requests().len(), n, "one request per criterion");
    assert!(server.requests()[0].body.contains(&b.criteria[0].rubric));
    let v: Vec<(&str, &str)> = first
        .verdicts
        .iter()
        .map(|v| (v.mode, v.verdict.as_str()))
        .collect();
    assert_eq!(v[0], ("llm", "fail"));
    assert_eq!(v[1], ("llm", "unscored"));
    assert!(v[2..].iter().all(|x| *x == ("llm", "pass")));
    assert_eq!(first.verdicts[0].reason, "no booking on that date");
    assert!(first.verdicts[1].reason.contains("Looks fine"));
    assert_eq!(first.verdicts[1].failure_label, None);
    assert_eq!(
        first.score.success, None,
        "an unscored criterion leaves success unknown"
    );
    assert_eq!(first.score.unscored, 1);
    assert_eq!(first.score.score, (n - 2) as f64 / n as f64);
    assert_eq!(first.score.prompt_tokens_judge, 10 * n as u64);
    let again = judge_runs(&[run], &[b], &opts, Some(&judge)).remove(0);
    assert_eq!(
        server.requests().len(),
        n,
        "the re-run is served from the cache"
    );
    assert_eq!(again.verdicts, first.verdicts);
}

#[test]
fn hybrid_scores_mix_rule_and_llm_with_the_tasks_lambda() {
    let mut b = task("dinespot_dinner");
    let run = play(&b, &Oracle);
    let server = ScriptedServer::start(vec![], reply("fail", "not convinced"));
    let store = JudgeStore::new();
    let judge = store.judge(&server.url);
    let opts = JudgeOptions {
        mode: Mode::Hybrid,
        lambda: 0.25,
        ..JudgeOptions::default()
    };
    let j = judge_runs(
        std::slice::from_ref(&run),
        std::slice::from_ref(&b),
        &opts,
        Some(&judge),
    )
    .remove(0);
    let n = b.criteria.len();
    assert_eq!(j.verdicts.len(), 2 * n, "hybrid writes rule and llm rows");
    assert!(j.verdicts[..n]
        .iter()
        .all(|v| v.mode == "rule" && v.verdict == Verdict::Pass));
    assert!(j.verdicts[n..]
        .iter()
        .all(|v| v.mode == "llm" && v.verdict == Verdict::Fail));
    assert_eq!((j.score.score, j.score.lambda), (0.25, Some(0.25)));
    assert_eq!(j.score.success, Some(false));
    b.task.lambda = Some(0.8);
    let j = judge_runs(&[run], &[b], &opts, Some(&judge)).remove(0);
    assert_eq!(j.score.lambda, Some(0.8));
    assert!((j.score.score - 0.8).abs() < 1e-12);
}

/// `hybrid_text`: every criterion by rule, only the free-text ones by the LLM too; those count
/// λ·rule + (1−λ)·llm, the others their rule verdict, and the label names the judge.
#[test]
fn hybrid_text_asks_the_llm_only_about_free_text_criteria() {
    let mut b = task("dinespot_dinner");
    let run = play(&b, &Oracle);
    b.criteria[0].free_text = true;
    let server = ScriptedServer::start(vec![], reply("fail", "not her words"));
    let store = JudgeStore::new();
    let judge = store.judge(&server.url);
    let opts = JudgeOptions {
        mode: Mode::HybridText,
        lambda: 0.25,
        ..JudgeOptions::default()
    };
    let j = judge_runs(&[run], std::slice::from_ref(&b), &opts, Some(&judge)).remove(0);
    let n = b.criteria.len();
    assert_eq!(
        server.requests().len(),
        1,
        "one request: the free-text criterion"
    );
    assert_eq!(j.verdicts.len(), n + 1);
    let llm: Vec<&str> = j
        .verdicts
        .iter()
        .filter(|v| v.mode == "llm")
        .map(|v| v.criterion_id.as_str())
        .collect();
    assert_eq!(llm, [b.criteria[0].criterion_id.as_str()]);
    // n − 1 criteria pass by rule alone; the free-text one scores 0.25·1 + 0.75·0.
    let expected = ((n - 1) as f64 + 0.25) / n as f64;
    assert!(
        (j.score.score - expected).abs() < 1e-12,
        "{}",
        j.score.score
    );
    assert_eq!(j.score.success, Some(false));
    assert_eq!(j.score.lambda, Some(0.25));
    assert_eq!(j.score.judge, "hybrid_text:judge+scripted");
}

/// The rubric judge sees what iPrefBench E.2/G.3 gives it, for every criterion it rules on:
/// the criterion's rubric, the trajectory with the user's replies, the final answer, the
/// ground-truth profile, the hidden context (the ask-only values) and the simulator time.
#[test]
fn each_criterion_prompt_carries_trajectory_answer_profile_hidden_context_and_time() {
    let b = task("dinespot_dinner");
    let mut steps = b.task.reference_solution.clone();
    let end = steps
        .iter()
        .position(|s| s["action"] == "finish")
        .unwrap_or(steps.len());
    steps.insert(
        end,
        json!({"action": "answer", "text": "Booked, and it is on your calendar."}),
    );
    let run = play_with(
        &b,
        &mut ScriptedAgent::from_solution(&steps, &b),
        "answering",
    );
    let server = ScriptedServer::start(vec![], reply("pass", "shown"));
    let store = JudgeStore::new();
    let judge = store.judge(&server.url);
    let opts = JudgeOptions {
        mode: Mode::Llm,
        ..JudgeOptions::default()
    };
    judge_runs(&[run], std::slice::from_ref(&b), &opts, Some(&judge));
    let prompts: Vec<String> = server
        .requests()
        .iter()
        .map(|r| {
            let body: Value = serde_json::from_str(&r.body).unwrap();
            body["messages"][0]["content"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(prompts.len(), b.criteria.len(), "one prompt per criterion");
    let ask_only = b
        .slots
        .iter()
        .find(|s| s.source == Source::AskOnly)
        .expect("dinespot_dinner has an ask-only slot");
    let hidden = b.task.hidden_context.ask_only[&ask_only.slot_id].to_string();
    let profile_line = &world().persona.profile[0].key;
    let clock = PhoneEnv::new(
        world(),
        EpisodeConfig {
            space: ActionSpace::Tools,
            clock: None,
            overrides: b.task.overrides.clone(),
        },
    )
    .unwrap()
    .phone
    .clock()
    .to_string();
    for (c, prompt) in b.criteria.iter().zip(&prompts) {
        for (part, needle) in [
            ("rubric", c.rubric.as_str()),
            ("trajectory with replies", "ask_user"),
            ("user's reply", "→ user: "),
            ("the booking", "dinespot.book_table"),
            (
                "final answer",
                "Final answer: Booked, and it is on your calendar.",
            ),
            ("profile", profile_line.as_str()),
            ("hidden context", hidden.as_str()),
            ("simulator time", &format!("Simulator time: {clock}")),
        ] {
            assert!(
                prompt.contains(needle),
                "criterion `{}`: no {part} (`{needle}`) in\n{prompt}",
                c.criterion_id
            );
        }
    }
}

#[test]
fn the_llm_matcher_splits_requests_and_falls_back_when_unreadable() {
    let b = task("dinespot_dinner");
    let run = play(&b, &Oracle);
    let asks = run
        .steps
        .iter()
        .filter(|s| s.action_type == "ask_user")
        .count();
    assert_eq!(asks, 1);
    let split = json!({"requests": [
        {"request": "how many people", "slot_id": "party_size"},
        {"request": "which city", "slot_id": "nonexistent"}
    ]});
    let server = ScriptedServer::start(
        vec![Behavior::ok(completion(&split.to_string(), 5, 5))],
        Behavior::ok(completion("??", 1, 1)),
    );
    let store = JudgeStore::new();
    let judge = store.judge(&server.url);
    let opts = JudgeOptions {
        matcher: MatcherName::Llm,
        ..JudgeOptions::default()
    };
    let j = judge_runs(
        std::slice::from_ref(&run),
        std::slice::from_ref(&b),
        &opts,
        Some(&judge),
    )
    .remove(0);
    let got: Vec<(Option<&str>, &str)> = j
        .requests
        .iter()
        .map(|r| (r.slot_id.as_deref(), r.matcher))
        .collect();
    assert_eq!(got, vec![(Some("party_size"), "llm"), (None, "llm")]);
    // G.4: the judge reads each slot's id, source and what it is (its `about` sentence).
    let body: Value = serde_json::from_str(&server.requests()[0].body).unwrap();
    let prompt = body["messages"][0]["content"].as_str().unwrap();
    let party = b.slot("party_size").unwrap();
    assert!(!party.about.is_empty());
    assert!(
        prompt.contains(&format!(
            "- party_size (ask_only; what it is: {}",
            party.about
        )),
        "{prompt}"
    );
    assert_eq!(j.interaction.precision, Some(0.5));
    assert!(
        j.verdicts.iter().all(|v| v.mode == "rule"),
        "rule verdicts, llm matcher"
    );
    // A different question gets the unreadable reply: the scripted matcher steps in.
    let mut other = run;
    for s in other
        .steps
        .iter_mut()
        .filter(|s| s.action_type == "ask_user")
    {
        s.arguments = json!({"text": "How many guests are coming?"}).to_string();
    }
    let j = judge_runs(&[other], &[b], &opts, Some(&judge)).remove(0);
    assert_eq!(j.requests[0].matcher, "scripted_fallback");
    assert_eq!(j.requests[0].slot_id.as_deref(), Some("party_size"));
}

#[test]
fn the_judge_refuses_episodes_missing_a_required_column_or_holding_a_null_in_one() {
    use crate::tables::episodes as cols;
    let b = task("dinespot_dinner");
    let tables = episode_tables(&[play(&b, &Oracle)]).unwrap();
    let episodes = &tables[0].1;
    let err = episodes_from_table(&episodes.drop(cols::AGENT).unwrap()).unwrap_err();
    assert!(err.to_string().contains("column `agent`: missing"), "{err}");
    let mut nulls = episodes.clone();
    nulls
        .with_column(polars::prelude::Column::new(
            cols::STATUS.into(),
            [None::<&str>],
        ))
        .unwrap();
    let err = episodes_from_table(&nulls).unwrap_err();
    assert!(
        err.to_string()
            .contains("column `status`: null in row 0, but the column is declared non-null"),
        "{err}"
    );
    let err = JudgeIndex::build(
        &tables[1].1.drop(cols::ARGUMENTS).unwrap(),
        &bundles_table(&[b]).unwrap(),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("column `arguments`: missing"),
        "{err}"
    );
}
