//! The lifecycle states of a task and of an outbox message, mirrored by Postgres enum types
//! (`task_status`, `outbox_status`) so an impossible state cannot be stored.

use serde::{Deserialize, Serialize};

/// Where a parse task stands. `PENDING → RUNNING → COMPLETED | FAILED`; a RUNNING task whose
/// worker died goes back to PENDING when its message is redelivered after its lease expired. A
/// templated task whose mapping needs a person goes `RUNNING → NEEDS_REVIEW`, and back to
/// `PENDING` when the mapping is confirmed (or to `FAILED` when nobody answers in time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, sqlx::Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[sqlx(type_name = "task_status", rename_all = "SCREAMING_SNAKE_CASE")]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TaskStatus {
    Pending,
    Running,
    Completed,
    Failed,
    NeedsReview,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "PENDING",
            TaskStatus::Running => "RUNNING",
            TaskStatus::Completed => "COMPLETED",
            TaskStatus::Failed => "FAILED",
            TaskStatus::NeedsReview => "NEEDS_REVIEW",
        }
    }

    pub fn is_final(self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Failed)
    }
}

/// Where an outbox message stands: `FAILED` means "waiting for a retry at `available_at`", `DEAD`
/// means "retries exhausted, kept for an operator".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, sqlx::Type)]
#[sqlx(type_name = "outbox_status", rename_all = "SCREAMING_SNAKE_CASE")]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OutboxStatus {
    Pending,
    Processing,
    Completed,
    Failed,
    Dead,
}
