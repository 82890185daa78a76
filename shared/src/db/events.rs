//! `events`: what happened to a tenant's tasks and files, in the order it committed. The rows are
//! written by Postgres in the statement that makes the change (a trigger on the task's status, the
//! file delete's own statement), so there is nothing here that writes one. A reader first calls
//! [`sequence`], which gives the events committed since the last call their feed `position`, in
//! commit order; it then pages by position, and never passes an event that commits later.

use chrono::{DateTime, Utc};
use sqlx::PgExecutor;
use uuid::Uuid;

use crate::domain::event::{EventType, EventView};

crate::text_column!(EventType);

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: Uuid,
    pub position: Option<i64>,
    pub tenant_id: String,
    pub event_type: EventType,
    pub source_file_id: Uuid,
    pub task_id: Uuid,
    // Left as JSON: SQL writes it (`task_event_data`, the file delete) and the feed, the stream
    // and the webhooks pass it on as written; `tests/it/events` holds its shape.
    pub data: serde_json::Value,
    pub trace_id: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl Event {
    /// The contract's event object.
    pub fn view(&self) -> EventView {
        EventView {
            id: self.id,
            event_type: self.event_type,
            timestamp: self.created_at,
            data: self.data.clone(),
        }
    }
}

/// Gives every committed event without a position one, in commit order (one stamper at a time,
/// under an advisory lock: see `events_sequence()` in the migrations). Returns how many it
/// stamped. Cheap when there is nothing to stamp: one probe of a partial index.
pub async fn sequence(db: impl PgExecutor<'_>) -> sqlx::Result<i64> {
    sqlx::query_scalar!(r#"SELECT events_sequence() AS "stamped!""#)
        .fetch_one(db)
        .await
}

/// The feed position of the tenant's event `id`; `None` for an unknown id, another tenant's, one
/// that retention removed, or one not sequenced yet.
pub async fn position_of(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    id: Uuid,
) -> sqlx::Result<Option<i64>> {
    let position = sqlx::query_scalar!(
        "SELECT position FROM events WHERE id = $1 AND tenant_id = $2",
        id,
        tenant_id
    )
    .fetch_optional(db)
    .await?;
    Ok(position.flatten())
}

/// Up to `limit` of the tenant's sequenced events after `position` (0: from the first), in order.
pub async fn after(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    position: i64,
    limit: i64,
) -> sqlx::Result<Vec<Event>> {
    sqlx::query_as!(
        Event,
        r#"SELECT id, position, tenant_id, type AS "event_type: EventType", source_file_id, task_id, data,
                  trace_id, created_at
           FROM events
           WHERE tenant_id = $1 AND position > $2
           ORDER BY position
           LIMIT $3"#,
        tenant_id,
        position,
        limit
    )
    .fetch_all(db)
    .await
}

/// The position of the tenant's last sequenced event (0 when it has none): where a stream that
/// starts "from now" begins.
pub async fn last_position(db: impl PgExecutor<'_>, tenant_id: &str) -> sqlx::Result<i64> {
    let last = sqlx::query_scalar!(
        "SELECT max(position) FROM events WHERE tenant_id = $1 AND position IS NOT NULL",
        tenant_id
    )
    .fetch_one(db)
    .await?;
    Ok(last.unwrap_or(0))
}

/// Every event of a source file, oldest first (sequenced or not): what a test or an operator
/// reads to see what a file's changes announced.
pub async fn for_source_file(
    db: impl PgExecutor<'_>,
    source_file_id: Uuid,
) -> sqlx::Result<Vec<Event>> {
    sqlx::query_as!(
        Event,
        r#"SELECT id, position, tenant_id, type AS "event_type: EventType", source_file_id, task_id, data,
                  trace_id, created_at
           FROM events WHERE source_file_id = $1
           ORDER BY created_at, id"#,
        source_file_id
    )
    .fetch_all(db)
    .await
}
