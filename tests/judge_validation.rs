//! Judge validation on authored, labelled episodes (datasets/judge-labels/README.md): the shipped
//! pipeline plays the authored trajectories of the test fixture set, judges them offline, and
//! `judge_validation` compares the judge with the gold labels (two passes and an adjudication),
//! the passes with each other, checks the simulator's replies, and reports a label file whose
//! task changed as stale instead of judging it.

use polars::prelude::*;

use crate::common::*;

/// Copies `tests/fixtures/judge-labels` into the workspace's `labels/`.
fn copy_fixtures(ws: &Workspace) {
    let root = std::path::PathBuf::from(repo("tests/fixtures/judge-labels"));
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("fixtures") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path.strip_prefix(&root).expect("under root");
            let text = std::fs::read_to_string(&path).expect("fixture");
            ws.write(&format!("labels/{}", rel.display()), &text);
        }
    }
}

fn row_where(df: &DataFrame, conditions: &[(&str, &str)]) -> usize {
    (0..df.height())
        .find(|&i| {
            conditions
                .iter()
                .all(|(c, v)| df.column(c).expect("column").str().expect("str").get(i) == Some(*v))
        })
        .unwrap_or_else(|| panic!("no row {conditions:?} in\n{df}"))
}

fn u32_at(df: &DataFrame, col: &str, i: usize) -> u32 {
    df.column(col)
        .expect(col)
        .u32()
        .expect("u32")
        .get(i)
        .expect("value")
}

#[test]
fn the_offline_judge_is_measured_against_gold_labels_and_stale_labels_are_left_out() {
    let ws = Workspace::new();
    link_repo(&ws, "datasets");
    copy_fixtures(&ws);
    // A third episode whose fingerprint no longer matches its task: reported, not judged.
    ws.write(
        "labels/episodes/dinespot_dinner-04/zz-old.yaml",
        "task: dinespot_dinner-04\nfingerprint: 0000000000000000\nsteps:\n  - answer: done\n",
    );
    ws.write(
        "labels/labels/pass1/old.csv",
        "episode,level,subject,label\ndinespot_dinner-04/zz-old,criterion,booked,pass\n",
    );
    ws.write(
        "iprefbench.yaml",
        &shipped_iprefbench("{ agent: [oracle], history: [all] }"),
    );
    ws.run_ok(
        "iprefbench.yaml",
        &[
            "--only",
            "judge_validation",
            "--set",
            "judge_validation.labels=labels",
            "--set",
            "episodes_labelled.trajectories=labels/episodes",
        ],
    );
    let episodes = ws.table("judge_validation.labelled", None);
    assert_eq!(episodes.height(), 3, "{episodes}");
    row_where(
        &episodes,
        &[
            ("episode", "dinespot_dinner-04/silent-guess"),
            ("status", "ok"),
        ],
    );
    row_where(
        &episodes,
        &[
            ("episode", "dinespot_dinner-04/zz-old"),
            ("status", "stale"),
        ],
    );

    let agreement = ws.table("judge_validation.agreement", None);
    // 12 criteria over the two fresh episodes; the stale episode's label is not among them.
    let i = row_where(
        &agreement,
        &[("level", "criterion"), ("pair", "rule+scripted~gold")],
    );
    assert_eq!(
        (u32_at(&agreement, "n", i), u32_at(&agreement, "agree", i)),
        (12, 12)
    );
    let i = row_where(
        &agreement,
        &[("level", "success"), ("pair", "rule+scripted~gold")],
    );
    assert_eq!(
        (u32_at(&agreement, "n", i), u32_at(&agreement, "agree", i)),
        (2, 2)
    );
    let i = row_where(
        &agreement,
        &[("level", "recall"), ("pair", "rule+scripted~gold")],
    );
    assert_eq!(u32_at(&agreement, "n", i), 2);
    let i = row_where(
        &agreement,
        &[("level", "extra"), ("pair", "rule+scripted~gold")],
    );
    assert_eq!(u32_at(&agreement, "n", i), 2);
    // The passes disagree on one criterion, resolved by the adjudication.
    let i = row_where(
        &agreement,
        &[("level", "criterion"), ("pair", "pass1~pass2")],
    );
    assert_eq!(
        (u32_at(&agreement, "n", i), u32_at(&agreement, "agree", i)),
        (12, 11)
    );
    let disagreements = ws.table("judge_validation.disagreements", None);
    assert_eq!(disagreements.height(), 1, "{disagreements}");
    row_where(
        &disagreements,
        &[("subject", "on_calendar"), ("resolved", "pass")],
    );
    // Every gold judgement the offline judge gets wrong is a row of judge_errors.
    let errors = ws.table("judge_validation.judge_errors", None);
    let wrong: u32 = (0..agreement.height())
        .filter(|&i| {
            agreement.column("pair").unwrap().str().unwrap().get(i) == Some("rule+scripted~gold")
        })
        .map(|i| u32_at(&agreement, "n", i) - u32_at(&agreement, "agree", i))
        .sum();
    assert_eq!(errors.height() as u32, wrong, "{errors}\n{agreement}");
    // The scripted user's reply to the one ask is checked against the gold pieces.
    let simulator = ws.table("judge_validation.simulator", None);
    assert_eq!(simulator.height(), 1, "{simulator}");
    row_where(
        &agreement,
        &[("level", "simulator"), ("pair", "simulator=scripted~valid")],
    );
}
