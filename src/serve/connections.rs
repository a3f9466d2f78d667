//! The server's connections: the accept loop, the limits that keep slow clients
//! (slowloris) from holding the server, and graceful shutdown.
//!
//! `axum::serve` sets no timer on hyper, so a client that sends its headers one byte at a
//! time, or a body slower than that, holds its connection (a task and a file descriptor)
//! for as long as it likes. Here:
//! - request headers must arrive within `header_read_timeout` (hyper's, with a tokio
//!   timer), or the connection is closed;
//! - a request body must arrive within `body_read_timeout` from the end of its headers,
//!   or the request is answered 408 ([`TimedBody`]);
//! - at most `max_connections` are open at once; further clients wait in the kernel's
//!   accept backlog until one closes.
//!
//! On the shutdown signal the listener closes, idle connections close, and requests in
//! flight finish (the caller bounds how long that may take).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use bytes::Bytes;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tower::ServiceExt;

/// Limits on each client connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// A request's headers must arrive within this (then the connection is closed).
    pub header_read_timeout: Duration,
    /// A request's body must arrive within this after its headers (then 408).
    pub body_read_timeout: Duration,
    /// Connections open at once; more wait to be accepted.
    pub max_connections: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            max_connections: 1024,
        }
    }
}

/// The error a [`TimedBody`] ends with when its time is up.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {0:?}")]
pub struct BodyReadTimeout(pub Duration);

/// A request body that fails with [`BodyReadTimeout`] once its deadline passes.
pub struct TimedBody {
    inner: Body,
    deadline: Pin<Box<tokio::time::Sleep>>,
    limit: Duration,
}

impl TimedBody {
    pub fn new(inner: Body, limit: Duration) -> Self {
        Self {
            inner,
            deadline: Box::pin(tokio::time::sleep(limit)),
            limit,
        }
    }
}

impl http_body::Body for TimedBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyReadTimeout(self.limit))))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Whether `error` or one of its sources is a [`BodyReadTimeout`].
pub fn is_body_timeout(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(e) = current {
        if e.is::<BodyReadTimeout>() {
            return true;
        }
        current = e.source();
    }
    false
}

/// Accepts connections on `listener` and serves `app` on each until `shutdown`
/// resolves; then stops accepting and waits for the connections to finish their
/// requests in flight.
pub async fn serve_connections(
    listener: tokio::net::TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) {
    let graceful = GracefulShutdown::new();
    let permits = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let body_limit = limits.body_read_timeout;
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors, say: wait a little instead of spinning.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let service = tower::service_fn(move |req: Request<hyper::body::Incoming>| {
            let req = req.map(|b| Body::new(TimedBody::new(Body::new(b), body_limit)));
            app.clone().oneshot(req)
        });
        let connection =
            builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!("connection ended: {e}");
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}
