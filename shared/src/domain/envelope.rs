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
    fn garbage_and_wrong_event_types_are_malformed() {
        assert!(Envelope::decode("not base64 at all!").is_err());
        assert!(Envelope::decode("{\"message_id\": 1}").is_err());
        let mut env = sample();
        env.event_type = "OTHER".into();
        assert!(env.parse_task().is_err());
    }
}
