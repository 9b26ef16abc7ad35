//! Typed errors of the phone server, and how each becomes an HTTP response: always a JSON body
//! `{"error": "…"}` with the status that fits (400 bad request, 401 no or wrong token, 404
//! unknown, expired or evicted episode, 405 wrong method, 413 too large, 429 over a limit —
//! with `Retry-After` when waiting can help —, 500), never a panic.

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
    /// The command-line options are inconsistent (a limit of 0, a remote bind without a token…).
    #[error("{0}")]
    Options(String),
    /// The runtime or the listener failed.
    #[error("server I/O: {0}")]
    Io(#[from] std::io::Error),
    /// No episode has this id (never created, or closed).
    #[error("no episode `{0}`; create one with POST /episodes")]
    NotFound(String),
    /// The episode was closed by the server after sitting idle past the TTL.
    #[error("episode `{id}` expired after {ttl_secs} s without a request (--episode-ttl-secs); create a new one with POST /episodes")]
    Expired {
        /// The episode.
        id: String,
        /// The server's TTL.
        ttl_secs: u64,
    },
    /// The open-episode limit is reached and no episode is idle long enough to make room.
    #[error("{limit} episodes are open, the most this server allows (--max-episodes), and none has been idle long enough to close for room (--evict-idle-secs); retry after {retry_after} s, and close finished episodes with DELETE /episodes/{{id}}")]
    TooManyEpisodes {
        /// The server's limit.
        limit: usize,
        /// Seconds until an episode may be idle long enough to give way.
        retry_after: u64,
    },
    /// This client has as many episodes open as one client may.
    #[error("this client has {limit} episodes open, the most one client may (--max-episodes-per-client; a client is its X-Client-Id header, else its address), and none has been idle long enough to close for room; retry after {retry_after} s, and close finished episodes with DELETE /episodes/{{id}}")]
    ClientQuota {
        /// The per-client limit.
        limit: usize,
        /// Seconds until one of its episodes may be idle long enough to give way.
        retry_after: u64,
    },
    /// The episode was closed while idle to make room for a new one at a cap.
    #[error("episode `{id}` was closed after {idle_secs} s without a request to make room for a new episode (the server or its client was at its episode limit; --evict-idle-secs); create a new one with POST /episodes")]
    Evicted {
        /// The episode.
        id: String,
        /// The server's eviction idle time.
        idle_secs: u64,
    },
    /// The episode has taken every step it may.
    #[error("episode `{id}` has taken its {limit} steps (--max-steps); finish it and start a new episode")]
    StepLimit {
        /// The episode.
        id: String,
        /// The server's step limit.
        limit: u32,
    },
    /// The episode has received as many request bytes as it may.
    #[error("episode `{id}` has received its {limit} bytes of requests (--max-episode-bytes); send smaller actions or start a new episode")]
    EpisodeBytes {
        /// The episode.
        id: String,
        /// The server's per-episode byte limit.
        limit: usize,
    },
    /// The request body is over the body limit.
    #[error("request body over {0} bytes (--max-body-bytes); send a smaller body")]
    BodyTooLarge(usize),
    /// The request has no valid `Authorization: Bearer` token.
    #[error("missing or wrong token: send `Authorization: Bearer <token>` with the token from the server's --token-env variable")]
    Unauthorized,
    /// The path exists but not with this method.
    #[error("{0} is not allowed here; see GET /health, POST /episodes, POST /episodes/{{id}}/step, GET /episodes/{{id}}/observe|state|diff, DELETE /episodes/{{id}}")]
    MethodNotAllowed(String),
    /// A bug or an unexpected condition; the message says what.
    #[error("internal error: {0}")]
    Internal(String),
    /// No endpoint has this method and path.
    #[error("no endpoint {0}; see GET /health, POST /episodes, /episodes/{{id}}/step|observe|state|diff")]
    NoRoute(String),
    /// The request body is not what the endpoint takes.
    #[error("{0}")]
    BadRequest(String),
    /// The episode overrides do not fit the world.
    #[error("overrides: {0}")]
    Overrides(#[from] crate::world::phone::OverrideError),
    /// The thread that owns the episode is gone (a bug: it only ends when the episode does).
    #[error(
        "the episode's thread stopped unexpectedly (a bug); close the episode and start a new one"
    )]
    HostGone,
}

impl ServeError {
    /// Whether the user can fix it (bad files, address or options): exit code 2 for the CLI.
    pub fn is_user_error(&self) -> bool {
        matches!(
            self,
            ServeError::World(_) | ServeError::Bind { .. } | ServeError::Options(_)
        )
    }

    /// The HTTP status this error answers with.
    pub fn status(&self) -> StatusCode {
        match self {
            ServeError::NotFound(_)
            | ServeError::NoRoute(_)
            | ServeError::Expired { .. }
            | ServeError::Evicted { .. } => StatusCode::NOT_FOUND,
            ServeError::BadRequest(_) | ServeError::Overrides(_) => StatusCode::BAD_REQUEST,
            ServeError::Unauthorized => StatusCode::UNAUTHORIZED,
            ServeError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ServeError::BodyTooLarge(_) | ServeError::EpisodeBytes { .. } => {
                StatusCode::PAYLOAD_TOO_LARGE
            }
            ServeError::TooManyEpisodes { .. }
            | ServeError::ClientQuota { .. }
            | ServeError::StepLimit { .. } => StatusCode::TOO_MANY_REQUESTS,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl IntoResponse for ServeError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.to_string() });
        let mut res = (self.status(), Json(body)).into_response();
        if matches!(self, ServeError::Unauthorized) {
            res.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        if let ServeError::TooManyEpisodes { retry_after, .. }
        | ServeError::ClientQuota { retry_after, .. } = &self
        {
            res.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(*retry_after),
            );
        }
        res
    }
}
