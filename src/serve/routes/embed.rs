//! `POST /embed` (and `POST /`): text-embeddings-inference's embedding endpoint.

use std::sync::Arc;
use std::time::Instant;

use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::response::{IntoResponse, Response};

use crate::serve::api::EmbedRequest;
use crate::serve::shared::{AppState, element_of, embed_texts, finish, rows, shape_vectors};

pub(crate) async fn embed(
    State(state): State<Arc<AppState>>,
    body: Result<Json<EmbedRequest>, JsonRejection>,
) -> Response {
    let started = Instant::now();
    let result = async {
        let Json(req) = body?;
        let texts = req.inputs.into_vec();
        let (v, _) = embed_texts(
            &state,
            &texts,
            req.truncate,
            state.config.max_client_batch_size,
            &element_of("inputs"),
        )
        .await?;
        let v = shape_vectors(&state, v, req.dimensions, req.normalize)?;
        Ok(Json(rows(&v)).into_response())
    }
    .await;
    finish(&state, "/embed", started, result)
}
