//! `prefflow bench episodes`: the episode runner's figures on the released task set — the cold
//! time of 130 tasks × 4 built-in agents × 2 history exposures, and peak memory over 10,000
//! episodes. Run from the repository root (it reads `pipelines/taskset.yaml` and `datasets/`).

use std::path::Path;

use anyhow::Context;

use crate::bench::{child, reset, sampled_run, stage_seconds_sum, timed_run, Figure, Sampled};

/// The episodes stage appended to the task-set pipeline.
pub fn episodes_stage(sweep: &str, epochs: u32) -> String {
    format!(
        "  episodes:\n    kind: run_episodes\n    inputs: [validated.bundles, world.sources, world.history_events]\n    per_item: task_id\n    params: {{ agent: oracle, history: all, epochs: {epochs}, seed: 7 }}\n    sweep: {sweep}\n"
    )
}

/// Runs both episode figures in `dir`.
pub fn episodes(dir: &Path) -> anyhow::Result<Vec<Figure>> {
    let exe = std::env::current_exe().context("locating the prefflow binary")?;
    let taskset = std::fs::read_to_string("pipelines/taskset.yaml").context(
        "reading pipelines/taskset.yaml (run `prefflow bench` from the repository root)",
    )?;
    let datasets = std::fs::canonicalize("datasets").context("locating datasets/")?;
    let work = dir.join("episodes");
    reset(&work)?;
    std::os::unix::fs::symlink(&datasets, work.join("datasets")).context("linking datasets/")?;
    let mut figures = Vec::new();

    let sweep = "{ agent: [oracle, defaults, ask_all, heuristic], history: [all, \"top_k:10\"] }";
    std::fs::write(
        work.join("grid.yaml"),
        format!("{taskset}{}", episodes_stage(sweep, 1)),
    )?;
    child(
        &exe,
        &work,
        &[
            "run",
            "grid.yaml",
            "--only",
            "taskset",
            "--progress",
            "none",
            "-q",
        ],
    )?;
    let cold = timed_run(&exe, &work, "grid.yaml")?;
    let stage = stage_seconds_sum(&work, "taskset", "episodes")?;
    figures.push(Figure {
        name: "130 tasks × 4 built-in agents × 2 history exposures (1,040 episodes), cold".into(),
        value: format!(
            "{:.2} s wall (episodes stages {stage:.2} s summed), {:.0} MB peak RSS",
            cold.seconds, cold.peak_rss_mb
        ),
        target: "< 10 s".into(),
    });

    let many = "{ agent: [heuristic] }";
    std::fs::write(
        work.join("many.yaml"),
        format!("{taskset}{}", episodes_stage(many, 77)),
    )?;
    let big = timed_run(&exe, &work, "many.yaml")?;
    figures.push(Figure {
        name: "10,010 episodes (130 tasks × 77 epochs, heuristic, history all)".into(),
        value: format!(
            "{:.2} s wall, {:.0} MB peak RSS",
            big.seconds, big.peak_rss_mb
        ),
        target: "peak RSS < 500 MB".into(),
    });
    Ok(figures)
}

/// The shape of an `llm`-episode throughput run: `pool` episodes in flight (stage concurrency,
/// resource pool and endpoint slots), `tasks` × `epochs` episodes of `steps` GUI steps each.
pub struct EpisodeLoad {
    /// Episodes (and requests) in flight.
    pub pool: usize,
    /// Tasks played (engine items).
    pub tasks: usize,
    /// Epochs per task (in flight together within an item).
    pub epochs: usize,
    /// Steps (model calls) per episode.
    pub steps: usize,
}

/// Model-call throughput in the realistic shape: `llm`-agent episodes (GUI) through a resource
/// pool of `load.pool` against a loopback server answering every call after `latency_ms`, with
/// the run's peak memory and OS threads sampled from outside: episodes in flight must cost
/// tasks, not threads. E.g. 128 tasks × 2 epochs × 10 steps at pool 64 keep the pool full: two
/// rounds of 64 episodes, 2,560 calls.
pub fn llm_episodes(
    dir: &Path,
    load: &EpisodeLoad,
    latency_ms: u64,
) -> anyhow::Result<Vec<Figure>> {
    use prefflow_stages::llm::mock::{completion, Behavior, ScriptedServer};
    let exe = std::env::current_exe().context("locating the prefflow binary")?;
    let taskset = std::fs::read_to_string("pipelines/taskset.yaml").context(
        "reading pipelines/taskset.yaml (run `prefflow bench` from the repository root)",
    )?;
    let datasets = std::fs::canonicalize("datasets").context("locating datasets/")?;
    let server = ScriptedServer::try_start(
        vec![],
        Behavior::Delayed(
            std::time::Duration::from_millis(latency_ms),
            completion(r#"{"action": "home"}"#, 50, 8),
        ),
    )
    .context("binding a loopback server")?;
    let work = dir.join(format!("llm-episodes-{}-{latency_ms}", load.pool));
    reset(&work)?;
    std::os::unix::fs::symlink(&datasets, work.join("datasets")).context("linking datasets/")?;
    std::fs::write(
        work.join("llm.yaml"),
        llm_pipeline(&taskset, load, &server.url),
    )?;
    let subset_only = [
        "run",
        "llm.yaml",
        "--only",
        "subset",
        "--progress",
        "none",
        "-q",
    ];
    child(&exe, &work, &subset_only)?;
    let sampled = sampled_run(&exe, &work, "llm.yaml")?;
    let seconds = stage_seconds_sum(&work, "taskset", "calls")?;
    let calls = load.tasks * load.epochs * load.steps;
    let seen = server.requests();
    anyhow::ensure!(
        seen.len() == calls,
        "the server saw {} requests, expected {calls}",
        seen.len()
    );
    let measured = Measured {
        seen: &seen,
        seconds,
        sampled: &sampled,
    };
    Ok(vec![llm_episodes_figure(load, latency_ms, &measured)])
}

/// The task-set pipeline with a `subset` of `load.tasks` tasks and a `calls` stage playing them
/// with the `llm` agent against `base_url`, through a pool of `load.pool`.
fn llm_pipeline(taskset: &str, load: &EpisodeLoad, base_url: &str) -> String {
    let (pool, tasks, epochs, steps) = (load.pool, load.tasks, load.epochs, load.steps);
    let stages = format!(
        "  subset:\n    kind: query\n    inputs: [validated.bundles]\n    params: {{ sql: \"SELECT * FROM validated_bundles ORDER BY task_id LIMIT {tasks}\" }}\n  calls:\n    kind: run_episodes\n    inputs: [subset, world.sources, world.history_events]\n    per_item: task_id\n    concurrency: {pool}\n    resources: [llm]\n    params:\n      agent: llm\n      space: gui\n      history: none\n      epochs: {epochs}\n      max_steps: {steps}\n      llm: {{ base_url: \"{}\", model: bench, max_retries: 0, concurrency: {pool} }}\n",
        base_url
    );
    let yaml = taskset.replacen(
        "stages:\n",
        &format!("resources: {{ llm: {pool} }}\nstages:\n"),
        1,
    );
    format!("{yaml}{stages}")
}

/// What one `llm_episodes` run measured: the requests as the server saw them, the `calls`
/// stage's seconds, and the run's sampled peaks.
struct Measured<'a> {
    seen: &'a [prefflow_stages::llm::mock::Seen],
    seconds: f64,
    sampled: &'a Sampled,
}

/// The figure of one `llm_episodes` run: sustained and whole-stage request rates against the
/// ideal, the agent's turn between reply and request, peak memory and threads.
fn llm_episodes_figure(load: &EpisodeLoad, latency_ms: u64, m: &Measured) -> Figure {
    let (pool, tasks, epochs, steps) = (load.pool, load.tasks, load.epochs, load.steps);
    let (seen, seconds) = (m.seen, m.seconds);
    let calls = tasks * epochs * steps;
    let ideal = pool as f64 * 1000.0 / latency_ms as f64;
    let rate = calls as f64 / seconds;
    // Sustained: from the first request to the last reply, as the server saw them (the stage's
    // start-up — loading inputs, rebuilding the world, planning items — left out).
    let first = seen.iter().map(|s| s.at).min();
    let last = seen.iter().map(|s| s.at).max();
    let span = match (first, last) {
        (Some(f), Some(l)) => (l - f).as_secs_f64() + latency_ms as f64 / 1000.0,
        _ => seconds,
    };
    let sustained = calls as f64 / span;
    let (gap_p50, gap_p90) = step_gaps_ms(seen, latency_ms);
    Figure {
        name: format!(
            "{calls} model calls as llm-agent episodes ({tasks} tasks × {epochs} epochs × {steps} steps), pool {pool}, {latency_ms} ms latency"
        ),
        value: format!(
            "sustained {sustained:.0} requests/s = {:.1}% of the ideal {ideal:.0}/s (first request to last reply {span:.2} s); whole stage {rate:.0}/s = {:.1}% ({seconds:.2} s); agent's turn between a reply and its next request: median {gap_p50:.2} ms, p90 {gap_p90:.2} ms; peak RSS {:.0} MB, peak {} OS threads",
            100.0 * sustained / ideal,
            100.0 * rate / ideal,
            m.sampled.peak_rss_mb,
            m.sampled.peak_threads
        ),
        target: format!("≥ 95% of {ideal:.0} requests/s; < 64 threads"),
    }
}

/// The time an episode spends between a reply and its next request (its own step, the client,
/// the cache write, scheduling), as the server saw it: consecutive requests of one episode (one
/// sampling seed) minus the injected latency. Median and 90th percentile, in milliseconds.
fn step_gaps_ms(seen: &[prefflow_stages::llm::mock::Seen], latency_ms: u64) -> (f64, f64) {
    let mut episodes: std::collections::HashMap<&str, Vec<std::time::Instant>> =
        std::collections::HashMap::new();
    for request in seen {
        let seed = request.body.rsplit("\"seed\":").next().unwrap_or_default();
        episodes.entry(seed).or_default().push(request.at);
    }
    let mut gaps: Vec<f64> = Vec::new();
    for times in episodes.values_mut() {
        times.sort();
        gaps.extend(
            times
                .windows(2)
                .map(|w| (w[1] - w[0]).as_secs_f64() * 1000.0 - latency_ms as f64),
        );
    }
    gaps.sort_by(f64::total_cmp);
    let at = |q: f64| {
        gaps.get(((gaps.len().saturating_sub(1)) as f64 * q) as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    (at(0.5), at(0.9))
}
