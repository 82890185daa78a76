//! One request of webhook delivery, with the shared client ([`shared::webhooks::client`]: no
//! redirect, no proxy, public addresses only, checked at connect time), giving up after
//! `WEBHOOK_TIMEOUT`. A URL whose host is an address (which no resolver sees) is checked before
//! the request, as is its scheme.

use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use shared::failure;
use shared::telemetry::propagation;
use shared::webhooks::{address, signature, SigningSecret};

pub use shared::webhooks::client::build;

use super::schedule;

shared::code_enum! {
    /// What one request came to, as the attempt log says it.
    pub enum Outcome {
        /// A 2xx.
        Delivered => "delivered",
        /// Another status.
        Failed => "failed",
        /// No answer within `WEBHOOK_TIMEOUT`.
        Timeout => "timeout",
        /// No answer at all: the connection failed, or the address is not allowed.
        Unreachable => "unreachable",
        /// 410: the endpoint is gone (and is disabled).
        Gone => "gone",
    }
}

/// One request's result.
#[derive(Debug, Clone)]
pub struct Answer {
    pub outcome: Outcome,
    pub status: Option<u16>,
    pub took: Duration,
    /// A 429's or 503's `Retry-After`.
    pub retry_after: Option<Duration>,
    pub error: Option<String>,
}

impl Answer {
    /// The endpoint is down, or refuses us ([`failure::http`]: no answer, 429, 5xx, 410): its
    /// other deliveries are not tried now.
    pub fn endpoint_down(&self) -> bool {
        self.outcome != Outcome::Delivered && failure::http(self.status).spares_the_message()
    }
}

/// The Standard Webhooks headers of one request: `webhook-id`, `webhook-timestamp` (now) and
/// `webhook-signature` with every secret in `secrets`, plus the current trace's `traceparent`.
/// Event deliveries, row deliveries and validation hooks sign alike.
pub fn signed_headers(secrets: &[SigningSecret], id: &str, body: &[u8]) -> HeaderMap {
    let timestamp = chrono::Utc::now().timestamp();
    let mut headers = HeaderMap::new();
    let mut set = |name: &'static str, value: String| {
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.insert(HeaderName::from_static(name), v);
        }
    };
    set("webhook-id", id.to_owned());
    set("webhook-timestamp", timestamp.to_string());
    set(
        "webhook-signature",
        signature::header(secrets, id, timestamp, body),
    );
    if let Some(traceparent) = propagation::current_traceparent() {
        set("traceparent", traceparent);
    }
    headers
}

/// POSTs `body` to `url` with `headers` (as JSON, unless they say another `content-type`); never
/// reads more of the answer than its head (a huge body costs nothing).
pub async fn post(
    client: &reqwest::Client,
    url: &str,
    mut headers: HeaderMap,
    body: Vec<u8>,
    allow_private: bool,
) -> Answer {
    let started = Instant::now();
    let refused = |error: String| Answer {
        outcome: Outcome::Unreachable,
        status: None,
        took: started.elapsed(),
        retry_after: None,
        error: Some(error),
    };
    // What no resolver sees: the scheme, and a host that is an address.
    if let Err(e) = address::check_url(url, allow_private) {
        return refused(format!("refused: {e}"));
    }
    headers
        .entry(CONTENT_TYPE)
        .or_insert(HeaderValue::from_static("application/json"));
    let sent = client.post(url).headers(headers).body(body).send().await;
    let took = started.elapsed();
    match sent {
        Ok(resp) => {
            let status = resp.status();
            let retry_after = (status.as_u16() == 429 || status.as_u16() == 503)
                .then(|| resp.headers().get(RETRY_AFTER))
                .flatten()
                .and_then(|v| v.to_str().ok())
                .and_then(|v| schedule::retry_after(v, chrono::Utc::now()));
            let outcome = match status.as_u16() {
                200..=299 => Outcome::Delivered,
                410 => Outcome::Gone,
                _ => Outcome::Failed,
            };
            Answer {
                outcome,
                status: Some(status.as_u16()),
                took,
                retry_after,
                error: (outcome != Outcome::Delivered).then(|| format!("answered {status}")),
            }
        }
        Err(e) => Answer {
            outcome: if e.is_timeout() {
                Outcome::Timeout
            } else {
                Outcome::Unreachable
            },
            status: None,
            took,
            retry_after: None,
            error: Some(error_chain(&e)),
        },
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}
