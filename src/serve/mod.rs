//! `lase serve`: an HTTP embedding and mining server (axum + tokio).
//!
//! Endpoints: `POST /embed` (text-embeddings-inference), `POST /v1/embeddings`
//! (OpenAI; float, base64, int8 and binary encodings), `POST /similarity` (TEI),
//! `POST /mine` (margin-scored pairs), `GET /health`, `GET /info`, `GET /metrics`
//! (Prometheus). Requests are coalesced by [`batcher`] into shared forward passes.
//! Every failure is a JSON error with a meaningful status: 400 bad JSON, 413 body too
//! large, 415 not JSON, 422 invalid request (unknown field, too many inputs, input too
//! long without `truncate`), 429 queue full (with `Retry-After`), 500 when the
//! request's own forward pass panicked (caught; other requests and the worker carry
//! on, see [`batcher`]), 503 shutting down; never a panic.

pub mod api;
pub mod batcher;
pub mod connections;
pub mod metrics;

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::rejection::JsonRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use tch::{Kind, Tensor};

use self::api::*;
use self::batcher::{Batcher, EnqueueError};
use self::metrics::Metrics;
use crate::inference::{Embedder, EncodeOptions, InferenceEncoder};
use crate::mine::{Deadline, MatrixView, MineOptions, mine};
use crate::model::SentenceEncoder;
use crate::tokenizer::{SentenceTokenizer, TokenIds};

/// Server limits and identity.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    pub model_id: String,
    /// Largest request body accepted (413 above).
    pub max_body_bytes: usize,
    /// Most inputs in one /embed, /v1/embeddings or /similarity request (422 above).
    pub max_client_batch_size: usize,
    /// Most sentences per side of one /mine request (422 above).
    pub max_mine_sentences: usize,
    /// Most tokens over both sides of one /mine request (413 above): embedding is
    /// nearly all of a /mine request's time, and it grows with its tokens.
    pub max_mine_tokens: usize,
    /// Longest one /mine request may take from its arrival (queueing, embedding and the
    /// search); past it the request gets 413 and its work still queued is dropped.
    pub max_mine_time: std::time::Duration,
    /// Token budget of one coalesced inference run.
    pub max_batch_tokens: usize,
    /// Requests waiting for the inference thread before new ones get 429.
    pub max_queued_requests: usize,
    /// After a shutdown signal, in-flight requests get this long to finish; then the
    /// server stops regardless (their connections close without an answer).
    pub shutdown_timeout: std::time::Duration,
    /// Header and body read timeouts and the connection cap (slow clients).
    pub connections: connections::ConnectionLimits,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            model_id: "lase".into(),
            max_body_bytes: 2 << 20,
            max_client_batch_size: 256,
            max_mine_sentences: 10_000,
            max_mine_tokens: 131_072,
            max_mine_time: std::time::Duration::from_secs(60),
            max_batch_tokens: 16_384,
            max_queued_requests: 512,
            shutdown_timeout: std::time::Duration::from_secs(30),
            connections: connections::ConnectionLimits::default(),
        }
    }
}

struct AppState {
    batcher: Batcher,
    tokenizer: SentenceTokenizer,
    dim: usize,
    model_normalizes: bool,
    config: ServeConfig,
    metrics: Arc<Metrics>,
    info: Info,
}

/// A JSON error response.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    kind: &'static str,
    message: String,
}

impl ApiError {
    fn validation(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            kind: "Validation",
            message: message.into(),
        }
    }

    fn too_large(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            kind: "PayloadTooLarge",
            message: message.into(),
        }
    }

    fn time_limit(bound: std::time::Duration) -> Self {
        Self {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            kind: "TimeLimit",
            message: format!(
                "the request did not finish within the per-request time limit of {:.1} s; send fewer sentences",
                bound.as_secs_f64()
            ),
        }
    }

    fn backend(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            kind: "Backend",
            message: message.into(),
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        if connections::is_body_timeout(&r) {
            return Self {
                status: StatusCode::REQUEST_TIMEOUT,
                kind: "Timeout",
                message: r.body_text(),
            };
        }
        let status = r.status();
        Self {
            status,
            kind: if status == StatusCode::PAYLOAD_TOO_LARGE {
                "PayloadTooLarge"
            } else {
                "Validation"
            },
            message: r.body_text(),
        }
    }
}

impl From<EnqueueError> for ApiError {
    fn from(e: EnqueueError) -> Self {
        match e {
            EnqueueError::Full => Self {
                status: StatusCode::TOO_MANY_REQUESTS,
                kind: "Overloaded",
                message: "the inference queue is full; retry later".into(),
            },
            EnqueueError::Closed => Self {
                status: StatusCode::SERVICE_UNAVAILABLE,
                kind: "Unhealthy",
                message: "the server is shutting down".into(),
            },
        }
    }
}

/// Seconds a client refused with 429 is asked to wait: the queue drains in about one
/// coalesced run, well under a second for the default token budget.
const RETRY_AFTER_SECONDS: &str = "1";

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            Json(ErrorBody {
                error: self.message,
                error_type: self.kind,
            }),
        )
            .into_response();
        if self.status == StatusCode::TOO_MANY_REQUESTS {
            response.headers_mut().insert(
                header::RETRY_AFTER,
                header::HeaderValue::from_static(RETRY_AFTER_SECONDS),
            );
        }
        response
    }
}

type ApiResult = Result<Response, ApiError>;

/// Runs the server on `listener` until `shutdown` completes, then finishes in-flight
/// requests and stops the inference thread.
pub async fn serve(
    listener: tokio::net::TcpListener,
    encoder: SentenceEncoder,
    options: EncodeOptions,
    config: ServeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(
        listener,
        encoder,
        |e| Box::new(e),
        options,
        config,
        shutdown,
    )
    .await
}

/// [`serve`] with every forward pass run by `wrap(encoder)`: the seam for fault
/// injection (the tests make passes on marked inputs panic or wait).
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    encoder: SentenceEncoder,
    wrap: impl FnOnce(InferenceEncoder) -> Box<dyn Embedder>,
    options: EncodeOptions,
    config: ServeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let metrics = Arc::new(Metrics::default());
    let info = Info {
        model_id: config.model_id.clone(),
        model_dtype: format!("{:?}", encoder.precision()).to_lowercase(),
        dimensions: encoder.dim(),
        max_input_length: encoder.tokenizer().max_length(),
        max_batch_tokens: config.max_batch_tokens,
        max_client_batch_size: config.max_client_batch_size,
        max_concurrent_requests: config.max_queued_requests,
        version: env!("CARGO_PKG_VERSION"),
    };
    let tokenizer = encoder.tokenizer().clone();
    let dim = encoder.dim();
    let model_normalizes = encoder.normalizes();
    let (batcher, worker) = Batcher::start(
        wrap(InferenceEncoder::new(encoder)),
        options,
        config.max_batch_tokens,
        config.max_queued_requests,
        metrics.clone(),
    );
    let state = Arc::new(AppState {
        batcher,
        tokenizer,
        dim,
        model_normalizes,
        config: config.clone(),
        metrics,
        info,
    });
    let app = Router::new()
        // TEI answers POST / as its model's task (here /embed): huggingface_hub's
        // InferenceClient(model=URL).feature_extraction posts there.
        .route("/", post(embed))
        .route("/embed", post(embed))
        .route("/v1/embeddings", post(openai_embeddings))
        .route("/similarity", post(similarity))
        .route("/mine", post(mine_pairs))
        .route("/health", get(health))
        .route("/info", get(info_route))
        .route("/metrics", get(metrics_route))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(config.max_body_bytes))
        .with_state(state);
    // The shutdown signal also starts the clock of `shutdown_timeout`.
    let timeout = config.shutdown_timeout;
    let (signalled, on_signal) = tokio::sync::oneshot::channel::<()>();
    let shutdown = async move {
        shutdown.await;
        let _ = signalled.send(());
    };
    let deadline = async move {
        match on_signal.await {
            Ok(()) => tokio::time::sleep(timeout).await,
            Err(_) => std::future::pending::<()>().await,
        }
    };
    let graceful = connections::serve_connections(listener, app, config.connections, shutdown);
    tokio::select! {
        () = graceful => {
            // The router (and with it every Batcher handle) is gone: the worker drains
            // and exits.
            let _ = tokio::task::spawn_blocking(move || worker.join()).await;
            Ok(())
        }
        () = deadline => {
            // Requests still in flight are dropped with their connections; the worker
            // thread may be inside a forward pass and is not waited for.
            tracing::warn!(
                "in-flight requests not finished {timeout:?} after the shutdown signal: stopping anyway"
            );
            Ok(())
        }
    }
}

/// Resolves on SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down: finishing in-flight requests");
}

fn finish(state: &AppState, route: &str, started: Instant, result: ApiResult) -> Response {
    let response = result.unwrap_or_else(IntoResponse::into_response);
    state.metrics.record_request(
        route,
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    response
}

/// Tokenizes, checks limits, runs the sentences through the batcher: [n, dim] vectors
/// (model output, not yet renormalised) and the token count.
async fn embed_texts(
    state: &AppState,
    texts: &[String],
    truncate: bool,
    limit: usize,
) -> Result<(Tensor, usize), ApiError> {
    let tokens = tokenize_inputs(state, texts, truncate, limit)?;
    embed_tokens(state, tokens).await
}

/// The inputs' token ids, after the count, emptiness and length checks.
fn tokenize_inputs(
    state: &AppState,
    texts: &[String],
    truncate: bool,
    limit: usize,
) -> Result<Vec<TokenIds>, ApiError> {
    if texts.is_empty() {
        return Err(ApiError::validation("no input sentences"));
    }
    if texts.len() > limit {
        return Err(ApiError::validation(format!(
            "{} inputs exceed the limit of {limit} per request",
            texts.len()
        )));
    }
    let encoded = state
        .tokenizer
        .encode_reporting_truncation(texts)
        .map_err(|e| ApiError::validation(e.to_string()))?;
    if !truncate && let Some(i) = encoded.iter().position(|(_, cut)| *cut) {
        return Err(ApiError::validation(format!(
            "input {i} is longer than the model's maximum of {} tokens; send \"truncate\": true to cut it",
            state.tokenizer.max_length()
        )));
    }
    Ok(encoded.into_iter().map(|(t, _)| t).collect())
}

/// Embeds tokenised inputs through the batcher; also their token count.
async fn embed_tokens(
    state: &AppState,
    tokens: Vec<TokenIds>,
) -> Result<(Tensor, usize), ApiError> {
    let count = tokens.iter().map(|t| t.len()).sum();
    let receiver = state.batcher.submit(tokens)?;
    let vectors = receiver
        .await
        .map_err(|_| ApiError::backend("the inference thread stopped"))?
        .map_err(|e| ApiError::backend(e.to_string()))?;
    Ok((vectors, count))
}

/// Keeps the first `dimensions` columns (if asked) and L2-normalises (if asked).
fn shape_vectors(
    state: &AppState,
    v: Tensor,
    dimensions: Option<usize>,
    normalize: bool,
) -> Result<Tensor, ApiError> {
    let mut v = v;
    let mut renormalize = normalize && !state.model_normalizes;
    if let Some(d) = dimensions {
        if d == 0 || d > state.dim {
            return Err(ApiError::validation(format!(
                "dimensions must be between 1 and {}",
                state.dim
            )));
        }
        if d < state.dim {
            v = v.narrow(1, 0, d as i64);
            renormalize = normalize;
        }
    }
    Ok(if renormalize {
        crate::model::l2_normalize(&v)
    } else {
        v
    })
}

fn rows(v: &Tensor) -> Vec<Vec<f32>> {
    let v = v.to_kind(Kind::Float).contiguous();
    let (n, d) = (v.size()[0] as usize, v.size()[1] as usize);
    let mut flat = vec![0f32; n * d];
    v.copy_data(&mut flat, n * d);
    flat.chunks(d.max(1)).map(|r| r.to_vec()).collect()
}

async fn embed(
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
        )
        .await?;
        let v = shape_vectors(&state, v, req.dimensions, req.normalize)?;
        Ok(Json(rows(&v)).into_response())
    }
    .await;
    finish(&state, "/embed", started, result)
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

async fn openai_embeddings(
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
        let texts = req.input.into_vec();
        let (v, tokens) =
            embed_texts(&state, &texts, false, state.config.max_client_batch_size).await?;
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

async fn similarity(
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

async fn mine_pairs(
    State(state): State<Arc<AppState>>,
    body: Result<Json<MineRequest>, JsonRejection>,
) -> Response {
    let started = Instant::now();
    let deadline = Deadline::after(state.config.max_mine_time);
    let result = async {
        let Json(req) = body?;
        let mut options = MineOptions::default();
        options.knn.deadline = Some(deadline);
        if let Some(k) = req.k {
            if k == 0 {
                return Err(ApiError::validation("k must be at least 1"));
            }
            options.knn.k = k;
        }
        if let Some(m) = &req.margin {
            options.margin = m.parse().map_err(ApiError::validation)?;
        }
        if let Some(r) = &req.retrieval {
            options.retrieval = r.parse().map_err(ApiError::validation)?;
        }
        options.threshold = req.threshold;
        let limit = state.config.max_mine_sentences;
        let src_tokens = tokenize_inputs(&state, &req.src, req.truncate, limit)?;
        let tgt_tokens = tokenize_inputs(&state, &req.tgt, req.truncate, limit)?;
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
            let receive = |r: tokio::sync::oneshot::Receiver<self::batcher::JobResult>| async {
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

async fn health(State(state): State<Arc<AppState>>) -> Response {
    let started = Instant::now();
    let result = async {
        // A one-token probe through the real path: tokenizer, queue, model.
        let _probe = embed_texts(&state, &["ok".to_string()], true, 1).await?;
        Ok(Json(serde_json::json!({"status": "ok"})).into_response())
    }
    .await;
    finish(&state, "/health", started, result)
}

async fn info_route(State(state): State<Arc<AppState>>) -> Response {
    Json(state.info.clone()).into_response()
}

async fn metrics_route(State(state): State<Arc<AppState>>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
        .into_response()
}

async fn not_found() -> Response {
    ApiError {
        status: StatusCode::NOT_FOUND,
        kind: "NotFound",
        message: "no such endpoint (see /info)".into(),
    }
    .into_response()
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
