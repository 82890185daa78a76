//! Removing files in short steps, for the worker's retention and purge jobs. A file is first
//! *marked* (`source_files.deleting_at`): from then on the api no longer shows it and its task
//! is never started again. Then, each step its own short statement: its blob is deleted (by the
//! caller), its dependent rows go a batch at a time, largest table first
//! ([`delete_dependents`]), and its row last, by the same statement as a caller's `DELETE`
//! ([`super::source_files::delete`], without the `file.deleted` event). No step holds a lock for
//! longer than one batch takes; a crash between two steps leaves a marked file that the next
//! run finishes, and every step is idempotent, so two workers at it change nothing.

use sqlx::{PgExecutor, PgPool};
use uuid::Uuid;

/// A file being removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marked {
    pub id: Uuid,
    pub tenant_id: String,
    pub blob_name: String,
}

/// Marks up to `limit` files older than their tenant's retention (its own, else
/// `default_retention_secs`; neither: kept for ever) whose task is final. A file still
/// being parsed, or waiting for its mapping review, is left until its task ends: deleting it
/// would only throw the parse away (the review timeout ends a waiting one). Returns how many it
/// marked.
pub async fn mark_expired(
    db: impl PgExecutor<'_>,
    default_retention_secs: Option<i64>,
    limit: i64,
) -> sqlx::Result<u64> {
    // One short index range per tenant (tenant_usage has rows for every tenant that ever
    // stored a file), oldest first.
    let done = sqlx::query!(
        r#"UPDATE source_files SET deleting_at = now()
           WHERE id IN (
               SELECT old.id
               FROM (SELECT DISTINCT tenant_id FROM tenant_usage) u
               LEFT JOIN tenant_limits l ON l.tenant_id = u.tenant_id
               CROSS JOIN LATERAL (
                   SELECT f.id FROM source_files f JOIN tasks t ON t.source_file_id = f.id
                   WHERE f.tenant_id = u.tenant_id AND f.deleting_at IS NULL
                     AND f.created_at < now()
                         - make_interval(secs => coalesce(l.retention_secs, $1)::float8)
                     AND t.status IN ('COMPLETED', 'FAILED')
                   ORDER BY f.created_at
                   LIMIT $2
               ) old
               LIMIT $2)
             AND deleting_at IS NULL"#,
        default_retention_secs,
        limit
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

/// Marks up to `limit` of `tenant`'s files, whatever their task's state. Returns how many.
pub async fn mark_tenant(db: impl PgExecutor<'_>, tenant: &str, limit: i64) -> sqlx::Result<u64> {
    let done = sqlx::query!(
        r#"UPDATE source_files SET deleting_at = now()
           WHERE id IN (SELECT id FROM source_files
                        WHERE tenant_id = $1 AND deleting_at IS NULL LIMIT $2)"#,
        tenant,
        limit
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

/// Up to `limit` marked files (of `tenant` only, when given) whose task no consumer holds: a
/// task that was RUNNING when its file was marked keeps its file until it ends or its lease
/// runs out, so rows it commits are never left behind for the file row's cascade.
pub async fn marked(
    db: impl PgExecutor<'_>,
    tenant: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<Marked>> {
    sqlx::query_as!(
        Marked,
        r#"SELECT f.id, f.tenant_id, f.blob_name
           FROM source_files f JOIN tasks t ON t.source_file_id = f.id
           WHERE f.deleting_at IS NOT NULL AND ($1::text IS NULL OR f.tenant_id = $1)
             AND NOT (t.status = 'RUNNING' AND t.lease_expires_at >= now())
           ORDER BY f.deleting_at, f.id
           LIMIT $2"#,
        tenant,
        limit
    )
    .fetch_all(db)
    .await
}

/// Deletes up to `limit` rows that hang on the marked file `id`: row chunks first (each holds up
/// to 256 parsed rows), then error records, rejected rows and events (with their deliveries, by
/// cascade). Returns how many it deleted; 0 means only the file row and its few small
/// cascades (task, sheets, attempt errors) are left.
pub async fn delete_dependents(db: &PgPool, id: Uuid, limit: i64) -> sqlx::Result<u64> {
    let chunks = sqlx::query!(
        r#"DELETE FROM parsed_row_chunks c
           USING (SELECT sheet_index, first_row FROM parsed_row_chunks
                  WHERE source_file_id = $1 LIMIT $2) b
           WHERE c.source_file_id = $1 AND c.sheet_index = b.sheet_index
             AND c.first_row = b.first_row"#,
        id,
        limit
    )
    .execute(db)
    .await?
    .rows_affected();
    if chunks > 0 {
        return Ok(chunks);
    }
    let errors = sqlx::query!(
        r#"DELETE FROM validation_errors e
           USING (SELECT seq FROM validation_errors WHERE source_file_id = $1 LIMIT $2) b
           WHERE e.source_file_id = $1 AND e.seq = b.seq"#,
        id,
        limit
    )
    .execute(db)
    .await?
    .rows_affected();
    if errors > 0 {
        return Ok(errors);
    }
    let rejected = sqlx::query!(
        r#"DELETE FROM rejected_rows r
           USING (SELECT sheet, row_number FROM rejected_rows
                  WHERE source_file_id = $1 LIMIT $2) b
           WHERE r.source_file_id = $1 AND r.sheet = b.sheet AND r.row_number = b.row_number"#,
        id,
        limit
    )
    .execute(db)
    .await?
    .rows_affected();
    if rejected > 0 {
        return Ok(rejected);
    }
    let events = sqlx::query!(
        r#"DELETE FROM events WHERE id IN (
               SELECT id FROM events WHERE source_file_id = $1 LIMIT $2)"#,
        id,
        limit
    )
    .execute(db)
    .await?
    .rows_affected();
    Ok(events)
}
