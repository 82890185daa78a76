//! `source_files`: one row per accepted upload, pointing at its blob and owned by a tenant. Every
//! read on behalf of a caller takes the caller's tenant, so another tenant's id finds nothing;
//! only the worker, which trusts the task row, reads a file by id alone.

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use super::tasks::Task;
use crate::domain::layout_override::LayoutOverride;
use crate::domain::origin::Origin;
use crate::domain::review::Review;
use crate::domain::task_result::TaskResult;
use crate::domain::{FileFormat, TaskErrorCode, TaskStatus};

#[derive(Debug, Clone, PartialEq)]
pub struct SourceFile {
    pub id: Uuid,
    pub tenant_id: String,
    pub file_name: String,
    pub content_type: String,
    pub format: FileFormat,
    pub size_bytes: i64,
    pub sha256: String,
    pub blob_name: String,
    pub idempotency_key: Option<String>,
    pub created_at: DateTime<Utc>,
    /// The application's own JSON object given with the upload (free-form by design: it is the
    /// application's, carried as given).
    pub metadata: Option<serde_json::Value>,
    /// The end user an import session acted for (`id`, `name`, `email`).
    pub end_user: Option<serde_json::Value>,
    /// The Blob source it was imported from; `None` for an HTTP upload.
    pub origin: Option<Json<Origin>>,
}

pub struct NewSourceFile<'a> {
    pub id: Uuid,
    pub tenant_id: &'a str,
    /// Who uploaded it within the tenant (an API key or Entra object id), for the audit trail.
    pub uploaded_by: &'a str,
    pub file_name: &'a str,
    pub content_type: &'a str,
    pub format: FileFormat,
    pub size_bytes: i64,
    pub sha256: &'a str,
    pub blob_name: &'a str,
    pub idempotency_key: Option<&'a str>,
    /// The template version the file is checked against, with the upload's policy.
    pub template: Option<TemplateRef<'a>>,
    /// The upload's metadata, a JSON object checked by the api.
    pub metadata: Option<&'a serde_json::Value>,
    /// The import session it was uploaded with, and that session's end user.
    pub session: Option<(Uuid, &'a serde_json::Value)>,
    /// The Blob source it is imported from.
    pub origin: Option<&'a Origin>,
}

/// An upload's template: the exact version, and what to do with invalid rows.
#[derive(Debug, Clone, Copy)]
pub struct TemplateRef<'a> {
    pub name: &'a str,
    pub version: i32,
    pub on_invalid: &'a str,
}

/// A file by id alone: for the worker, which reads the file its task row names.
pub async fn find(db: impl PgExecutor<'_>, id: Uuid) -> sqlx::Result<Option<SourceFile>> {
    sqlx::query_as!(
        SourceFile,
        r#"SELECT id, tenant_id, file_name, content_type, format AS "format: FileFormat", size_bytes, sha256, blob_name,
                  idempotency_key, created_at, metadata, end_user,
                  origin AS "origin: Json<Origin>"
           FROM source_files WHERE id = $1"#,
        id
    )
    .fetch_optional(db)
    .await
}

/// A file and its task from a row of the select list that [`find_with_task`] and [`list`] share:
/// sqlx gives each query a row type of its own, so a function could not take both.
macro_rules! file_and_task {
    ($row:expr) => {{
        let r = $row;
        let task = Task {
            id: r.task_id,
            source_file_id: r.id,
            status: r.status,
            attempts: r.attempts,
            error_code: r.error_code,
            error_message: r.error_message,
            result: r.result,
            lease_expires_at: r.lease_expires_at,
            created_at: r.task_created_at,
            started_at: r.started_at,
            finished_at: r.finished_at,
            review: r.review,
            layout_override: r.layout_override,
        };
        let file = SourceFile {
            id: r.id,
            tenant_id: r.tenant_id,
            file_name: r.file_name,
            content_type: r.content_type,
            format: r.format,
            size_bytes: r.size_bytes,
            sha256: r.sha256,
            blob_name: r.blob_name,
            idempotency_key: r.idempotency_key,
            created_at: r.created_at,
            metadata: r.metadata,
            end_user: r.end_user,
            origin: r.origin,
        };
        (file, task)
    }};
}

/// The tenant's file `id` and its task, in one query; `None` for an unknown id and for another
/// tenant's (every file has its task: the upload writes both in one statement).
pub async fn find_with_task(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    id: Uuid,
) -> sqlx::Result<Option<(SourceFile, Task)>> {
    let row = sqlx::query!(
        r#"SELECT f.id, f.tenant_id, f.file_name, f.content_type, f.format AS "format: FileFormat", f.size_bytes,
                  f.sha256, f.blob_name, f.idempotency_key, f.created_at, f.metadata, f.end_user,
                  f.origin AS "origin: Json<Origin>",
                  t.id AS task_id, t.status AS "status: TaskStatus", t.attempts,
                  t.error_code AS "error_code: TaskErrorCode",
                  t.error_message, t.result AS "result: Json<TaskResult>", t.lease_expires_at,
                  t.created_at AS task_created_at, t.started_at, t.finished_at,
                  CASE WHEN t.status = 'NEEDS_REVIEW' THEN t.review END
                    AS "review: Json<Review>",
                  t.layout_override AS "layout_override: Json<LayoutOverride>"
           FROM source_files f JOIN tasks t ON t.source_file_id = f.id
           WHERE f.id = $1 AND f.tenant_id = $2 AND f.deleting_at IS NULL"#,
        id,
        tenant_id
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(|r| file_and_task!(r)))
}

/// The tenant's file `id`; `None` for an unknown id and for another tenant's.
pub async fn find_for_tenant(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    id: Uuid,
) -> sqlx::Result<Option<SourceFile>> {
    sqlx::query_as!(
        SourceFile,
        r#"SELECT id, tenant_id, file_name, content_type, format AS "format: FileFormat", size_bytes, sha256, blob_name,
                  idempotency_key, created_at, metadata, end_user,
                  origin AS "origin: Json<Origin>"
           FROM source_files WHERE id = $1 AND tenant_id = $2 AND deleting_at IS NULL"#,
        id,
        tenant_id
    )
    .fetch_optional(db)
    .await
}

pub async fn find_by_idempotency_key(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    key: &str,
) -> sqlx::Result<Option<SourceFile>> {
    sqlx::query_as!(
        SourceFile,
        r#"SELECT id, tenant_id, file_name, content_type, format AS "format: FileFormat", size_bytes, sha256, blob_name,
                  idempotency_key, created_at, metadata, end_user,
                  origin AS "origin: Json<Origin>"
           FROM source_files WHERE tenant_id = $1 AND idempotency_key = $2"#,
        tenant_id,
        key
    )
    .fetch_optional(db)
    .await
}

/// Which of `names` are the blobs of a file (the orphan-blob sweep keeps those).
pub async fn blobs_in_use(db: impl PgExecutor<'_>, names: &[String]) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar!(
        "SELECT blob_name FROM source_files WHERE blob_name = ANY($1)",
        names
    )
    .fetch_all(db)
    .await
}

/// A file with its task, as the file list shows them.
#[derive(Debug, Clone, PartialEq)]
pub struct FileWithTask {
    pub file: SourceFile,
    pub task: Task,
}

/// Up to `limit` of the tenant's files, newest first, older than the file `before` when given
/// (keyset paging: ids are UUIDv7, so id order is upload order).
pub async fn list(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    before: Option<Uuid>,
    limit: i64,
) -> sqlx::Result<Vec<FileWithTask>> {
    let rows = sqlx::query!(
        r#"SELECT f.id, f.tenant_id, f.file_name, f.content_type, f.format AS "format: FileFormat", f.size_bytes,
                  f.sha256, f.blob_name, f.idempotency_key, f.created_at, f.metadata, f.end_user,
                  f.origin AS "origin: Json<Origin>",
                  t.id AS task_id, t.status AS "status: TaskStatus", t.attempts,
                  t.error_code AS "error_code: TaskErrorCode",
                  t.error_message, t.result AS "result: Json<TaskResult>", t.lease_expires_at,
                  t.created_at AS task_created_at, t.started_at, t.finished_at,
                  CASE WHEN t.status = 'NEEDS_REVIEW' THEN t.review END
                    AS "review: Json<Review>",
                  t.layout_override AS "layout_override: Json<LayoutOverride>"
           FROM source_files f JOIN tasks t ON t.source_file_id = f.id
           WHERE f.tenant_id = $1 AND ($2::uuid IS NULL OR f.id < $2) AND f.deleting_at IS NULL
           ORDER BY f.id DESC
           LIMIT $3"#,
        tenant_id,
        before,
        limit
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let (file, task) = file_and_task!(r);
            FileWithTask { file, task }
        })
        .collect())
}

/// Whether deleting a file writes its `file.deleted` event: a caller's `DELETE` does; retention
/// and a tenant purge do not (the contract says so for retention; a purged tenant has no one
/// left to tell).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Announce {
    FileDeleted,
    Silently,
}

/// Deletes the tenant's file `id` with everything that hangs on it: its task, sheets, row
/// chunks, error records and rejected rows (by cascade) and the outbox rows that announce it.
/// Announced (a caller's `DELETE`), the same statement writes its `file.deleted` event (the task
/// as it was, in the event's `data`) and keeps its earlier events for the feed; removed silently
/// (retention, a purge), it deletes its last events instead. Returns the blob name to delete, or
/// `None` when the tenant has no such file; for a caller, a file that retention or a purge is
/// removing is no longer there either, as the api shows it. A caller's `DELETE` runs it in a
/// transaction that commits only once the blob is gone, so a failed blob delete keeps the rows
/// and announces nothing; the retention and purge jobs run it last, once [`super::removal`] has
/// deleted the blob and the bulk of the rows.
pub async fn delete(
    conn: &mut PgConnection,
    tenant_id: &str,
    id: Uuid,
    announce: Announce,
) -> sqlx::Result<Option<String>> {
    if announce == Announce::FileDeleted {
        super::event_log::ensure(&mut *conn).await?;
    }
    sqlx::query_scalar!(
        r#"WITH file AS (
               DELETE FROM source_files
               WHERE id = $1 AND tenant_id = $2 AND (NOT $3 OR deleting_at IS NULL)
               RETURNING id, blob_name, metadata, end_user
           ), message AS (
               DELETE FROM outbox_messages
               WHERE payload ->> 'source_file_id' IN (SELECT id::text FROM file)
           ), event AS (
               -- The statement's snapshot still holds the task that the cascade deletes.
               INSERT INTO events (id, tenant_id, type, source_file_id, task_id, data, trace_id)
               SELECT gen_random_uuid(), $2, 'file.deleted', t.source_file_id, t.id,
                      task_event_data(t)
                          || jsonb_build_object('metadata', f.metadata, 'end_user', f.end_user),
                      t.trace_id
               FROM tasks t JOIN file f ON f.id = t.source_file_id WHERE $3
           ), silenced AS (
               -- Removed silently, the file takes its last events along: one its task wrote
               -- after the batches had deleted the others (a removal's batches leave only those).
               DELETE FROM events WHERE NOT $3 AND source_file_id IN (SELECT id FROM file)
           )
           SELECT blob_name FROM file"#,
        id,
        tenant_id,
        announce == Announce::FileDeleted
    )
    .fetch_optional(&mut *conn)
    .await
}
