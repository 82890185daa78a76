//! `source_blobs`: every blob version a source found, keyed by (source, blob name, ETag), and
//! what became of it. However often a blob is found (an event delivered three times, an event
//! racing a listing, two workers listing at once), [`found`] writes its row once; the worker's
//! import claims the row like a queue row (one short statement, `FOR UPDATE SKIP LOCKED`, a
//! lease the claim loop renews) and writes the file, task and outbox message in the transaction
//! that marks the row `IMPORTED`, conditionally on the claim still being its own ([`imported`]):
//! one task per triple.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use super::Due;

/// The longest blob name recorded (the table's CHECK): Blob Storage's own limit. A longer name
/// found by a listing or an event is not one a source can import.
pub const MAX_BLOB_NAME: usize = 1024;

/// A blob as a listing or an event names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundBlob {
    pub name: String,
    pub etag: String,
    pub size: Option<i64>,
}

/// Who found the blobs, and so how their rows start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finder {
    /// An event: waiting to be imported.
    Event,
    /// A listing pass: waiting, or (`existing`) recorded as skipped because they were there
    /// before the source's first pass ended and the source imports only later blobs.
    Listing { existing: bool },
}

/// Records `blobs` of `source` (found by `finder`); returns how many were new. A listing also
/// marks the ones it saw again as seen in the source's current pass.
pub async fn found(
    db: impl PgExecutor<'_>,
    source: Uuid,
    blobs: &[FoundBlob],
    finder: Finder,
) -> sqlx::Result<u64> {
    let names: Vec<&str> = blobs.iter().map(|b| b.name.as_str()).collect();
    let etags: Vec<&str> = blobs.iter().map(|b| b.etag.as_str()).collect();
    let sizes: Vec<Option<i64>> = blobs.iter().map(|b| b.size).collect();
    let (found_by, skipped) = match finder {
        Finder::Event => ("event", false),
        Finder::Listing { existing } => ("listing", existing),
    };
    let new = sqlx::query_scalar!(
        r#"WITH given AS (
               SELECT * FROM unnest($2::text[], $3::text[], $4::int8[]) AS g (blob, etag, size)
           ), written AS (
               INSERT INTO source_blobs (source_id, blob, etag, size_bytes, found_by, status,
                                         outcome, seen_pass)
               SELECT $1, g.blob, g.etag, g.size, $5,
                      CASE WHEN $6 THEN 'SKIPPED'::source_blob_status
                           ELSE 'PENDING'::source_blob_status END,
                      CASE WHEN $6 THEN 'existing' END, s.passes
               FROM given g JOIN sources s ON s.id = $1
               ON CONFLICT (source_id, blob, etag) DO UPDATE SET seen_pass = EXCLUDED.seen_pass
                   WHERE $5 = 'listing' AND source_blobs.seen_pass < EXCLUDED.seen_pass
               RETURNING (xmax = 0) AS inserted
           )
           SELECT count(*) FILTER (WHERE inserted) AS "new!" FROM written"#,
        source,
        &names as &[&str],
        &etags as &[&str],
        &sizes as &[Option<i64>],
        found_by,
        skipped
    )
    .fetch_one(db)
    .await?;
    Ok(new.unsigned_abs())
}

/// A claimed blob with what importing it needs of its source.
#[derive(Debug, Clone, PartialEq)]
pub struct Claimed {
    pub id: Uuid,
    pub source_id: Uuid,
    pub blob: String,
    pub etag: String,
    /// As the listing or the event said.
    pub size_bytes: Option<i64>,
    /// `listing` or `event`: a listing saw it committed and not being copied into, at this ETag.
    pub found_by: String,
    pub attempts: i32,
    pub failures: i32,
    pub found_at: DateTime<Utc>,
    pub tenant_id: String,
    pub container_url: String,
    pub credential_kind: String,
    pub sealed_secret: Option<Vec<u8>>,
    pub template_name: Option<String>,
    pub on_invalid: Option<String>,
    pub metadata: Option<serde_json::Value>,
    pub after_import: String,
}

/// Claims up to `limit` due blobs of enabled sources (and expired claims), oldest due first,
/// for `lease`.
pub async fn claim(
    db: impl PgExecutor<'_>,
    limit: i64,
    lease: Duration,
) -> sqlx::Result<Vec<Claimed>> {
    sqlx::query_as!(
        Claimed,
        r#"WITH locked AS (
               SELECT b.id FROM source_blobs b JOIN sources s ON s.id = b.source_id
               WHERE s.enabled
                 AND ((b.status IN ('PENDING', 'FAILED') AND b.available_at <= now())
                      OR (b.status = 'IMPORTING' AND b.locked_until < now()))
               ORDER BY b.available_at LIMIT $1
               FOR UPDATE OF b SKIP LOCKED
           ), claimed AS (
               UPDATE source_blobs b
               SET status = 'IMPORTING', locked_until = now() + make_interval(secs => $2),
                   attempts = b.attempts + 1, updated_at = now()
               FROM locked WHERE b.id = locked.id
               RETURNING b.*
           )
           SELECT c.id, c.source_id, c.blob, c.etag, c.size_bytes, c.found_by, c.attempts,
                  c.failures, c.found_at,
                  s.tenant_id, s.container_url, s.credential_kind, s.sealed_secret,
                  s.template_name, s.on_invalid, s.metadata, s.after_import
           FROM claimed c JOIN sources s ON s.id = c.source_id"#,
        limit,
        lease.as_secs_f64()
    )
    .fetch_all(db)
    .await
}

/// The heartbeat: extends the claims of the blobs still being imported.
pub async fn extend_claims(
    db: impl PgExecutor<'_>,
    ids: &[Uuid],
    lease: Duration,
) -> sqlx::Result<u64> {
    let done = sqlx::query!(
        r#"UPDATE source_blobs SET locked_until = now() + make_interval(secs => $2)
           WHERE id IN (SELECT id FROM source_blobs
                        WHERE id = ANY ($1) AND status = 'IMPORTING' FOR UPDATE SKIP LOCKED)"#,
        ids,
        lease.as_secs_f64()
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

/// Hands claimed blobs back at shutdown, due at once (the attempt is not counted).
pub async fn release(db: impl PgExecutor<'_>, ids: &[Uuid]) -> sqlx::Result<u64> {
    let done = sqlx::query!(
        r#"UPDATE source_blobs SET status = 'PENDING', locked_until = NULL,
               attempts = greatest(attempts - 1, 0), available_at = now(), updated_at = now()
           WHERE id = ANY ($1) AND status = 'IMPORTING'"#,
        ids
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

pub async fn due(db: impl PgExecutor<'_>) -> sqlx::Result<Due> {
    let row = sqlx::query!(
        r#"SELECT
             (SELECT count(*) FROM source_blobs
              WHERE status = 'IMPORTING' AND locked_until >= now()) AS "held!",
             extract(epoch FROM least(
                 (SELECT min(b.available_at) FROM source_blobs b
                  JOIN sources s ON s.id = b.source_id
                  WHERE b.status IN ('PENDING', 'FAILED') AND s.enabled),
                 (SELECT min(locked_until) FROM source_blobs WHERE status = 'IMPORTING'))
               - now())::float8 AS next_in_secs"#
    )
    .fetch_one(db)
    .await?;
    Ok(Due {
        held: row.held,
        next_in_secs: row.next_in_secs.map(|s| s.max(0.0)),
    })
}

/// Marks the claimed blob `id` imported as the file `source_file_id`, in the transaction that
/// wrote the file: false (and the caller rolls back) when the claim is no longer ours (it
/// expired and another worker took the blob).
pub async fn imported(tx: &mut PgConnection, id: Uuid, source_file_id: Uuid) -> sqlx::Result<bool> {
    let done = sqlx::query!(
        r#"UPDATE source_blobs SET status = 'IMPORTED', locked_until = NULL, outcome = NULL,
               last_error = NULL, source_file_id = $2, updated_at = now()
           WHERE id = $1 AND status = 'IMPORTING'"#,
        id,
        source_file_id
    )
    .execute(&mut *tx)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// What became of a blob that was not imported.
#[derive(Debug, Clone, PartialEq)]
pub enum NotImported {
    /// It will never be: `outcome` says why (an empty blob, one too large, gone).
    Skipped { outcome: String, message: String },
    /// Tried again after `retry_in` (`outcome`: the code of the failure).
    Retry {
        outcome: String,
        message: String,
        retry_in: Duration,
    },
    /// Not tried: handed back due after `retry_in` without counting a failure (a copy still in
    /// progress, the source found down by another blob of the batch).
    Deferred { retry_in: Duration },
}

/// Records `result` for the claimed blob `id`, if the claim is still ours.
pub async fn settle(db: impl PgExecutor<'_>, id: Uuid, result: &NotImported) -> sqlx::Result<()> {
    let (status, outcome, message, retry_in, failed) = match result {
        NotImported::Skipped { outcome, message } => (
            "SKIPPED",
            Some(outcome.as_str()),
            Some(message.as_str()),
            0.0,
            0,
        ),
        NotImported::Retry {
            outcome,
            message,
            retry_in,
        } => (
            "FAILED",
            Some(outcome.as_str()),
            Some(message.as_str()),
            retry_in.as_secs_f64(),
            1,
        ),
        NotImported::Deferred { retry_in } => ("PENDING", None, None, retry_in.as_secs_f64(), 0),
    };
    sqlx::query!(
        r#"UPDATE source_blobs SET status = $2::text::source_blob_status, locked_until = NULL,
               outcome = COALESCE($3, outcome), last_error = COALESCE($4, last_error),
               available_at = now() + make_interval(secs => $5),
               failures = failures + $6, updated_at = now()
           WHERE id = $1 AND status = 'IMPORTING'"#,
        id,
        status,
        outcome,
        message,
        retry_in,
        failed
    )
    .execute(db)
    .await?;
    Ok(())
}

/// One blob of a source, as its owner sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub id: Uuid,
    pub blob: String,
    pub etag: String,
    pub size_bytes: Option<i64>,
    pub found_by: String,
    pub status: String,
    pub attempts: i32,
    pub outcome: Option<String>,
    pub last_error: Option<String>,
    pub source_file_id: Option<Uuid>,
    pub found_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A page of the source's blobs, most recently found first, after the blob `after`.
pub async fn list(
    db: impl PgExecutor<'_>,
    source: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> sqlx::Result<Vec<Listed>> {
    sqlx::query_as!(
        Listed,
        r#"SELECT id, blob, etag, size_bytes, found_by, status::text AS "status!", attempts,
                  outcome, last_error, source_file_id, found_at, updated_at
           FROM source_blobs
           WHERE source_id = $1
             AND ($2::uuid IS NULL OR (found_at, id) < (SELECT found_at, id FROM source_blobs
                                                         WHERE id = $2))
           ORDER BY found_at DESC, id DESC
           LIMIT $3"#,
        source,
        after,
        limit
    )
    .fetch_all(db)
    .await
}
