//! Every failure of a request as a JSON body with a meaningful status (see the status
//! list in [`super`]); never a panic.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::api::ErrorBody;
use super::batcher::EnqueueError;
use super::connections;

/// A JSON error response.
#[derive(Debug)]
pub struct ApiError {
    pub(crate) status: StatusCode,
    pub(crate) kind: &'static str,
    pub(crate) message: String,
}

impl ApiError {
    pub(crate) fn validation(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            kind: "Validation",
            message: message.into(),
        }
    }

    pub(crate) fn too_large(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            kind: "PayloadTooLarge",
            message: message.into(),
        }
    }

    pub(crate) fn time_limit(bound: std::time::Duration) -> Self {
        Self {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            kind: "TimeLimit",
            message: format!(
                "the request did not finish within the per-request time limit of {:.1} s; send fewer sentences",
                bound.as_secs_f64()
            ),
        }
    }

    pub(crate) fn backend(message: impl Into<String>) -> Self {
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
