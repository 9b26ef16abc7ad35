//! Typed errors of the phone server, and how each becomes an HTTP response: a JSON body
//! `{"error": "…"}` with 400 (bad request), 404 (unknown episode) or 500, never a panic.

use std::net::SocketAddr;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::world::WorldError;

/// Why serving or a request failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The apps or persona could not be loaded (the user's files).
    #[error(transparent)]
    World(#[from] WorldError),
    /// The address is taken or not ours.
    #[error("cannot bind {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why binding failed.
        source: std::io::Error,
    },
    /// The runtime or the listener failed.
    #[error("server I/O: {0}")]
    Io(#[from] std::io::Error),
    /// No episode has this id (never created, or closed).
    #[error("no episode `{0}`; create one with POST /episodes")]
    NotFound(String),
    /// No endpoint has this method and path.
    #[error("no endpoint {0}; see GET /health, POST /episodes, /episodes/{{id}}/step|observe|state|diff")]
    NoRoute(String),
    /// The request body is not what the endpoint takes.
    #[error("{0}")]
    BadRequest(String),
    /// The episode overrides do not fit the world.
    #[error("overrides: {0}")]
    Overrides(#[from] crate::world::phone::OverrideError),
    /// The thread that owns the episodes is gone (a bug: it never exits on its own).
    #[error("the episode host stopped")]
    HostGone,
}

impl ServeError {
    /// Whether the user can fix it (bad files or address): exit code 2 for the CLI.
    pub fn is_user_error(&self) -> bool {
        matches!(self, ServeError::World(_) | ServeError::Bind { .. })
    }

    fn status(&self) -> StatusCode {
        match self {
            ServeError::NotFound(_) | ServeError::NoRoute(_) => StatusCode::NOT_FOUND,
            ServeError::BadRequest(_) | ServeError::Overrides(_) => StatusCode::BAD_REQUEST,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl IntoResponse for ServeError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.to_string() });
        (self.status(), Json(body)).into_response()
    }
}
