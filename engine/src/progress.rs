//! Progress reporting: bars on a terminal, periodic log lines elsewhere (CI, files).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How to report progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// Bars when stderr is a terminal, log lines otherwise.
    Auto,
    /// indicatif bars.
    Bars,
    /// Plain log lines (start, finish, and a periodic status line).
    Log,
    /// Nothing but errors.
    Quiet,
}

/// Shared progress state of a run.
#[derive(Clone)]
pub struct Progress {
    mode: ProgressMode,
    bars: Option<MultiProgress>,
    active: Arc<Mutex<Vec<Arc<TaskState>>>>,
    status: Option<StatusSource>,
}

/// Lines a run's user adds to the progress display while it runs (e.g. what the model
/// endpoints' budgets learned): read at every tick, shown under the bars or logged with the
/// status lines. The engine knows nothing of what they say.
#[derive(Clone)]
pub struct StatusSource(pub Arc<dyn Fn() -> Vec<String> + Send + Sync>);

impl std::fmt::Debug for StatusSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StatusSource(..)")
    }
}

struct TaskState {
    label: String,
    total: u64,
    done: AtomicU64,
    started: Instant,
    bar: Option<ProgressBar>,
}

/// Progress of one stage instance.
pub struct Task {
    state: Arc<TaskState>,
    progress: Progress,
}

impl Progress {
    /// Creates a reporter; `Auto` resolves against whether stderr is a terminal.
    pub fn new(mode: ProgressMode) -> Self {
        let mode = match mode {
            ProgressMode::Auto if std::io::IsTerminal::is_terminal(&std::io::stderr()) => {
                ProgressMode::Bars
            }
            ProgressMode::Auto => ProgressMode::Log,
            other => other,
        };
        let bars = (mode == ProgressMode::Bars)
            .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
        Self {
            mode,
            bars,
            active: Arc::default(),
            status: None,
        }
    }

    /// This reporter with `source`'s lines shown beside the instances' progress.
    pub fn with_status(mut self, source: Option<StatusSource>) -> Self {
        self.status = source;
        self
    }

    /// The resolved mode.
    pub fn mode(&self) -> ProgressMode {
        self.mode
    }

    /// Starts tracking an instance with `total` units of work, `done` of them already cached.
    pub fn start(&self, label: &str, total: u64, done: u64) -> Task {
        let bar = self.bars.as_ref().map(|m| {
            let bar = m.add(ProgressBar::new(total));
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix:>24} [{bar:30}] {pos}/{len} items {elapsed} eta {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            bar.set_prefix(label.to_string());
            bar.set_position(done);
            bar
        });
        if self.mode == ProgressMode::Log {
            if total > 1 || done > 0 {
                tracing::info!("{label}: started ({total} items, {done} cached)");
            } else {
                tracing::info!("{label}: started");
            }
        }
        let state = Arc::new(TaskState {
            label: label.to_string(),
            total,
            done: AtomicU64::new(done),
            started: Instant::now(),
            bar,
        });
        if let Ok(mut active) = self.active.lock() {
            active.push(state.clone());
        }
        Task {
            state,
            progress: self.clone(),
        }
    }

    /// A line for the log, routed around the bars.
    pub fn line(&self, text: &str) {
        match (&self.bars, self.mode) {
            (Some(m), _) => {
                let _ = m.println(text);
            }
            (None, ProgressMode::Quiet) => {}
            _ => tracing::info!("{text}"),
        }
    }

    /// In log mode, prints a status line for every active instance (and the status source's
    /// lines) every `every`; with bars, refreshes the status source's lines under them every
    /// second.
    pub fn spawn_ticker(&self, every: Duration) -> Option<tokio::task::JoinHandle<()>> {
        match self.mode {
            ProgressMode::Log => {}
            ProgressMode::Bars => return self.spawn_status_bar(),
            _ => return None,
        }
        let active = self.active.clone();
        let status = self.status.clone();
        Some(tokio::spawn(async move {
            let mut interval = tokio::time::interval(every);
            interval.tick().await;
            loop {
                interval.tick().await;
                let snapshot: Vec<Arc<TaskState>> =
                    active.lock().map(|a| a.clone()).unwrap_or_default();
                for t in snapshot.iter().filter(|t| t.total > 1) {
                    tracing::info!("{}", status_line(t));
                }
                if let (Some(status), false) = (&status, snapshot.is_empty()) {
                    for line in (status.0)() {
                        tracing::info!("{line}");
                    }
                }
            }
        }))
    }

    /// A line under the bars showing the status source, refreshed every second.
    fn spawn_status_bar(&self) -> Option<tokio::task::JoinHandle<()>> {
        let (bars, status) = (self.bars.clone()?, self.status.clone()?);
        Some(tokio::spawn(async move {
            let mut line: Option<ProgressBar> = None;
            let mut interval = tokio::time::interval(Duration::from_secs(1));
            loop {
                interval.tick().await;
                let text = (status.0)().join(" | ");
                if text.is_empty() {
                    continue;
                }
                let bar = line.get_or_insert_with(|| {
                    let bar = bars.add(ProgressBar::new_spinner());
                    bar.set_style(
                        ProgressStyle::with_template("{msg}")
                            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                    );
                    bar
                });
                bar.set_message(text);
            }
        }))
    }
}

fn status_line(t: &TaskState) -> String {
    let done = t.done.load(Ordering::Relaxed);
    let elapsed = t.started.elapsed().as_secs_f64();
    let pct = if t.total == 0 {
        100.0
    } else {
        100.0 * done as f64 / t.total as f64
    };
    let eta = if done > 0 && done < t.total {
        format!(
            ", eta {:.0}s",
            elapsed / done as f64 * (t.total - done) as f64
        )
    } else {
        String::new()
    };
    format!("{}: {done}/{} items ({pct:.0}%){eta}", t.label, t.total)
}

impl Task {
    /// One more unit done.
    pub fn inc(&self) {
        self.state.done.fetch_add(1, Ordering::Relaxed);
        if let Some(bar) = &self.state.bar {
            bar.inc(1);
        }
    }

    /// Marks the instance finished with a short outcome message.
    pub fn finish(self, outcome: &str) {
        if let Ok(mut active) = self.progress.active.lock() {
            active.retain(|s| !Arc::ptr_eq(s, &self.state));
        }
        let secs = self.state.started.elapsed().as_secs_f64();
        if let Some(bar) = &self.state.bar {
            bar.finish_and_clear();
        }
        self.progress
            .line(&format!("{}: {outcome} in {secs:.2}s", self.state.label));
    }
}
