//! End-to-end checks of import → metrics on a hand-built run directory whose answers were worked
//! out by hand (see the comments on each episode), plus the import error paths and the
//! export/import round trip.

use polars::prelude::*;
use serde_json::json;

use super::testkit::{act, input, run_kind, say, shared, step, Scratch};
use crate::kinds::{ExportKnowuRuns, ImportKnowuRuns, KnowuLeaderboard, KnowuMetrics};
use crate::tables::episodes::{EPISODES, STEPS};
use crate::tables::knowu::{
    EpisodeMetricsRow, ImportError, LeaderboardTextRow, OverallRow, PersonasRow, PolicyRow,
    SplitsRow, Written, EPISODE_METRICS, IMPORT_ERRORS, LEADERBOARD, LEADERBOARD_DIFFICULTY,
    LEADERBOARD_LAYOUT, LEADERBOARD_TEXT, NOTE, OVERALL, PERSONAS, POLICY, REPORTS, SOURCE, SPLITS,
    WRITTEN,
};

const TASKS: &str = "\
task_name,class_name,split,difficulty,profile,tags,apps,habit_keys,goal
GenA,GenA,general,easy,,,,,
GenB,GenB,general,hard,,,,,
PrefA@alice,PrefA,personalized,easy,alice,,,,
PrefB@alice,PrefB,personalized,hard,alice,,,,
PrefA@bob,PrefA,personalized,easy,bob,,,,
RoutA@alice,RoutA,proactive,easy,alice,,,habit_a,
RoutA@bob,RoutA,proactive,easy,bob,,,habit_a,
RoutB@alice,RoutB,proactive,hard,alice,,,habit_b,
RoutB@bob,RoutB,proactive,hard,bob,,,habit_b,
RoutC@alice,RoutC,proactive,easy,alice,,,habit_c,
RoutD@bob,RoutD,proactive,hard,bob,,,habit_d,
WeekendSleeperTask@carol,WeekendSleeperTask,proactive,easy,carol,,,weekend_sleeper;weekend_alarm,
WeekendSleeperTask@alice,WeekendSleeperTask,proactive,easy,alice,,,weekend_sleeper;weekend_alarm,
";

/// alice: habit_a and weekend_sleeper; habit_b is an empty mapping (does not count).
const ALICE: &str = "user_profile:\n  identity: {full_name: Alice}\n  habits:\n    habit_a: {trigger: {time: '08:00'}}\n    habit_b: {}\n    weekend_sleeper: {description: sleeps in}\n";
/// bob: habit_b only.
const BOB: &str = "user_profile:\n  habits:\n    habit_b: {trigger: {type: location}}\n";
/// carol: only weekend_alarm — the WeekendSleeper quirk makes her bucket "need".
const CAROL: &str = "user_profile:\n  habits:\n    weekend_alarm: {time: '07:30'}\n";

/// The run directory `run/` with every case, plus tasks.csv and personas/.
fn scenario() -> Scratch {
    let s = Scratch::new();
    s.file("tasks.csv", TASKS)
        .file("personas/alice.yaml", ALICE)
        .file("personas/bob.yaml", BOB)
        .file("personas/carol.yaml", CAROL);
    let ok = |score: &str| format!("score: {score}\nreason: judged\n");
    // General: 1.0 succeeds; exactly 0.99 fails (strict).
    s.episode(
        "run",
        "GenA",
        vec![
            step(act("click"), None),
            step(act("click"), None),
            step(act("finished"), None),
        ],
        Some(&ok("1.0")),
    );
    s.episode(
        "run",
        "GenB",
        vec![step(act("click"), None)],
        Some(&ok("0.99")),
    );
    // A backup copy that must be ignored (it would add a 15th, unmatched episode).
    s.episode(
        "run",
        "GenB_backup_20260101",
        vec![step(act("click"), None)],
        Some(&ok("1.0")),
    );
    // Personalized: 0.991 succeeds; one ask (IE = 0.991 / 1).
    s.episode(
        "run",
        "PrefA@alice",
        vec![
            step(say("ask_user", "Which colour?"), None),
            step(act("click"), Some("Blue please")),
            step(say("answer", "done"), None),
        ],
        Some(&ok("0.991")),
    );
    // Two asks: IE = 0.5 / 2.
    s.episode(
        "run",
        "PrefB@alice",
        vec![
            step(say("ask_user", "q1"), None),
            step(say("ask_user", "q2"), Some("a1")),
            step(act("click"), Some("a2")),
            step(act("finished"), None),
        ],
        Some(&ok("0.5")),
    );
    // No result.txt: no result (0 in the per-persona mean, absent elsewhere).
    s.episode(
        "run",
        "PrefA@bob",
        vec![step(act("click"), None), step(act("click"), None)],
        None,
    );
    // P1 need, tag says accept although the prose says "reject": Act succeeds.
    s.episode(
        "run",
        "RoutA@alice",
        vec![
            step(say("ask_user", "Turn on saver?"), None),
            step(
                act("click"),
                Some("<decision>accept</decision> I would never reject this"),
            ),
            step(act("finished"), None),
        ],
        Some(&ok("1")),
    );
    // P2 noneed, trivial answer: Silent holds; zero queries: IE = 1.0 / max(0, 1).
    s.episode(
        "run",
        "RoutA@bob",
        vec![
            step(act("wait"), None),
            step(say("answer", " Task  Finished "), None),
        ],
        Some(&ok("1.0")),
    );
    // P3 noneed (alice's habit_b is empty), substantive answer: Silent fails.
    s.episode(
        "run",
        "RoutB@alice",
        vec![step(say("answer", "I turned on eye care for you"), None)],
        Some(&ok("0.0")),
    );
    // P4 need but rejected at step 2, then clicks: Stop fails.
    s.episode(
        "run",
        "RoutB@bob",
        vec![
            step(say("ask_user", "Enable?"), None),
            step(act("click"), Some("No, I reject this.")),
            step(say("answer", "ok"), None),
        ],
        Some(&ok("0.2")),
    );
    // P5 tag says reject although the prose says "accept"; only waits and answers after: Stop holds.
    s.episode(
        "run",
        "RoutC@alice",
        vec![
            step(say("ask_user", "May I?"), None),
            step(
                act("wait"),
                Some("I accept... no. <decision>reject</decision>"),
            ),
            step(say("answer", "Understood, I won't."), None),
        ],
        Some(&ok("1.0")),
    );
    // P6 noneed, only waiting: Silent holds even with score 0.
    s.episode(
        "run",
        "RoutD@bob",
        vec![
            step(act("wait"), None),
            step(act("wait"), None),
            step(act("finished"), None),
        ],
        Some(&ok("0")),
    );
    // P7 the quirk: carol has only weekend_alarm, bucket need; Act fails (score 0).
    s.episode(
        "run",
        "WeekendSleeperTask@carol",
        vec![step(act("finished"), None)],
        Some(&ok("0.0")),
    );
    // P8 a result.txt without a score line: no result.
    s.episode(
        "run",
        "WeekendSleeperTask@alice",
        vec![step(act("click"), None)],
        Some("score: n/a\nreason: emulator crashed\n"),
    );
    // Not in tasks.csv: imported, but unmatched in the metrics.
    s.episode(
        "run",
        "MysteryTask",
        vec![step(act("click"), None)],
        Some(&ok("1.0")),
    );
    s.file(
        "run/eval_report_20260402_101500.json",
        &json!({
        "summary": {"total_tasks_assigned": 14, "total_tasks_with_results": 12,
                    "successful_tasks": 6, "total_tasks_with_no_results": 2,
                    "overall_success_rate": 0.5},
        "metadata": {"model_name": "m1"},
        "tasks_with_results": [], "tasks_with_no_results": ["PrefA@bob"]})
        .to_string(),
    );
    s
}

/// An imported run's `episodes` and `steps` as inputs of the next kind.
fn run_inputs(t: &Tables) -> [prefflow_engine::InputTable; 2] {
    [
        input("episodes", t.get("episodes").expect("episodes").clone()),
        input("steps", t.get("steps").expect("steps").clone()),
    ]
}

fn import(s: &Scratch, root: &str) -> Result<Tables, StageError> {
    run_kind(
        &ImportKnowuRuns,
        json!({"root": root, "label": "m1"}),
        s.path(),
        &[],
    )
}

use prefflow_engine::{StageError, Tables};

fn metrics(s: &Scratch, imported: &Tables) -> Tables {
    let inputs = run_inputs(imported);
    run_kind(
        &KnowuMetrics,
        json!({"tasks": "tasks.csv", "personas": "personas"}),
        s.path(),
        &inputs,
    )
    .expect("metrics")
}

crate::tables::row! {
    /// What the tests read of an imported episode.
    struct Ep of EPISODES {
        episode_id: String,
        task_id: String,
        persona: Option<String>,
        status: String,
        steps: u32,
        ask_user_calls: u32,
        final_answer: Option<String>,
        score: Option<f64>,
        prompt_tokens_agent: u64,
        completion_tokens_agent: u64,
        error: Option<String>,
        reason: Option<String>,
    }
}

crate::tables::row! {
    /// What the tests read of an imported step.
    struct St of STEPS {
        episode_id: String,
        action_type: String,
        arguments: String,
        user_reply: Option<String>,
        raw: Option<String>,
        ask_user_response: Option<String>,
    }
}

crate::tables::row! {
    /// An episode of prefflow's own, as the exporter reads it.
    struct Played of EPISODES {
        episode_id: String,
        task_id: String,
        score: Option<f64>,
        status: String,
        error: Option<String>,
        prompt_tokens_agent: u64,
        completion_tokens_agent: u64,
        cached_tokens_agent: u64,
    }
}

crate::tables::row! {
    /// A step of prefflow's own, as the exporter reads it.
    struct Acted of STEPS {
        episode_id: String,
        step: u32,
        action_type: String,
        arguments: String,
        observation: Option<String>,
        raw: Option<String>,
        user_reply: Option<String>,
    }
}

crate::tables::row! {
    /// What the tests read of an imported report.
    struct Report of REPORTS {
        successful_tasks: Option<u64>,
        model_name: Option<String>,
        score_mismatches: u32,
        latest: bool,
    }
}

/// The rows of `t`'s table `name`, read by `R`'s reader (its columns and types checked).
fn rows<R>(
    t: &Tables,
    name: &str,
    read: fn(&DataFrame) -> Result<Vec<R>, crate::tables::row::RowError>,
) -> Vec<R> {
    read(t.get(name).unwrap_or_else(|| panic!("no {name}"))).unwrap_or_else(|e| panic!("{e}"))
}

/// The imported episodes of `t`.
fn episodes(t: &Tables) -> Vec<Ep> {
    rows(t, EPISODES.name, Ep::from_frame)
}

/// The row of `rows` whose `key` is `value`.
fn find<'a, R>(rows: &'a [R], value: &str, key: impl Fn(&R) -> &str) -> &'a R {
    rows.iter()
        .find(|r| key(r) == value)
        .unwrap_or_else(|| panic!("no row {value}"))
}

/// The episode of `task`.
fn of_task<'a>(rows: &'a [Ep], task: &str) -> &'a Ep {
    find(rows, task, |r| r.task_id.as_str())
}

/// A leaderboard column's values as text (its columns are not identifiers: `Model & Date`).
fn strs(df: &DataFrame, name: &str) -> Vec<Option<String>> {
    let c = df.column(name).expect(name).str().expect("str").clone();
    c.iter().map(|v| v.map(str::to_string)).collect()
}

/// A leaderboard column's values as numbers.
fn f64s(df: &DataFrame, name: &str) -> Vec<Option<f64>> {
    let c = df
        .column(name)
        .expect(name)
        .cast(&DataType::Float64)
        .expect("cast");
    c.f64().expect("f64").iter().collect()
}

/// The leaderboard row of `model`.
fn row(df: &DataFrame, model: &str) -> usize {
    strs(df, MODEL)
        .iter()
        .position(|v| v.as_deref() == Some(model))
        .unwrap_or_else(|| panic!("no row {model}"))
}

/// The leaderboard's columns the tests read.
const MODEL: &str = LEADERBOARD_LAYOUT[1];
const RANK: &str = LEADERBOARD_LAYOUT[0];
const OVERALL_SR: &str = LEADERBOARD_LAYOUT[3];
const GENERAL: &str = LEADERBOARD_LAYOUT[4];
const GEN_EASY: &str = LEADERBOARD_DIFFICULTY[0];
const PERS_HARD_SR: &str = LEADERBOARD_DIFFICULTY[4];
const PERS_HARD_SCORE: &str = LEADERBOARD_DIFFICULTY[5];

crate::tables::row! {
    /// A leaderboard row's coverage.
    struct Coverage of LEADERBOARD {
        general_tasks: Option<u32>,
    }
}

fn close(actual: Option<f64>, expected: f64) {
    let a = actual.unwrap_or(f64::NAN);
    assert!((a - expected).abs() < 1e-9, "{a} != {expected}");
}

#[test]
fn import_reads_episodes_alignment_tokens_and_reports() {
    let s = scenario();
    let t = import(&s, "run").expect("import");
    let ep = episodes(&t);
    assert_eq!(ep.len(), 14, "the _backup_ directory is ignored");
    let e = of_task(&ep, "PrefA@bob");
    assert_eq!(e.status, "no_result");
    assert_eq!(e.score, None);
    let e = of_task(&ep, "WeekendSleeperTask@alice");
    assert_eq!(e.status, "no_result");
    assert_eq!(e.reason.as_deref(), Some("emulator crashed"));
    let e = of_task(&ep, "PrefB@alice");
    assert_eq!(e.episode_id, "PrefB@alice#m1#0");
    assert_eq!(e.persona.as_deref(), Some("alice"));
    assert_eq!(e.steps, 4);
    assert_eq!(e.ask_user_calls, 2);
    assert_eq!(e.prompt_tokens_agent, 40);
    assert_eq!(e.completion_tokens_agent, 4);
    assert_eq!(of_task(&ep, "GenA").persona, None);
    assert_eq!(
        of_task(&ep, "RoutC@alice").final_answer.as_deref(),
        Some("Understood, I won't.")
    );

    let steps: Vec<St> = rows(&t, STEPS.name, St::from_frame)
        .into_iter()
        .filter(|r| r.episode_id == "PrefB@alice#m1#0")
        .collect();
    let pick = |f: fn(&St) -> Option<&str>| steps.iter().map(f).collect::<Vec<_>>();
    assert_eq!(
        pick(|r| Some(r.action_type.as_str())),
        [
            Some("ask_user"),
            Some("ask_user"),
            Some("click"),
            Some("finished")
        ]
    );
    // KnowU's alignment: the reply arrives with the next step …
    assert_eq!(
        pick(|r| r.ask_user_response.as_deref()),
        [None, Some("a1"), Some("a2"), None]
    );
    // … and prefflow's: on the step that asked.
    assert_eq!(
        pick(|r| r.user_reply.as_deref()),
        [Some("a1"), Some("a2"), None, None]
    );
    assert_eq!(steps[0].raw.as_deref(), Some("thought \"ask_user\""));
    assert_eq!(
        steps[0].arguments,
        r#"{"action_type":"ask_user","text":"q1"}"#
    );

    let reports = rows(&t, REPORTS.name, Report::from_frame);
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].successful_tasks, Some(6));
    assert_eq!(reports[0].model_name.as_deref(), Some("m1"));
    // The report lists no per-task scores: every scored directory disagrees with it.
    assert_eq!(reports[0].score_mismatches, 12);
    assert!(reports[0].latest);
}

#[test]
fn per_episode_facts_match_the_hand_worked_answers() {
    let s = scenario();
    let m = metrics(&s, &import(&s, "run").expect("import"));
    let e = rows(&m, EPISODE_METRICS.name, EpisodeMetricsRow::from_frame);
    let at = |task: &str| find(&e, task, |r| r.task_id.as_str());
    let cases: [(&str, Option<&str>, Option<bool>); 8] = [
        ("RoutA@alice", Some("need"), Some(true)),
        ("RoutA@bob", Some("noneed"), Some(true)),
        ("RoutB@alice", Some("noneed"), Some(false)),
        ("RoutB@bob", Some("reject"), Some(false)),
        ("RoutC@alice", Some("reject"), Some(true)),
        ("RoutD@bob", Some("noneed"), Some(true)),
        ("WeekendSleeperTask@carol", Some("need"), Some(false)),
        ("GenA", None, None),
    ];
    for (task, b, p) in cases {
        assert_eq!(at(task).bucket.as_deref(), b, "{task} bucket");
        assert_eq!(at(task).policy_success, p, "{task} policy");
    }
    assert_eq!(
        at("RoutA@alice").user_decision.as_deref(),
        Some("accept"),
        "tag beats the word reject"
    );
    assert_eq!(
        at("RoutC@alice").user_decision.as_deref(),
        Some("reject"),
        "tag beats the word accept"
    );
    assert_eq!(at("RoutB@bob").first_reject_step, Some(2));
    assert_eq!(at("PrefB@alice").last_query_step, Some(2));
    assert!(!at("GenB").success, "0.99 is not > 0.99");
    assert!(at("PrefA@alice").success, "0.991 is");
    assert!(at("WeekendSleeperTask@carol").bucket_from_quirk);
    assert!(!at("RoutA@alice").bucket_from_quirk);
    // Alice has weekend_sleeper itself: not the quirk (and she has no result anyway).
    assert!(!at("WeekendSleeperTask@alice").bucket_from_quirk);
    assert!(!at("WeekendSleeperTask@alice").has_result);
    assert_eq!(at("MysteryTask").split, None);
}

#[test]
fn split_and_difficulty_means() {
    let s = scenario();
    let m = metrics(&s, &import(&s, "run").expect("import"));
    let sp = rows(&m, SPLITS.name, SplitsRow::from_frame);
    assert_eq!(sp.len(), 9, "3 splits × (all, easy, hard)");
    let at = |k: &str| {
        sp.iter()
            .find(|r| format!("{}/{}", r.split, r.difficulty) == k)
            .unwrap_or_else(|| panic!("{k}"))
    };
    let count = |k: &str, n: fn(&SplitsRow) -> u32| Some(f64::from(n(at(k))));
    // general: GenA 1.0 (3 steps), GenB 0.99 (1 step).
    close(at("general/all").SR, 0.5);
    close(at("general/all").AveSteps, 2.0);
    close(at("general/all").AveQueries, 0.0);
    assert_eq!(at("general/all").AvgScore, None);
    assert_eq!(at("general/all").IE, None);
    close(at("general/easy").SR, 1.0);
    close(at("general/hard").SR, 0.0);
    // personalized: 0.991 (3 steps, 1 ask) and 0.5 (4 steps, 2 asks); PrefA@bob has no result.
    close(count("personalized/all", |r| r.episodes), 2.0);
    close(count("personalized/all", |r| r.no_result_episodes), 1.0);
    close(at("personalized/all").SR, 0.5);
    close(at("personalized/all").AvgScore, (0.991 + 0.5) / 2.0);
    close(at("personalized/all").AveSteps, 3.5);
    close(at("personalized/all").AveQueries, 1.5);
    close(at("personalized/all").IE, (0.991 / 1.0 + 0.5 / 2.0) / 2.0);
    close(at("personalized/easy").AvgScore, 0.991);
    close(at("personalized/hard").AvgScore, 0.5);
    // proactive P1..P7: scores 1, 1, 0, 0.2, 1, 0, 0; steps 3,2,1,3,3,3,1; asks 1,0,0,1,1,0,0.
    close(count("proactive/all", |r| r.episodes), 7.0);
    close(at("proactive/all").SR, 3.0 / 7.0);
    close(at("proactive/all").AveSteps, 16.0 / 7.0);
    close(at("proactive/all").AveQueries, 3.0 / 7.0);
    close(at("proactive/all").IE, 3.2 / 7.0);
    assert_eq!(at("proactive/all").AvgScore, None);
    close(at("proactive/easy").SR, 0.75);
    close(at("proactive/hard").SR, 0.0);
}

#[test]
fn policy_personas_and_overall() {
    let s = scenario();
    let m = metrics(&s, &import(&s, "run").expect("import"));
    let p = rows(&m, POLICY.name, PolicyRow::from_frame);
    let column = |f: fn(&PolicyRow) -> u32| p.iter().map(f).collect::<Vec<_>>();
    assert_eq!(
        p.iter().map(|r| r.metric.as_str()).collect::<Vec<_>>(),
        ["Act", "Silent", "Stop"]
    );
    assert_eq!(column(|r| r.episodes), [2, 3, 2]);
    assert_eq!(column(|r| r.successes), [1, 2, 1]);
    close(p[1].value, 2.0 / 3.0);
    assert_eq!(column(|r| r.quirk_episodes), [1, 0, 0]);

    let pe = rows(&m, PERSONAS.name, PersonasRow::from_frame);
    let avg = |k: &str| {
        pe.iter()
            .find(|r| format!("{}/{}", r.persona, r.split) == k)
            .map(|r| r.avg_score)
            .unwrap_or_else(|| panic!("{k}"))
    };
    close(Some(avg("alice/personalized")), (0.991 + 0.5) / 2.0);
    close(Some(avg("bob/personalized")), 0.0); // its only episode has no result: counted as 0
    close(Some(avg("alice/proactive")), (1.0 + 0.0 + 1.0 + 0.0) / 4.0); // not 2/3: no result = 0
    close(Some(avg("bob/proactive")), 1.2 / 3.0);
    close(Some(avg("carol/proactive")), 0.0);
    assert_eq!(pe.len(), 5);

    let o = rows(&m, OVERALL.name, OverallRow::from_frame);
    assert_eq!(o.len(), 1);
    let o = &o[0];
    assert_eq!(o.episodes, 14);
    assert_eq!(o.episodes_with_results, 11);
    assert_eq!(o.successes, 5);
    assert_eq!(o.no_result_episodes, 2);
    assert_eq!(o.unmatched_episodes, 1);
    assert_eq!(o.quirk_episodes, 1);
    close(o.overall_SR, 5.0 / 11.0);
}

/// The repository's copy of the paper's Table 2.
fn paper_table() -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../datasets/knowu/published.csv")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn leaderboard_has_the_papers_table_and_keeps_a_partial_run_unranked() {
    let s = scenario();
    let m = metrics(&s, &import(&s, "run").expect("import"));
    let inputs = [
        input("overall", m.get("overall").expect("overall").clone()),
        input("splits", m.get("splits").expect("splits").clone()),
    ];
    let params = json!({"published": paper_table(), "date": "2026-05-01"});
    let t = run_kind(&KnowuLeaderboard, params, s.path(), &inputs).expect("leaderboard");
    let board = t.get("leaderboard").expect("leaderboard");
    assert_eq!(board.height(), 12, "the paper's 11 models + ours");
    // All 11 of the paper's models, ranked by Overall, with the difficulty columns.
    let claude = row(board, "Claude Sonnet 4.6");
    assert_eq!(f64s(board, RANK)[claude], Some(1.0));
    assert_eq!(f64s(board, PERS_HARD_SR)[claude], Some(44.2));
    assert_eq!(f64s(board, PERS_HARD_SCORE)[claude], Some(0.80));
    // General derived from 94.4 % of 18 easy + 70.8 % of 24 hard = 17 + 17 of 42.
    close(f64s(board, GENERAL)[claude], 100.0 * 34.0 / 42.0);
    for model in ["MAI-UI-8B", "GUI-Owl-1.5-8B", "Qwen3.5-122B-A10B"] {
        let i = row(board, model);
        assert!(f64s(board, RANK)[i].is_some(), "{model} ranked");
    }
    let mai = row(board, "MAI-UI-8B");
    assert_eq!(f64s(board, GEN_EASY)[mai], Some(100.0));
    let note = strs(board, NOTE)[mai].clone().unwrap_or_default();
    assert!(
        note.contains("Pro easy 17.9% is not a whole number of its 32 tasks"),
        "{note}"
    );
    // Our 14-episode run is partial: coverage shown, no rank, a note saying why.
    let i = row(board, "m1 (2026-05-01)");
    assert_eq!(f64s(board, RANK)[i], None);
    close(f64s(board, OVERALL_SR)[i], 500.0 / 11.0);
    close(f64s(board, GENERAL)[i], 50.0);
    assert!(f64s(board, Coverage::general_tasks)[i].is_some_and(|n| n < 42.0));
    let note = strs(board, NOTE)[i].clone().unwrap_or_default();
    assert!(
        note.starts_with("partial run:") && note.contains("not ranked"),
        "{note}"
    );
    let text: Vec<Option<String>> = rows(&t, LEADERBOARD_TEXT.name, LeaderboardTextRow::from_frame)
        .into_iter()
        .map(|r| Some(r.line))
        .collect();
    assert!(text[0].as_deref().is_some_and(|l| l.starts_with("| Rank | Model & Date | Approach & Details | Overall | General | Personalized | Proactive | Gen easy | Gen hard | Pers easy SR / Score")));
    assert!(
        text[2].as_deref().is_some_and(
            |l| l.starts_with("| 1 | Claude Sonnet 4.6 |") && l.contains("| 44.2 / 0.78 |")
        ),
        "{:?}",
        text[2]
    );
    assert!(text
        .iter()
        .flatten()
        .any(|l| l.starts_with("| - | m1 (2026-05-01) |")));
}

#[test]
fn leaderboard_notes_where_the_site_differs_from_the_paper() {
    let s = scenario();
    let m = metrics(&s, &import(&s, "run").expect("import"));
    let inputs = [
        input("overall", m.get("overall").expect("overall").clone()),
        input("splits", m.get("splits").expect("splits").clone()),
    ];
    // A site file of our own: one row as the paper has it, one with a general count the
    // paper's difficulty columns do not give, one renamed with another Overall, one unknown.
    let entry = |model: &str, overall: f64, succ: [u32; 3]| {
        json!({"model": model, "overall": overall, "general": 100.0 * f64::from(succ[0]) / 42.0,
               "personalized": 100.0 * f64::from(succ[1]) / 86.0, "proactive": 100.0 * f64::from(succ[2]) / 64.0,
               "general_tasks": 42, "personalized_tasks": 86, "proactive_tasks": 64,
               "general_successes": succ[0], "personalized_successes": succ[1], "proactive_successes": succ[2]})
    };
    let site = json!({"results": [
        entry("Claude Sonnet 4.6", 60.4, [34, 38, 44]),
        entry("UI-Venus-1.5-8B", 26.0, [18, 11, 21]),
        entry("Qwen3-VL-32B-Instruct", 29.3, [20, 9, 27]),
        entry("Some Other Model", 12.0, [5, 5, 5]),
    ]});
    s.file("site.json", &site.to_string());
    let site_path = s.path().join("site.json");
    let params = json!({"published": paper_table(), "path": site_path.to_string_lossy()});
    let t = run_kind(&KnowuLeaderboard, params, s.path(), &inputs).expect("leaderboard");
    let board = t.get("leaderboard").expect("leaderboard");
    let (models, sources, notes) = (strs(board, MODEL), strs(board, SOURCE), strs(board, NOTE));
    let site_rows: Vec<(String, String)> = (0..board.height())
        .filter(|&i| sources[i].as_deref() == Some("KnowU-Bench site"))
        .map(|i| {
            (
                models[i].clone().unwrap_or_default(),
                notes[i].clone().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(site_rows.len(), 3, "{site_rows:?}");
    let note_of = |m: &str| {
        site_rows
            .iter()
            .find(|(x, _)| x == m)
            .map(|(_, n)| n.clone())
            .unwrap_or_default()
    };
    assert!(
        note_of("UI-Venus-1.5-8B").contains(
            "general 42.857142857142854 = 18/42 (the paper's difficulty columns give 19/42 = 45.2)"
        ),
        "{}",
        note_of("UI-Venus-1.5-8B")
    );
    let qwen = note_of("Qwen3-VL-32B-Instruct");
    assert!(
        qwen.contains("named `Qwen3-VL-32B-Instruct` (the paper: `Qwen3-VL-32B`)")
            && qwen.contains("Overall 29.3 (the paper: 29.2)"),
        "{qwen}"
    );
    assert!(note_of("Some Other Model").contains("not in the paper's Table 2"));
    // Site rows are never ranked; the paper's rows say whether the site agrees.
    let ranks = f64s(board, RANK);
    assert!((0..board.height())
        .filter(|&i| sources[i].as_deref() == Some("KnowU-Bench site"))
        .all(|i| ranks[i].is_none()));
    let claude = notes[row(board, "Claude Sonnet 4.6")]
        .clone()
        .unwrap_or_default();
    assert!(
        claude.contains("the KnowU site's leaderboard has the same numbers"),
        "{claude}"
    );
    let mai = notes[row(board, "MAI-UI-8B")].clone().unwrap_or_default();
    assert!(mai.contains("not on the KnowU site's leaderboard"), "{mai}");

    // KnowU's own site file, when the data is there: the rows that differ are exactly these.
    let Some(real) = shared("leaderboard_site_differences", "leaderboard.json") else {
        return;
    };
    let params = json!({"published": paper_table(), "path": real.to_string_lossy()});
    let t = run_kind(&KnowuLeaderboard, params, s.path(), &inputs).expect("leaderboard");
    let board = t.get("leaderboard").expect("leaderboard");
    let (models, sources) = (strs(board, MODEL), strs(board, SOURCE));
    let differing: Vec<String> = (0..board.height())
        .filter(|&i| sources[i].as_deref() == Some("KnowU-Bench site"))
        .map(|i| models[i].clone().unwrap_or_default())
        .collect();
    assert_eq!(
        differing,
        [
            "Qwen3-VL-32B-Instruct (2026-04-02)",
            "UI-Venus-1.5-8B (2026-04-01)"
        ]
    );
}

/// The `errors` rows of an import as (task, file, message).
fn error_rows(t: &Tables) -> Vec<(Option<String>, String, String)> {
    rows(t, IMPORT_ERRORS.name, ImportError::from_frame)
        .into_iter()
        .map(|e| (e.task_id, e.file, e.message))
        .collect()
}

#[test]
fn unreadable_files_are_error_rows_not_an_aborted_import() {
    let s = Scratch::new();
    s.file(
        "bad/Broken@alice/traj.json",
        "{\"0\": {\"traj\": [\n  {\"action\": }\n]}}",
    )
    .file("bad/Broken@alice/result.txt", "score: 1.0\nreason: fine\n")
    .file(
        "bad/T/traj.json",
        r#"{"0": {"traj": [{"action": {"action_type": "click"}}, {"action": [1]}]}}"#,
    )
    .file("bad/eval_report_1.json", "not json");
    s.episode(
        "bad",
        "Fine",
        vec![step(act("click"), None)],
        Some("score: 0.5\n"),
    );
    let t = import(&s, "bad").expect("the import goes on");
    let rows = error_rows(&t);
    assert_eq!(rows.len(), 3, "{rows:?}");
    let (task, file, msg) = &rows[0];
    assert_eq!(
        (task.as_deref(), file.as_str()),
        (Some("Broken@alice"), "traj.json")
    );
    assert!(
        msg.contains("Broken@alice/traj.json:2:14: invalid JSON: expected value"),
        "{msg}"
    );
    assert!(
        msg.contains("_backup_"),
        "the message says how to skip the episode: {msg}"
    );
    let (task, _, msg) = &rows[1];
    assert_eq!(task.as_deref(), Some("T"));
    assert!(
        msg.contains("T/traj.json: field `0.traj[1].action` must be an object, found an array"),
        "{msg}"
    );
    let (task, file, msg) = &rows[2];
    assert_eq!(
        (task.as_deref(), file.as_str()),
        (None, "eval_report_1.json")
    );
    assert!(
        msg.contains("eval_report_1.json:1:2: invalid JSON: expected ident; fix the file"),
        "{msg}"
    );
    // The unreadable episodes are kept with status `error` (their score too), the rest as usual.
    let ep = episodes(&t);
    assert_eq!(of_task(&ep, "Broken@alice").status, "error");
    assert_eq!(of_task(&ep, "T").status, "error");
    assert_eq!(of_task(&ep, "Fine").status, "ok");
    assert!(of_task(&ep, "T")
        .error
        .as_deref()
        .is_some_and(|e| e.contains("0.traj[1]")));
    assert!(t.get("reports").expect("reports").height() == 0);

    let StageError::Input(msg) = import(&s, "missing").expect_err("no dir") else {
        panic!("kind")
    };
    assert!(
        msg.contains("missing: not a directory; `root` must name a directory"),
        "{msg}"
    );
}

#[test]
fn knowu_shapes_import_as_knowu_reads_them() {
    // A task that failed at init keeps `{}`; `{"0": null}`; no traj.json at all; side files of a
    // real run (screenshots, a trajectory backup, a thread log) are not part of the episode.
    let s = Scratch::new();
    s.file("run/InitFail@alice/traj.json", "{}")
        .file(
            "run/InitFail@alice/result.txt",
            "score: 0.0\nreason: init failed\n",
        )
        .file("run/NullRecord/traj.json", "{\"0\": null}")
        .file("run/NoTraj/result.txt", "score: 1\n")
        .file("run/WithSides/screenshots/WithSides-0-1.png", "png")
        .file(
            "run/WithSides/marked_screenshots_backup_20260101_000000/x.png",
            "png",
        )
        .file(
            "run/WithSides/traj_backup_20260101_000000.json",
            "{\"0\": {\"traj\": [1]}}",
        )
        .file("run/WithSides/thread_1.log", "log")
        .file("run/WithSides_backup_20260101_000000/traj.json", "not json")
        .file("run/notes.txt", "ignored");
    s.episode(
        "run",
        "WithSides",
        vec![step(act("click"), None), step(act("finished"), None)],
        Some("score: 1.0\n"),
    );
    let t = import(&s, "run").expect("import");
    assert!(error_rows(&t).is_empty(), "{:?}", error_rows(&t));
    let ep = episodes(&t);
    assert_eq!(
        ep.iter().map(|e| e.task_id.as_str()).collect::<Vec<_>>(),
        ["InitFail@alice", "NoTraj", "NullRecord", "WithSides"]
    );
    assert_eq!(ep.iter().map(|e| e.steps).collect::<Vec<_>>(), [0, 0, 0, 2]);
    assert_eq!(
        ep.iter().map(|e| e.status.as_str()).collect::<Vec<_>>(),
        ["ok", "ok", "no_result", "ok"]
    );
    assert_eq!(t.get("steps").expect("steps").height(), 2);
}

#[test]
fn a_proactive_persona_without_a_profile_is_an_error_unless_allowed() {
    let s = scenario();
    s.file(
        "tasks3.csv",
        &format!("{TASKS}RoutA@dave,RoutA,proactive,easy,dave,,,habit_a,\n"),
    );
    s.episode(
        "run",
        "RoutA@dave",
        vec![step(act("finished"), None)],
        Some("score: 1\n"),
    );
    let imported = import(&s, "run").expect("import");
    let inputs = run_inputs(&imported);
    let err = run_kind(
        &KnowuMetrics,
        json!({"tasks": "tasks3.csv", "personas": "personas"}),
        s.path(),
        &inputs,
    )
    .expect_err("dave has no profile");
    let StageError::Input(msg) = err else {
        panic!("kind: {err:?}")
    };
    assert!(
        msg.contains("1 proactive episode(s) of persona(s) dave have no profile in `personas` (looked for dave.yaml)"),
        "{msg}"
    );
    assert!(msg.contains("allow_missing_profiles: true"), "{msg}");
    let m = run_kind(
        &KnowuMetrics,
        json!({"tasks": "tasks3.csv", "personas": "personas", "allow_missing_profiles": true}),
        s.path(),
        &inputs,
    )
    .expect("allowed");
    // KnowU's reading (no habits → noneed), flagged in every table.
    let per = rows(&m, EPISODE_METRICS.name, EpisodeMetricsRow::from_frame);
    let dave = find(&per, "RoutA@dave", |r| r.task_id.as_str());
    assert_eq!(dave.bucket.as_deref(), Some("noneed"));
    assert_eq!(dave.profile_found, Some(false));
    let policy = rows(&m, POLICY.name, PolicyRow::from_frame);
    let silent = find(&policy, "Silent", |r| r.metric.as_str());
    assert_eq!(silent.missing_profile_episodes, 1);
    let splits = rows(&m, SPLITS.name, SplitsRow::from_frame);
    let sums: u32 = splits.iter().map(|r| r.missing_profile_episodes).sum();
    assert_eq!(sums, 2, "proactive/all and proactive/easy");
    let personas = rows(&m, PERSONAS.name, PersonasRow::from_frame);
    let sums: u32 = personas.iter().map(|r| r.missing_profile_episodes).sum();
    assert_eq!(sums, 1);
    let overall = rows(&m, OVERALL.name, OverallRow::from_frame);
    assert_eq!(
        overall
            .iter()
            .map(|r| r.missing_profile_episodes)
            .collect::<Vec<_>>(),
        [1]
    );
}

#[test]
fn unknown_params_are_rejected() {
    let s = Scratch::new();
    let err = run_kind(
        &ImportKnowuRuns,
        json!({"root": ".", "label": "x", "lable": "y"}),
        s.path(),
        &[],
    )
    .expect_err("typo");
    assert!(err.to_string().contains("unknown field `lable`"), "{err}");
}

#[test]
fn tasks_without_a_directory_become_no_result_episodes() {
    let s = scenario();
    let t = run_kind(
        &ImportKnowuRuns,
        json!({"root": "run", "label": "m1", "tasks": "tasks.csv"}),
        s.path(),
        &[],
    )
    .expect("import");
    let ep = t.get("episodes").expect("episodes");
    // Every task of tasks.csv has a directory (13), plus the unlisted MysteryTask.
    assert_eq!(ep.height(), 14);
    s.file(
        "tasks2.csv",
        &format!("{TASKS}NewTask@dave,NewTask,personalized,easy,dave,,,,\n"),
    );
    let t = run_kind(
        &ImportKnowuRuns,
        json!({"root": "run", "label": "m1", "tasks": "tasks2.csv"}),
        s.path(),
        &[],
    )
    .expect("import");
    let ep = episodes(&t);
    assert_eq!(ep.len(), 15);
    let e = of_task(&ep, "NewTask@dave");
    assert_eq!(e.status, "no_result");
    assert_eq!(e.steps, 0);
}

#[test]
fn export_then_import_gives_back_the_same_tables() {
    let s = scenario();
    let first = import(&s, "run").expect("import");
    let inputs = run_inputs(&first);
    let written = run_kind(
        &ExportKnowuRuns,
        json!({"dir": "exported"}),
        s.path(),
        &inputs,
    )
    .expect("export");
    assert_eq!(written.get("written").expect("written").height(), 14);
    let second = import(&s, "exported").expect("re-import");
    for table in [&EPISODES, &STEPS].map(|d| d.name) {
        let (a, b) = (first.get(table).expect("a"), second.get(table).expect("b"));
        assert!(a.equals_missing(b), "{table} differs:\n{a}\n{b}");
    }
    // The report is not exported, and the no-result episode without a reason has no result.txt.
    assert!(!s.path().join("exported/PrefA@bob/result.txt").exists());
    assert_eq!(
        std::fs::read_to_string(s.path().join("exported/GenB/result.txt")).expect("result"),
        "score: 0.99\nreason: judged\n"
    );
}

#[test]
fn export_refuses_duplicate_tasks() {
    let s = scenario();
    let first = import(&s, "run").expect("import");
    let ep = first.get("episodes").expect("e");
    let doubled = ep.vstack(ep).expect("vstack");
    let inputs = [
        input("episodes", doubled),
        input("steps", first.get("steps").expect("s").clone()),
    ];
    let err = run_kind(&ExportKnowuRuns, json!({"dir": "x"}), s.path(), &inputs).expect_err("dup");
    assert!(err.to_string().contains("appears more than once"), "{err}");
}

#[test]
fn an_empty_run_gives_empty_tables() {
    let s = scenario();
    s.file("empty/.keep", "");
    let m = metrics(&s, &import(&s, "empty").expect("import"));
    for table in ["episode_metrics", "splits", "policy", "personas", "overall"] {
        assert_eq!(m.get(table).expect(table).height(), 0, "{table}");
    }
}

#[test]
fn export_derives_knowu_alignment_from_user_reply() {
    // prefflow's own steps carry the reply only on the asking step (no ask_user_response).
    let s = scenario();
    let first = import(&s, "run").expect("import");
    let steps = first
        .get("steps")
        .expect("s")
        .drop(St::ask_user_response)
        .expect("drop");
    let inputs = [
        input("episodes", first.get("episodes").expect("e").clone()),
        input("steps", steps),
    ];
    run_kind(
        &ExportKnowuRuns,
        json!({"dir": "native"}),
        s.path(),
        &inputs,
    )
    .expect("export");
    let second = import(&s, "native").expect("re-import");
    let (a, b) = (
        first.get("steps").expect("a"),
        second.get("steps").expect("b"),
    );
    assert!(a.equals_missing(b), "steps differ:\n{a}\n{b}");
}

/// The scenario plus one episode of a prefflow-only class.
fn scenario_with_a_prefflow_class() -> Scratch {
    let s = scenario();
    s.episode(
        "run",
        "PrefflowDinnerTask@alice",
        vec![step(act("finished"), None)],
        Some("score: 1\n"),
    );
    s
}

/// Exports `first`'s tables to `dir` (and its prefflow-only sibling).
fn export(s: &Scratch, first: &Tables, dir: &str) -> Result<Tables, StageError> {
    let inputs = run_inputs(first);
    run_kind(&ExportKnowuRuns, json!({"dir": dir}), s.path(), &inputs)
}

#[test]
fn export_keeps_prefflow_classes_apart_and_owns_its_directory() {
    let s = scenario_with_a_prefflow_class();
    let first = import(&s, "run").expect("import");
    let written = export(&s, &first, "out").expect("export");
    let paths: Vec<String> = rows(&written, WRITTEN.name, Written::from_frame)
        .into_iter()
        .map(|w| w.path)
        .collect();
    assert!(
        paths.contains(&"out-prefflow-only/PrefflowDinnerTask@alice".to_string()),
        "{paths:?}"
    );
    assert!(!s.path().join("out/PrefflowDinnerTask@alice").exists());
    assert!(s.path().join("out/GenA/traj.json").is_file());
    // A later export without a task removes that task's directory; nothing else is touched.
    let fewer = first
        .get("episodes")
        .expect("e")
        .clone()
        .lazy()
        .filter(col(Ep::task_id).neq(lit("GenA")))
        .collect()
        .expect("filter");
    let inputs = [
        input("episodes", fewer),
        input("steps", first.get("steps").expect("s").clone()),
    ];
    run_kind(&ExportKnowuRuns, json!({"dir": "out"}), s.path(), &inputs).expect("re-export");
    assert!(!s.path().join("out/GenA").exists());
    assert!(s.path().join("out/GenB/traj.json").is_file());
    // Content the exporter did not write is refused: KnowU's scripts would count it.
    s.file("out/eval_report_20260101_000000.json", "{}");
    let err = export(&s, &first, "out")
        .expect_err("foreign report")
        .to_string();
    assert!(
        err.contains("holds 1 entry the exporter did not write (eval_report_20260101_000000.json)"),
        "{err}"
    );
    let err = export(&s, &first, "run")
        .expect_err("a KnowU run")
        .to_string();
    assert!(
        err.contains("export into a new or empty directory"),
        "{err}"
    );
}

#[test]
fn export_writes_knowu_actions_and_results_only_where_the_metrics_count_them() {
    let s = Scratch::new();
    s.file("tasks.csv", TASKS)
        .file("personas/alice.yaml", ALICE);
    // prefflow's own steps: `finish`, a tool call, a tap; and a failed episode with a score.
    let played = |id: &str, task: &str, score: f64, status: &str, error: Option<&str>| Played {
        episode_id: id.into(),
        task_id: task.into(),
        score: Some(score),
        status: status.into(),
        error: error.map(str::to_string),
        prompt_tokens_agent: 1,
        completion_tokens_agent: 1,
        cached_tokens_agent: 0,
    };
    let episodes = Played::to_frame(&[
        played("a#v#0", "RoutC@alice", 1.0, "ok", None),
        played("b#v#0", "GenA", 0.0, "error", Some("agent crashed")),
    ])
    .expect("episodes");
    let step = |id: &str, step: u32, action_type: &str, arguments: &str| Acted {
        episode_id: id.into(),
        step,
        action_type: action_type.into(),
        arguments: arguments.into(),
        observation: None,
        raw: None,
        user_reply: None,
    };
    let steps = Acted::to_frame(&[
        step("a#v#0", 1, "food.place_order", r#"{"dish":"Ramen"}"#),
        step("a#v#0", 2, "finish", "{}"),
        step("b#v#0", 1, "tap", r#"{"element":3}"#),
    ])
    .expect("steps");
    let inputs = [input("episodes", episodes), input("steps", steps)];
    run_kind(&ExportKnowuRuns, json!({"dir": "x"}), s.path(), &inputs).expect("export");
    let traj: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(s.path().join("x/RoutC@alice/traj.json")).expect("traj"),
    )
    .expect("json");
    let actions: Vec<&serde_json::Value> = traj["0"]["traj"]
        .as_array()
        .expect("traj")
        .iter()
        .map(|t| &t["action"])
        .collect();
    assert_eq!(
        actions[0],
        &json!({"action_type": "mcp", "action_name": "food.place_order", "action_json": {"dish": "Ramen"}})
    );
    assert_eq!(actions[1], &json!({"action_type": "finished"}));
    // The failed episode has no result for KnowU either.
    assert!(!s.path().join("x/GenA/result.txt").exists());
    assert!(s.path().join("x/RoutC@alice/result.txt").exists());
}

#[test]
fn metrics_cover_the_classes_asked_for_and_the_leaderboard_knowu_classes_only() {
    let s = scenario_with_a_prefflow_class();
    let imported = import(&s, "run").expect("import");
    let inputs = run_inputs(&imported);
    let run = |classes: &str| {
        run_kind(
            &KnowuMetrics,
            json!({"tasks": "tasks.csv", "personas": "personas", "classes": classes}),
            s.path(),
            &inputs,
        )
        .expect("metrics")
    };
    let knowu = run("knowu");
    let overall = |m: &Tables| {
        let o = rows(m, OVERALL.name, OverallRow::from_frame);
        assert_eq!(o.len(), 1, "{o:?}");
        o[0].clone()
    };
    let o = overall(&knowu);
    assert_eq!(o.scope, "knowu");
    assert_eq!(o.out_of_scope_episodes, 1);
    let all = run("all");
    let every = overall(&all);
    assert_eq!(every.out_of_scope_episodes, 0);
    // The prefflow class is not in tasks.csv: unmatched when in scope.
    assert_eq!(every.unmatched_episodes, o.unmatched_episodes + 1);
    let prefflow = run("prefflow");
    let per = rows(
        &prefflow,
        EPISODE_METRICS.name,
        EpisodeMetricsRow::from_frame,
    );
    assert_eq!(per.iter().filter(|r| r.in_scope).count(), 1);
    let board = |metrics: &Tables| {
        run_kind(
            &KnowuLeaderboard,
            json!({"published": paper_table()}),
            s.path(),
            &[
                input("overall", metrics.get("overall").expect("o").clone()),
                input("splits", metrics.get("splits").expect("s").clone()),
            ],
        )
    };
    board(&knowu).expect("KnowU classes rank");
    let err = board(&all).expect_err("all classes do not").to_string();
    assert!(
        err.contains("`classes: all`") && err.contains("classes: knowu"),
        "{err}"
    );
}
