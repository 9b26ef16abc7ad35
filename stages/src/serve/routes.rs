//! The HTTP routes: check the token, read the body within its limit, hand the work to the
//! episode's thread, answer JSON — errors included, whatever produced them.

use std::pin::Pin;
use std::sync::Arc;

use axum::body::{Body, HttpBody};
use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Path, Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::api::CreateEpisode;
use super::error::ServeError;
use super::host::{self, Cost, Host};
use crate::world::phone::Action;

/// A body over the limit is still read (and dropped) up to this many bytes, so the client gets
/// its 413 instead of a reset connection; a larger one is cut off.
const DRAIN_BYTES: usize = 64 << 20;

/// What every request needs: the episodes, the body limit and the token (if one is required).
#[derive(Clone)]
pub(crate) struct App {
    pub host: Host,
    pub max_body_bytes: usize,
    pub token: Option<Arc<str>>,
}

/// Every endpoint of the phone server.
pub(crate) fn router(app: App) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/episodes", post(create))
        .route("/episodes/{id}", axum::routing::delete(close))
        .route("/episodes/{id}/step", post(step))
        .route("/episodes/{id}/observe", get(observe))
        .route("/episodes/{id}/state", get(state))
        .route("/episodes/{id}/diff", get(diff))
        .fallback(|method: Method, uri: Uri| async move {
            ServeError::NoRoute(format!("{method} {}", uri.path()))
        })
        .method_not_allowed_fallback(|method: Method, uri: Uri| async move {
            ServeError::MethodNotAllowed(format!("{method} {}", uri.path()))
        })
        .layer(middleware::map_response(json_errors))
        .layer(middleware::from_fn_with_state(app.clone(), authorize))
        .with_state(app)
}

/// Refuses a request without the server's bearer token (when it has one).
async fn authorize(State(app): State<App>, req: Request, next: Next) -> Response {
    if let Some(token) = &app.token {
        let given = req
            .headers()
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        if !same_secret(given.trim().as_bytes(), token.as_bytes()) {
            return ServeError::Unauthorized.into_response();
        }
    }
    next.run(req).await
}

/// Compares in time independent of where the first difference is.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Turns any error response that is not JSON yet (from the HTTP layer itself) into
/// `{"error": …}`, so clients can rely on one error shape.
async fn json_errors(res: Response) -> Response {
    let status = res.status();
    let is_json = res
        .headers()
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if is_json || !(status.is_client_error() || status.is_server_error()) {
        return res;
    }
    let text = axum::body::to_bytes(res.into_body(), 4096)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let error = if text.is_empty() {
        status.canonical_reason().unwrap_or("error").to_string()
    } else {
        text
    };
    (status, Json(json!({ "error": error }))).into_response()
}

/// Reads a body of at most `limit` bytes. An over-limit body is drained (up to
/// [`DRAIN_BYTES`]) before the 413, so the client reads the answer instead of a reset.
async fn read_body(
    headers: &HeaderMap,
    mut body: Body,
    limit: usize,
) -> Result<Vec<u8>, ServeError> {
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit.saturating_add(DRAIN_BYTES)) {
        return Err(ServeError::BodyTooLarge(limit));
    }
    let mut buf = Vec::new();
    let mut total = 0usize;
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        let frame =
            frame.map_err(|e| ServeError::BadRequest(format!("cannot read the body: {e}")))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        total = total.saturating_add(data.len());
        if total <= limit {
            buf.extend_from_slice(&data);
        } else if total > limit.saturating_add(DRAIN_BYTES) {
            break;
        }
    }
    if total > limit {
        return Err(ServeError::BodyTooLarge(limit));
    }
    Ok(buf)
}

/// Reads and parses a JSON body; an empty body means `{}`.
async fn parse<T: DeserializeOwned>(app: &App, req: Request) -> Result<(T, usize), ServeError> {
    let (parts, body) = req.into_parts();
    let bytes = match read_body(&parts.headers, body, app.max_body_bytes).await {
        Ok(b) => b,
        Err(e) => {
            app.host.refused();
            return Err(e);
        }
    };
    let text = if bytes.iter().all(u8::is_ascii_whitespace) {
        b"{}".as_slice()
    } else {
        &bytes
    };
    let value = serde_json::from_slice(text).map_err(|e| {
        ServeError::BadRequest(format!(
            "body is not the JSON this endpoint takes: {e}; see README, \"Serving the phone\""
        ))
    })?;
    Ok((value, bytes.len()))
}

/// A response whose JSON was already serialized on the episode's thread.
fn json_bytes(bytes: Vec<u8>) -> Response {
    (
        StatusCode::OK,
        [(CONTENT_TYPE, "application/json")],
        Body::from(bytes),
    )
        .into_response()
}

type Answer = Result<Response, ServeError>;

async fn health(State(app): State<App>) -> Json<Value> {
    Json(app.host.health())
}

async fn create(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    req: Request,
) -> Answer {
    let client = client_of(req.headers(), peer);
    let (create, n): (CreateEpisode, usize) = parse(&app, req).await?;
    Ok(json_bytes(app.host.create(create, n, client).await?))
}

/// Who a request comes from, for the per-client episode quota: its `X-Client-Id` header (so
/// several clients on one address, e.g. loopback, count apart), else its address.
fn client_of(headers: &HeaderMap, peer: SocketAddr) -> String {
    let given = headers
        .get("x-client-id")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty());
    match given {
        Some(id) => format!("id:{}", id.chars().take(64).collect::<String>()),
        None => peer.ip().to_string(),
    }
}

async fn step(State(app): State<App>, Path(id): Path<String>, req: Request) -> Answer {
    let (value, n): (Value, usize) = parse(&app, req).await?;
    let action = serde_json::from_value::<Action>(value);
    let run = app.host.run(&id, Cost::Step(n), move |phone, limits| {
        host::to_json(&host::step(phone, action, limits.max_observation_bytes))
    });
    Ok(json_bytes(run.await?))
}

async fn observe(State(app): State<App>, Path(id): Path<String>) -> Answer {
    let run = app.host.run(&id, Cost::Read, |phone, limits| {
        host::to_json(&host::observe(phone, limits.max_observation_bytes))
    });
    Ok(json_bytes(run.await?))
}

async fn state(State(app): State<App>, Path(id): Path<String>) -> Answer {
    let run = app.host.run(&id, Cost::Read, |phone, _| {
        host::to_json(&host::state(phone))
    });
    Ok(json_bytes(run.await?))
}

async fn diff(State(app): State<App>, Path(id): Path<String>) -> Answer {
    let run = app
        .host
        .run(&id, Cost::Read, |phone, _| host::to_json(&phone.diff()));
    Ok(json_bytes(run.await?))
}

async fn close(State(app): State<App>, Path(id): Path<String>) -> Result<Json<Value>, ServeError> {
    app.host.close(&id)?;
    Ok(Json(json!({ "closed": id })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_by_content_and_length() {
        assert!(same_secret(b"s3cret", b"s3cret"));
        assert!(!same_secret(b"s3cret", b"s3creT"));
        assert!(!same_secret(b"s3cre", b"s3cret"));
        assert!(!same_secret(b"", b"s3cret"));
    }
}
