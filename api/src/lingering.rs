//! Refusals a client can read. When the api answers before it has read a request's body to the
//! end (a 401, a 413 by `Content-Length`, a 415, a 429, a tus `PATCH` refused by its headers),
//! the client may still be sending. Closing the connection then, with bytes of the body still
//! unread in the socket, makes the kernel answer them with a reset, and a reset that reaches the
//! client before it has read the answer destroys the answer: the client sees a broken
//! connection, no status, no code, no `Retry-After` (Python's httpx lost 359 of 400 answers at
//! concurrency 16 so; curl and browsers lose some too).
//!
//! This layer, the outermost, fixes it for every route at once, the way HTTP/1.1 servers do
//! (RFC 9112 §9.6, "lingering close"): an answer given while the body is unfinished says
//! `Connection: close`, and the rest of the body is read and thrown away in the background, at
//! most [`LINGER_BYTES`] and for at most [`LINGER_TIME`], before the connection closes. The
//! bounds keep a client that sends forever from holding anything for long. HTTP/2 needs none of
//! this (a stream is reset alone, and `Connection` is not allowed there).

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{header, HeaderValue, Version};
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt as _;
use http_body::{Frame, SizeHint};

/// Most bytes of an unread body read and dropped after an early answer.
pub const LINGER_BYTES: u64 = 64 * 1024 * 1024;
/// Longest time spent reading them.
pub const LINGER_TIME: Duration = Duration::from_secs(10);

/// The middleware: see the module docs.
pub async fn close_unread(req: Request, next: Next) -> Response {
    let http1 = req.version() <= Version::HTTP_11;
    if !http1 || http_body::Body::is_end_stream(req.body()) {
        return next.run(req).await;
    }
    let ended = Arc::new(AtomicBool::new(false));
    let (parts, body) = req.into_parts();
    let body = Body::new(Lingering {
        inner: Some(body),
        ended: Arc::clone(&ended),
    });
    let mut response = next.run(Request::from_parts(parts, body)).await;
    if !ended.load(Ordering::Acquire) {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// A request body that says when it was read to its end, and that, dropped before then, reads
/// the rest in the background within the bounds.
struct Lingering {
    inner: Option<Body>,
    ended: Arc<AtomicBool>,
}

impl http_body::Body for Lingering {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let polled = Pin::new(inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) {
            self.ended.store(true, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner
            .as_ref()
            .is_none_or(http_body::Body::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), http_body::Body::size_hint)
    }
}

impl Drop for Lingering {
    fn drop(&mut self) {
        let Some(inner) = self.inner.take() else {
            return;
        };
        if http_body::Body::is_end_stream(&inner) {
            self.ended.store(true, Ordering::Release);
            return;
        }
        // Dropped outside a runtime only in a test that builds bodies by hand: nothing to drain.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(drain(inner));
        }
    }
}

/// Reads and drops what is left of `body`, within [`LINGER_BYTES`] and [`LINGER_TIME`].
async fn drain(body: Body) {
    let mut chunks = body.into_data_stream();
    let mut left = LINGER_BYTES;
    let read = async {
        while let Some(Ok(chunk)) = chunks.next().await {
            left = left.saturating_sub(chunk.len() as u64);
            if left == 0 {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(LINGER_TIME, read).await;
}
