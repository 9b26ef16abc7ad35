//! Scale check: the metrics over 100,000 imported episodes (10 steps each); the time is printed
//! for BENCHMARKS.md (no timed assertion). Ignored by default (it is slow unoptimized); run it with
//! `cargo test --release -p prefflow-stages -- --ignored knowu_metrics_scale --nocapture`.

use std::time::Instant;

use super::metrics::{episode_metrics, metric_tables, with_scope, Classes};
use super::result_file::EpisodeResult;
use super::run::{episodes_frame, steps_frame, RunEpisode};
use super::tasks;
use super::testkit::shared;
use super::traj::{TrajStep, Trajectory};
use crate::tables::episodes::EPISODE_ID;
use crate::tables::knowu::OverallRow;

const EPISODES: usize = 100_000;

/// 100k episodes cycling over the 192 registered tasks, with asks, replies and answers.
fn synthetic_run(tasks_csv: &std::path::Path) -> Vec<RunEpisode> {
    let names = tasks::read_names(tasks_csv).expect("tasks.csv");
    let actions = [
        "ask_user",
        "click",
        "input_text",
        "wait",
        "scroll",
        "answer",
    ];
    (0..EPISODES)
        .map(|i| {
            let steps = (0..10)
                .map(|k| {
                    let kind = actions[(i + k) % actions.len()];
                    let reply =
                        (k > 0 && actions[(i + k - 1) % actions.len()] == "ask_user").then(|| {
                            if i % 3 == 0 {
                                "<decision>reject</decision>"
                            } else {
                                "I accept"
                            }
                            .to_string()
                        });
                    TrajStep {
                        action_type: kind.into(),
                        arguments: format!(r#"{{"action_type":"{kind}","text":"step {k}"}}"#),
                        prediction: Some(format!("thinking about step {k}")),
                        ask_user_response: reply,
                        ..TrajStep::default()
                    }
                })
                .collect();
            RunEpisode {
                task_id: names[i % names.len()].clone(),
                traj: Trajectory {
                    steps,
                    tokens: Default::default(),
                },
                result: EpisodeResult {
                    score: (i % 17 != 0).then_some((i % 100) as f64 / 99.0),
                    reason: None,
                },
                error: None,
            }
        })
        .collect()
}

#[test]
#[ignore = "slow unoptimized; run with --release"]
fn knowu_metrics_scale() {
    let (Some(tasks_csv), Some(profiles)) = (
        shared("knowu_metrics_scale", "tasks.csv"),
        shared("knowu_metrics_scale", "user_profile"),
    ) else {
        return;
    };
    let run = synthetic_run(&tasks_csv);
    // Task ids repeat (like repeated epochs); episode ids must not.
    let mut episodes = episodes_frame("big", &run).expect("episodes");
    let mut steps = steps_frame("big", &run).expect("steps");
    let ids: Vec<String> = (0..EPISODES).map(|i| format!("e{i}")).collect();
    let step_ids: Vec<String> = (0..EPISODES)
        .flat_map(|i| std::iter::repeat_n(format!("e{i}"), 10))
        .collect();
    episodes
        .with_column(polars::prelude::Column::new(EPISODE_ID.into(), ids))
        .expect("ids");
    steps
        .with_column(polars::prelude::Column::new(EPISODE_ID.into(), step_ids))
        .expect("ids");
    let index = tasks::read(&tasks_csv).expect("tasks.csv");

    let start = Instant::now();
    let per_episode = episode_metrics(&episodes, &steps, &index, &profiles).expect("metrics");
    let per_episode = with_scope(per_episode, Classes::All).expect("scope");
    let tables = metric_tables(per_episode, Classes::All).expect("tables");
    let elapsed = start.elapsed();
    eprintln!(
        "knowu_metrics on {EPISODES} episodes / {} steps: {elapsed:?}",
        steps.height()
    );

    let overall = OverallRow::from_frame(tables.get("overall").expect("overall")).expect("overall");
    let no_result = (0..EPISODES).filter(|i| i % 17 == 0).count() as u32;
    assert_eq!(overall.len(), 1);
    assert_eq!(
        overall[0].episodes_with_results,
        EPISODES as u32 - no_result
    );
}
