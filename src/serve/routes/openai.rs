//! `POST /v1/embeddings`: OpenAI's embeddings API (float, base64, int8 and binary
//! encodings).

use std::sync::Arc;
use std::time::Instant;

use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::response::{IntoResponse, Response};
use base64::Engine;

use crate::serve::api::{
    EmbeddingValue, Inputs, OpenAiEmbedding, OpenAiEmbeddingRequest, OpenAiEmbeddingResponse, Usage,
};
use crate::serve::error::ApiError;
use crate::serve::shared::{
    AppState, TooLong, element_of, embed_texts, finish, rows, shape_vectors,
};

pub(crate) async fn openai_embeddings(
    State(state): State<Arc<AppState>>,
    body: Result<Json<OpenAiEmbeddingRequest>, JsonRejection>,
) -> Response {
    let started = Instant::now();
    let result = async {
        let Json(req) = body?;
        let format = req.encoding_format.as_deref().unwrap_or("float");
        if !matches!(format, "float" | "base64" | "int8" | "binary") {
            return Err(ApiError::validation(format!(
                "encoding_format {format:?} is not one of float, base64, int8, binary"
            )));
        }
        let one = matches!(req.input, Inputs::One(_));
        let texts = req.input.into_vec();
        let (v, tokens) = embed_texts(
            &state,
            &texts,
            TooLong::RefuseWithoutOption,
            state.config.max_client_batch_size,
            &element_of("input", one),
        )
        .await?;
        let v = shape_vectors(&state, v, req.dimensions, true)?;
        let data = rows(&v)
            .into_iter()
            .enumerate()
            .map(|(index, row)| OpenAiEmbedding {
                object: "embedding",
                index,
                embedding: match format {
                    "base64" => EmbeddingValue::Base64(
                        base64::engine::general_purpose::STANDARD.encode(
                            row.iter()
                                .flat_map(|x| x.to_le_bytes())
                                .collect::<Vec<u8>>(),
                        ),
                    ),
                    "int8" => EmbeddingValue::Int(int8_codes(&row)),
                    "binary" => EmbeddingValue::Int(binary_codes(&row)),
                    _ => EmbeddingValue::Float(row),
                },
            })
            .collect();
        Ok(Json(OpenAiEmbeddingResponse {
            object: "list",
            data,
            model: req.model.unwrap_or_else(|| state.config.model_id.clone()),
            usage: Usage {
                prompt_tokens: tokens,
                total_tokens: tokens,
            },
        })
        .into_response())
    }
    .await;
    finish(&state, "/v1/embeddings", started, result)
}

/// int8: each component of a unit vector (in [-1, 1]) times 127, rounded.
fn int8_codes(row: &[f32]) -> Vec<i32> {
    row.iter()
        .map(|x| (x * 127.0).round().clamp(-128.0, 127.0) as i32)
        .collect()
}

/// binary: sign bits packed 8 per byte, most significant first (sentence-transformers'
/// "ubinary" precision).
fn binary_codes(row: &[f32]) -> Vec<i32> {
    row.chunks(8)
        .map(|c| {
            c.iter()
                .enumerate()
                .fold(0i32, |acc, (i, &x)| acc | (((x > 0.0) as i32) << (7 - i)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantised_encodings() {
        assert_eq!(int8_codes(&[1.0, -1.0, 0.5, 0.0]), vec![127, -127, 64, 0]);
        // 8 signs -> one byte, MSB first; 2 leftover -> a second byte.
        assert_eq!(
            binary_codes(&[1.0, -1.0, 1.0, 1.0, -1.0, -1.0, -1.0, 1.0, 1.0, -0.5]),
            vec![0b1011_0001, 0b1000_0000]
        );
    }
}
