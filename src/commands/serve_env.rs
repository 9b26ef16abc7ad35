//! `prefflow serve-env`: serve the simulated phone over HTTP/JSON (README: "Serving the phone").

use std::path::PathBuf;
use std::time::Duration;

use prefflow_engine::Error;
use prefflow_stages::serve::{serve_env, ServeLimits, ServeOptions};

/// The arguments of `prefflow serve-env`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// Interface to bind. The phone has no accounts: anything but loopback needs
    /// --allow-remote and --token-env.
    #[arg(long, default_value = "127.0.0.1")]
    bind: std::net::IpAddr,
    /// Port; 0 picks a free one (the first stdout line says which).
    #[arg(long, default_value = "8765")]
    port: u16,
    /// Directory of app YAML files.
    #[arg(long, default_value = "datasets/apps")]
    apps: PathBuf,
    /// Persona YAML file.
    #[arg(long, default_value = "datasets/personas/maya.yaml")]
    persona: PathBuf,
    /// History events to synthesize (at most --max-events).
    #[arg(long, default_value = "3051")]
    events: usize,
    /// Raises the limit on --events (default 1,000,000: about 1 KB of memory each).
    #[arg(long)]
    max_events: Option<u64>,
    /// History synthesis seed.
    #[arg(long, default_value = "7")]
    seed: u64,
    /// Serve a non-loopback --bind address (needs --token-env as well).
    #[arg(long)]
    allow_remote: bool,
    /// Environment variable holding the bearer token every request must carry
    /// (`Authorization: Bearer <token>`).
    #[arg(long, value_name = "VAR")]
    token_env: Option<String>,
    /// Episodes open at once; one more answers 429.
    #[arg(long, default_value = "64")]
    max_episodes: usize,
    /// Steps per episode; one more answers 429.
    #[arg(long, default_value = "1000")]
    max_steps: u32,
    /// Bytes per request body; a larger body answers 413.
    #[arg(long, default_value = "1048576")]
    max_body_bytes: usize,
    /// Request bytes one episode may receive in total (bounds its memory); past it, 413.
    #[arg(long, default_value = "16777216")]
    max_episode_bytes: usize,
    /// Bytes of one observation's text; longer ones are cut and say so.
    #[arg(long, default_value = "262144")]
    max_observation_bytes: usize,
    /// Seconds an episode may go without a request before it is closed.
    #[arg(long, default_value = "600")]
    episode_ttl_secs: u64,
    /// Episodes one client (its X-Client-Id header, else its address) may have open at once
    /// (default: half of --max-episodes, at least 1).
    #[arg(long)]
    max_episodes_per_client: Option<usize>,
    /// At a cap, an episode idle this many seconds may be closed to make room for a new one.
    #[arg(long, default_value = "30")]
    evict_idle_secs: u64,
}

/// A usage error (exit 2).
fn usage(message: String) -> anyhow::Error {
    Error::Usage(message).into()
}

/// Checks the options, says where it listens (first stdout line) and serves until stopped.
pub(crate) fn run(a: &Args) -> anyhow::Result<u8> {
    let opts = options(a, token(a)?);
    let events = prefflow_stages::limits::EVENTS;
    let bound = a.max_events.unwrap_or(events.default);
    if a.events as u64 > bound {
        return Err(usage(format!(
            "--events {} is over the limit of {bound} {}; a typo? If you mean it, add --max-events {}",
            a.events, events.unit, a.events
        )));
    }
    let warning = opts.check().map_err(|e| usage(e.to_string()))?;
    if let Some(w) = warning {
        eprintln!("warning: {w}");
    }
    let ready = |addr| {
        println!("listening on http://{addr}");
        let _ = std::io::Write::flush(&mut std::io::stdout());
    };
    serve_env(&opts, ready).map_err(|e| match e.is_user_error() {
        true => usage(e.to_string()),
        false => e.into(),
    })?;
    Ok(0)
}

/// `--token-env`'s variable and its (trimmed) value; set but empty is a usage error.
fn token(a: &Args) -> anyhow::Result<Option<(String, String)>> {
    let Some(var) = &a.token_env else {
        return Ok(None);
    };
    match std::env::var(var) {
        Ok(t) if !t.trim().is_empty() => Ok(Some((var.clone(), t.trim().to_string()))),
        _ => Err(usage(format!(
            "--token-env {var}: the variable is not set or empty; export {var}=<a long random secret> first"
        ))),
    }
}

/// The server's options from the flags.
fn options(a: &Args, token: Option<(String, String)>) -> ServeOptions {
    ServeOptions {
        bind: a.bind,
        port: a.port,
        apps: a.apps.clone(),
        persona: a.persona.clone(),
        history: prefflow_stages::world::HistoryParams {
            events: a.events,
            seed: a.seed,
            ..Default::default()
        },
        limits: ServeLimits {
            max_episodes: a.max_episodes,
            max_steps: a.max_steps,
            max_body_bytes: a.max_body_bytes,
            max_episode_bytes: a.max_episode_bytes,
            max_observation_bytes: a.max_observation_bytes,
            episode_ttl: Duration::from_secs(a.episode_ttl_secs),
            max_episodes_per_client: a
                .max_episodes_per_client
                .unwrap_or((a.max_episodes / 2).max(1)),
            evict_idle: Duration::from_secs(a.evict_idle_secs),
        },
        allow_remote: a.allow_remote,
        token,
    }
}
