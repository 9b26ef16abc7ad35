//! `prefflow bench budget`: how much of a provider's rate-limit budget a run uses.
//!
//! A loopback provider ([`LimitedProvider`]) enforces a token and request budget per minute,
//! counting prompt tokens from each body with its own method, and answers 429 with
//! `Retry-After` beyond it. Time is scaled: a simulated minute lasts `60 / scale` seconds, so
//! the budget per real minute is `scale` times the tier's, and the provider's buckets hold one
//! simulated minute. `llm_complete` stages send ~100k-token prompts (1 s latency) sized to
//! last about ten simulated minutes at the budget, once for one model and once for three
//! models sharing one budget; optionally the same provider serves inspect_ai with its defaults
//! (a Python with `inspect_ai` installed, outside the repository: see BENCHMARKS.md).
//!
//! The figure is the provider's: tokens it admitted over the most it could have admitted
//! between the first request and the last admission (its full buckets at the start plus the
//! refill), and the share of requests it answered 429.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use prefflow_stages::llm::mock::{
    count_tokens, Behavior, Decision, LimitedProvider, ProviderLimits, ScriptedServer,
};

use crate::bench::{reset, sampled_run, Figure};

/// One budget workload.
pub struct BudgetLoad {
    /// Models (one `llm_complete` stage each) sharing the provider's budget.
    pub models: usize,
    /// The tier's tokens per minute.
    pub tpm: f64,
    /// The tier's requests per minute.
    pub rpm: f64,
    /// Real seconds are this many times faster than simulated ones.
    pub scale: f64,
    /// Prompt tokens per request, as the provider counts them.
    pub prompt_tokens: u64,
    /// Provider latency.
    pub latency: Duration,
    /// Simulated minutes the workload lasts at the budget.
    pub minutes: f64,
}

impl BudgetLoad {
    fn limits(&self) -> ProviderLimits {
        ProviderLimits {
            tpm: self.tpm * self.scale,
            rpm: self.rpm * self.scale,
            burst: 1.0 / self.scale,
            latency: self.latency,
            completion_tokens: 20,
        }
    }

    /// Requests that fill the budget for `minutes`: the full buckets plus the refill.
    fn requests(&self) -> usize {
        let cost = (self.prompt_tokens + 20) as f64;
        let by_tokens = self.tpm * (1.0 + self.minutes) / cost;
        let by_requests = self.rpm * (1.0 + self.minutes);
        by_tokens.min(by_requests).round() as usize
    }
}

/// Measures `load` with prefflow, and with inspect_ai when `inspect` names a Python that has it.
pub fn budget(
    dir: &Path,
    load: &BudgetLoad,
    inspect: Option<&Path>,
) -> anyhow::Result<Vec<Figure>> {
    let exe = std::env::current_exe().context("locating the prefflow binary")?;
    let work = dir.join(format!("budget-{}", load.models));
    reset(&work)?;
    let system = system_text(load.prompt_tokens);
    let provider = Arc::new(LimitedProvider::new(load.limits()));
    let server = ScriptedServer::try_start(vec![], Behavior::Limited(provider.clone()))
        .context("binding a loopback server")?;
    let n = load.requests();
    write_pipeline(&work, load, &server.url, &system, n)?;
    let sampled = sampled_run(&exe, &work, "budget.yaml")?;
    let summary = std::fs::read_to_string(work.join("stdout.log")).unwrap_or_default();
    let learned = summary
        .lines()
        .filter_map(|l| l.strip_prefix("model budget "))
        .collect::<Vec<_>>()
        .join("; ");
    let mut figures = vec![figure(
        &format!(
            "prefflow, {} model{} sharing {}, {n} calls of ~{}k tokens, {} s latency",
            load.models,
            if load.models == 1 { "" } else { "s" },
            tier(load),
            load.prompt_tokens / 1000,
            load.latency.as_secs_f64()
        ),
        load,
        &provider,
        n,
        &format!(
            "; peak {} OS threads{}",
            sampled.peak_threads,
            if learned.is_empty() {
                String::new()
            } else {
                format!("; learned: {learned}")
            }
        ),
    )?];
    if let Some(python) = inspect {
        let provider = Arc::new(LimitedProvider::new(load.limits()));
        let server = ScriptedServer::try_start(vec![], Behavior::Limited(provider.clone()))
            .context("binding a loopback server")?;
        let seconds = run_inspect(python, &work, &server.url, &system, n)?;
        figures.push(figure(
            &format!("inspect_ai (defaults), 1 model, same provider, {n} samples",),
            load,
            &provider,
            n,
            &format!("; whole eval {seconds:.1} s"),
        )?);
    }
    Ok(figures)
}

fn tier(load: &BudgetLoad) -> String {
    format!(
        "{:.0}k TPM / {:.0} RPM (time ×{:.0})",
        load.tpm / 1000.0,
        load.rpm,
        load.scale
    )
}

/// The provider's account of a run: share of the budget used, 429s, and (for several models)
/// each model's share of the first half of the run.
fn figure(
    name: &str,
    load: &BudgetLoad,
    provider: &LimitedProvider,
    n: usize,
    extra: &str,
) -> anyhow::Result<Figure> {
    let log = provider.log();
    let admitted: Vec<&Decision> = log.iter().filter(|d| d.admitted).collect();
    let (first, last) = match (log.first(), admitted.last()) {
        (Some(f), Some(l)) => (f.at, l.at),
        _ => bail!("the provider saw no request"),
    };
    let limits = provider.limits();
    let span = last.saturating_duration_since(first).as_secs_f64();
    let cost = |d: &Decision| (d.prompt_tokens + limits.completion_tokens) as f64;
    let used: f64 = admitted.iter().map(|d| cost(d)).sum();
    let possible = limits.tpm * limits.burst + limits.tpm / 60.0 * span;
    let limited = log.len() - admitted.len();
    let minute = 60.0 / load.scale;
    let mut value = format!(
        "**{:.1}%** of the token budget over {:.1} simulated minutes ({span:.1} s); {limited} of {} requests answered 429 (**{:.2}%**)",
        100.0 * used / possible,
        span / minute,
        log.len(),
        100.0 * limited as f64 / log.len() as f64,
    );
    let limited_at: Vec<String> = log
        .iter()
        .filter(|d| !d.admitted)
        .take(5)
        .map(|d| {
            format!(
                "{:.2} ({:.0} of {:.0} tokens left)",
                d.at.saturating_duration_since(first).as_secs_f64() / minute,
                d.tokens_left,
                cost(d)
            )
        })
        .collect();
    if !limited_at.is_empty() {
        value.push_str(&format!(
            " (the first at simulated minute {})",
            limited_at.join(", ")
        ));
    }
    if load.models > 1 {
        value.push_str(&format!("; {}", shares(&admitted, first, minute)));
    }
    if admitted.len() != n {
        value.push_str(&format!("; only {} of {n} calls answered", admitted.len()));
    }
    value.push_str(extra);
    Ok(Figure {
        name: name.to_string(),
        value,
        target: "≥ 95% of the budget, < 1% answered 429".into(),
    })
}

/// Each model's share of the requests admitted in simulated minutes 1–6, while all of them
/// compete (the first minute's burst goes to whichever stage starts first).
fn shares(admitted: &[&Decision], first: std::time::Instant, minute: f64) -> String {
    let early: Vec<&&Decision> = admitted
        .iter()
        .filter(|d| {
            let t = d.at.saturating_duration_since(first).as_secs_f64() / minute;
            (1.0..6.0).contains(&t)
        })
        .collect();
    let mut models: Vec<&str> = early.iter().map(|d| d.model.as_str()).collect();
    models.sort_unstable();
    models.dedup();
    let parts: Vec<String> = models
        .iter()
        .map(|m| {
            let k = early.iter().filter(|d| d.model == *m).count();
            format!("{m} {:.0}%", 100.0 * k as f64 / early.len().max(1) as f64)
        })
        .collect();
    format!("simulated minutes 1–6 by model: {}", parts.join(", "))
}

/// A system prompt of about `tokens` tokens as the provider counts them (1.3 per word),
/// of short words: the client's characters / 4 underestimates it, and must learn by how much.
fn system_text(tokens: u64) -> String {
    const WORDS: [&str; 10] = [
        "the", "phone", "user", "booked", "a", "table", "near", "work", "at", "seven",
    ];
    let words = ((tokens.saturating_sub(8)) as f64 / 1.3) as usize;
    let mut text = String::with_capacity(words * 5);
    for i in 0..words {
        text.push_str(WORDS[(i * 7 + i / 10) % WORDS.len()]);
        text.push(' ');
    }
    text
}

fn write_pipeline(
    work: &Path,
    load: &BudgetLoad,
    url: &str,
    system: &str,
    n: usize,
) -> anyhow::Result<()> {
    let per_model = n.div_ceil(load.models);
    let mut yaml = format!(
        "pipeline: budgetbench\nresources: {{ llm: {} }}\nstages:\n",
        64 * load.models
    );
    let shared = if load.models > 1 {
        ", budget: shared"
    } else {
        ""
    };
    for m in 0..load.models {
        let rows = (n - m * per_model).min(per_model);
        let csv: String = std::iter::once("id\n".to_string())
            .chain((0..rows).map(|i| format!("m{m}-{i:06}\n")))
            .collect();
        std::fs::write(work.join(format!("rows{m}.csv")), csv)?;
        yaml.push_str(&format!(
            "  rows{m}: {{ kind: read_table, params: {{ path: rows{m}.csv }} }}\n  calls{m}:\n    kind: llm_complete\n    inputs: [rows{m}]\n    per_item: id\n    concurrency: 64\n    resources: [llm]\n    params:\n      llm: {{ base_url: \"{url}\", model: m{m}, max_retries: 0, concurrency: 64, tpm: {:.0}, rpm: {:.0}{shared} }}\n      prompt: \"{{{{ id }}}}\"\n      system: {}\n",
            load.tpm * load.scale,
            load.rpm * load.scale,
            serde_json::to_string(system)?,
        ));
    }
    let check: serde_json::Value = serde_json::json!({ "messages": [
        { "role": "system", "content": system }, { "role": "user", "content": "m0-000000" }
    ]});
    let counted = count_tokens(&check);
    if counted.abs_diff(load.prompt_tokens) > load.prompt_tokens / 50 {
        bail!(
            "the prompt counts {counted} tokens, not ~{}",
            load.prompt_tokens
        );
    }
    std::fs::write(work.join("budget.yaml"), yaml)?;
    Ok(())
}

/// Runs inspect_ai's eval of `n` samples (the same system prompt, one user line each) with its
/// defaults against `url`; its wall seconds.
fn run_inspect(
    python: &Path,
    work: &Path,
    url: &str,
    system: &str,
    n: usize,
) -> anyhow::Result<f64> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/bench_inspect_budget.py");
    std::fs::write(work.join("system.txt"), system)?;
    let started = std::time::Instant::now();
    let out = Command::new(python)
        .arg(&script)
        .arg(url)
        .arg(n.to_string())
        .arg(work.join("system.txt"))
        .arg(work.join("inspect-logs"))
        .env("OPENAI_API_KEY", "bench")
        .output()
        .context("running inspect_ai")?;
    let seconds = started.elapsed().as_secs_f64();
    if !out.status.success() {
        bail!(
            "inspect_ai failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(seconds)
}
