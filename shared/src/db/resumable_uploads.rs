//! `resumable_uploads`: the state of a tus upload, which arrives over many requests. The offset
//! moves only by compare-and-set ([`advance`]): a request names the offset it started from, and
//! of two requests that started from the same one, only the first to record its blocks counts.
//! Every read on behalf of a caller takes the caller's tenant, as for source files.

use chrono::{DateTime, Utc};
use sqlx::PgExecutor;
use uuid::Uuid;

use crate::domain::OnInvalid;

/// The most blocks a blob can be committed from (a service limit): an upload that would need
/// more is refused.
pub const MAX_BLOCKS: usize = 50_000;

#[derive(Debug, Clone)]
pub struct ResumableUpload {
    pub id: Uuid,
    pub tenant_id: String,
    pub uploaded_by: String,
    pub file_name: String,
    pub upload_length: i64,
    pub upload_offset: i64,
    pub block_ids: Vec<String>,
    pub head: Vec<u8>,
    pub blob_name: String,
    pub idempotency_key: Option<String>,
    pub template_name: Option<String>,
    pub template_version: Option<i32>,
    pub on_invalid: Option<OnInvalid>,
    /// The upload's metadata (a JSON object the api checked), for the file it becomes.
    pub metadata: Option<serde_json::Value>,
    /// The import session it was made with, and that session's end user.
    pub session_id: Option<Uuid>,
    pub end_user: Option<serde_json::Value>,
    pub source_file_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

impl ResumableUpload {
    /// Every byte is in (it may not be recorded yet).
    pub fn is_complete(&self) -> bool {
        self.upload_offset == self.upload_length
    }
}

/// A new upload, before its first byte.
pub struct NewResumableUpload<'a> {
    pub id: Uuid,
    pub tenant_id: &'a str,
    pub uploaded_by: &'a str,
    pub file_name: &'a str,
    pub upload_length: i64,
    pub blob_name: &'a str,
    pub idempotency_key: Option<&'a str>,
    pub template: Option<super::source_files::TemplateRef<'a>>,
    pub metadata: Option<&'a serde_json::Value>,
    pub session: Option<(Uuid, &'a serde_json::Value)>,
    pub expires_at: DateTime<Utc>,
}

pub async fn insert(db: impl PgExecutor<'_>, new: &NewResumableUpload<'_>) -> sqlx::Result<()> {
    sqlx::query!(
        r#"INSERT INTO resumable_uploads
               (id, tenant_id, uploaded_by, file_name, upload_length, blob_name, idempotency_key,
                template_name, template_version, on_invalid, expires_at, metadata, session_id,
                end_user)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"#,
        new.id,
        new.tenant_id,
        new.uploaded_by,
        new.file_name,
        new.upload_length,
        new.blob_name,
        new.idempotency_key,
        new.template.map(|t| t.name),
        new.template.map(|t| t.version),
        new.template.map(|t| t.on_invalid),
        new.expires_at,
        new.metadata,
        new.session.map(|(id, _)| id),
        new.session.map(|(_, end_user)| end_user),
    )
    .execute(db)
    .await?;
    Ok(())
}

/// The caller's upload, expired or not (the caller decides what an expired one means).
pub async fn find(
    db: impl PgExecutor<'_>,
    tenant: &str,
    id: Uuid,
) -> sqlx::Result<Option<ResumableUpload>> {
    sqlx::query_as!(
        ResumableUpload,
        r#"SELECT id, tenant_id, uploaded_by, file_name, upload_length, upload_offset, block_ids,
                  head, blob_name, idempotency_key, template_name, template_version,
                  on_invalid AS "on_invalid: OnInvalid", metadata, session_id, end_user,
                  source_file_id, created_at, expires_at
           FROM resumable_uploads WHERE id = $1 AND tenant_id = $2"#,
        id,
        tenant
    )
    .fetch_optional(db)
    .await
}

/// Blocks staged for one request, to be counted together.
pub struct Staged<'a> {
    /// The offset the request started from.
    pub from: i64,
    /// Bytes in `block_ids`.
    pub len: i64,
    pub block_ids: &'a [String],
    /// The bytes of these blocks that fall in the file's head, if any.
    pub head: &'a [u8],
}

/// Counts `staged` if the upload still stands at `staged.from` (unfinished, unexpired, within
/// its length and the block limit); returns the new offset, or `None` when another request
/// moved it first or the upload is gone.
pub async fn advance(
    db: impl PgExecutor<'_>,
    id: Uuid,
    staged: &Staged<'_>,
) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar!(
        r#"UPDATE resumable_uploads
           SET upload_offset = upload_offset + $3,
               block_ids = block_ids || $4::text[],
               head = head || $5
           WHERE id = $1 AND upload_offset = $2 AND upload_offset + $3 <= upload_length
             AND cardinality(block_ids) + cardinality($4::text[]) <= $6
             AND source_file_id IS NULL AND expires_at > now()
           RETURNING upload_offset"#,
        id,
        staged.from,
        staged.len,
        staged.block_ids,
        staged.head,
        MAX_BLOCKS as i32,
    )
    .fetch_optional(db)
    .await
}

/// Takes the recording of a complete upload for `lease`: `false` when it is recorded already,
/// not complete, or another request is recording it.
pub async fn claim_finish(
    db: impl PgExecutor<'_>,
    id: Uuid,
    lease: std::time::Duration,
) -> sqlx::Result<bool> {
    let secs = lease.as_secs_f64();
    let claimed = sqlx::query_scalar!(
        r#"UPDATE resumable_uploads
           SET finishing_until = now() + make_interval(secs => $2)
           WHERE id = $1 AND source_file_id IS NULL AND upload_offset = upload_length
             AND (finishing_until IS NULL OR finishing_until < now())
           RETURNING id"#,
        id,
        secs
    )
    .fetch_optional(db)
    .await?;
    Ok(claimed.is_some())
}

/// Gives up a claim taken by [`claim_finish`] (the recording failed and may be tried again).
pub async fn release_finish(db: impl PgExecutor<'_>, id: Uuid) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE resumable_uploads SET finishing_until = NULL WHERE id = $1",
        id
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Marks the upload recorded as `source_file_id`; the row is kept until `expires_at` so that
/// `GET` still answers, without its block list.
pub async fn finish(
    db: impl PgExecutor<'_>,
    id: Uuid,
    source_file_id: Uuid,
    expires_at: DateTime<Utc>,
) -> sqlx::Result<()> {
    sqlx::query!(
        r#"UPDATE resumable_uploads
           SET source_file_id = $2, finishing_until = NULL, block_ids = '{}', head = '',
               expires_at = $3
           WHERE id = $1"#,
        id,
        source_file_id,
        expires_at
    )
    .execute(db)
    .await?;
    Ok(())
}

/// An upload taken out of the table: what remains to clean up in Blob Storage.
#[derive(Debug, Clone, PartialEq)]
pub struct Removed {
    pub blob_name: String,
    /// Recorded as a file: its blob belongs to that file now and must stay.
    pub recorded: bool,
}

/// Deletes the caller's upload unless it is being recorded right now (a `DELETE` racing the
/// last `PATCH`); `None` when there is no such upload (or it is being recorded).
pub async fn delete(
    db: impl PgExecutor<'_>,
    tenant: &str,
    id: Uuid,
) -> sqlx::Result<Option<Removed>> {
    sqlx::query_as!(
        Removed,
        r#"DELETE FROM resumable_uploads
           WHERE id = $1 AND tenant_id = $2
             AND (finishing_until IS NULL OR finishing_until < now())
           RETURNING blob_name, source_file_id IS NOT NULL AS "recorded!""#,
        id,
        tenant
    )
    .fetch_all(db)
    .await
    .map(|mut rows| rows.pop())
}

/// Deletes the upload `id` whatever its state: for the request holding its finish claim, when
/// the upload cannot be recorded.
pub async fn remove(db: impl PgExecutor<'_>, id: Uuid) -> sqlx::Result<()> {
    sqlx::query!("DELETE FROM resumable_uploads WHERE id = $1", id)
        .execute(db)
        .await?;
    Ok(())
}

/// Deletes up to `batch` uploads past their expiry (finished or not, unless being recorded).
pub async fn delete_expired(db: impl PgExecutor<'_>, batch: i64) -> sqlx::Result<Vec<Removed>> {
    sqlx::query_as!(
        Removed,
        r#"DELETE FROM resumable_uploads
           WHERE id IN (SELECT id FROM resumable_uploads
                        WHERE expires_at < now()
                          AND (finishing_until IS NULL OR finishing_until < now())
                        ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
           RETURNING blob_name, source_file_id IS NOT NULL AS "recorded!""#,
        batch
    )
    .fetch_all(db)
    .await
}
