//! A validation hook's receiver for the tests: a real HTTP server on loopback that records every
//! request and answers each with what the test's function makes of it (the request's JSON and
//! how many came before): a JSON answer, a redirect, a body of any size streamed, or none.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// What the receiver answers to one request.
pub enum Reply {
    Json(u16, Value),
    /// `302` to this location.
    Redirect(String),
    /// `200` with this many bytes of `x`, streamed.
    Huge(usize),
    /// Nothing, ever.
    Hang,
}

type Replies = dyn Fn(usize, &Value) -> Reply + Send + Sync;

/// One request: its headers (the Standard Webhooks three) and body.
#[derive(Debug, Clone)]
pub struct Request {
    pub id: String,
    pub timestamp: String,
    pub signature: String,
    pub body: String,
}

impl Request {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("a JSON body")
    }
}

pub struct HookReceiver {
    pub addr: SocketAddr,
    received: Arc<Mutex<Vec<Request>>>,
    stop: CancellationToken,
}

impl HookReceiver {
    pub async fn start(replies: impl Fn(usize, &Value) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let received: Arc<Mutex<Vec<Request>>> = Arc::default();
        let replies: Arc<Replies> = Arc::new(replies);
        let stop = CancellationToken::new();
        let log = Arc::clone(&received);
        let app = axum::Router::new().fallback(move |headers: HeaderMap, body: Bytes| {
            let (log, replies) = (Arc::clone(&log), Arc::clone(&replies));
            async move { answer(&log, &*replies, &headers, &body).await }
        });
        let stopped = stop.clone();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move { stopped.cancelled().await })
                .await;
        });
        Self {
            addr,
            received,
            stop,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/validate", self.addr)
    }

    pub fn received(&self) -> Vec<Request> {
        self.received.lock().expect("lock").clone()
    }
}

impl Drop for HookReceiver {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn answer(
    log: &Mutex<Vec<Request>>,
    replies: &Replies,
    headers: &HeaderMap,
    body: &Bytes,
) -> Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let request = Request {
        id: header("webhook-id"),
        timestamp: header("webhook-timestamp"),
        signature: header("webhook-signature"),
        body: String::from_utf8_lossy(body).into_owned(),
    };
    let json: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let before = {
        let mut log = log.lock().expect("lock");
        log.push(request);
        log.len() - 1
    };
    match replies(before, &json) {
        Reply::Json(status, value) => (
            StatusCode::from_u16(status).expect("a status"),
            axum::Json(value),
        )
            .into_response(),
        Reply::Redirect(location) => (StatusCode::FOUND, [("location", location)]).into_response(),
        Reply::Huge(bytes) => {
            let chunk = Bytes::from(vec![b'x'; 64 * 1024]);
            let chunks = bytes.div_ceil(chunk.len());
            let stream = futures::stream::iter(
                (0..chunks).map(move |_| Ok::<_, std::io::Error>(chunk.clone())),
            );
            axum::body::Body::from_stream(stream).into_response()
        }
        Reply::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            StatusCode::OK.into_response()
        }
    }
}
