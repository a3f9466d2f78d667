//! `GET /health` (a one-token probe through the queue and the model), `GET /info`, `GET /metrics`
//! (Prometheus text) and the JSON 404 of every other path.

use std::sync::Arc;
use std::time::Instant;

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::serve::error::ApiError;
use crate::serve::shared::{AppState, embed_tokens, finish};

pub(crate) async fn health(State(state): State<Arc<AppState>>) -> Response {
    let started = Instant::now();
    let result = async {
        // A probe through the queue and the model, its tokens made at start: /health
        // answers while every tokenisation slot is busy with other requests.
        let _probe = embed_tokens(&state, vec![state.probe.clone()]).await?;
        Ok(Json(serde_json::json!({"status": "ok"})).into_response())
    }
    .await;
    finish(&state, "/health", started, result)
}

pub(crate) async fn info_route(State(state): State<Arc<AppState>>) -> Response {
    Json(state.info.clone()).into_response()
}

pub(crate) async fn metrics_route(State(state): State<Arc<AppState>>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
        .into_response()
}

/// A known path asked with a method it does not answer (`GET /embed`); axum adds the
/// `Allow` header.
pub(crate) async fn method_not_allowed() -> Response {
    ApiError {
        status: StatusCode::METHOD_NOT_ALLOWED,
        kind: "MethodNotAllowed",
        message: "this endpoint does not answer that method (see /info and the Allow header)"
            .into(),
    }
    .into_response()
}

pub(crate) async fn not_found() -> Response {
    ApiError {
        status: StatusCode::NOT_FOUND,
        kind: "NotFound",
        message: "no such endpoint (see /info)".into(),
    }
    .into_response()
}
