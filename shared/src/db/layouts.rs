//! A person's layout override (`PUT /api/v1/tasks/{id}/layout`): the task goes back to
//! `PENDING` with the override, an outbox message sends it to a consumer again, and what the
//! last parse stored (rows, sheets, error report, their usage) goes, all in one transaction, so
//! the file is exactly as a fresh upload waiting for its parse, and the next parse stores its
//! rows once ([`requeue`]). The worker reads the override back with each attempt, as
//! [`super::tasks::start`] takes the task.

use sqlx::types::Json;
use sqlx::PgConnection;
use uuid::Uuid;

use super::outbox::DEFAULT_MAX_ATTEMPTS;
use crate::domain::layout_override::LayoutOverride;
use crate::domain::{ParseTaskPayload, TaskStatus, PARSE_TASK};

/// A layout override to apply.
pub struct Requeue<'a> {
    pub task_id: Uuid,
    pub source_file_id: Uuid,
    /// The status the override was checked against: the task must still be in it.
    pub status: TaskStatus,
    pub layout: &'a LayoutOverride,
    pub message_id: Uuid,
    /// The request's trace, continued by the relay and the consumer.
    pub traceparent: Option<&'a str>,
}

/// Sends the task back to `PENDING` with `r.layout` and a new outbox message, and deletes what
/// its last parse stored. Only a task still in `r.status` moves, and only from a state that
/// accepts an override (`COMPLETED`, `NEEDS_REVIEW`, `FAILED` with `validation_failed`); its
/// timeline starts again (relayed and received anew), its confirmed mapping goes (the header
/// may now name other columns). `false`: the task moved meanwhile, nothing was changed. Meant
/// for a transaction: the caller commits.
pub async fn requeue(conn: &mut PgConnection, r: &Requeue<'_>) -> sqlx::Result<bool> {
    let payload =
        ParseTaskPayload::new(r.task_id, r.source_file_id, None).with_traceparent(r.traceparent);
    let payload = serde_json::to_value(&payload).map_err(|e| sqlx::Error::Encode(e.into()))?;
    let done = sqlx::query!(
        r#"WITH requeued AS (
               UPDATE tasks
               SET status = 'PENDING', layout_override = $4, result = NULL,
                   error_code = NULL, error_message = NULL, finished_at = NULL,
                   confirmed_mapping = NULL, review_requested_at = NULL,
                   relayed_at = NULL, received_at = NULL,
                   progress_rows = NULL, progress_bytes = NULL, progress_at = NULL
               WHERE id = $1 AND source_file_id = $2 AND status = $3
                 AND status IN ('COMPLETED', 'NEEDS_REVIEW', 'FAILED')
                 AND (status <> 'FAILED' OR error_code = 'validation_failed')
               RETURNING id
           )
           INSERT INTO outbox_messages (id, event_type, payload, max_attempts, tenant_id)
           SELECT $5, $6, $7, $8, f.tenant_id
           FROM requeued, source_files f WHERE f.id = $2"#,
        r.task_id,
        r.source_file_id,
        r.status as TaskStatus,
        Json(r.layout) as _,
        r.message_id,
        PARSE_TASK,
        payload,
        DEFAULT_MAX_ATTEMPTS
    )
    .execute(&mut *conn)
    .await?;
    if done.rows_affected() != 1 {
        return Ok(false);
    }
    forget_parse(conn, r.source_file_id).await?;
    Ok(true)
}

/// Deletes what a parse of file `id` stored: its row chunks, sheets, error records, rejected
/// rows and what they took (the tenant's sums follow by trigger), and the corrections made to
/// that parse's report.
async fn forget_parse(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<()> {
    sqlx::query!(
        "DELETE FROM parsed_row_chunks WHERE source_file_id = $1",
        id
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!("DELETE FROM parsed_sheets WHERE source_file_id = $1", id)
        .execute(&mut *conn)
        .await?;
    sqlx::query!(
        "DELETE FROM validation_errors WHERE source_file_id = $1",
        id
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!("DELETE FROM rejected_rows WHERE source_file_id = $1", id)
        .execute(&mut *conn)
        .await?;
    sqlx::query!("DELETE FROM file_row_usage WHERE source_file_id = $1", id)
        .execute(&mut *conn)
        .await?;
    // Corrections were made to the report of the parse being replaced: its rows, its key
    // index and its revisions go with it (the new parse starts at revision 0).
    sqlx::query!("DELETE FROM corrected_rows WHERE source_file_id = $1", id)
        .execute(&mut *conn)
        .await?;
    sqlx::query!("DELETE FROM file_corrections WHERE source_file_id = $1", id)
        .execute(&mut *conn)
        .await?;
    sqlx::query!("DELETE FROM file_revisions WHERE source_file_id = $1", id)
        .execute(&mut *conn)
        .await?;
    sqlx::query!("DELETE FROM file_keys WHERE source_file_id = $1", id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}
