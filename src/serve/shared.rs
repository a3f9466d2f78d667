//! What the handlers share: the server state, and the request path every embedding
//! endpoint takes (limits and tokenization, the batcher, optional truncation of
//! dimensions and renormalisation), with per-route metrics.

use std::sync::Arc;
use std::time::Instant;

use axum::response::{IntoResponse, Response};
use tch::{Kind, Tensor};

use super::api::Info;
use super::batcher::{Batcher, panic_message};
use super::error::ApiError;
use super::metrics::Metrics;
use super::{ServeConfig, TokenizeHook};
use crate::tokenizer::{SentenceTokenizer, TokenIds};

/// A handler's result before it becomes a response.
pub(crate) type ApiResult = Result<Response, ApiError>;

/// What every handler shares.
pub(crate) struct AppState {
    pub(crate) batcher: Batcher,
    pub(crate) tokenizer: SentenceTokenizer,
    pub(crate) tokenize_hook: Option<TokenizeHook>,
    /// One permit per tokenisation allowed to run at once.
    pub(crate) tokenize_slots: Arc<tokio::sync::Semaphore>,
    /// The token ids of /health's probe text, tokenised once at start: the probe goes
    /// through the queue and the model, not through the tokenisation slots.
    pub(crate) probe: TokenIds,
    pub(crate) dim: usize,
    pub(crate) model_normalizes: bool,
    pub(crate) config: ServeConfig,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) info: Info,
}

/// Records the request in the metrics and turns an error into its JSON response.
pub(crate) fn finish(
    state: &AppState,
    route: &str,
    started: Instant,
    result: ApiResult,
) -> Response {
    let response = result.unwrap_or_else(IntoResponse::into_response);
    state.metrics.record_request(
        route,
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    response
}

/// How a request names its i-th text in an error: `inputs[3]`, `tgt[0]`,
/// `source_sentence`.
pub(crate) type InputName<'a> = &'a (dyn Fn(usize) -> String + Sync);

/// Names the i-th text as element i of the request's field `field`, or as the field
/// itself when it held `one` string rather than a list.
pub(crate) fn element_of(field: &str, one: bool) -> impl Fn(usize) -> String + Sync + '_ {
    move |i| {
        if one {
            field.to_owned()
        } else {
            format!("{field}[{i}]")
        }
    }
}

/// What a route does with a text longer than the model's maximum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TooLong {
    /// Cut it (the request's `"truncate": true`).
    Cut,
    /// Refuse it, saying that `"truncate": true` would cut it.
    Refuse,
    /// Refuse it; the route has no `truncate` field (OpenAI's).
    RefuseWithoutOption,
}

impl TooLong {
    /// From a request's `truncate` field.
    pub(crate) fn from_request(truncate: bool) -> Self {
        if truncate { Self::Cut } else { Self::Refuse }
    }
}

/// Tokenizes, checks limits, runs the sentences through the batcher: [n, dim] vectors
/// (model output, not yet renormalised) and the token count.
pub(crate) async fn embed_texts(
    state: &Arc<AppState>,
    texts: &[String],
    too_long: TooLong,
    limit: usize,
    name: InputName<'_>,
) -> Result<(Tensor, usize), ApiError> {
    let tokens = tokenize_inputs(state, texts, too_long, limit, name).await?;
    embed_tokens(state, tokens).await
}

/// The inputs' token ids, after the count, emptiness and length checks; an error names
/// the text by `name`. Texts of at most [`INLINE_TOKENIZE_BYTES`] together are tokenised
/// on the calling thread (microseconds). Larger requests are CPU work (a text of megabytes
/// is tokenised whole before it is cut): a blocking thread of tokio's hands them to the
/// tokenizer (whose batch work runs on rayon's pool), so the HTTP runtime's threads stay
/// free to accept and answer other requests meanwhile; at most
/// `ServeConfig::max_concurrent_tokenizations` run at once, other requests wait for a slot.
pub(crate) async fn tokenize_inputs(
    state: &Arc<AppState>,
    texts: &[String],
    too_long: TooLong,
    limit: usize,
    name: InputName<'_>,
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
    // A few short texts (a one-sentence request, the usual load) are tokenised on this
    // thread: microseconds of work, less than handing them to a blocking thread and
    // rayon's pool and back.
    let encoded = if state.tokenize_hook.is_none()
        && texts.iter().map(String::len).sum::<usize>() <= INLINE_TOKENIZE_BYTES
    {
        // A panic in the tokenizer is answered as one on a blocking thread is (500).
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            state.tokenizer.encode_serial_reporting_truncation(texts)
        }))
        .map_err(|payload| tokenizing_panicked(texts.len(), &panic_message(payload.as_ref())))?
        .map_err(|e| ApiError::validation(e.to_string()))?
    } else {
        tokenize_elsewhere(state, texts).await?
    };
    if too_long != TooLong::Cut
        && let Some(i) = encoded.iter().position(|(_, cut)| *cut)
    {
        let remedy = match too_long {
            TooLong::Refuse => "send \"truncate\": true to cut it",
            _ => "shorten it (this route has no truncate option)",
        };
        return Err(ApiError::validation(format!(
            "{} is longer than the model's maximum of {} tokens; {remedy}",
            name(i),
            state.tokenizer.max_length()
        )));
    }
    Ok(encoded.into_iter().map(|(t, _)| t).collect())
}

/// Requests whose texts add up to at most this many bytes are tokenised on the HTTP
/// runtime's thread; larger ones on a blocking thread (see [`tokenize_inputs`]).
pub(crate) const INLINE_TOKENIZE_BYTES: usize = 1024;

/// Tokenises texts on one of tokio's blocking threads (the tokenizer's batch work on
/// rayon's pool), holding one of the server's tokenisation slots: a large request does
/// not hold up the threads that accept and answer other requests.
async fn tokenize_elsewhere(
    state: &Arc<AppState>,
    texts: &[String],
) -> Result<Vec<(TokenIds, bool)>, ApiError> {
    // A slot first (waited for here, so a client that leaves while waiting costs
    // nothing); a started tokenisation cannot be cancelled, so the slots are what bound
    // the work that clients who already left can still cause.
    let slot = Arc::clone(&state.tokenize_slots)
        .acquire_owned()
        .await
        .map_err(|_| ApiError::backend("the server is shutting down"))?;
    let shared = Arc::clone(state);
    let owned = texts.to_vec();
    tokio::task::spawn_blocking(move || {
        let _slot = slot;
        if let Some(hook) = &shared.tokenize_hook {
            hook(&owned);
        }
        shared.tokenizer.encode_reporting_truncation(&owned)
    })
    .await
    .map_err(|e| {
        let message = match e.try_into_panic() {
            Ok(payload) => panic_message(payload.as_ref()),
            Err(e) => e.to_string(),
        };
        tokenizing_panicked(texts.len(), &message)
    })?
    .map_err(|e| ApiError::validation(e.to_string()))
}

/// A tokenisation that panicked, on whichever thread: logged, and answered 500 with the
/// panic's message.
fn tokenizing_panicked(inputs: usize, message: &str) -> ApiError {
    tracing::error!("tokenising {inputs} inputs panicked: {message}");
    ApiError::backend(format!("tokenising the inputs panicked: {message}"))
}

/// Embeds tokenised inputs through the batcher; also their token count.
pub(crate) async fn embed_tokens(
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
pub(crate) fn shape_vectors(
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

/// Rows of [n, d] as vectors.
pub(crate) fn rows(v: &Tensor) -> Vec<Vec<f32>> {
    let v = v.to_kind(Kind::Float).contiguous();
    let (n, d) = (v.size()[0] as usize, v.size()[1] as usize);
    let mut flat = vec![0f32; n * d];
    v.copy_data(&mut flat, n * d);
    flat.chunks(d.max(1)).map(|r| r.to_vec()).collect()
}
