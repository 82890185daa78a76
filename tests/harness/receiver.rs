//! A webhook receiver for the tests: a real HTTP server on loopback that records every request
//! (headers, body, when) and answers as the test says ([`Answer`]): 2xx, another status with or
//! without `Retry-After`, a redirect, a huge body, or no answer at all. It can be stopped and
//! started again on the same port (a receiver that is down, then back). Its `url` is `http` on
//! loopback, so tests register it with private networks allowed.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// How the receiver answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Status(u16),
    /// A status with `Retry-After: <seconds>`.
    RetryAfter(u16, u64),
    /// `302` to this location.
    Redirect(String),
    /// `200` with a body of this many bytes, streamed.
    Huge(usize),
    /// Nothing, ever (the client times out).
    Hang,
    /// `204` after this long.
    Slow(Duration),
}

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: HashMap<String, String>,
    pub body: Bytes,
    pub at: Instant,
    /// The wall clock, to compare with times Postgres wrote on this machine.
    pub wall: chrono::DateTime<chrono::Utc>,
    /// What it answered.
    pub answered: Answer,
}

impl Received {
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", String::as_str)
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

#[derive(Default)]
struct State {
    received: Mutex<Vec<Received>>,
    /// Requests being answered now, and the most there have been at once.
    open: Mutex<(usize, usize)>,
    /// Answers for the next requests, in order; then `then`.
    script: Mutex<(Vec<Answer>, Option<Answer>)>,
}

pub struct Receiver {
    pub addr: SocketAddr,
    state: Arc<State>,
    stop: Mutex<CancellationToken>,
}

impl Receiver {
    /// A receiver answering `200` until told otherwise.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let receiver = Self {
            addr,
            state: Arc::default(),
            stop: Mutex::new(CancellationToken::new()),
        };
        receiver.serve(listener);
        receiver
    }

    fn serve(&self, listener: TcpListener) {
        let stop = CancellationToken::new();
        *self.stop.lock().expect("lock") = stop.clone();
        let state = Arc::clone(&self.state);
        let app = axum::Router::new().fallback(move |headers: HeaderMap, body: Bytes| {
            let state = Arc::clone(&state);
            async move { answer(&state, headers, body).await }
        });
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move { stop.cancelled().await })
                .await;
        });
    }

    /// `http://127.0.0.1:<port>/hook`.
    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    /// Answer `answers` to the next requests, then `then` to every other.
    pub fn script(&self, answers: Vec<Answer>, then: Answer) {
        *self.state.script.lock().expect("lock") = (answers, Some(then));
    }

    /// Stops listening: connections are refused until [`Receiver::restart`].
    pub fn stop(&self) {
        self.stop.lock().expect("lock").cancel();
    }

    /// Listens again on the same port.
    pub async fn restart(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let listener = loop {
            match TcpListener::bind(self.addr).await {
                Ok(l) => break l,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("cannot listen on {} again: {e}", self.addr),
            }
        };
        self.serve(listener);
    }

    /// The most requests it was answering at once.
    pub fn most_at_once(&self) -> usize {
        self.state.open.lock().expect("lock").1
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.received.lock().expect("lock").clone()
    }

    /// Waits until `n` requests came (failing the test after `within`); returns them all.
    pub async fn wait_for(&self, n: usize, within: Duration) -> Vec<Received> {
        crate::worker::eventually_some(within, &format!("{n} webhook requests"), || async {
            let got = self.received();
            (got.len() >= n).then_some(got)
        })
        .await
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Ok(stop) = self.stop.lock() {
            stop.cancel();
        }
    }
}

async fn answer(state: &State, headers: HeaderMap, body: Bytes) -> Response {
    let answered = {
        let mut script = state.script.lock().expect("lock");
        if script.0.is_empty() {
            script.1.clone().unwrap_or(Answer::Status(200))
        } else {
            script.0.remove(0)
        }
    };
    let headers = headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                v.to_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    state.received.lock().expect("lock").push(Received {
        headers,
        body,
        at: Instant::now(),
        wall: chrono::Utc::now(),
        answered: answered.clone(),
    });
    let status = |code: u16| StatusCode::from_u16(code).expect("a status");
    match answered {
        Answer::Status(code) => status(code).into_response(),
        Answer::RetryAfter(code, secs) => {
            (status(code), [("retry-after", secs.to_string())]).into_response()
        }
        Answer::Redirect(location) => (StatusCode::FOUND, [("location", location)]).into_response(),
        Answer::Huge(bytes) => {
            let chunk = Bytes::from(vec![b'x'; 64 * 1024]);
            let chunks = bytes.div_ceil(chunk.len());
            let stream = futures::stream::iter(
                (0..chunks).map(move |_| Ok::<_, std::io::Error>(chunk.clone())),
            );
            axum::body::Body::from_stream(stream).into_response()
        }
        Answer::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            StatusCode::OK.into_response()
        }
        Answer::Slow(wait) => {
            {
                let mut open = state.open.lock().expect("lock");
                open.0 += 1;
                open.1 = open.1.max(open.0);
            }
            tokio::time::sleep(wait).await;
            state.open.lock().expect("lock").0 -= 1;
            StatusCode::NO_CONTENT.into_response()
        }
    }
}
