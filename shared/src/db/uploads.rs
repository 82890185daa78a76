//! An upload's three rows: its source file, its `PENDING` task and the outbox message that will
//! announce the task, written by one statement. A statement is atomic on its own, so all three
//! exist or none do, as with a transaction; but it takes one round trip to Postgres where the
//! transaction took five (BEGIN, three INSERTs, COMMIT), and each round trip wakes both the api
//! and a Postgres backend. The task's foreign key is checked at the end of the statement, after
//! its file row is in.
//!
//! The same statement checks the tenant's storage quota: it locks the tenant's `tenant_usage` row
//! (which the `source_files_usage` trigger then raises by the file's size), so two uploads cannot
//! both take the last of a quota, and the lock is held for this one statement when it runs on
//! its own, not across the round trips of a transaction (which serialised a tenant's uploads).

use sqlx::PgExecutor;
use uuid::Uuid;

use super::outbox::DEFAULT_MAX_ATTEMPTS;
use super::source_files::{NewSourceFile, SourceFile};
use super::tasks::Task;
use crate::domain::{ParseTaskPayload, TaskStatus, PARSE_TASK};

/// What an upload writes.
pub struct NewUpload<'a> {
    pub file: NewSourceFile<'a>,
    pub task_id: Uuid,
    pub message_id: Uuid,
    /// A small file's bytes, carried in its message so the worker needs no download.
    pub inline: Option<&'a [u8]>,
    /// The upload's W3C trace context, carried to the relay and the consumer.
    pub traceparent: Option<&'a str>,
}

/// Writes the three rows if the file fits `quota_bytes` beside what its tenant stores; returns the
/// file and task as stored (with their defaults), or `None` when it does not fit (nothing
/// written).
pub async fn insert(
    db: impl PgExecutor<'_>,
    new: &NewUpload<'_>,
    quota_bytes: i64,
) -> sqlx::Result<Option<(SourceFile, Task)>> {
    let file = &new.file;
    let payload =
        ParseTaskPayload::new(new.task_id, file.id, new.inline).with_traceparent(new.traceparent);
    let trace_id = new
        .traceparent
        .and_then(crate::telemetry::propagation::trace_id);
    let payload = serde_json::to_value(&payload).map_err(|e| sqlx::Error::Encode(e.into()))?;
    let row = sqlx::query!(
        r#"WITH usage AS MATERIALIZED (
               SELECT stored_bytes FROM tenant_usage WHERE tenant_id = $14 FOR UPDATE
           ), used AS (
               SELECT coalesce((SELECT stored_bytes FROM usage), 0) AS bytes
           ), file AS (
               INSERT INTO source_files
                   (id, file_name, content_type, format, size_bytes, sha256, blob_name,
                    idempotency_key, tenant_id, uploaded_by, template_name, template_version,
                    on_invalid)
               -- The rule of api::routes::upload::limits::check_quota: the file fits, and a
               -- tenant at its quota stores nothing more, not even an empty file.
               SELECT $1, $2, $3, $4, $5, $6, $7, $8, $14, $15, $17, $18, $19 FROM used
               WHERE used.bytes + $5 <= $20 AND ($5 > 0 OR used.bytes < $20)
               RETURNING id, tenant_id, file_name, content_type, format, size_bytes, sha256,
                         blob_name, idempotency_key, created_at
           ), task AS (
               INSERT INTO tasks (id, source_file_id, trace_id)
               SELECT $9, id, $16 FROM file
               RETURNING id, source_file_id, status, attempts, error_code, error_message, result,
                         lease_expires_at, created_at, started_at, finished_at
           ), message AS (
               INSERT INTO outbox_messages (id, event_type, payload, max_attempts, tenant_id)
               SELECT $10, $11, $12, $13, $14 FROM file
           )
           SELECT file.id AS "file_id!", file.tenant_id AS "tenant_id!", file.file_name AS "file_name!",
                  file.content_type AS "content_type!", file.format AS "format!",
                  file.size_bytes AS "size_bytes!", file.sha256 AS "sha256!",
                  file.blob_name AS "blob_name!", file.idempotency_key,
                  file.created_at AS "file_created_at!",
                  task.id AS "task_id!", task.status AS "status!: TaskStatus",
                  task.attempts AS "attempts!", task.error_code, task.error_message, task.result,
                  task.lease_expires_at, task.created_at AS "task_created_at!", task.started_at,
                  task.finished_at
           FROM file, task"#,
        file.id,
        file.file_name,
        file.content_type,
        file.format,
        file.size_bytes,
        file.sha256,
        file.blob_name,
        file.idempotency_key,
        new.task_id,
        new.message_id,
        PARSE_TASK,
        payload,
        DEFAULT_MAX_ATTEMPTS,
        file.tenant_id,
        file.uploaded_by,
        trace_id,
        file.template.map(|t| t.name),
        file.template.map(|t| t.version),
        file.template.map(|t| t.on_invalid),
        quota_bytes,
    )
    .fetch_optional(db)
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let file = SourceFile {
        id: row.file_id,
        tenant_id: row.tenant_id,
        file_name: row.file_name,
        content_type: row.content_type,
        format: row.format,
        size_bytes: row.size_bytes,
        sha256: row.sha256,
        blob_name: row.blob_name,
        idempotency_key: row.idempotency_key,
        created_at: row.file_created_at,
    };
    let task = Task {
        id: row.task_id,
        source_file_id: row.file_id,
        status: row.status,
        attempts: row.attempts,
        error_code: row.error_code,
        error_message: row.error_message,
        result: row.result,
        lease_expires_at: row.lease_expires_at,
        created_at: row.task_created_at,
        review: None,
        started_at: row.started_at,
        finished_at: row.finished_at,
    };
    Ok(Some((file, task)))
}
