//! Events: what the contract tells applications about their tasks and files, and the one JSON
//! object that carries one, whether it is read from the feed, the stream or a webhook. The rows
//! are written by Postgres itself, in the statement that makes the change (see `migrations/`
//! and [`crate::db::events`]).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

crate::code_enum! {
    /// The kinds of event, as they are spelled on the wire and in the `events.type` column.
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    pub enum EventType {
        #[serde(rename = "task.completed")]
        TaskCompleted => "task.completed",
        #[serde(rename = "task.failed")]
        TaskFailed => "task.failed",
        #[serde(rename = "task.needs_review")]
        TaskNeedsReview => "task.needs_review",
        #[serde(rename = "file.deleted")]
        FileDeleted => "file.deleted",
        #[serde(rename = "file.corrected")]
        FileCorrected => "file.corrected",
        #[serde(rename = "file.delivered")]
        FileDelivered => "file.delivered",
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
    pub event_type: EventType,
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
        for &t in EventType::ALL {
            assert_eq!(t.as_str().parse::<EventType>().ok(), Some(t));
            assert_eq!(
                serde_json::to_value(t).ok(),
                Some(serde_json::json!(t.as_str()))
            );
        }
        assert_eq!("task.started".parse::<EventType>().ok(), None);
    }
}
