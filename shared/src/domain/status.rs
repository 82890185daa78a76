//! The lifecycle states of a task and of an outbox message, mirrored by Postgres enum types
//! (`task_status`, `outbox_status`) so an impossible state cannot be stored.

crate::code_enum! {
    /// Where a parse task stands. `PENDING → RUNNING → COMPLETED | FAILED`; a RUNNING task whose
    /// worker died goes back to PENDING when its message is redelivered after its lease expired. A
    /// templated task whose mapping needs a person goes `RUNNING → NEEDS_REVIEW`, and back to
    /// `PENDING` when the mapping is confirmed (or to `FAILED` when nobody answers in time).
    #[derive(sqlx::Type)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[sqlx(type_name = "task_status", rename_all = "SCREAMING_SNAKE_CASE")]
    pub enum TaskStatus as "SCREAMING_SNAKE_CASE" {
        Pending => "PENDING",
        Running => "RUNNING",
        Completed => "COMPLETED",
        Failed => "FAILED",
        NeedsReview => "NEEDS_REVIEW",
    }
}

impl TaskStatus {
    pub fn is_final(self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Failed)
    }
}

crate::code_enum! {
    /// Where an outbox message stands: `FAILED` means "waiting for a retry at `available_at`",
    /// `DEAD` means "retries exhausted, kept for an operator".
    #[derive(sqlx::Type)]
    #[sqlx(type_name = "outbox_status", rename_all = "SCREAMING_SNAKE_CASE")]
    pub enum OutboxStatus as "SCREAMING_SNAKE_CASE" {
        Pending => "PENDING",
        Processing => "PROCESSING",
        Completed => "COMPLETED",
        Failed => "FAILED",
        Dead => "DEAD",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_names_are_the_codes() {
        for &s in TaskStatus::ALL {
            assert_eq!(
                serde_json::to_value(s).ok(),
                Some(serde_json::json!(s.as_str()))
            );
        }
        for &s in OutboxStatus::ALL {
            assert_eq!(
                serde_json::to_value(s).ok(),
                Some(serde_json::json!(s.as_str()))
            );
        }
    }
}
