//! Events: what the contract tells applications about their tasks and files, and the one JSON
//! object that carries one, whether it is read from the feed, the stream or a webhook. The rows
//! are written by Postgres itself, in the statement that makes the change (see `migrations/`
//! and [`crate::db::events`]).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The kinds of event, as they are spelled on the wire and in the `events.type` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum EventType {
    #[serde(rename = "task.completed")]
    TaskCompleted,
    #[serde(rename = "task.failed")]
    TaskFailed,
    #[serde(rename = "task.needs_review")]
    TaskNeedsReview,
    #[serde(rename = "file.deleted")]
    FileDeleted,
}

impl EventType {
    pub const ALL: [EventType; 4] = [
        EventType::TaskCompleted,
        EventType::TaskFailed,
        EventType::TaskNeedsReview,
        EventType::FileDeleted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventType::TaskCompleted => "task.completed",
            EventType::TaskFailed => "task.failed",
            EventType::TaskNeedsReview => "task.needs_review",
            EventType::FileDeleted => "file.deleted",
        }
    }

    pub fn parse(s: &str) -> Option<EventType> {
        EventType::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

impl std::fmt::Display for EventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An event as the contract spells it: `{"id", "type", "timestamp", "data"}`. Its `data` is
/// `{"task_id", "source_file_id", "status", "error": null|{"code", "message"}, "summary":
/// null|{"rows_total", "rows_valid", "rows_rejected"}}`, built by Postgres when the event is
/// written and never changed after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EventView {
    /// Never changes: a webhook's `webhook-id`, the stream's `id:`, the feed's cursor.
    pub id: Uuid,
    #[serde(rename = "type")]
    pub event_type: String,
    /// When the change was written.
    pub timestamp: DateTime<Utc>,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub data: serde_json::Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_reads_back_from_its_wire_name() {
        for t in EventType::ALL {
            assert_eq!(EventType::parse(t.as_str()), Some(t));
            assert_eq!(
                serde_json::to_value(t).ok(),
                Some(serde_json::json!(t.as_str()))
            );
        }
        assert_eq!(EventType::parse("task.started"), None);
    }
}
