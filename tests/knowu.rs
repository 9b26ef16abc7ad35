//! KnowU-Bench kinds through the real binary: import a fabricated run directory, compute the
//! metrics against the shared task list and persona profiles (read in place), place the run on
//! the leaderboard; editing the run directory re-runs the import; a malformed file exits 2.

use polars::prelude::*;
use serde_json::json;

use crate::common::*;

/// The pipeline over KnowU-Bench's published data (task list, profiles, leaderboard), read
/// through the data setting (`PREFFLOW_KNOWU`); `None` when it is absent (the test skips).
fn pipeline(test: &str) -> Option<String> {
    let dir = prefflow_stages::knowu::data::for_tests(test)?;
    let shared = |rel: &str| dir.join(rel).to_string_lossy().into_owned();
    Some(format!(
        "pipeline: knowu
stages:
  runs:
    kind: import_knowu_runs
    params: {{ root: run, label: m1 }}
  metrics:
    kind: knowu_metrics
    inputs: [runs.episodes, runs.steps]
    params: {{ tasks: '{}', personas: '{}' }}
  board:
    kind: knowu_leaderboard
    inputs: [metrics.overall, metrics.splits]
    params: {{ path: '{}', published: '{}', date: '2026-05-01' }}
",
        shared("tasks.csv"),
        shared("user_profile"),
        shared("leaderboard.json"),
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("datasets/knowu/published.csv")
            .display()
    ))
}

/// Writes one episode: `actions` as (type, text) pairs, and result.txt when `score` is given.
fn episode(ws: &Workspace, task: &str, actions: &[(&str, &str)], score: Option<&str>) {
    let traj: Vec<_> = actions
        .iter()
        .enumerate()
        .map(|(i, (kind, text))| json!({"step": i + 1, "prediction": "", "action": {"action_type": kind, "text": text}}))
        .collect();
    ws.write(
        &format!("run/{task}/traj.json"),
        &json!({"0": {"traj": traj}}).to_string(),
    );
    if let Some(s) = score {
        ws.write(
            &format!("run/{task}/result.txt"),
            &format!("score: {s}\nreason: r\n"),
        );
    }
}

/// Five episodes with results (3 successes) and one without.
fn fabricated_run(ws: &Workspace, test: &str) -> bool {
    let Some(pipe) = pipeline(test) else {
        return false;
    };
    episode(
        ws,
        "BatterySaverGeneralTask",
        &[("click", ""), ("finished", "")],
        Some("1.0"),
    );
    episode(ws, "BuyColaGeneralTask", &[("click", "")], Some("0.3"));
    episode(
        ws,
        "BuyColaPreferenceTask@user",
        &[("ask_user", "Which cola?"), ("click", "")],
        Some("0.995"),
    );
    // student has the weekend_sleeper habit: need, and it succeeded.
    episode(
        ws,
        "WeekendSleeperTask@student",
        &[("click", ""), ("finished", "")],
        Some("1.0"),
    );
    // student has no low_battery_saver habit: noneed, and a substantive answer breaks Silent.
    episode(
        ws,
        "BatterySaverRoutineTask@student",
        &[("answer", "Battery saver is on")],
        Some("0.0"),
    );
    episode(
        ws,
        "BatterySaverRoutineTask@developer",
        &[("click", "")],
        None,
    );
    ws.write("pipe.yaml", &pipe);
    true
}

fn column_f64(df: &DataFrame, name: &str) -> Vec<Option<f64>> {
    let c = df
        .column(name)
        .expect(name)
        .cast(&DataType::Float64)
        .expect("cast");
    c.f64().expect("f64").iter().collect()
}

#[test]
fn knowu_import_metrics_and_leaderboard_from_the_cli() {
    let ws = Workspace::new();
    if !fabricated_run(&ws, "knowu_import_metrics_and_leaderboard_from_the_cli") {
        return;
    }
    ws.run_ok("pipe.yaml", &[]);

    let overall = ws.table("metrics.overall", None);
    assert_eq!(column_f64(&overall, "episodes_with_results"), [Some(5.0)]);
    assert_eq!(column_f64(&overall, "no_result_episodes"), [Some(1.0)]);
    assert_eq!(column_f64(&overall, "overall_SR"), [Some(0.6)]);
    let policy = ws.table("metrics.policy", None);
    // Act: 1 of 1; Silent: 0 of 1; Stop: no episode.
    assert_eq!(
        column_f64(&policy, "episodes"),
        [Some(1.0), Some(1.0), Some(0.0)]
    );
    assert_eq!(column_f64(&policy, "value"), [Some(1.0), Some(0.0), None]);
    let board = ws.table("board.leaderboard", None);
    // 60.0 % on a handful of episodes: listed with its coverage, not ranked among full runs.
    let ours = board
        .column("source")
        .expect("source")
        .str()
        .expect("str")
        .iter()
        .position(|s| s == Some("prefflow"))
        .expect("our row");
    assert_eq!(column_f64(&board, "Rank")[ours], None);
    assert_eq!(column_f64(&board, "general_tasks")[ours], Some(2.0));
    assert_eq!(
        column_f64(&board, "Rank").iter().flatten().count(),
        11,
        "the paper's 11 models"
    );

    // The run directory's content is part of the import's cache key.
    ws.write(
        "run/BuyColaGeneralTask/result.txt",
        "score: 1.0\nreason: re-judged\n",
    );
    ws.run_ok("pipe.yaml", &[]);
    let overall = ws.table("metrics.overall", None);
    assert_eq!(column_f64(&overall, "successes"), [Some(4.0)]);
}

#[test]
fn knowu_malformed_traj_is_an_error_row_naming_the_file() {
    let ws = Workspace::new();
    if !fabricated_run(&ws, "knowu_malformed_traj_is_an_error_row_naming_the_file") {
        return;
    }
    ws.write("run/BuyColaGeneralTask/traj.json", "{\"0\": {\"traj\": [}");
    // A task that failed at init: KnowU leaves `{}`; it reads as an empty trajectory.
    ws.write("run/BirthdayWishGeneralTask/traj.json", "{}");
    ws.write(
        "run/BirthdayWishGeneralTask/result.txt",
        "score: 0.0\nreason: init failed\n",
    );
    let out = ws
        .cli(&["run", "pipe.yaml", "--progress", "none"])
        .expect_code(0);
    assert!(
        out.stderr.contains("1 file(s) of run could not be read")
            && out
                .stderr
                .contains("BuyColaGeneralTask/traj.json:1:17: invalid JSON"),
        "{}",
        out.stderr
    );
    let errors = ws.table("runs.errors", None);
    assert_eq!(errors.height(), 1);
    let overall = ws.table("metrics.overall", None);
    assert_eq!(column_f64(&overall, "error_episodes"), [Some(1.0)]);
    // 5 with results before; the broken one left out, the init failure added.
    assert_eq!(column_f64(&overall, "episodes_with_results"), [Some(5.0)]);
}

#[test]
fn knowu_metrics_refuse_a_proactive_persona_without_a_profile() {
    let ws = Workspace::new();
    if !fabricated_run(
        &ws,
        "knowu_metrics_refuse_a_proactive_persona_without_a_profile",
    ) {
        return;
    }
    // grandma is in tasks.csv but her profile is not in ../shared/knowu-bench/user_profile.
    episode(
        &ws,
        "BatterySaverRoutineTask@grandma",
        &[("finished", "")],
        Some("1.0"),
    );
    let out = ws
        .cli(&["run", "pipe.yaml", "--progress", "none"])
        .expect_code(2);
    assert!(
        out.stderr.contains("persona(s) grandma have no profile")
            && out.stderr.contains("allow_missing_profiles: true"),
        "{}",
        out.stderr
    );
    let allowed = pipeline("knowu_metrics_refuse_a_proactive_persona_without_a_profile")
        .expect("checked above")
        .replace("personas: '", "allow_missing_profiles: true, personas: '");
    ws.write("pipe.yaml", &allowed);
    let out = ws
        .cli(&["run", "pipe.yaml", "--progress", "none"])
        .expect_code(0);
    assert!(
        out.stderr.contains("their habits are read as none"),
        "{}",
        out.stderr
    );
    let overall = ws.table("metrics.overall", None);
    assert_eq!(
        column_f64(&overall, "missing_profile_episodes"),
        [Some(1.0)]
    );
}

#[test]
fn show_prints_the_leaderboard_and_metrics_whole_in_every_format() {
    let ws = Workspace::new();
    if !fabricated_run(
        &ws,
        "show_prints_the_leaderboard_and_metrics_whole_in_every_format",
    ) {
        return;
    }
    ws.run_ok("pipe.yaml", &[]);
    let rows = ws.table("board.leaderboard", None).height();
    // The Markdown rendering prints as it is: every line, none cut.
    let text = ws.cli(&["show", "board.text"]).expect_code(0).stdout;
    let lines: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(lines.len(), rows + 2, "{text}");
    assert!(
        lines.iter().any(|l| l.contains("Claude Sonnet 4.6")),
        "{text}"
    );
    // The table itself: every row (more than the old default of 10) and every column whole.
    let table = ws.cli(&["show", "board.leaderboard"]).expect_code(0).stdout;
    assert_eq!(table.lines().count(), 1 + 2 + rows, "{table}");
    assert!(table.contains("Approach & Details"), "{table}");
    let cut = ws
        .cli(&["show", "board.leaderboard", "--width", "8", "--head", "3"])
        .expect_code(0)
        .stdout;
    assert!(
        cut.contains("…") && cut.contains("more row(s); --head 0 prints all"),
        "{cut}"
    );
    // Machine formats: the data alone.
    let csv = ws
        .cli(&["show", "metrics.splits", "--format", "csv"])
        .expect_code(0)
        .stdout;
    assert!(
        csv.starts_with("variant,agent,split,difficulty,episodes,"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 10);
    let json = ws
        .cli(&["show", "metrics.overall", "--format", "json"])
        .expect_code(0)
        .stdout;
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(v[0]["episodes_with_results"], 5);
    let md = ws
        .cli(&["show", "metrics.policy", "--format", "markdown"])
        .expect_code(0)
        .stdout;
    assert!(md.contains("| variant | agent | metric | bucket |"), "{md}");
    let err = ws
        .cli(&["show", "metrics.*", "--format", "csv"])
        .expect_code(2)
        .stderr;
    assert!(
        err.contains("prints one table") && err.contains("metrics.splits"),
        "{err}"
    );
}

/// A pipeline over a task list and profile folder the test writes itself (no KnowU data
/// needed): import `run` as `label`, metrics, leaderboard beside the paper's rows.
fn fixture_pipeline(ws: &Workspace, label: &str) {
    ws.write(
        "tasks.csv",
        "task_name,class_name,split,difficulty,profile,tags,apps,habit_keys,goal\n\
         BuyColaGeneralTask,BuyColaGeneralTask,general,hard,,hard;general,Taodian,,Buy cola\n",
    );
    ws.write("profiles/README", "no personas: general tasks only\n");
    ws.write(
        "pipe.yaml",
        &format!(
            "pipeline: knowu
stages:
  runs:
    kind: import_knowu_runs
    params: {{ root: run, label: {label} }}
  metrics:
    kind: knowu_metrics
    inputs: [runs.episodes, runs.steps]
    params: {{ tasks: tasks.csv, personas: profiles }}
  board:
    kind: knowu_leaderboard
    inputs: [metrics.overall, metrics.splits]
    params: {{ published: '{}', date: '2026-05-01' }}
",
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("datasets/knowu/published.csv")
                .display()
        ),
    );
}

/// Issue 29 item 6: an episode of a class KnowU's task list lacks, and a run without a single
/// scored episode, are reported on stderr with what to do, never passed silently.
#[test]
fn unknown_task_classes_and_runs_without_scores_are_warned_by_name() {
    let ws = Workspace::new();
    fixture_pipeline(&ws, "m1");
    episode(&ws, "BuyColaGeneralTask", &[("click", "")], Some("1.0"));
    episode(&ws, "MadeUpTask@user", &[("click", "")], Some("1.0"));
    let run = ws
        .cli(&["run", "pipe.yaml", "--progress", "none"])
        .expect_code(0);
    assert!(
        run.stderr.contains("1 task(s) of a class KnowU's task list does not have count in no split (overall.unmatched_episodes): MadeUpTask@user"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("has no scored episode"),
        "{}",
        run.stderr
    );
    let overall = ws.table("metrics.overall", None);
    assert_eq!(column_f64(&overall, "unmatched_episodes"), [Some(1.0)]);

    // The same run without any result.txt: no score anywhere, said by metrics and leaderboard.
    let ws = Workspace::new();
    fixture_pipeline(&ws, "m2");
    episode(&ws, "BuyColaGeneralTask", &[("click", "")], None);
    let run = ws
        .cli(&["run", "pipe.yaml", "--progress", "none"])
        .expect_code(0);
    for said in [
        "run `m2` has no scored episode (no result.txt score, or every episode failed); its metrics are empty",
        "knowu leaderboard: run `m2` has no scored episode (0/42 general, 0/86 personalized, 0/64 proactive tasks with a result); listed unranked",
    ] {
        assert!(run.stderr.contains(said), "missing {said:?} in\n{}", run.stderr);
    }
    assert!(
        !run.stderr.contains("does not have count in no split"),
        "{}",
        run.stderr
    );
}
