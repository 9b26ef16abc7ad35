//! `prefflow serve-env`: the simulated phone over HTTP/JSON, so agents written in any language
//! can run episodes on the world. One world per server, many episodes, each on its own
//! copy-on-write overlay and its own thread ([`host`]), all within [`ServeLimits`].
//!
//! Endpoints: `GET /health`; `POST /episodes` → `{episode_id, observation, tools, …}`;
//! `POST /episodes/{id}/step` (an action) → observation; `GET /episodes/{id}/observe`,
//! `/state`, `/diff`; `DELETE /episodes/{id}`. Errors are always `{"error": …}` JSON.
//!
//! The phone has no users or roles, so it binds loopback by default; any other address needs
//! `allow_remote` and a bearer token that every request must carry.

mod api;
mod error;
mod host;
mod limits;
mod routes;
mod user;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

pub use api::{CreateEpisode, Created};
pub use error::ServeError;
pub use limits::ServeLimits;
pub use user::{ScriptedAnswer, ScriptedUser};

use crate::world::{HistoryParams, World};

/// What `serve-env` serves and where.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Interface to bind (default loopback: see [`ServeOptions::check`]).
    pub bind: IpAddr,
    /// Port; 0 picks any free port.
    pub port: u16,
    /// Directory of app YAML files.
    pub apps: PathBuf,
    /// Persona YAML file.
    pub persona: PathBuf,
    /// History synthesis knobs.
    pub history: HistoryParams,
    /// Bounds on episodes, steps, bodies and observations.
    pub limits: ServeLimits,
    /// The user asked to serve a non-loopback address (`--allow-remote`).
    pub allow_remote: bool,
    /// The bearer token every request must carry, and the variable it came from (never the
    /// token itself in messages).
    pub token: Option<(String, String)>,
}

impl ServeOptions {
    /// Refuses options that would serve nothing or serve the world to the network unguarded;
    /// returns the warning to print when the address is reachable from other machines.
    pub fn check(&self) -> Result<Option<String>, ServeError> {
        self.limits.check().map_err(ServeError::Options)?;
        if self.bind.is_loopback() {
            return Ok(None);
        }
        let addr = SocketAddr::new(self.bind, self.port);
        match (&self.token, self.allow_remote) {
            (Some((var, _)), true) => Ok(Some(format!(
                "serving on {addr}, reachable from other machines: anyone who can reach it and holds the token in ${var} can read the persona's hidden profile through episodes; bind 127.0.0.1 unless you need this"
            ))),
            (None, true) => Err(ServeError::Options(format!(
                "--bind {}: a non-loopback address needs a token as well: add --token-env VAR with VAR holding a long random secret (clients send `Authorization: Bearer <secret>`)",
                self.bind
            ))),
            (_, false) => Err(ServeError::Options(format!(
                "--bind {}: the phone server has no accounts, so it binds loopback (127.0.0.1) unless told otherwise; to serve other machines add --allow-remote and --token-env VAR",
                self.bind
            ))),
        }
    }
}

/// Builds the world, binds, calls `on_ready` with the bound address, then serves until the
/// process ends. Call [`ServeOptions::check`] first (and print its warning).
pub fn serve_env(opts: &ServeOptions, on_ready: impl FnOnce(SocketAddr)) -> Result<(), ServeError> {
    opts.check()?;
    let world = World::build(&opts.apps, &opts.persona, &opts.history)?;
    let host = host::Host::new(world, opts.limits.clone());
    let app = routes::App {
        host: host.clone(),
        max_body_bytes: opts.limits.max_body_bytes,
        token: opts.token.as_ref().map(|(_, t)| Arc::from(t.as_str())),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("prefflow-http")
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let addr = SocketAddr::new(opts.bind, opts.port);
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServeError::Bind { addr, source })?;
        on_ready(listener.local_addr()?);
        let every = host.sweep_every();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                host.sweep();
            }
        });
        let service = routes::router(app).into_make_service_with_connect_info::<SocketAddr>();
        axum::serve(listener, service).await?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(bind: &str, allow_remote: bool, token: bool) -> ServeOptions {
        ServeOptions {
            bind: bind.parse().expect("ip"),
            port: 0,
            apps: PathBuf::new(),
            persona: PathBuf::new(),
            history: HistoryParams::default(),
            limits: ServeLimits::default(),
            allow_remote,
            token: token.then(|| ("PHONE_TOKEN".to_string(), "s3cret".to_string())),
        }
    }

    #[test]
    fn remote_binds_need_both_allow_remote_and_a_token() {
        assert_eq!(opts("127.0.0.1", false, false).check().ok(), Some(None));
        assert_eq!(opts("::1", false, false).check().ok(), Some(None));
        let refused = opts("0.0.0.0", false, true)
            .check()
            .unwrap_err()
            .to_string();
        assert!(refused.contains("--allow-remote"), "{refused}");
        let refused = opts("0.0.0.0", true, false)
            .check()
            .unwrap_err()
            .to_string();
        assert!(refused.contains("--token-env"), "{refused}");
        let warning = opts("0.0.0.0", true, true).check().expect("allowed");
        let warning = warning.expect("a warning");
        assert!(
            warning.contains("PHONE_TOKEN") && !warning.contains("s3cret"),
            "{warning}"
        );
    }
}
