//! `prefflow serve-env`: the simulated phone over HTTP/JSON, so agents written in any language
//! can run episodes on the world. Bound to loopback by default; one world per server, many
//! episodes, each on its own copy-on-write overlay.
//!
//! Endpoints: `GET /health`; `POST /episodes` → `{episode_id, observation, tools, …}`;
//! `POST /episodes/{id}/step` (an action) → observation; `GET /episodes/{id}/observe`,
//! `/state`, `/diff`; `DELETE /episodes/{id}`. Errors are `{"error": …}` with 400 or 404.

mod api;
mod error;
mod host;
mod routes;
mod user;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

pub use api::{CreateEpisode, Created};
pub use error::ServeError;
pub use user::{ScriptedAnswer, ScriptedUser};

use crate::world::{HistoryParams, World};

/// What `serve-env` serves and where.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Interface to bind (default loopback: the phone has no authentication).
    pub bind: IpAddr,
    /// Port; 0 picks any free port.
    pub port: u16,
    /// Directory of app YAML files.
    pub apps: PathBuf,
    /// Persona YAML file.
    pub persona: PathBuf,
    /// History synthesis knobs.
    pub history: HistoryParams,
}

/// Builds the world, binds, calls `on_ready` with the bound address, then serves until the
/// process ends.
pub fn serve_env(opts: &ServeOptions, on_ready: impl FnOnce(SocketAddr)) -> Result<(), ServeError> {
    let world = World::build(&opts.apps, &opts.persona, &opts.history)?;
    let host = host::Host::start(world)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let addr = SocketAddr::new(opts.bind, opts.port);
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServeError::Bind { addr, source })?;
        on_ready(listener.local_addr()?);
        axum::serve(listener, routes::router(host)).await?;
        Ok(())
    })
}
