//! The queue message the relay sends and the consumer reads: a small JSON envelope naming the
//! outbox message it came from (so duplicates can be recognised), its event type and payload.
//! It is base64-encoded by default because that is what Azure Functions queue triggers and most
//! Azure tooling expect; the consumer accepts both encodings so a change of setting never
//! strands messages already in the queue.

use base64::Engine as _;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The only event type today: parse the file of a task.
pub const PARSE_TASK: &str = "PARSE_TASK";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParseTaskPayload {
    pub task_id: Uuid,
    pub source_file_id: Uuid,
    /// A small file's bytes, base64: the consumer then needs no download. Each storage request
    /// costs (Azurite's single thread is what bounds end-to-end throughput in the benchmarks,
    /// and Azure bills per operation), and most uploads are small. The blob stays the file of
    /// record: content that does not match the source file's size and SHA-256 is ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The upload's W3C `traceparent`: queue messages carry no metadata, so the trace context
    /// travels here. Absent from messages sent before it existed, and when tracing is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

impl ParseTaskPayload {
    /// Files up to this size travel inline: with the envelope's own base64 a message stays near
    /// 11 KiB, far below the queue's 64 KiB.
    pub const INLINE_MAX: usize = 6 * 1024;

    /// The payload of a file whose bytes are `inline` when it is small enough to carry them.
    pub fn new(task_id: Uuid, source_file_id: Uuid, inline: Option<&[u8]>) -> Self {
        Self {
            task_id,
            source_file_id,
            content: inline
                .filter(|bytes| bytes.len() <= Self::INLINE_MAX)
                .map(|bytes| base64::engine::general_purpose::STANDARD.encode(bytes)),
            traceparent: None,
        }
    }

    /// The payload carrying the upload's trace context.
    pub fn with_traceparent(self, traceparent: Option<&str>) -> Self {
        Self {
            traceparent: traceparent.map(str::to_owned),
            ..self
        }
    }

    /// The inline bytes, when they are exactly the recorded file: `size_bytes` long with the
    /// lowercase hex SHA-256 `sha256`.
    pub fn inline_content(&self, size_bytes: i64, sha256: &str) -> Option<Vec<u8>> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(self.content.as_deref()?)
            .ok()?;
        let matches = i64::try_from(bytes.len()).ok() == Some(size_bytes)
            && super::digest::sha256_hex(&bytes) == sha256;
        matches.then_some(bytes)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// The id of the outbox row this message was relayed from.
    pub message_id: Uuid,
    pub event_type: String,
    pub payload: serde_json::Value,
    pub created_at: DateTime<Utc>,
}

/// How envelopes are written into queue message bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum MessageEncoding {
    #[default]
    Base64,
    Text,
}

#[derive(Debug, thiserror::Error)]
pub enum EnvelopeError {
    #[error("message body is neither a JSON envelope nor base64 of one: {0}")]
    Malformed(String),
}

impl Envelope {
    pub fn encode(&self, encoding: MessageEncoding) -> String {
        // Serialising a struct of plain fields cannot fail.
        let json = serde_json::to_string(self).unwrap_or_default();
        match encoding {
            MessageEncoding::Text => json,
            MessageEncoding::Base64 => base64::engine::general_purpose::STANDARD.encode(json),
        }
    }

    /// Reads a body in either encoding: JSON text starts with `{`, which is not a base64 digit.
    pub fn decode(body: &str) -> Result<Self, EnvelopeError> {
        let body = body.trim();
        let json = if body.starts_with('{') {
            body.as_bytes().to_vec()
        } else {
            base64::engine::general_purpose::STANDARD
                .decode(body)
                .map_err(|e| EnvelopeError::Malformed(format!("invalid base64: {e}")))?
        };
        serde_json::from_slice(&json).map_err(|e| EnvelopeError::Malformed(e.to_string()))
    }

    /// The payload of a `PARSE_TASK` envelope, or an error naming what is wrong.
    pub fn parse_task(&self) -> Result<ParseTaskPayload, EnvelopeError> {
        if self.event_type != PARSE_TASK {
            return Err(EnvelopeError::Malformed(format!(
                "unknown event type {:?}",
                self.event_type
            )));
        }
        serde_json::from_value(self.payload.clone())
            .map_err(|e| EnvelopeError::Malformed(format!("bad PARSE_TASK payload: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Envelope {
        Envelope {
            message_id: Uuid::now_v7(),
            event_type: PARSE_TASK.into(),
            payload: serde_json::json!({"task_id": Uuid::nil(), "source_file_id": Uuid::max()}),
            created_at: Utc::now(),
        }
    }

    #[test]
    fn both_encodings_round_trip() {
        let env = sample();
        for enc in [MessageEncoding::Base64, MessageEncoding::Text] {
            assert_eq!(Envelope::decode(&env.encode(enc)).unwrap(), env);
        }
        assert!(!env.encode(MessageEncoding::Base64).contains('{'));
    }

    #[test]
    fn the_parse_task_payload_is_typed() {
        let p = sample().parse_task().unwrap();
        assert_eq!((p.task_id, p.source_file_id), (Uuid::nil(), Uuid::max()));
    }

    #[test]
    fn small_files_travel_inline_and_are_used_only_when_they_match() {
        let bytes = b"id,name\n1,alice\n";
        let len = bytes.len() as i64;
        let p = ParseTaskPayload::new(Uuid::nil(), Uuid::max(), Some(bytes));
        let round_trip: ParseTaskPayload =
            serde_json::from_value(serde_json::to_value(&p).unwrap()).unwrap();
        assert_eq!(round_trip, p);
        let real_sha = crate::domain::digest::sha256_hex(bytes);
        assert_eq!(
            p.inline_content(len, &real_sha).as_deref(),
            Some(&bytes[..])
        );
        // Another size or hash: the blob is read instead.
        assert_eq!(p.inline_content(len - 1, &real_sha), None);
        assert_eq!(p.inline_content(len, &"0".repeat(64)), None);

        let big = vec![b'x'; ParseTaskPayload::INLINE_MAX + 1];
        let p = ParseTaskPayload::new(Uuid::nil(), Uuid::max(), Some(&big));
        assert_eq!(p.content, None);
        // Payloads without content (all written before this field) read as before.
        let old: ParseTaskPayload = sample().parse_task().unwrap();
        assert_eq!(old.content, None);
        assert!(!serde_json::to_string(&old).unwrap().contains("content"));
    }

    #[test]
    fn garbage_and_wrong_event_types_are_malformed() {
        assert!(Envelope::decode("not base64 at all!").is_err());
        assert!(Envelope::decode("{\"message_id\": 1}").is_err());
        let mut env = sample();
        env.event_type = "OTHER".into();
        assert!(env.parse_task().is_err());
    }
}
