//! `POST /embed` (and `POST /`): text-embeddings-inference's embedding endpoint.

use std::sync::Arc;
use std::time::Instant;

use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::response::{IntoResponse, Response};

use crate::serve::api::{EmbedRequest, Inputs};
use crate::serve::shared::{
    AppState, TooLong, element_of, embed_texts, finish, rows, shape_vectors,
};

pub(crate) async fn embed(
    State(state): State<Arc<AppState>>,
    body: Result<Json<EmbedRequest>, JsonRejection>,
) -> Response {
    let started = Instant::now();
    let result = async {
        let Json(req) = body?;
        let one = matches!(req.inputs, Inputs::One(_));
        let texts = req.inputs.into_vec();
        let (v, _) = embed_texts(
            &state,
            &texts,
            TooLong::from_request(req.truncate),
            state.config.max_client_batch_size,
            &element_of("inputs", one),
        )
        .await?;
        let v = shape_vectors(&state, v, req.dimensions, req.normalize)?;
        Ok(Json(rows(&v)).into_response())
    }
    .await;
    finish(&state, "/embed", started, result)
}
