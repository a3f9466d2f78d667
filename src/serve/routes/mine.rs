//! `POST /mine`: margin-scored pairs between two lists of sentences, bounded in
//! sentences, tokens and time.

use std::sync::Arc;
use std::time::Instant;

use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::response::{IntoResponse, Response};
use tch::Tensor;

use crate::mine::{Deadline, MatrixView, MineOptions, mine};
use crate::serve::api::{MineRequest, MineResponse, MinedPair};
use crate::serve::batcher::JobResult;
use crate::serve::error::ApiError;
use crate::serve::shared::{AppState, TooLong, element_of, finish, tokenize_inputs};
use crate::tokenizer::TokenIds;

pub(crate) async fn mine_pairs(
    State(state): State<Arc<AppState>>,
    body: Result<Json<MineRequest>, JsonRejection>,
) -> Response {
    let started = Instant::now();
    let deadline = Deadline::after(state.config.max_mine_time);
    let result = async {
        let Json(req) = body?;
        let mut options = MineOptions::default();
        options.knn.deadline = Some(deadline);
        let most = state.config.max_mine_k;
        if let Some(k) = req.k {
            if k == 0 || k > most {
                return Err(ApiError::validation(format!(
                    "k must be between 1 and {most} (the server's --max-mine-k), not {k}"
                )));
            }
            options.knn.k = k;
        } else {
            options.knn.k = options.knn.k.min(most);
        }
        if let Some(m) = &req.margin {
            options.margin = m.parse().map_err(ApiError::validation)?;
        }
        if let Some(r) = &req.retrieval {
            options.retrieval = r.parse().map_err(ApiError::validation)?;
        }
        options.threshold = req.threshold;
        let limit = state.config.max_mine_sentences;
        let too_long = TooLong::from_request(req.truncate);
        // Tokenising counts against the time bound too (a started tokenisation finishes on
        // its blocking thread, but the answer does not wait for it past the deadline).
        let sides = async {
            let src = tokenize_inputs(&state, &req.src, too_long, limit, &element_of("src", false))
                .await?;
            let tgt = tokenize_inputs(&state, &req.tgt, too_long, limit, &element_of("tgt", false))
                .await?;
            Ok::<_, ApiError>((src, tgt))
        };
        let (src_tokens, tgt_tokens) = tokio::time::timeout_at(deadline.at.into(), sides)
            .await
            .map_err(|_| ApiError::time_limit(deadline.bound))??;
        let total: usize = src_tokens
            .iter()
            .chain(&tgt_tokens)
            .map(TokenIds::len)
            .sum();
        if total > state.config.max_mine_tokens {
            return Err(ApiError::too_large(format!(
                "{total} tokens over both sides exceed the limit of {} per /mine request",
                state.config.max_mine_tokens
            )));
        }
        // Both sides queued at once; past the deadline the receivers are dropped, and
        // the batcher skips the passes nobody waits for.
        let both = async {
            let x = state.batcher.submit(src_tokens)?;
            let y = state.batcher.submit(tgt_tokens)?;
            let receive = |r: tokio::sync::oneshot::Receiver<JobResult>| async {
                r.await
                    .map_err(|_| ApiError::backend("the inference thread stopped"))?
                    .map_err(|e| ApiError::backend(e.to_string()))
            };
            Ok::<_, ApiError>((receive(x).await?, receive(y).await?))
        };
        let (x, y) = tokio::time::timeout_at(deadline.at.into(), both)
            .await
            .map_err(|_| ApiError::time_limit(deadline.bound))??;
        let dim = state.dim;
        let flat = |t: &Tensor| -> Vec<f32> {
            let t = crate::model::l2_normalize(t).contiguous();
            let n = t.numel();
            let mut v = vec![0f32; n];
            t.copy_data(&mut v, n);
            v
        };
        let (xv, yv) = (flat(&x), flat(&y));
        let (n, m) = (req.src.len(), req.tgt.len());
        let mined = tokio::task::spawn_blocking(move || {
            mine(
                &MatrixView::new(&xv, n, dim)?,
                &MatrixView::new(&yv, m, dim)?,
                &options,
            )
        })
        .await
        .map_err(|e| ApiError::backend(format!("mining failed: {e}")))?
        .map_err(|e| match e {
            crate::error::LaseError::DeadlineExceeded(bound) => ApiError::time_limit(bound),
            e => ApiError::validation(e.to_string()),
        })?;
        let pairs = mined
            .pairs
            .iter()
            .map(|p| MinedPair {
                score: p.score,
                src_index: p.src,
                tgt_index: p.tgt,
                src: req.src[p.src].clone(),
                tgt: req.tgt[p.tgt].clone(),
            })
            .collect();
        Ok(Json(MineResponse { pairs }).into_response())
    }
    .await;
    finish(&state, "/mine", started, result)
}
