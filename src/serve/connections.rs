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
//! - an answer's write must make progress within `write_stall_timeout`
//!   ([`WriteStallTimeout`]): a client that sends requests and never reads the answers
//!   fills the socket's buffers, the write blocks, and after that long the connection is
//!   closed (a client that reads slowly but steadily is not cut off);
//! - at most `max_connections` are open at once; further clients wait in the kernel's
//!   accept backlog until one closes.
//!
//! On the shutdown signal the listener closes, idle connections close, and requests in
//! flight finish (the caller bounds how long that may take).

use std::future::Future;
use std::io;
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
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tower::ServiceExt;

/// Limits on each client connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// A request's headers must arrive within this (then the connection is closed).
    pub header_read_timeout: Duration,
    /// A request's body must arrive within this after its headers (then 408).
    pub body_read_timeout: Duration,
    /// A blocked write of an answer must make progress within this (then the
    /// connection is closed).
    pub write_stall_timeout: Duration,
    /// Connections open at once; more wait to be accepted.
    pub max_connections: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            write_stall_timeout: Duration::from_secs(30),
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

/// The error a [`WriteStallTimeout`] stream ends with.
#[derive(Debug, thiserror::Error)]
#[error("the client read none of its answer for {0:?}")]
pub struct WriteStalled(pub Duration);

/// A stream whose writes fail with [`WriteStalled`] (`io::ErrorKind::TimedOut`) once one
/// has stayed blocked for `limit`: the clock starts when a write, flush or shutdown
/// returns pending and stops at the next one that completes.
pub struct WriteStallTimeout<S> {
    inner: S,
    limit: Duration,
    stalled_since: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> WriteStallTimeout<S> {
    pub fn new(inner: S, limit: Duration) -> Self {
        Self {
            inner,
            limit,
            stalled_since: None,
        }
    }

    fn watch<T>(
        &mut self,
        cx: &mut Context<'_>,
        result: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if result.is_ready() {
            self.stalled_since = None;
            return result;
        }
        let limit = self.limit;
        let clock = self
            .stalled_since
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match clock.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                WriteStalled(limit),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteStallTimeout<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteStallTimeout<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.watch(cx, result)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.watch(cx, result)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_flush(cx);
        this.watch(cx, result)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.watch(cx, result)
    }
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
    let write_limit = limits.write_stall_timeout;
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
        let stream = WriteStallTimeout::new(stream, write_limit);
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const LIMIT: Duration = Duration::from_millis(300);

    // Tokio's clock is paused in these tests and jumps when every task waits, so the
    // timings are exact on a loaded machine too.
    #[tokio::test(start_paused = true)]
    async fn a_write_nobody_reads_fails_at_the_limit() {
        let (near, _far) = tokio::io::duplex(1024);
        let mut stream = WriteStallTimeout::new(near, LIMIT);
        let started = tokio::time::Instant::now();
        let error = tokio::time::timeout(LIMIT * 100, stream.write_all(&[7u8; 8192]))
            .await
            .expect("the blocked write fails at its limit, not never")
            .unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut, "{error}");
        assert!(
            error.to_string().contains("read none of its answer"),
            "{error}"
        );
        let took = started.elapsed();
        assert!(took >= LIMIT && took < LIMIT * 2, "{took:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_steady_reader_is_not_cut_off() {
        // Each wait between reads is below the limit; all of them together are well above it.
        let (near, mut far) = tokio::io::duplex(1024);
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            let mut chunk = [0u8; 1024];
            loop {
                tokio::time::sleep(LIMIT / 3).await;
                match far.read(&mut chunk).await.unwrap() {
                    0 => return got,
                    n => got.extend_from_slice(&chunk[..n]),
                }
            }
        });
        let mut stream = WriteStallTimeout::new(near, LIMIT);
        let data: Vec<u8> = (0..8192u32).map(|i| (i % 251) as u8).collect();
        let started = tokio::time::Instant::now();
        stream.write_all(&data).await.unwrap();
        stream.shutdown().await.unwrap();
        drop(stream);
        assert_eq!(reader.await.unwrap(), data);
        assert!(started.elapsed() > LIMIT, "{:?}", started.elapsed());
    }
}
