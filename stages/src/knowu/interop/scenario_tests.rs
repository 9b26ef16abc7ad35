//! End-to-end checks of import → metrics on a hand-built run directory whose answers were worked
//! out by hand (see the comments on each episode), plus the import error paths and the
//! export/import round trip.

use polars::prelude::*;
use serde_json::json;

use super::testkit::{act, input, run_kind, say, shared, step, Scratch};
use crate::kinds::{ExportKnowuRuns, ImportKnowuRuns, KnowuLeaderboard, KnowuMetrics};

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

fn strs(df: &DataFrame, name: &str) -> Vec<Option<String>> {
    let c = df.column(name).expect(name).str().expect("str").clone();
    c.iter().map(|v| v.map(str::to_string)).collect()
}

fn f64s(df: &DataFrame, name: &str) -> Vec<Option<f64>> {
    let c = df
        .column(name)
        .expect(name)
        .cast(&DataType::Float64)
        .expect("cast");
    c.f64().expect("f64").iter().collect()
}

fn bools(df: &DataFrame, name: &str) -> Vec<Option<bool>> {
    df.column(name)
        .expect(name)
        .bool()
        .expect("bool")
        .iter()
        .collect()
}

/// The row of `df` where `key` equals `value`.
fn row(df: &DataFrame, key: &str, value: &str) -> usize {
    strs(df, key)
        .iter()
        .position(|v| v.as_deref() == Some(value))
        .unwrap_or_else(|| panic!("no row {key} = {value}"))
}

fn close(actual: Option<f64>, expected: f64) {
    let a = actual.unwrap_or(f64::NAN);
    assert!((a - expected).abs() < 1e-9, "{a} != {expected}");
}

#[test]
fn import_reads_episodes_alignment_tokens_and_reports() {
    let s = scenario();
    let t = import(&s, "run").expect("import");
    let ep = t.get("episodes").expect("episodes");
    assert_eq!(ep.height(), 14, "the _backup_ directory is ignored");
    let i = row(ep, "task_id", "PrefA@bob");
    assert_eq!(strs(ep, "status")[i].as_deref(), Some("no_result"));
    assert_eq!(f64s(ep, "score")[i], None);
    let i = row(ep, "task_id", "WeekendSleeperTask@alice");
    assert_eq!(strs(ep, "status")[i].as_deref(), Some("no_result"));
    assert_eq!(strs(ep, "reason")[i].as_deref(), Some("emulator crashed"));
    let i = row(ep, "task_id", "PrefB@alice");
    assert_eq!(
        strs(ep, "episode_id")[i].as_deref(),
        Some("PrefB@alice#m1#0")
    );
    assert_eq!(strs(ep, "persona")[i].as_deref(), Some("alice"));
    assert_eq!(f64s(ep, "steps")[i], Some(4.0));
    assert_eq!(f64s(ep, "ask_user_calls")[i], Some(2.0));
    assert_eq!(f64s(ep, "prompt_tokens_agent")[i], Some(40.0));
    assert_eq!(f64s(ep, "completion_tokens_agent")[i], Some(4.0));
    assert_eq!(strs(ep, "persona")[row(ep, "task_id", "GenA")], None);
    let i = row(ep, "task_id", "RoutC@alice");
    assert_eq!(
        strs(ep, "final_answer")[i].as_deref(),
        Some("Understood, I won't.")
    );

    let st = t.get("steps").expect("steps");
    let rows: Vec<usize> = strs(st, "episode_id")
        .iter()
        .enumerate()
        .filter(|(_, id)| id.as_deref() == Some("PrefB@alice#m1#0"))
        .map(|(i, _)| i)
        .collect();
    let pick = |name: &str| {
        rows.iter()
            .map(|&i| strs(st, name)[i].clone())
            .collect::<Vec<_>>()
    };
    let some = |v: &[Option<&str>]| v.iter().map(|x| x.map(str::to_string)).collect::<Vec<_>>();
    assert_eq!(
        pick("action_type"),
        some(&[
            Some("ask_user"),
            Some("ask_user"),
            Some("click"),
            Some("finished")
        ])
    );
    // KnowU's alignment: the reply arrives with the next step …
    assert_eq!(
        pick("ask_user_response"),
        some(&[None, Some("a1"), Some("a2"), None])
    );
    // … and prefflow's: on the step that asked.
    assert_eq!(
        pick("user_reply"),
        some(&[Some("a1"), Some("a2"), None, None])
    );
    assert_eq!(pick("raw")[0].as_deref(), Some("thought \"ask_user\""));
    assert_eq!(
        pick("arguments")[0].as_deref(),
        Some(r#"{"action_type":"ask_user","text":"q1"}"#)
    );

    let reports = t.get("reports").expect("reports");
    assert_eq!(reports.height(), 1);
    assert_eq!(f64s(reports, "successful_tasks"), [Some(6.0)]);
    assert_eq!(strs(reports, "model_name"), [Some("m1".to_string())]);
    // The report lists no per-task scores: every scored directory disagrees with it.
    assert_eq!(f64s(reports, "score_mismatches"), [Some(12.0)]);
    assert_eq!(bools(reports, "latest"), [Some(true)]);
}

#[test]
fn per_episode_facts_match_the_hand_worked_answers() {
    let s = scenario();
    let m = metrics(&s, &import(&s, "run").expect("import"));
    let e = m.get("episode_metrics").expect("episode_metrics");
    let at = |task: &str| row(e, "task_id", task);
    let (bucket, policy, quirk) = (
        strs(e, "bucket"),
        bools(e, "policy_success"),
        bools(e, "bucket_from_quirk"),
    );
    let (success, decision) = (bools(e, "success"), strs(e, "user_decision"));
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
        assert_eq!(bucket[at(task)].as_deref(), b, "{task} bucket");
        assert_eq!(policy[at(task)], p, "{task} policy");
    }
    assert_eq!(
        decision[at("RoutA@alice")].as_deref(),
        Some("accept"),
        "tag beats the word reject"
    );
    assert_eq!(
        decision[at("RoutC@alice")].as_deref(),
        Some("reject"),
        "tag beats the word accept"
    );
    assert_eq!(f64s(e, "first_reject_step")[at("RoutB@bob")], Some(2.0));
    assert_eq!(f64s(e, "last_query_step")[at("PrefB@alice")], Some(2.0));
    assert_eq!(success[at("GenB")], Some(false), "0.99 is not > 0.99");
    assert_eq!(success[at("PrefA@alice")], Some(true), "0.991 is");
    assert_eq!(quirk[at("WeekendSleeperTask@carol")], Some(true));
    assert_eq!(quirk[at("RoutA@alice")], Some(false));
    // Alice has weekend_sleeper itself: not the quirk (and she has no result anyway).
    assert_eq!(quirk[at("WeekendSleeperTask@alice")], Some(false));
    assert_eq!(
        bools(e, "has_result")[at("WeekendSleeperTask@alice")],
        Some(false)
    );
    assert_eq!(strs(e, "split")[at("MysteryTask")], None);
}

#[test]
fn split_and_difficulty_means() {
    let s = scenario();
    let m = metrics(&s, &import(&s, "run").expect("import"));
    let sp = m.get("splits").expect("splits");
    assert_eq!(sp.height(), 9, "3 splits × (all, easy, hard)");
    let keys: Vec<String> = strs(sp, "split")
        .iter()
        .zip(strs(sp, "difficulty"))
        .map(|(a, b)| {
            format!(
                "{}/{}",
                a.clone().unwrap_or_default(),
                b.unwrap_or_default()
            )
        })
        .collect();
    let at = |k: &str| {
        keys.iter()
            .position(|x| x == k)
            .unwrap_or_else(|| panic!("{k}"))
    };
    let get = |name: &str, k: &str| f64s(sp, name)[at(k)];
    // general: GenA 1.0 (3 steps), GenB 0.99 (1 step).
    close(get("SR", "general/all"), 0.5);
    close(get("AveSteps", "general/all"), 2.0);
    close(get("AveQueries", "general/all"), 0.0);
    assert_eq!(get("AvgScore", "general/all"), None);
    assert_eq!(get("IE", "general/all"), None);
    close(get("SR", "general/easy"), 1.0);
    close(get("SR", "general/hard"), 0.0);
    // personalized: 0.991 (3 steps, 1 ask) and 0.5 (4 steps, 2 asks); PrefA@bob has no result.
    close(get("episodes", "personalized/all"), 2.0);
    close(get("no_result_episodes", "personalized/all"), 1.0);
    close(get("SR", "personalized/all"), 0.5);
    close(get("AvgScore", "personalized/all"), (0.991 + 0.5) / 2.0);
    close(get("AveSteps", "personalized/all"), 3.5);
    close(get("AveQueries", "personalized/all"), 1.5);
    close(
        get("IE", "personalized/all"),
        (0.991 / 1.0 + 0.5 / 2.0) / 2.0,
    );
    close(get("AvgScore", "personalized/easy"), 0.991);
    close(get("AvgScore", "personalized/hard"), 0.5);
    // proactive P1..P7: scores 1, 1, 0, 0.2, 1, 0, 0; steps 3,2,1,3,3,3,1; asks 1,0,0,1,1,0,0.
    close(get("episodes", "proactive/all"), 7.0);
    close(get("SR", "proactive/all"), 3.0 / 7.0);
    close(get("AveSteps", "proactive/all"), 16.0 / 7.0);
    close(get("AveQueries", "proactive/all"), 3.0 / 7.0);
    close(get("IE", "proactive/all"), 3.2 / 7.0);
    assert_eq!(get("AvgScore", "proactive/all"), None);
    close(get("SR", "proactive/easy"), 0.75);
    close(get("SR", "proactive/hard"), 0.0);
}

#[test]
fn policy_personas_and_overall() {
    let s = scenario();
    let m = metrics(&s, &import(&s, "run").expect("import"));
    let p = m.get("policy").expect("policy");
    assert_eq!(
        strs(p, "metric"),
        ["Act", "Silent", "Stop"].map(|x| Some(x.to_string()))
    );
    assert_eq!(f64s(p, "episodes"), [Some(2.0), Some(3.0), Some(2.0)]);
    assert_eq!(f64s(p, "successes"), [Some(1.0), Some(2.0), Some(1.0)]);
    close(f64s(p, "value")[1], 2.0 / 3.0);
    assert_eq!(f64s(p, "quirk_episodes"), [Some(1.0), Some(0.0), Some(0.0)]);

    let pe = m.get("personas").expect("personas");
    let key: Vec<String> = strs(pe, "persona")
        .iter()
        .zip(strs(pe, "split"))
        .map(|(a, b)| {
            format!(
                "{}/{}",
                a.clone().unwrap_or_default(),
                b.unwrap_or_default()
            )
        })
        .collect();
    let avg = |k: &str| {
        f64s(pe, "avg_score")[key
            .iter()
            .position(|x| x == k)
            .unwrap_or_else(|| panic!("{k}"))]
    };
    close(avg("alice/personalized"), (0.991 + 0.5) / 2.0);
    close(avg("bob/personalized"), 0.0); // its only episode has no result: counted as 0
    close(avg("alice/proactive"), (1.0 + 0.0 + 1.0 + 0.0) / 4.0); // not 2/3: no result = 0
    close(avg("bob/proactive"), 1.2 / 3.0);
    close(avg("carol/proactive"), 0.0);
    assert_eq!(pe.height(), 5);

    let o = m.get("overall").expect("overall");
    assert_eq!(f64s(o, "episodes"), [Some(14.0)]);
    assert_eq!(f64s(o, "episodes_with_results"), [Some(11.0)]);
    assert_eq!(f64s(o, "successes"), [Some(5.0)]);
    assert_eq!(f64s(o, "no_result_episodes"), [Some(2.0)]);
    assert_eq!(f64s(o, "unmatched_episodes"), [Some(1.0)]);
    assert_eq!(f64s(o, "quirk_episodes"), [Some(1.0)]);
    close(f64s(o, "overall_SR")[0], 5.0 / 11.0);
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
    let claude = row(board, "Model & Date", "Claude Sonnet 4.6");
    assert_eq!(f64s(board, "Rank")[claude], Some(1.0));
    assert_eq!(f64s(board, "Pers hard SR")[claude], Some(44.2));
    assert_eq!(f64s(board, "Pers hard Score")[claude], Some(0.80));
    // General derived from 94.4 % of 18 easy + 70.8 % of 24 hard = 17 + 17 of 42.
    close(f64s(board, "General")[claude], 100.0 * 34.0 / 42.0);
    for model in ["MAI-UI-8B", "GUI-Owl-1.5-8B", "Qwen3.5-122B-A10B"] {
        let i = row(board, "Model & Date", model);
        assert!(f64s(board, "Rank")[i].is_some(), "{model} ranked");
    }
    let mai = row(board, "Model & Date", "MAI-UI-8B");
    assert_eq!(f64s(board, "Gen easy")[mai], Some(100.0));
    let note = strs(board, "note")[mai].clone().unwrap_or_default();
    assert!(
        note.contains("Pro easy 17.9% is not a whole number of its 32 tasks"),
        "{note}"
    );
    // Our 14-episode run is partial: coverage shown, no rank, a note saying why.
    let i = row(board, "Model & Date", "m1 (2026-05-01)");
    assert_eq!(f64s(board, "Rank")[i], None);
    close(f64s(board, "Overall")[i], 500.0 / 11.0);
    close(f64s(board, "General")[i], 50.0);
    assert!(f64s(board, "general_tasks")[i].is_some_and(|n| n < 42.0));
    let note = strs(board, "note")[i].clone().unwrap_or_default();
    assert!(
        note.starts_with("partial run:") && note.contains("not ranked"),
        "{note}"
    );
    let text: Vec<Option<String>> = strs(t.get("text").expect("text"), "line");
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
    let (models, sources, notes) = (
        strs(board, "Model & Date"),
        strs(board, "source"),
        strs(board, "note"),
    );
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
    let ranks = f64s(board, "Rank");
    assert!((0..board.height())
        .filter(|&i| sources[i].as_deref() == Some("KnowU-Bench site"))
        .all(|i| ranks[i].is_none()));
    let claude = notes[row(board, "Model & Date", "Claude Sonnet 4.6")]
        .clone()
        .unwrap_or_default();
    assert!(
        claude.contains("the KnowU site's leaderboard has the same numbers"),
        "{claude}"
    );
    let mai = notes[row(board, "Model & Date", "MAI-UI-8B")]
        .clone()
        .unwrap_or_default();
    assert!(mai.contains("not on the KnowU site's leaderboard"), "{mai}");

    // KnowU's own site file, when the data is there: the rows that differ are exactly these.
    let Some(real) = shared("leaderboard_site_differences", "leaderboard.json") else {
        return;
    };
    let params = json!({"published": paper_table(), "path": real.to_string_lossy()});
    let t = run_kind(&KnowuLeaderboard, params, s.path(), &inputs).expect("leaderboard");
    let board = t.get("leaderboard").expect("leaderboard");
    let (models, sources) = (strs(board, "Model & Date"), strs(board, "source"));
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
    let e = t.get("errors").expect("errors");
    let (task, file, msg) = (strs(e, "task_id"), strs(e, "file"), strs(e, "message"));
    (0..e.height())
        .map(|i| {
            (
                task[i].clone(),
                file[i].clone().unwrap_or_default(),
                msg[i].clone().unwrap_or_default(),
            )
        })
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
    let ep = t.get("episodes").expect("episodes");
    let status = strs(ep, "status");
    assert_eq!(
        status[row(ep, "task_id", "Broken@alice")].as_deref(),
        Some("error")
    );
    assert_eq!(status[row(ep, "task_id", "T")].as_deref(), Some("error"));
    assert_eq!(status[row(ep, "task_id", "Fine")].as_deref(), Some("ok"));
    let errors = strs(ep, "error");
    assert!(errors[row(ep, "task_id", "T")]
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
    let ep = t.get("episodes").expect("episodes");
    assert_eq!(
        strs(ep, "task_id")
            .into_iter()
            .flatten()
            .collect::<Vec<_>>(),
        ["InitFail@alice", "NoTraj", "NullRecord", "WithSides"]
    );
    assert_eq!(
        f64s(ep, "steps"),
        [Some(0.0), Some(0.0), Some(0.0), Some(2.0)]
    );
    assert_eq!(
        strs(ep, "status").into_iter().flatten().collect::<Vec<_>>(),
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
    let per = m.get("episode_metrics").expect("per");
    let i = row(per, "task_id", "RoutA@dave");
    assert_eq!(strs(per, "bucket")[i].as_deref(), Some("noneed"));
    assert_eq!(bools(per, "profile_found")[i], Some(false));
    let policy = m.get("policy").expect("policy");
    let silent = row(policy, "metric", "Silent");
    assert_eq!(f64s(policy, "missing_profile_episodes")[silent], Some(1.0));
    let splits = m.get("splits").expect("splits");
    let sums: f64 = f64s(splits, "missing_profile_episodes")
        .into_iter()
        .flatten()
        .sum();
    assert_eq!(sums, 2.0, "proactive/all and proactive/easy");
    let personas = m.get("personas").expect("personas");
    assert_eq!(
        f64s(personas, "missing_profile_episodes")
            .into_iter()
            .flatten()
            .sum::<f64>(),
        1.0
    );
    assert_eq!(
        f64s(m.get("overall").expect("o"), "missing_profile_episodes"),
        [Some(1.0)]
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
    let ep = t.get("episodes").expect("episodes");
    assert_eq!(ep.height(), 15);
    let i = row(ep, "task_id", "NewTask@dave");
    assert_eq!(strs(ep, "status")[i].as_deref(), Some("no_result"));
    assert_eq!(f64s(ep, "steps")[i], Some(0.0));
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
    for table in ["episodes", "steps"] {
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
        .drop("ask_user_response")
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
    let w = written.get("written").expect("written");
    let paths = strs(w, "path");
    assert!(
        paths.contains(&Some(
            "out-prefflow-only/PrefflowDinnerTask@alice".to_string()
        )),
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
        .filter(col("task_id").neq(lit("GenA")))
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
    let episodes = df!(
        "episode_id" => ["a#v#0", "b#v#0"],
        "task_id" => ["RoutC@alice", "GenA"],
        "score" => [Some(1.0), Some(0.0)],
        "status" => ["ok", "error"],
        "error" => [None, Some("agent crashed")],
        "prompt_tokens_agent" => [1u64, 1],
        "completion_tokens_agent" => [1u64, 1],
        "cached_tokens_agent" => [0u64, 0],
    )
    .expect("episodes");
    let steps = df!(
        "episode_id" => ["a#v#0", "a#v#0", "b#v#0"],
        "step" => [1u32, 2, 1],
        "action_type" => ["food.place_order", "finish", "tap"],
        "arguments" => [r#"{"dish":"Ramen"}"#, "{}", r#"{"element":3}"#],
        "observation" => [None::<&str>, None, None],
        "raw" => [None::<&str>, None, None],
        "user_reply" => [None::<&str>, None, None],
    )
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
    let o = knowu.get("overall").expect("overall");
    assert_eq!(strs(o, "scope"), [Some("knowu".to_string())]);
    assert_eq!(f64s(o, "out_of_scope_episodes"), [Some(1.0)]);
    let all = run("all");
    let o = all.get("overall").expect("overall");
    assert_eq!(f64s(o, "out_of_scope_episodes"), [Some(0.0)]);
    // The prefflow class is not in tasks.csv: unmatched when in scope.
    assert_eq!(
        f64s(o, "unmatched_episodes")[0],
        f64s(knowu.get("overall").expect("o"), "unmatched_episodes")[0].map(|n| n + 1.0)
    );
    let prefflow = run("prefflow");
    let per = prefflow.get("episode_metrics").expect("per");
    assert_eq!(
        bools(per, "in_scope")
            .iter()
            .filter(|b| **b == Some(true))
            .count(),
        1
    );
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
