//! `POST /similarity`: text-embeddings-inference's sentence similarity (cosine of
//! each sentence to the source sentence).

use std::sync::Arc;
use std::time::Instant;

use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::response::{IntoResponse, Response};
use tch::Kind;

use crate::serve::api::SimilarityRequest;
use crate::serve::error::ApiError;
use crate::serve::shared::{AppState, embed_texts, finish};

pub(crate) async fn similarity(
    State(state): State<Arc<AppState>>,
    body: Result<Json<SimilarityRequest>, JsonRejection>,
) -> Response {
    let started = Instant::now();
    let result = async {
        let Json(req) = body?;
        if req.inputs.sentences.is_empty() {
            return Err(ApiError::validation("sentences is empty"));
        }
        let mut texts = vec![req.inputs.source_sentence];
        texts.extend(req.inputs.sentences);
        let (v, _) = embed_texts(
            &state,
            &texts,
            req.truncate,
            state.config.max_client_batch_size + 1,
        )
        .await?;
        let v = crate::model::l2_normalize(&v);
        let scores = v.narrow(0, 1, v.size()[0] - 1).matmul(&v.get(0));
        Ok(
            Json(Vec::<f32>::try_from(scores.to_kind(Kind::Float)).unwrap_or_default())
                .into_response(),
        )
    }
    .await;
    finish(&state, "/similarity", started, result)
}
