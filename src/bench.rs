//! `prefflow bench`: the engine's performance figures, measured on generated workloads.
//!
//! Each figure is measured by running this same binary as a child process on a pipeline written
//! to a scratch directory, so wall time and peak memory are those a user would see.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context};

/// One measured figure.
pub struct Figure {
    /// What was measured.
    pub name: String,
    /// The value, formatted with its unit.
    pub value: String,
    /// The target it is compared against.
    pub target: String,
}

/// Runs every engine benchmark in `dir` (created if needed) with `items` rows per workload.
pub fn engine(dir: &Path, items: usize) -> anyhow::Result<Vec<Figure>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let exe = std::env::current_exe().context("locating the prefflow binary")?;
    let mut figures = chain_runs(&exe, dir, items)?;
    figures.push(commit_rate(&exe, dir, 10 * items)?);
    figures.push(plan_time(&exe, dir, 10 * items)?);
    Ok(figures)
}

/// 10 stages × `items` items: cold run, then a no-op re-run.
fn chain_runs(exe: &Path, dir: &Path, items: usize) -> anyhow::Result<Vec<Figure>> {
    let chain = dir.join("chain");
    reset(&chain)?;
    write_rows(&chain.join("rows.csv"), items)?;
    std::fs::write(chain.join("chain.yaml"), chain_pipeline(9))?;
    let cold = timed_run(exe, &chain, "chain.yaml")?;
    let per_item_items = 9 * items;
    let cold = Figure {
        name: format!("cold run, 10 stages × {items} items ({per_item_items} item commits)"),
        value: format!(
            "{:.2} s ({:.0} items/s)",
            cold.seconds,
            per_item_items as f64 / cold.seconds
        ),
        target: "—".into(),
    };
    let noop = timed_run(exe, &chain, "chain.yaml")?;
    let noop = Figure {
        name: format!("no-op re-run, 10 stages × {items} items"),
        value: format!(
            "{:.0} ms wall, {:.0} MB peak RSS",
            noop.seconds * 1000.0,
            noop.peak_rss_mb
        ),
        target: "≤ 300 ms, ≤ 200 MB".into(),
    };
    Ok(vec![cold, noop])
}

/// Trivial item commit rate: one per-item stage over `n` rows.
fn commit_rate(exe: &Path, dir: &Path, n: usize) -> anyhow::Result<Figure> {
    let commit = dir.join("commit");
    reset(&commit)?;
    write_rows(&commit.join("rows.csv"), n)?;
    std::fs::write(commit.join("commit.yaml"), chain_pipeline(1))?;
    let run = timed_run(exe, &commit, "commit.yaml")?;
    let stage_seconds = stage_seconds(&commit, "chain", "s1")?;
    Ok(Figure {
        name: format!("commit trivial items ({n} items, one stage)"),
        value: format!(
            "{:.0} items/s (stage {:.2} s, whole run {:.2} s)",
            n as f64 / stage_seconds,
            stage_seconds,
            run.seconds
        ),
        target: "≥ 5,000 items/s".into(),
    })
}

/// Planning an `n`-item stage whose input is known but whose items are not cached.
fn plan_time(exe: &Path, dir: &Path, n: usize) -> anyhow::Result<Figure> {
    let plan = dir.join("plan");
    reset(&plan)?;
    write_rows(&plan.join("rows.csv"), n)?;
    std::fs::write(plan.join("plan.yaml"), chain_pipeline(1))?;
    let input_only = [
        "run",
        "plan.yaml",
        "--only",
        "s0",
        "--progress",
        "none",
        "-q",
    ];
    child(exe, &plan, &input_only)?;
    let started = Instant::now();
    let out = child(exe, &plan, &["plan", "plan.yaml"])?;
    let seconds = started.elapsed().as_secs_f64();
    if !out.contains(&format!("{n} of {n} items to run")) {
        bail!("plan did not report {n} items to run:\n{out}");
    }
    Ok(Figure {
        name: format!("plan a {n}-item stage"),
        value: format!("{:.0} ms", seconds * 1000.0),
        target: "< 1 s".into(),
    })
}

/// Empties (or creates) a scratch directory.
pub fn reset(dir: &Path) -> anyhow::Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("clearing {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(())
}

/// A CSV of `n` rows `item000000,value`.
fn write_rows(path: &Path, n: usize) -> anyhow::Result<()> {
    let mut csv = String::from("id,value\n");
    for i in 0..n {
        csv.push_str(&format!("item{i:06},{}\n", i % 97));
    }
    std::fs::write(path, csv).with_context(|| format!("writing {}", path.display()))
}

/// `s0` reads the rows; `s1..=s{per_item}` each map over every row as one item.
fn chain_pipeline(per_item: usize) -> String {
    let mut yaml = String::from(
        "pipeline: chain\nstages:\n  s0:\n    kind: read_table\n    params: { path: rows.csv }\n",
    );
    for i in 1..=per_item {
        yaml.push_str(&format!(
            "  s{i}:\n    kind: probe\n    inputs: [s{}]\n    per_item: id\n    concurrency: 8\n",
            i - 1
        ));
    }
    yaml
}

/// Wall time and peak memory of one child run.
pub struct Timed {
    /// Wall seconds.
    pub seconds: f64,
    /// Peak resident memory in MB.
    pub peak_rss_mb: f64,
}

/// Runs `prefflow run FILE` in `dir` and measures it.
pub fn timed_run(exe: &Path, dir: &Path, file: &str) -> anyhow::Result<Timed> {
    let started = Instant::now();
    let out = child(
        exe,
        dir,
        &["run", file, "--progress", "none", "-q", "--report-peak-rss"],
    )?;
    let seconds = started.elapsed().as_secs_f64();
    let peak_rss_mb = out
        .lines()
        .find_map(|l| l.strip_prefix("peak_rss_kb: "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .unwrap_or(f64::NAN);
    Ok(Timed {
        seconds,
        peak_rss_mb,
    })
}

/// Seconds of every instance (variant) of `stage` in the last run, summed.
pub fn stage_seconds_sum(dir: &Path, pipeline: &str, stage: &str) -> anyhow::Result<f64> {
    let record = last_run(dir, pipeline)?;
    Ok(record["instances"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|i| i["stage"] == stage)
                .filter_map(|i| i["seconds"].as_f64())
                .sum()
        })
        .unwrap_or(0.0))
}

fn last_run(dir: &Path, pipeline: &str) -> anyhow::Result<serde_json::Value> {
    let path: PathBuf = dir
        .join(".prefflow/runs")
        .join(pipeline)
        .join("last-run.json");
    Ok(serde_json::from_slice(
        &std::fs::read(&path).with_context(|| path.display().to_string())?,
    )?)
}

fn stage_seconds(dir: &Path, pipeline: &str, stage: &str) -> anyhow::Result<f64> {
    last_run(dir, pipeline)?["instances"]
        .as_array()
        .and_then(|a| a.iter().find(|i| i["stage"] == stage))
        .and_then(|i| i["seconds"].as_f64())
        .context("stage timing missing from the run record")
}

/// Runs the binary in `dir`; its stdout, or an error with its stderr.
pub fn child(exe: &Path, dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new(exe)
        .current_dir(dir)
        .args(args)
        .output()
        .context("spawning prefflow")?;
    if !out.status.success() {
        bail!(
            "`prefflow {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Peak resident memory of this process in kB (Linux), for `run --report-peak-rss`.
pub fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Model-call throughput against a loopback server with injected latency: `requests` calls of
/// one `llm_complete` stage, `pool` of them in flight (stage concurrency, engine pool and the
/// client's endpoint slots all `pool`). The run's peak resident memory and its peak number of
/// OS threads (sampled from /proc while it runs) are reported beside the rate: hundreds of
/// requests in flight must cost tasks, not threads.
pub fn llm(
    dir: &Path,
    requests: usize,
    pool: usize,
    latency_ms: u64,
) -> anyhow::Result<Vec<Figure>> {
    use prefflow_stages::llm::mock::{Behavior, ScriptedServer};
    let exe = std::env::current_exe().context("locating the prefflow binary")?;
    let server = ScriptedServer::try_start(
        vec![],
        Behavior::Echo(std::time::Duration::from_millis(latency_ms)),
    )
    .context("binding a loopback server")?;
    let work = dir.join(format!("llm-{pool}-{latency_ms}"));
    reset(&work)?;
    write_rows(&work.join("rows.csv"), requests)?;
    let yaml = format!(
        "pipeline: llmbench\nresources: {{ llm: {pool} }}\nstages:\n  rows: {{ kind: read_table, params: {{ path: rows.csv }} }}\n  calls:\n    kind: llm_complete\n    inputs: [rows]\n    per_item: id\n    concurrency: {pool}\n    resources: [llm]\n    params:\n      llm: {{ base_url: \"{}\", model: bench, max_retries: 0, concurrency: {pool} }}\n      prompt: \"{{{{ id }}}}\"\n",
        server.url
    );
    std::fs::write(work.join("llm.yaml"), yaml)?;
    let sampled = sampled_run(&exe, &work, "llm.yaml")?;
    let seconds = stage_seconds(&work, "llmbench", "calls")?;
    let served = server.requests().len();
    if served != requests {
        bail!("the server saw {served} requests, expected {requests}");
    }
    let ideal = pool as f64 * 1000.0 / latency_ms as f64;
    let rate = requests as f64 / seconds;
    Ok(vec![Figure {
        name: format!("{requests} model calls, pool {pool}, {latency_ms} ms server latency"),
        value: format!(
            "{rate:.0} requests/s = {:.1}% of the ideal {ideal:.0}/s ({seconds:.2} s); peak RSS {:.0} MB, peak {} OS threads",
            100.0 * rate / ideal,
            sampled.peak_rss_mb,
            sampled.peak_threads
        ),
        target: format!("≥ 95% of {ideal:.0} requests/s; < 500 MB, < 64 threads"),
    }])
}

/// A run measured from outside while it runs.
pub struct Sampled {
    /// Peak resident memory in MB.
    pub peak_rss_mb: f64,
    /// The most OS threads the process had at once.
    pub peak_threads: u64,
}

/// Runs `prefflow run FILE` in `dir`, reading its thread count and peak memory from
/// /proc/PID/status every 10 ms until it exits. Its summary is left in `dir/stdout.log`, its
/// log in `dir/stderr.log`.
pub fn sampled_run(exe: &Path, dir: &Path, file: &str) -> anyhow::Result<Sampled> {
    let mut child = Command::new(exe)
        .current_dir(dir)
        .args(["run", file, "--progress", "none"])
        .stdout(std::fs::File::create(dir.join("stdout.log"))?)
        .stderr(std::fs::File::create(dir.join("stderr.log"))?)
        .spawn()
        .context("spawning prefflow")?;
    let status_file = format!("/proc/{}/status", child.id());
    let (mut peak_threads, mut peak_rss_kb) = (0u64, 0u64);
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_file) {
            let field = |name: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(name))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            };
            peak_threads = peak_threads.max(field("Threads:").unwrap_or(0));
            peak_rss_kb = peak_rss_kb.max(field("VmHWM:").unwrap_or(0));
        }
        if let Some(status) = child.try_wait()? {
            break status;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    if !status.success() {
        let err = std::fs::read_to_string(dir.join("stderr.log")).unwrap_or_default();
        bail!("`prefflow run {file}` failed: {err}");
    }
    Ok(Sampled {
        peak_rss_mb: peak_rss_kb as f64 / 1024.0,
        peak_threads,
    })
}
