//! One request to a hook and its answer: signed per Standard Webhooks like an event delivery
//! (`webhook-id` the batch's id, the same on every retry; a fresh `webhook-timestamp`), sent
//! with webhook delivery's client (no redirect followed, no proxy, names resolved to public
//! addresses only, checked at connect time), within the hook's timeout, and its body read only
//! up to [`MAX_ANSWER_BYTES`]: a 100 MB answer costs a bounded read, not 100 MB.

use std::time::Duration;

use reqwest::header::{HeaderValue, CONTENT_TYPE};
use serde::{Deserialize, Serialize};
use shared::webhooks::{address, signature, SigningSecret};

/// The largest answer read; a longer one is refused (and the batch asked again).
pub const MAX_ANSWER_BYTES: usize = 16 << 20;

/// A hook's `200` answer (contract v1.3).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub errors: Vec<HookError>,
    #[serde(default)]
    pub values: Vec<HookValue>,
}

/// A cell the application finds wrong.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookError {
    pub row: u64,
    pub field: String,
    pub message: String,
    /// The application's own code: the report's `constraint`.
    #[serde(default)]
    pub code: Option<String>,
}

/// A value the application writes back into a cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookValue {
    pub row: u64,
    pub field: String,
    pub value: serde_json::Value,
}

/// What one request is.
pub struct Request<'a> {
    pub url: &'a str,
    /// `<task_id>.<batch>`.
    pub id: &'a str,
    pub secrets: &'a [SigningSecret],
    pub body: &'a [u8],
    pub timeout: Duration,
    pub allow_private: bool,
}

/// POSTs the batch; its answer, or why there is none that can be used (to say in the task's
/// failure if it stays so).
pub async fn post(client: &reqwest::Client, r: &Request<'_>) -> Result<Answer, String> {
    // What no resolver sees: the scheme, and a host that is an address.
    address::check_url(r.url, r.allow_private).map_err(|e| format!("refused: {e}"))?;
    let timestamp = chrono::Utc::now().timestamp();
    let sent = client
        .post(r.url)
        .timeout(r.timeout)
        .header("webhook-id", r.id)
        .header("webhook-timestamp", timestamp.to_string())
        .header(
            "webhook-signature",
            signature::header(r.secrets, r.id, timestamp, r.body),
        )
        .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
        .body(r.body.to_vec())
        .send()
        .await
        .map_err(|e| describe(e, r.timeout))?;
    let status = sent.status();
    if status.as_u16() != 200 {
        return Err(format!("it answered {status}"));
    }
    let body = read_bounded(sent)
        .await
        .map_err(|e| describe(e, r.timeout))??;
    serde_json::from_slice(&body).map_err(|e| format!("its answer is not a hook answer: {e}"))
}

/// The body, unless it is longer than [`MAX_ANSWER_BYTES`].
async fn read_bounded(
    mut resp: reqwest::Response,
) -> Result<Result<Vec<u8>, String>, reqwest::Error> {
    let too_long = || format!("its answer is longer than {MAX_ANSWER_BYTES} bytes");
    if resp
        .content_length()
        .is_some_and(|n| n > MAX_ANSWER_BYTES as u64)
    {
        return Ok(Err(too_long()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Ok(Err(too_long()));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Ok(body))
}

/// A client error without its URL (which may carry the application's token).
fn describe(e: reqwest::Error, timeout: Duration) -> String {
    if e.is_timeout() {
        return format!("no answer within {timeout:?}");
    }
    let e = e.without_url();
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
