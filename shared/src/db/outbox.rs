//! `outbox_messages`: what the api promised to send, and the relay's record of sending it.
//! Claims are one short statement (`FOR UPDATE SKIP LOCKED` + a short lease that the relay renews
//! while it sends), sends happen outside any transaction, and each outcome is recorded
//! conditionally on the row still being ours. What is waiting is one view, `outbox_claimable`,
//! which the scalers' backlog query ([`SCALER_BACKLOG_QUERY`]) counts; the claim takes those rows
//! tenant by tenant, each up to its fair share.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::PgExecutor;
use uuid::Uuid;

use crate::domain::OutboxStatus;

pub use super::Due;

/// The default of the relay's `RELAY_MAX_ATTEMPTS`: send attempts before a message is DEAD. A
/// new row records it as its `max_attempts`, which [`mark_failed`] raises when the setting is higher.
pub const DEFAULT_MAX_ATTEMPTS: i32 = 10;

#[derive(Debug, Clone, PartialEq)]
pub struct OutboxMessage {
    pub id: Uuid,
    pub event_type: String,
    // Left as JSON: the relay forwards it whatever `event_type` says it is; the consumer decodes
    // it (a `ParseTaskPayload`) from the queue message, and refuses one that does not.
    pub payload: serde_json::Value,
    pub status: OutboxStatus,
    pub attempts: i32,
    pub max_attempts: i32,
    /// Sends deferred because the queue service was unavailable (they spend no attempt).
    pub deferrals: i32,
    pub available_at: DateTime<Utc>,
    pub locked_until: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub processed_at: Option<DateTime<Utc>>,
}

pub async fn find(db: impl PgExecutor<'_>, id: Uuid) -> sqlx::Result<Option<OutboxMessage>> {
    sqlx::query_as!(
        OutboxMessage,
        r#"SELECT id, event_type, payload, status AS "status: OutboxStatus", attempts, max_attempts,
                  deferrals, available_at, locked_until, last_error, created_at, processed_at
           FROM outbox_messages WHERE id = $1"#,
        id
    )
    .fetch_optional(db)
    .await
}

/// Claims up to `limit` due messages for `lease`: new or retry-due ones, and PROCESSING ones whose
/// relay let the claim expire (it died). Safe with any number of relays at once.
///
/// Fair between tenants: no tenant gets more than `per_tenant` messages in flight, counting its
/// rows being sent (claimed, lease running) and its tasks sent and not yet finished
/// (the view `outbox_in_flight`); within that, the claim takes tenants in turn (each tenant's oldest row, then
/// each one's second, …). The queue is first in, first out, so this bounds what another
/// tenant's upload waits behind. Like the webhook claim, it walks the tenants with rows waiting
/// (one index probe each) and reads a short range of each, so its cost follows the tenants,
/// never one tenant's backlog. Relays racing each other can each fill a tenant's room: with R
/// relays a tenant may briefly have up to R × `per_tenant` in flight.
pub async fn claim_batch(
    db: impl PgExecutor<'_>,
    limit: i64,
    lease: Duration,
    per_tenant: i64,
) -> sqlx::Result<Vec<OutboxMessage>> {
    sqlx::query_as!(
        OutboxMessage,
        r#"WITH open AS (
               -- The tenants with rows waiting and room for more in flight.
               SELECT w.tenant_id, $3 - COALESCE(f.n, 0) AS room
               FROM outbox_waiting_tenants w
               LEFT JOIN outbox_in_flight f ON f.tenant_id = w.tenant_id
               WHERE COALESCE(f.n, 0) < $3
           ), due AS (
               -- Each open tenant's oldest due rows, no more than its room.
               SELECT d.id, o.tenant_id, d.available_at
               FROM open o CROSS JOIN LATERAL (
                   SELECT d.id, d.available_at FROM outbox_messages d
                   WHERE d.tenant_id = o.tenant_id AND d.status IN ('PENDING', 'FAILED')
                     AND d.available_at <= now()
                   ORDER BY d.available_at LIMIT o.room) d
               UNION ALL
               -- Claims that expired (a dead relay's): already sent or about to be, taken
               -- whatever the tenant's room.
               SELECT id, tenant_id, available_at FROM outbox_messages
               WHERE status = 'PROCESSING' AND locked_until < now()
           ), ranked AS (
               SELECT id, available_at,
                      row_number() OVER (PARTITION BY tenant_id ORDER BY available_at) AS turn
               FROM due
           ), locked AS (
               SELECT o.id FROM outbox_messages o
               WHERE o.id IN (SELECT id FROM ranked ORDER BY turn, available_at LIMIT $1)
                 AND ((o.status IN ('PENDING', 'FAILED') AND o.available_at <= now())
                      OR (o.status = 'PROCESSING' AND o.locked_until < now()))
               FOR UPDATE SKIP LOCKED
           )
           UPDATE outbox_messages o
           SET status = 'PROCESSING', locked_until = now() + make_interval(secs => $2)
           FROM locked WHERE o.id = locked.id
           RETURNING o.id, o.event_type, o.payload, o.status AS "status: OutboxStatus",
                     o.attempts, o.max_attempts, o.deferrals, o.available_at, o.locked_until,
                     o.last_error, o.created_at, o.processed_at"#,
        limit,
        lease.as_secs_f64(),
        per_tenant
    )
    .fetch_all(db)
    .await
}

/// The outbox backlog a scaler acts on: how many messages are waiting to be sent (due PENDING and
/// FAILED rows, and rows whose claim expired because their relay died), one integer. It counts a
/// tenant's rows beyond its fair share too, which a relay claims as that tenant's tasks finish
/// (see [`claim_batch`] and [`due`]: a relaying job waits for them). The local scaler runs this text for jobs that relay; a deployment that runs the relay as a
/// job rather than always on (`deploy/` keeps it always on; `docs/operations.md` says why) gives
/// the same text to KEDA's `postgresql` trigger.
pub const SCALER_BACKLOG_QUERY: &str = "SELECT count(*) FROM outbox_claimable";

/// Runs [`SCALER_BACKLOG_QUERY`].
pub async fn claimable_count(db: impl PgExecutor<'_>) -> sqlx::Result<i64> {
    sqlx::query_scalar(SCALER_BACKLOG_QUERY).fetch_one(db).await
}

/// The heartbeat of a relay's claim: extends the lease of the rows of its batch that are still
/// PROCESSING (sent rows no longer are), in one statement, skipping rows locked right now (being
/// recorded): it never waits in a lock cycle. Returns how many were extended.
pub async fn extend_claims(
    db: impl PgExecutor<'_>,
    ids: &[Uuid],
    lease: Duration,
) -> sqlx::Result<u64> {
    let done = sqlx::query!(
        r#"UPDATE outbox_messages SET locked_until = now() + make_interval(secs => $2)
           WHERE id IN (SELECT id FROM outbox_messages
                        WHERE id = ANY ($1) AND status = 'PROCESSING' FOR UPDATE SKIP LOCKED)"#,
        ids,
        lease.as_secs_f64()
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

/// [`Due`], for a relay whose tenants may each have `per_tenant` messages in flight. Rows of a
/// tenant at its share are not due: the tenant waits for one of its tasks to finish, which
/// wakes the relay (the trigger `tasks_finished_notify_relay`). Until then those tasks count as
/// held, so a drain job waits for them (as for a claim that may expire) rather than leaving the
/// tenant's backlog behind while its consumers are still at work.
pub async fn due(db: impl PgExecutor<'_>, per_tenant: i64) -> sqlx::Result<Due> {
    let row = sqlx::query!(
        r#"WITH shares AS (
               SELECT w.tenant_id, COALESCE(f.n, 0) AS n, COALESCE(f.sent, 0) AS sent,
                      (SELECT min(o.available_at) FROM outbox_messages o
                       WHERE o.tenant_id = w.tenant_id AND o.status IN ('PENDING', 'FAILED'))
                        AS next_at
               FROM outbox_waiting_tenants w
               LEFT JOIN outbox_in_flight f ON f.tenant_id = w.tenant_id
           )
           SELECT
             (SELECT count(*) FROM outbox_messages
              WHERE status = 'PROCESSING' AND locked_until >= now())
             + (SELECT COALESCE(sum(sent), 0) FROM shares WHERE n >= $1)::bigint AS "held!",
             extract(epoch FROM least(
                 (SELECT min(next_at) FROM shares WHERE n < $1),
                 (SELECT min(locked_until) FROM outbox_messages WHERE status = 'PROCESSING'))
               - now())::float8 AS next_in_secs"#,
        per_tenant
    )
    .fetch_one(db)
    .await?;
    Ok(Due {
        held: row.held,
        // GREATEST in SQL would turn "nothing waiting" (NULL) into 0.
        next_in_secs: row.next_in_secs.map(|s| s.max(0.0)),
    })
}

/// Records successful sends. Returns, for each row that was still ours, the seconds from its
/// commit (`created_at`) to now: the relay's commit-to-sent lag.
pub async fn mark_sent(db: impl PgExecutor<'_>, ids: &[Uuid]) -> sqlx::Result<Vec<f64>> {
    sqlx::query_scalar!(
        r#"UPDATE outbox_messages
           SET status = 'COMPLETED', attempts = attempts + 1, processed_at = now(),
               locked_until = NULL
           WHERE id = ANY($1) AND status = 'PROCESSING'
           RETURNING extract(epoch FROM now() - created_at)::float8 AS "lag_secs!""#,
        ids
    )
    .fetch_all(db)
    .await
}

/// Records a send that failed because of the message itself (the service refused it): FAILED
/// and due again after `retry_in`, or DEAD once this was attempt number `max_attempts` (the
/// relay's `RELAY_MAX_ATTEMPTS`, the one limit). The row's own
/// `max_attempts` column, which bounds `attempts` in a CHECK, is raised to the limit when the
/// setting is higher than what the row was written with. Returns the new status and attempt
/// count, or `None` if the row was no longer ours.
pub async fn mark_failed(
    db: impl PgExecutor<'_>,
    id: Uuid,
    error: &str,
    retry_in: Duration,
    max_attempts: i32,
) -> sqlx::Result<Option<(OutboxStatus, i32)>> {
    let row = sqlx::query!(
        r#"UPDATE outbox_messages
           SET attempts = attempts + 1, last_error = $2, locked_until = NULL,
               max_attempts = GREATEST(max_attempts, $4),
               status = CASE WHEN attempts + 1 >= $4
                             THEN 'DEAD'::outbox_status ELSE 'FAILED'::outbox_status END,
               available_at = now() + make_interval(secs => $3)
           WHERE id = $1 AND status = 'PROCESSING'
           RETURNING status AS "status: OutboxStatus", attempts"#,
        id,
        error,
        retry_in.as_secs_f64(),
        max_attempts
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(|r| (r.status, r.attempts)))
}

/// Records sends that failed because the queue service was unavailable (transport errors,
/// timeouts, 408/429/5xx): FAILED and due again after each one's delay (in seconds), their
/// `deferrals` counted but not their `attempts`, so an outage never makes a message DEAD. One
/// statement for the whole batch; returns how many rows were still ours.
pub async fn defer(
    db: impl PgExecutor<'_>,
    ids: &[Uuid],
    delays_secs: &[f64],
    error: &str,
) -> sqlx::Result<u64> {
    let done = sqlx::query!(
        r#"UPDATE outbox_messages o
           SET status = 'FAILED', deferrals = o.deferrals + 1, last_error = $3,
               locked_until = NULL, available_at = now() + make_interval(secs => d.delay)
           FROM unnest($1::uuid[], $2::float8[]) AS d (id, delay)
           WHERE o.id = d.id AND o.status = 'PROCESSING'"#,
        ids,
        delays_secs,
        error
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

/// Hands claimed but unsent messages back at shutdown, due at once.
pub async fn release(db: impl PgExecutor<'_>, ids: &[Uuid]) -> sqlx::Result<u64> {
    let done = sqlx::query!(
        r#"UPDATE outbox_messages SET status = 'PENDING', locked_until = NULL, available_at = now()
           WHERE id = ANY($1) AND status = 'PROCESSING'"#,
        ids
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

/// Deletes up to `batch` COMPLETED messages processed longer than `retention` ago. Small batches
/// keep each delete short; call until it returns less than `batch`.
pub async fn purge_completed(
    db: impl PgExecutor<'_>,
    retention: Duration,
    batch: i64,
) -> sqlx::Result<u64> {
    let done = sqlx::query!(
        r#"DELETE FROM outbox_messages WHERE id IN (
               SELECT id FROM outbox_messages
               WHERE status = 'COMPLETED' AND processed_at < now() - make_interval(secs => $1)
               LIMIT $2
               FOR UPDATE SKIP LOCKED)"#,
        retention.as_secs_f64(),
        batch
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

/// Gives DEAD messages a fresh set of attempts (an operator's decision, after fixing the cause).
/// `last_error` is kept as a record of why they died.
pub async fn requeue_dead(db: impl PgExecutor<'_>) -> sqlx::Result<u64> {
    let done = sqlx::query!(
        r#"UPDATE outbox_messages SET status = 'PENDING', attempts = 0, available_at = now()
           WHERE status = 'DEAD'"#
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StatusCount {
    pub status: OutboxStatus,
    pub count: i64,
    pub oldest_created_at: Option<DateTime<Utc>>,
}

/// How many messages wait in one status of the backlog, and for how long the oldest has.
#[derive(Debug, Clone, PartialEq)]
pub struct Backlog {
    pub status: OutboxStatus,
    pub count: i64,
    /// Seconds since the oldest one's commit (Postgres' clock, the one `created_at` is in).
    pub oldest_age_secs: f64,
}

/// The messages not yet sent (PENDING, PROCESSING, FAILED) and the DEAD ones, per status (a
/// status with none has no row). Each status is read through its partial index, so the cost
/// follows the backlog, not the days of COMPLETED rows kept for retention: the relay reads it
/// for its gauges every few seconds.
pub async fn backlog(db: impl PgExecutor<'_>) -> sqlx::Result<Vec<Backlog>> {
    sqlx::query_as!(
        Backlog,
        r#"SELECT status AS "status!: OutboxStatus", count(*) AS "count!",
                  extract(epoch FROM now() - min(created_at))::float8 AS "oldest_age_secs!"
           FROM (SELECT status, created_at FROM outbox_messages
                 WHERE status IN ('PENDING', 'FAILED')
                 UNION ALL
                 SELECT status, created_at FROM outbox_messages WHERE status = 'PROCESSING'
                 UNION ALL
                 SELECT status, created_at FROM outbox_messages WHERE status = 'DEAD') backlog
           GROUP BY status ORDER BY status"#
    )
    .fetch_all(db)
    .await
}

/// How many messages are in each status, and the oldest of each: the relay's health at a glance.
pub async fn stats(db: impl PgExecutor<'_>) -> sqlx::Result<Vec<StatusCount>> {
    sqlx::query_as!(
        StatusCount,
        r#"SELECT status AS "status!: OutboxStatus", count(*) AS "count!",
                  min(created_at) AS oldest_created_at
           FROM outbox_messages GROUP BY status ORDER BY status"#
    )
    .fetch_all(db)
    .await
}
