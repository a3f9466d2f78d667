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
use crate::serve::shared::{AppState, TooLong, embed_texts, finish};

pub(crate) async fn similarity(
    State(state): State<Arc<AppState>>,
    body: Result<Json<SimilarityRequest>, JsonRejection>,
) -> Response {
    let started = Instant::now();
    let result = async {
        let Json(req) = body?;
        let limit = state.config.max_client_batch_size;
        let count = req.inputs.sentences.len();
        if count == 0 {
            return Err(ApiError::validation("sentences is empty"));
        }
        if count > limit {
            return Err(ApiError::validation(format!(
                "{count} sentences exceed the limit of {limit} per request"
            )));
        }
        // The source sentence is text 0; sentences[i] is text i + 1.
        let mut texts = vec![req.inputs.source_sentence];
        texts.extend(req.inputs.sentences);
        let name = |i: usize| match i {
            0 => "source_sentence".to_string(),
            i => format!("sentences[{}]", i - 1),
        };
        let too_long = TooLong::from_request(req.truncate);
        let (v, _) = embed_texts(&state, &texts, too_long, limit + 1, &name).await?;
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
