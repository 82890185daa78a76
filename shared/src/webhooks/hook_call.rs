//! One request to a validation hook and its answer, as the worker (an upload's batches) and the
//! api (a correction's rows) both make it: signed per Standard Webhooks like an event delivery
//! (`webhook-id` the batch's id, the same on every retry; a fresh `webhook-timestamp`), sent
//! with the webhook client ([`super::client`]: no redirect followed, no proxy, names resolved to
//! public addresses only, checked at connect time), within the hook's timeout, and its body read
//! only up to [`MAX_ANSWER_BYTES`]: a 100 MB answer costs a bounded read, not 100 MB.

use std::time::Duration;

use super::{address, signature, SealingKey, SigningSecret};
use crate::db::hooks::HookEndpoint;
use crate::domain::ErrorRecord;
use reqwest::header::{HeaderValue, CONTENT_TYPE};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// A batch's request body (contract v1.3: `rows.validate`); `revision` only when a correction
/// asks.
#[derive(Debug, Serialize)]
pub struct Body<'a> {
    pub r#type: &'static str,
    pub task_id: uuid::Uuid,
    pub source_file_id: uuid::Uuid,
    pub template: &'a str,
    pub template_version: i32,
    pub metadata: Option<&'a serde_json::Value>,
    pub end_user: Option<&'a serde_json::Value>,
    pub batch: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<i32>,
    pub rows: Vec<BodyRow>,
}

#[derive(Debug, Serialize)]
pub struct BodyRow {
    pub row: u64,
    /// The object of the sent fields' values.
    pub values: Box<RawValue>,
}

/// A row's values object for the body: each sent field's value from the row's JSON array of
/// values (in field order), copied as it is; `sent` is each field's name as a JSON string where
/// the hook is sent it.
pub fn values_object(values: &str, sent: &[Option<String>]) -> serde_json::Result<Box<RawValue>> {
    let cells: Vec<&RawValue> = serde_json::from_str(values)?;
    let mut object = String::with_capacity(values.len() + 16 * cells.len());
    object.push('{');
    for (name, value) in sent.iter().zip(cells) {
        let Some(name) = name else { continue };
        if object.len() > 1 {
            object.push(',');
        }
        object.push_str(name);
        object.push(':');
        object.push_str(value.get());
    }
    object.push('}');
    RawValue::from_string(object)
}

/// The longest message of a hook's error kept; a longer one is cut.
const MAX_MESSAGE_CHARS: usize = 1000;

/// A hook's error as a report record (`hook-error`, the application's code as `constraint`):
/// `value` the cell's value, `column` the field's column in the file.
pub fn error_record(
    sheet: i32,
    e: HookError,
    value: Option<String>,
    column: Option<String>,
) -> ErrorRecord {
    ErrorRecord {
        sheet,
        row: i64::try_from(e.row).unwrap_or(i64::MAX),
        column,
        field: Some(e.field),
        value,
        code: "hook-error".into(),
        constraint: e.code,
        message: e.message.chars().take(MAX_MESSAGE_CHARS).collect(),
        transformed: None,
    }
}

/// A stored value as the report's `value`: its text, at most 200 characters.
pub fn value_text(value: &serde_json::Value) -> Option<String> {
    let text = match value {
        serde_json::Value::Null => return None,
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    Some(if text.chars().count() > 200 {
        text.chars().take(199).chain(['…']).collect()
    } else {
        text
    })
}

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

/// The longest code of a hook's error (the report's `constraint` column holds 64).
pub const MAX_CODE_CHARS: usize = 64;

/// Refuses an answer that is not about the batch: a row that was not in it (`rows`), a field
/// it was not sent (`sent` says), or a code the report cannot hold.
pub fn about_the_batch(
    answer: &Answer,
    rows: &std::collections::HashSet<u64>,
    sent: impl Fn(&str) -> bool,
) -> Result<(), String> {
    let cells = answer
        .errors
        .iter()
        .map(|e| (e.row, e.field.as_str()))
        .chain(answer.values.iter().map(|v| (v.row, v.field.as_str())));
    for (row, field) in cells {
        if !rows.contains(&row) {
            return Err(format!(
                "its answer names row {row}, which was not in the batch"
            ));
        }
        if !sent(field) {
            return Err(format!(
                "its answer names the field {field:?}, which it was not sent"
            ));
        }
    }
    match answer
        .errors
        .iter()
        .filter_map(|e| e.code.as_deref())
        .find(|c| c.is_empty() || c.chars().count() > MAX_CODE_CHARS)
    {
        Some(code) => Err(format!(
            "its answer has a code of {} characters, not 1 to {MAX_CODE_CHARS}",
            code.chars().count()
        )),
        None => Ok(()),
    }
}

/// The endpoint's signing secrets: its current one, and the previous one during a rotation.
pub fn secrets(
    key: Option<&SealingKey>,
    endpoint: &HookEndpoint,
) -> Result<Vec<SigningSecret>, String> {
    let key = key.ok_or("WEBHOOK_SECRET_KEY is not set")?;
    let open = |sealed: &[u8]| {
        key.open(endpoint.id, sealed)
            .map_err(|_| "its secret does not open with WEBHOOK_SECRET_KEY".to_owned())
    };
    let mut secrets = vec![open(&endpoint.secret)?];
    if let Some(previous) = &endpoint.previous_secret {
        secrets.push(open(previous)?);
    }
    Ok(secrets)
}
