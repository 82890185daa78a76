//! `destination_deliveries`: the worker's queue of finished files to push to destinations, one
//! row per destination and file. Rows are written by Postgres in the transaction that completes
//! a task or records a corrections revision (see the migration `destinations`), claimed like
//! webhook deliveries (one short statement, `FOR UPDATE SKIP LOCKED`, a lease the claim loop
//! renews) and settled conditionally on still being ours and of the same revision: a new
//! revision or a redelivery that reset a row mid-delivery wins over the outcome of the old one.
//! A `webhook_rows` delivery records each acknowledged chunk as it goes, so a retry resumes at
//! the first chunk not acknowledged.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use super::deliveries::{FailedColumns, Health, Settled};
use super::Due;

/// A claimed delivery with its destination and what the delivery needs of its file.
#[derive(Debug, Clone, PartialEq)]
pub struct Claimed {
    pub id: Uuid,
    pub destination_id: Uuid,
    pub source_file_id: Uuid,
    pub task_id: Uuid,
    pub revision: i32,
    pub chunks_acked: i32,
    pub attempts: i32,
    pub failures: i32,
    pub queued_at: DateTime<Utc>,
    pub tenant_id: String,
    pub kind: String,
    pub url: String,
    pub prefix: String,
    pub format: Option<String>,
    pub chunk_size: Option<i32>,
    pub credential_kind: Option<String>,
    pub sealed_secret: Option<Vec<u8>>,
}

/// Claims up to `limit` due deliveries of enabled destinations (and expired claims), oldest due
/// first, for `lease`.
pub async fn claim(
    db: impl PgExecutor<'_>,
    limit: i64,
    lease: Duration,
) -> sqlx::Result<Vec<Claimed>> {
    sqlx::query_as!(
        Claimed,
        r#"WITH locked AS (
               SELECT d.id FROM destination_deliveries d
               JOIN destinations x ON x.id = d.destination_id
               WHERE x.enabled
                 AND ((d.status IN ('PENDING', 'FAILED') AND d.available_at <= now())
                      OR (d.status = 'DELIVERING' AND d.locked_until < now()))
               ORDER BY d.available_at LIMIT $1
               FOR UPDATE OF d SKIP LOCKED
           ), claimed AS (
               UPDATE destination_deliveries d
               SET status = 'DELIVERING', locked_until = now() + make_interval(secs => $2),
                   updated_at = now()
               FROM locked WHERE d.id = locked.id
               RETURNING d.*
           )
           SELECT c.id, c.destination_id, c.source_file_id, c.task_id, c.revision,
                  c.chunks_acked, c.attempts, c.failures, c.queued_at, x.tenant_id, x.kind,
                  x.url, x.prefix, x.format, x.chunk_size, x.credential_kind, x.sealed_secret
           FROM claimed c JOIN destinations x ON x.id = c.destination_id"#,
        limit,
        lease.as_secs_f64()
    )
    .fetch_all(db)
    .await
}

/// The heartbeat: extends the claims of the rows still being delivered.
pub async fn extend_claims(
    db: impl PgExecutor<'_>,
    ids: &[Uuid],
    lease: Duration,
) -> sqlx::Result<u64> {
    let done = sqlx::query!(
        r#"UPDATE destination_deliveries SET locked_until = now() + make_interval(secs => $2)
           WHERE id IN (SELECT id FROM destination_deliveries
                        WHERE id = ANY ($1) AND status = 'DELIVERING' FOR UPDATE SKIP LOCKED)"#,
        ids,
        lease.as_secs_f64()
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

/// Hands claimed, unsent deliveries back at shutdown, due at once.
pub async fn release(db: impl PgExecutor<'_>, ids: &[Uuid]) -> sqlx::Result<u64> {
    let done = sqlx::query!(
        r#"UPDATE destination_deliveries SET status = 'PENDING', locked_until = NULL,
               available_at = now(), updated_at = now()
           WHERE id = ANY ($1) AND status = 'DELIVERING'"#,
        ids
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

/// [`Due`] for the deliveries of enabled destinations.
pub async fn due(db: impl PgExecutor<'_>) -> sqlx::Result<Due> {
    let row = sqlx::query!(
        r#"SELECT
             (SELECT count(*) FROM destination_deliveries
              WHERE status = 'DELIVERING' AND locked_until >= now()) AS "held!",
             extract(epoch FROM least(
                 (SELECT min(d.available_at) FROM destination_deliveries d
                  JOIN destinations x ON x.id = d.destination_id
                  WHERE d.status IN ('PENDING', 'FAILED') AND x.enabled),
                 (SELECT min(locked_until) FROM destination_deliveries
                  WHERE status = 'DELIVERING'))
               - now())::float8 AS next_in_secs"#
    )
    .fetch_one(db)
    .await?;
    Ok(Due {
        held: row.held,
        next_in_secs: row.next_in_secs.map(|s| s.max(0.0)),
    })
}

/// Records how far a `webhook_rows` delivery got: `chunks` in all, `acked` acknowledged. Only
/// while the row is still ours and of `revision`; false otherwise (the delivery should stop). A
/// chunk acknowledged starts the retry schedule over (`failures` back to 0).
pub async fn progress(
    db: impl PgExecutor<'_>,
    id: Uuid,
    revision: i32,
    chunks: i32,
    acked: i32,
) -> sqlx::Result<bool> {
    let done = sqlx::query!(
        r#"UPDATE destination_deliveries SET chunks = $3, chunks_acked = $4, updated_at = now(),
               failures = CASE WHEN $4 > chunks_acked THEN 0 ELSE failures END
           WHERE id = $1 AND revision = $2 AND status = 'DELIVERING'"#,
        id,
        revision,
        chunks,
        acked
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// What one claimed delivery came to.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub id: Uuid,
    pub revision: i32,
    pub settled: Settled,
    /// `azure_blob`: the manifest written, for the `file.delivered` event.
    pub manifest: Option<serde_json::Value>,
}

/// Records one destination's batch in one transaction: each delivery's new state (only rows
/// still ours, of the same revision), a `file.delivered` event for each delivered one, and the
/// destination's health. Returns whether that disabled the destination.
pub async fn record(
    conn: &mut PgConnection,
    destination_id: Uuid,
    outcomes: &[Outcome],
    health: Health,
) -> sqlx::Result<bool> {
    let delivered: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| o.settled == Settled::Delivered)
        .collect();
    if !delivered.is_empty() {
        super::event_log::ensure(&mut *conn).await?;
        let ids: Vec<Uuid> = delivered.iter().map(|o| o.id).collect();
        let revisions: Vec<i32> = delivered.iter().map(|o| o.revision).collect();
        let manifests: Vec<Option<String>> = delivered
            .iter()
            .map(|o| o.manifest.as_ref().map(ToString::to_string))
            .collect();
        sqlx::query!(
            r#"WITH done AS (
                   UPDATE destination_deliveries d
                   SET status = 'DELIVERED', attempts = d.attempts + 1, delivered_at = now(),
                       chunks_acked = COALESCE(d.chunks, d.chunks_acked), locked_until = NULL,
                       last_error = NULL, updated_at = now()
                   FROM unnest($1::uuid[], $2::int[], $3::text[]) AS u (id, revision, manifest)
                   WHERE d.id = u.id AND d.revision = u.revision AND d.status = 'DELIVERING'
                   RETURNING d.destination_id, d.task_id, d.revision, u.manifest
               )
               INSERT INTO events (id, tenant_id, type, source_file_id, task_id, data, trace_id)
               SELECT gen_random_uuid(), f.tenant_id, 'file.delivered', t.source_file_id, t.id,
                      task_event_data(t)
                          || jsonb_build_object('destination_id', done.destination_id,
                                                'revision', done.revision)
                          || CASE WHEN done.manifest IS NULL THEN '{}'::jsonb
                                  ELSE jsonb_build_object('manifest', done.manifest::jsonb) END,
                      t.trace_id
               FROM done JOIN tasks t ON t.id = done.task_id
               JOIN source_files f ON f.id = t.source_file_id"#,
            &ids,
            &revisions,
            &manifests as &[Option<String>]
        )
        .execute(&mut *conn)
        .await?;
    }
    mark_failed(&mut *conn, outcomes).await?;
    record_health(&mut *conn, destination_id, health).await
}

/// Sets failed and deferred rows `FAILED` (or `DEAD`), due again after their delay.
async fn mark_failed(conn: &mut PgConnection, outcomes: &[Outcome]) -> sqlx::Result<()> {
    let FailedColumns {
        ids,
        delays,
        dead,
        tried,
        errors,
    } = FailedColumns::of(outcomes.iter().map(|o| (o.id, &o.settled)));
    if ids.is_empty() {
        return Ok(());
    }
    let revisions: Vec<i32> = outcomes
        .iter()
        .filter(|o| o.settled != Settled::Delivered)
        .map(|o| o.revision)
        .collect();
    sqlx::query!(
        r#"UPDATE destination_deliveries d
           SET status = CASE WHEN u.dead THEN 'DEAD'::destination_delivery_status
                             ELSE 'FAILED'::destination_delivery_status END,
               attempts = d.attempts + u.tried::int,
               failures = d.failures + u.tried::int,
               available_at = now() + make_interval(secs => u.delay),
               locked_until = NULL, last_error = u.error, updated_at = now()
           FROM unnest($1::uuid[], $2::int[], $3::float8[], $4::bool[], $5::bool[], $6::text[])
                AS u (id, revision, delay, dead, tried, error)
           WHERE d.id = u.id AND d.revision = u.revision AND d.status = 'DELIVERING'"#,
        &ids,
        &revisions,
        &delays,
        &dead,
        &tried,
        &errors
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// What the batch says about the destination; whether that disabled it (`failing`: every
/// attempt failed for longer than the given time). A destination has no `gone` answer.
async fn record_health(
    conn: &mut PgConnection,
    destination_id: Uuid,
    health: Health,
) -> sqlx::Result<bool> {
    match health {
        Health::Unknown | Health::Gone => Ok(false),
        Health::Answering => {
            sqlx::query!(
                "UPDATE destinations SET failing_since = NULL
                 WHERE id = $1 AND failing_since IS NOT NULL",
                destination_id
            )
            .execute(&mut *conn)
            .await?;
            Ok(false)
        }
        Health::Failing(disable_after) => {
            let disabled = sqlx::query_scalar!(
                r#"UPDATE destinations
                   SET failing_since = COALESCE(failing_since, now()),
                       enabled = CASE WHEN failing_since < now() - make_interval(secs => $2)
                                      THEN false ELSE enabled END,
                       disabled_reason = CASE WHEN failing_since < now()
                                                   - make_interval(secs => $2)
                                              THEN 'failing' ELSE disabled_reason END,
                       disabled_at = CASE WHEN failing_since < now() - make_interval(secs => $2)
                                          THEN now() ELSE disabled_at END
                   WHERE id = $1 AND enabled
                   RETURNING NOT enabled AS "disabled!""#,
                destination_id,
                disable_after.as_secs_f64()
            )
            .fetch_optional(&mut *conn)
            .await?;
            Ok(disabled == Some(true))
        }
    }
}

/// One delivery as `GET /api/v1/destinations/{id}/deliveries` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub source_file_id: Uuid,
    pub status: String,
    pub revision: i32,
    pub chunks: Option<i32>,
    pub chunks_acked: i32,
    pub attempts: i32,
    pub last_error: Option<String>,
    pub updated_at: DateTime<Utc>,
}

/// Up to `limit` deliveries of the destination, by file id (time order), after `after`.
pub async fn list(
    db: impl PgExecutor<'_>,
    destination_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> sqlx::Result<Vec<Listed>> {
    sqlx::query_as!(
        Listed,
        r#"SELECT source_file_id, status::text AS "status!", revision, chunks, chunks_acked,
                  attempts, last_error, updated_at
           FROM destination_deliveries
           WHERE destination_id = $1 AND ($2::uuid IS NULL OR source_file_id > $2)
           ORDER BY source_file_id LIMIT $3"#,
        destination_id,
        after,
        limit
    )
    .fetch_all(db)
    .await
}

/// What a redelivery found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Redelivery {
    Queued,
    /// The tenant has no such file.
    NoFile,
    /// The file's task is not COMPLETED: it has no rows to deliver.
    NotCompleted,
}

/// Queues the file to the destination again from its first chunk, at its latest revision.
pub async fn redeliver(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    destination_id: Uuid,
    source_file_id: Uuid,
) -> sqlx::Result<Redelivery> {
    let row = sqlx::query!(
        r#"WITH file AS (
               SELECT f.id, t.id AS task_id, t.status::text AS status,
                      COALESCE((SELECT max(revision) FROM file_revisions r
                                WHERE r.source_file_id = f.id), 0) AS revision
               FROM source_files f JOIN tasks t ON t.source_file_id = f.id
               WHERE f.id = $3 AND f.tenant_id = $1
           ), queued AS (
               INSERT INTO destination_deliveries (destination_id, source_file_id, task_id,
                                                   revision)
               SELECT $2, file.id, file.task_id, file.revision FROM file
               WHERE file.status = 'COMPLETED'
               ON CONFLICT (destination_id, source_file_id) DO UPDATE
                   SET task_id = EXCLUDED.task_id, revision = EXCLUDED.revision,
                       status = 'PENDING', chunks = NULL, chunks_acked = 0, failures = 0,
                       available_at = now(), locked_until = NULL, last_error = NULL,
                       queued_at = clock_timestamp(), updated_at = now()
               RETURNING 1 AS one
           ), woken AS (
               SELECT pg_notify('destination_deliveries', '') FROM queued
           )
           SELECT (SELECT status FROM file) AS status,
                  (SELECT count(*) FROM woken) AS "woken!""#,
        tenant_id,
        destination_id,
        source_file_id
    )
    .fetch_one(db)
    .await?;
    Ok(match row.status.as_deref() {
        None => Redelivery::NoFile,
        Some("COMPLETED") if row.woken > 0 => Redelivery::Queued,
        Some(_) => Redelivery::NotCompleted,
    })
}

/// Deletes up to `limit` delivered or dead rows not changed for `older_than`; how many.
pub async fn prune(db: impl PgExecutor<'_>, older_than: Duration, limit: i64) -> sqlx::Result<u64> {
    let done = sqlx::query!(
        r#"DELETE FROM destination_deliveries WHERE id IN (
               SELECT id FROM destination_deliveries
               WHERE status IN ('DELIVERED', 'DEAD')
                 AND updated_at < now() - make_interval(secs => $1)
               LIMIT $2)"#,
        older_than.as_secs_f64(),
        limit
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

/// What an operator watches: the age of the oldest delivery still waiting for an enabled
/// destination, and how many destinations the worker disabled.
#[derive(Debug, Clone, PartialEq)]
pub struct Backlog {
    pub oldest_waiting_secs: f64,
    pub disabled_failing: i64,
}

pub async fn backlog(db: impl PgExecutor<'_>) -> sqlx::Result<Backlog> {
    let row = sqlx::query!(
        r#"SELECT
             COALESCE(extract(epoch FROM now() - (
                 SELECT min(d.queued_at) FROM destination_deliveries d
                 JOIN destinations x ON x.id = d.destination_id
                 WHERE d.status IN ('PENDING', 'FAILED', 'DELIVERING') AND x.enabled
             ))::float8, 0) AS "oldest!",
             (SELECT count(*) FROM destinations WHERE disabled_reason = 'failing')
                 AS "failing!""#
    )
    .fetch_one(db)
    .await?;
    Ok(Backlog {
        oldest_waiting_secs: row.oldest.max(0.0),
        disabled_failing: row.failing,
    })
}

/// What a delivery tells of its file beside the rows.
#[derive(Debug, Clone, PartialEq)]
pub struct FileFacts {
    pub tenant_id: String,
    pub template_name: Option<String>,
    pub template_version: Option<i32>,
    pub metadata: Option<serde_json::Value>,
    pub end_user: Option<serde_json::Value>,
}

pub async fn file_facts(
    db: impl PgExecutor<'_>,
    source_file_id: Uuid,
) -> sqlx::Result<Option<FileFacts>> {
    sqlx::query_as!(
        FileFacts,
        r#"SELECT tenant_id, template_name, template_version, metadata, end_user
           FROM source_files WHERE id = $1"#,
        source_file_id
    )
    .fetch_optional(db)
    .await
}
