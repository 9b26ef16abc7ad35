//! The HTTP routes: parse the request, hand the work to the episode thread, answer JSON.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{Method, Uri};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::api::{CreateEpisode, Created};
use super::error::ServeError;
use super::host::Host;
use crate::world::phone::{Action, Observation, WorldDiff};

/// Every endpoint of the phone server.
pub(crate) fn router(host: Host) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/episodes", post(create))
        .route("/episodes/{id}", axum::routing::delete(close))
        .route("/episodes/{id}/step", post(step))
        .route("/episodes/{id}/observe", get(observe))
        .route("/episodes/{id}/state", get(state))
        .route("/episodes/{id}/diff", get(diff))
        .fallback(|method: Method, uri: Uri| async move {
            ServeError::NoRoute(format!("{method} {uri}"))
        })
        .with_state(host)
}

/// Parses a JSON body; an empty body means `{}`.
fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ServeError> {
    let body = if body.iter().all(u8::is_ascii_whitespace) {
        b"{}".as_slice()
    } else {
        body
    };
    serde_json::from_slice(body).map_err(|e| ServeError::BadRequest(format!("body: {e}")))
}

async fn health(State(host): State<Host>) -> Result<Json<Value>, ServeError> {
    let v = host
        .run(|world, book| {
            json!({
                "status": "ok",
                "apps": world.catalog.apps.len(),
                "events": world.history.len(),
                "episodes": book.len(),
            })
        })
        .await?;
    Ok(Json(v))
}

async fn create(State(host): State<Host>, body: Bytes) -> Result<Json<Created>, ServeError> {
    let req: CreateEpisode = parse(&body)?;
    Ok(Json(host.run(move |w, b| b.create(w, req)).await??))
}

async fn step(
    State(host): State<Host>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Json<Observation>, ServeError> {
    let value: Value = parse(&body)?;
    let action = serde_json::from_value::<Action>(value);
    Ok(Json(host.run(move |_, b| b.step(&id, action)).await??))
}

async fn observe(
    State(host): State<Host>,
    Path(id): Path<String>,
) -> Result<Json<Observation>, ServeError> {
    Ok(Json(host.run(move |_, b| b.observe(&id)).await??))
}

async fn state(
    State(host): State<Host>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ServeError> {
    Ok(Json(host.run(move |_, b| b.state(&id)).await??))
}

async fn diff(
    State(host): State<Host>,
    Path(id): Path<String>,
) -> Result<Json<WorldDiff>, ServeError> {
    Ok(Json(host.run(move |_, b| b.diff(&id)).await??))
}

async fn close(
    State(host): State<Host>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ServeError> {
    host.run(move |_, b| b.close(&id).map(|()| id))
        .await?
        .map(|id| Json(json!({ "closed": id })))
}
