//! An upload's three rows: its source file, its `PENDING` task and the outbox message that will
//! announce the task, written by one statement. A statement is atomic on its own, so all three
//! exist or none do, as with a transaction; but it takes one round trip to Postgres where the
//! transaction took five (BEGIN, three INSERTs, COMMIT), and each round trip wakes both the api
//! and a Postgres backend. The task's foreign key is checked at the end of the statement, after
//! its file row is in.
//!
//! The same statement checks the tenant's storage quota against one of its usage shards (see
//! `migrations/20261202000001_usage_shards.sql`): it locks a shard whose grant has room for the
//! file, skipping the shards other uploads hold, and the `source_files_usage` trigger raises that
//! shard by the file's size. Concurrent uploads of one tenant so commit side by side instead of
//! one after another on a single row. When every shard with room is held, the upload waits for
//! one; only when no shard has room does the exact path lock them all, check the sum and grant
//! the free bytes again, in one transaction. Measured with 16 uploads of one tenant at a time
//! (tests/bench/side_by_side): locking them all whenever every shard was busy made each such
//! upload wait for all the others, and the next ones behind it.

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::{Connection as _, PgConnection};
use uuid::Uuid;

use super::outbox::DEFAULT_MAX_ATTEMPTS;
use super::source_files::{NewSourceFile, SourceFile};
use super::tasks::Task;
use crate::domain::origin::Origin;
use crate::domain::task_result::TaskResult;
use crate::domain::{FileFormat, ParseTaskPayload, TaskErrorCode, TaskStatus, PARSE_TASK};

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

/// What [`insert`] did.
// Returned once per upload and taken apart at once: a box would cost an allocation for nothing.
#[allow(clippy::large_enum_variant)]
pub enum Recorded {
    /// The file and task as stored (with their defaults).
    Stored(SourceFile, Task),
    /// The file does not fit beside the `used` bytes of the quota; nothing was written.
    OverQuota { used: i64 },
}

/// Writes the three rows if the file fits `quota_bytes` beside what its tenant stores. On a
/// connection outside a transaction the common case is one statement, committed on its own;
/// inside one (a resumable upload marks itself recorded in the same transaction) the exact
/// path's transaction is a savepoint.
pub async fn insert(
    conn: &mut PgConnection,
    new: &NewUpload<'_>,
    quota_bytes: i64,
) -> sqlx::Result<Recorded> {
    if let Some(stored) = insert_in_a_shard(&mut *conn, new, quota_bytes).await? {
        return Ok(stored);
    }
    let mut tx = conn.begin().await?;
    // Every shard with room held by other uploads: wait for one of them (each holds it for one
    // statement and its commit) rather than lock them all. In shard order, as the exact path
    // locks them: a waiter keeps the lock of a shard it waited for and found full, and waiting
    // in another order deadlocked with the exact path (seen: 40P01 with 64 uploads racing).
    let room = sqlx::query_scalar!(
        r#"SELECT shard FROM tenant_usage
           WHERE tenant_id = $1 AND granted_for = $2
             AND usage_fits(stored_bytes, granted_bytes, $3)
           ORDER BY shard
           LIMIT 1
           FOR UPDATE"#,
        new.file.tenant_id,
        quota_bytes,
        new.file.size_bytes
    )
    .fetch_optional(&mut *tx)
    .await?;
    if room.is_some() {
        let stored = insert_in_a_shard(&mut tx, new, quota_bytes)
            .await?
            .ok_or_else(|| sqlx::Error::Protocol("a held usage shard had no room".into()))?;
        tx.commit().await?;
        return Ok(stored);
    }
    // What it waited for and found full is let go before it takes its turn to regrant.
    tx.rollback().await?;
    insert_regranted(conn, new, quota_bytes).await
}

/// How many times an upload that found no room takes its tenant's regrant turn only to find
/// room granted by the upload before it, before it regrants whatever it finds.
const REGRANT_TURNS: usize = 3;

/// The exact path of [`insert`]: no shard had room. Regrants of a tenant take turns (an
/// advisory lock taken first in its transaction, so no row lock is held while waiting for it),
/// and one that waited for another usually finds room in the grant just made: it stores there,
/// as any upload does, instead of locking every shard for its own commit. Measured in the side
/// by side bench: the first 16 uploads of a new tenant all found no shards, and about 10 of them
/// regranted one after another, each holding all 32 shards until its commit (1.8 s of
/// `usage_regrant` in 500 uploads, and the slowest uploads of the run).
async fn insert_regranted(
    conn: &mut PgConnection,
    new: &NewUpload<'_>,
    quota_bytes: i64,
) -> sqlx::Result<Recorded> {
    let tenant = new.file.tenant_id;
    let size = new.file.size_bytes;
    let mut turn = 1;
    loop {
        let mut tx = conn.begin().await?;
        sqlx::query!(
            "SELECT pg_advisory_xact_lock(hashtextextended('usage_regrant:' || $1, 0))",
            tenant
        )
        .execute(&mut *tx)
        .await?;
        if turn < REGRANT_TURNS && has_room(&mut tx, tenant, quota_bytes, size).await? {
            tx.rollback().await?;
            if let Some(stored) = insert_in_a_shard(&mut *conn, new, quota_bytes).await? {
                return Ok(stored);
            }
            turn += 1;
            continue;
        }
        let grant = sqlx::query!(
            r#"SELECT used AS "used!", fits AS "fits!" FROM usage_regrant($1, $2, $3)"#,
            tenant,
            quota_bytes,
            size
        )
        .fetch_one(&mut *tx)
        .await?;
        if !grant.fits {
            tx.rollback().await?;
            return Ok(Recorded::OverQuota { used: grant.used });
        }
        // Every shard is ours until the commit, and shard 0 was granted the file's size.
        let stored = insert_in_a_shard(&mut tx, new, quota_bytes)
            .await?
            .ok_or_else(|| sqlx::Error::Protocol("a regranted usage shard had no room".into()))?;
        tx.commit().await?;
        return Ok(stored);
    }
}

/// Whether a shard of `tenant`'s usage, granted for `quota_bytes`, has room for `size` bytes
/// (`usage_fits`, as [`insert_in_a_shard`] takes one), read without locking it.
async fn has_room(
    conn: &mut PgConnection,
    tenant: &str,
    quota_bytes: i64,
    size: i64,
) -> sqlx::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (
               SELECT FROM tenant_usage
               WHERE tenant_id = $1 AND granted_for = $2
                 AND usage_fits(stored_bytes, granted_bytes, $3)
           ) AS "room!""#,
        tenant,
        quota_bytes,
        size
    )
    .fetch_one(conn)
    .await
}

/// The statement of [`insert`]: `None` when no shard of the tenant's usage has room that no
/// other transaction holds.
async fn insert_in_a_shard(
    conn: &mut PgConnection,
    new: &NewUpload<'_>,
    quota_bytes: i64,
) -> sqlx::Result<Option<Recorded>> {
    let file = &new.file;
    let payload =
        ParseTaskPayload::new(new.task_id, file.id, new.inline).with_traceparent(new.traceparent);
    let trace_id = new
        .traceparent
        .and_then(crate::telemetry::propagation::trace_id);
    let payload = serde_json::to_value(&payload).map_err(|e| sqlx::Error::Encode(e.into()))?;
    let row = sqlx::query_as!(
        Inserted,
        r#"WITH shard AS MATERIALIZED (
               -- The rule of api::uploads::limits::check_quota within a shard's grant.
               SELECT shard FROM tenant_usage
               WHERE tenant_id = $14 AND granted_for = $20
                 AND usage_fits(stored_bytes, granted_bytes, $5)
               -- From the file's own shard on, so that uploads in flight spread over them all.
               ORDER BY (shard - usage_shard($1) + usage_shard_count()) % usage_shard_count()
               LIMIT 1
               FOR UPDATE SKIP LOCKED
           ), file AS (
               INSERT INTO source_files
                   (id, file_name, content_type, format, size_bytes, sha256, blob_name,
                    idempotency_key, tenant_id, uploaded_by, template_name, template_version,
                    on_invalid, usage_shard, metadata, session_id, end_user, origin)
               SELECT $1, $2, $3, $4, $5, $6, $7, $8, $14, $15, $17, $18, $19, shard, $21,
                      $22, $23, $24
               FROM shard
               RETURNING id, tenant_id, file_name, content_type, format, size_bytes, sha256,
                         blob_name, idempotency_key, created_at, metadata, end_user, origin
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
                  file.content_type AS "content_type!", file.format AS "format!: FileFormat",
                  file.size_bytes AS "size_bytes!", file.sha256 AS "sha256!",
                  file.blob_name AS "blob_name!", file.idempotency_key,
                  file.created_at AS "file_created_at!", file.metadata, file.end_user,
                  file.origin AS "origin: Json<Origin>",
                  task.id AS "task_id!", task.status AS "status!: TaskStatus",
                  task.attempts AS "attempts!",
                  task.error_code AS "error_code: TaskErrorCode", task.error_message,
                  task.result AS "result: Json<TaskResult>", task.lease_expires_at, task.created_at AS "task_created_at!", task.started_at,
                  task.finished_at
           FROM file, task"#,
        file.id,
        file.file_name,
        file.content_type,
        file.format.as_str(),
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
        file.metadata,
        file.session.map(|(id, _)| id),
        file.session.map(|(_, end_user)| end_user),
        file.origin.map(Json) as Option<Json<&Origin>>,
    )
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(Recorded::from))
}

/// The file and task rows [`insert_in_a_shard`]'s statement returns, as one row.
struct Inserted {
    file_id: Uuid,
    tenant_id: String,
    file_name: String,
    content_type: String,
    format: FileFormat,
    size_bytes: i64,
    sha256: String,
    blob_name: String,
    idempotency_key: Option<String>,
    file_created_at: DateTime<Utc>,
    metadata: Option<serde_json::Value>,
    end_user: Option<serde_json::Value>,
    origin: Option<Json<Origin>>,
    task_id: Uuid,
    status: TaskStatus,
    attempts: i32,
    error_code: Option<TaskErrorCode>,
    error_message: Option<String>,
    result: Option<Json<TaskResult>>,
    lease_expires_at: Option<DateTime<Utc>>,
    task_created_at: DateTime<Utc>,
    started_at: Option<DateTime<Utc>>,
    finished_at: Option<DateTime<Utc>>,
}

impl From<Inserted> for Recorded {
    fn from(row: Inserted) -> Self {
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
            metadata: row.metadata,
            end_user: row.end_user,
            origin: row.origin,
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
            layout_override: None,
            started_at: row.started_at,
            finished_at: row.finished_at,
        };
        Recorded::Stored(file, task)
    }
}
