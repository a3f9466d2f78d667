//! `lase serve`: an HTTP embedding and mining server (axum + tokio).
//!
//! Endpoints: `POST /embed` (text-embeddings-inference), `POST /v1/embeddings`
//! (OpenAI; float, base64, int8 and binary encodings), `POST /similarity` (TEI),
//! `POST /mine` (margin-scored pairs), `GET /health`, `GET /info`, `GET /metrics`
//! (Prometheus). Requests are coalesced by [`batcher`] into shared forward passes.
//! Every failure is a JSON error with a meaningful status: 400 bad JSON, 404 no such
//! path, 405 a path asked with a method it does not answer, 413 body too large, 415 not
//! JSON, 422 invalid request (unknown field, too many inputs, input too long without
//! `truncate`, a /mine `k` above `--max-mine-k`), 429 queue full (with `Retry-After`),
//! 500 when the request's own forward pass or tokenisation panicked or a pass returned
//! NaN or infinity (caught; other requests and the worker carry on, see [`batcher`]),
//! 503 shutting down; never a panic.

pub mod api;
pub mod batcher;
pub mod connections;
pub mod error;
pub mod metrics;
pub mod routes;
pub mod shared;

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};

use self::api::Info;
use self::batcher::Batcher;
pub use self::error::ApiError;
use self::metrics::Metrics;
use self::shared::AppState;
use crate::inference::{Embedder, EncodeOptions, InferenceEncoder};
use crate::model::SentenceEncoder;

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
    /// Longest one /mine request may take from its arrival (tokenising, queueing,
    /// embedding and the search); past it the request gets 413 and its work still
    /// queued is dropped.
    pub max_mine_time: std::time::Duration,
    /// Largest `k` (neighbours per sentence for the margin) of one /mine request (422
    /// above): the search keeps k candidates per sentence and per search thread, so an
    /// unbounded k over 10,000-sentence sides asks for gigabytes.
    pub max_mine_k: usize,
    /// Token budget of one coalesced inference run.
    pub max_batch_tokens: usize,
    /// Requests waiting for the inference thread before new ones get 429.
    pub max_queued_requests: usize,
    /// Requests tokenised at once (on tokio's blocking threads); others wait for a slot.
    /// A started tokenisation runs to its end even if its client has left, so this
    /// bounds the work such clients leave behind.
    pub max_concurrent_tokenizations: usize,
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
            max_mine_k: 64,
            max_batch_tokens: 16_384,
            max_queued_requests: 512,
            max_concurrent_tokenizations: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            shutdown_timeout: std::time::Duration::from_secs(30),
            connections: connections::ConnectionLimits::default(),
        }
    }
}

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
        None,
        options,
        config,
        shutdown,
    )
    .await
}

/// Called with a request's texts on the blocking thread that hands them to the tokenizer,
/// just before it does: the seam the tests use to hold a tokenisation in progress.
pub type TokenizeHook = Arc<dyn Fn(&[String]) + Send + Sync>;

/// [`serve`] with every forward pass run by `wrap(encoder)` and every tokenisation
/// preceded by `tokenize_hook`: the seams for fault injection (the tests make passes on
/// marked inputs panic or wait, and hold tokenisations).
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    encoder: SentenceEncoder,
    wrap: impl FnOnce(InferenceEncoder) -> Box<dyn Embedder>,
    tokenize_hook: Option<TokenizeHook>,
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
    let probe = tokenizer
        .encode_reporting_truncation(&["ok"])
        .ok()
        .and_then(|mut v| v.pop())
        .map(|(ids, _)| ids)
        .ok_or_else(|| std::io::Error::other("the tokenizer cannot tokenise /health's probe"))?;
    let tokenize_slots = Arc::new(tokio::sync::Semaphore::new(
        config.max_concurrent_tokenizations.max(1),
    ));
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
        tokenize_hook,
        tokenize_slots,
        probe,
        dim,
        model_normalizes,
        config: config.clone(),
        metrics,
        info,
    });
    let app = Router::new()
        // TEI answers POST / as its model's task (here /embed): huggingface_hub's
        // InferenceClient(model=URL).feature_extraction posts there.
        .route("/", post(routes::embed::embed))
        .route("/embed", post(routes::embed::embed))
        .route("/v1/embeddings", post(routes::openai::openai_embeddings))
        .route("/similarity", post(routes::similarity::similarity))
        .route("/mine", post(routes::mine::mine_pairs))
        .route("/health", get(routes::status::health))
        .route("/info", get(routes::status::info_route))
        .route("/metrics", get(routes::status::metrics_route))
        .fallback(routes::status::not_found)
        .method_not_allowed_fallback(routes::status::method_not_allowed)
        .layer(DefaultBodyLimit::max(config.max_body_bytes))
        .layer(axum::middleware::from_fn(refuse_declared_too_large(
            config.max_body_bytes,
        )))
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

/// A request whose `Content-Length` already exceeds `max_body_bytes` is answered 413 at
/// once, before its body is read ([`DefaultBodyLimit`] only stops a body while reading it:
/// a client that declares 100 MB and sends 2 bytes would otherwise wait for the body
/// timeout and get 408).
fn refuse_declared_too_large(
    max_body_bytes: usize,
) -> impl Fn(
    axum::extract::Request,
    axum::middleware::Next,
) -> std::pin::Pin<Box<dyn Future<Output = axum::response::Response> + Send>>
+ Clone
+ Send
+ Sync
+ 'static {
    move |req, next| {
        let declared = req
            .headers()
            .get(axum::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        Box::pin(async move {
            match declared {
                Some(bytes) if bytes > max_body_bytes as u64 => {
                    axum::response::IntoResponse::into_response(error::ApiError::too_large(
                        format!(
                            "the request body declares {bytes} bytes; the limit is {max_body_bytes} (--max-body-bytes)"
                        ),
                    ))
                }
                _ => next.run(req).await,
            }
        })
    }
}
