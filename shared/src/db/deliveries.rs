//! `webhook_deliveries`: the worker's queue of events to POST, one row per event and endpoint,
//! and the record of what each request came to (`webhook_attempts`). Claimed like the outbox (one
//! short statement, `FOR UPDATE SKIP LOCKED`, a short lease the loop renews while it sends), but
//! per endpoint: a claim never takes an endpoint past `per_endpoint` rows in flight here, so one
//! slow endpoint holds only its own rows.
//! A claim walks the endpoints with rows waiting and takes each one's oldest due rows up to its
//! room, so its cost is that of the endpoints, never of one endpoint's backlog: an endpoint that
//! never answers piles up rows that no claim reads. What is claimable is also one view,
//! `webhook_deliveries_claimable` (due rows of enabled endpoints, and expired claims), which the
//! scalers' backlog query counts.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use super::Due;
use crate::domain::event::EventType;

/// A claimed delivery with what sending it needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    pub id: Uuid,
    pub event_id: Uuid,
    pub endpoint_id: Uuid,
    /// Requests made so far (the next is number `attempts + 1`).
    pub attempts: i32,
    /// Failed requests since it was (re)queued: the step of the retry schedule.
    pub failures: i32,
    pub deferrals: i32,
    pub url: String,
    pub secret: Vec<u8>,
    /// The secret before a rotation, while it still signs.
    pub previous_secret: Option<Vec<u8>>,
    /// The endpoint is an Event Grid topic: its sealed access key.
    pub event_grid_key: Option<Vec<u8>>,
    pub event_type: EventType,
    // Left as JSON: SQL writes it (`task_event_data`, the file delete) and the delivery signs
    // and sends it as written; its shape is held by the tests of `tests/it/events`.
    pub event_data: serde_json::Value,
    pub event_created_at: DateTime<Utc>,
    pub trace_id: Option<String>,
}

/// Claims up to `limit` due deliveries for `lease`, oldest due first, and no more of any endpoint
/// than makes `per_endpoint` in flight, counting the `held_counts` this worker already holds of
/// the endpoints `held`. Safe with any number of workers at once (each bounds its own requests
/// per endpoint).
pub async fn claim(
    db: impl PgExecutor<'_>,
    limit: i64,
    lease: Duration,
    per_endpoint: i32,
    held: &[Uuid],
    held_counts: &[i32],
) -> sqlx::Result<Vec<Delivery>> {
    sqlx::query_as!(
        Delivery,
        r#"WITH RECURSIVE held AS (
               SELECT * FROM unnest($4::uuid[], $5::int[]) AS h (endpoint_id, n)
           ), waiting (endpoint_id) AS (
               -- The endpoints with rows waiting, one index probe each (a loose index scan).
               (SELECT endpoint_id FROM webhook_deliveries
                WHERE status IN ('PENDING', 'FAILED') ORDER BY endpoint_id LIMIT 1)
               UNION ALL
               SELECT (SELECT d.endpoint_id FROM webhook_deliveries d
                       WHERE d.status IN ('PENDING', 'FAILED') AND d.endpoint_id > w.endpoint_id
                       ORDER BY d.endpoint_id LIMIT 1)
               FROM waiting w WHERE w.endpoint_id IS NOT NULL
           ), open AS (
               -- Those enabled and with room for more requests here.
               SELECT e.id, $3 - COALESCE(h.n, 0) AS room
               FROM waiting w
               JOIN webhook_endpoints e ON e.id = w.endpoint_id
               LEFT JOIN held h ON h.endpoint_id = e.id
               WHERE e.enabled AND COALESCE(h.n, 0) < $3
           ), due AS (
               -- Each open endpoint's oldest due rows, no more than its room: the cost of a
               -- claim does not grow with any endpoint's backlog.
               SELECT d.id, o.id AS endpoint_id, d.available_at
               FROM open o CROSS JOIN LATERAL (
                   SELECT d.id, d.available_at FROM webhook_deliveries d
                   WHERE d.endpoint_id = o.id AND d.status IN ('PENDING', 'FAILED')
                     AND d.available_at <= now()
                   ORDER BY d.available_at LIMIT o.room) d
               UNION ALL
               -- Claims that expired (a dead worker's), found by their own index.
               SELECT d.id, d.endpoint_id, d.available_at
               FROM webhook_deliveries d
               JOIN webhook_endpoints e ON e.id = d.endpoint_id
               LEFT JOIN held h ON h.endpoint_id = e.id
               WHERE d.status = 'PROCESSING' AND d.locked_until < now()
                 AND e.enabled AND COALESCE(h.n, 0) < $3
           ), ranked AS (
               SELECT due.id, due.available_at, COALESCE(h.n, 0) AS held,
                      row_number() OVER (PARTITION BY due.endpoint_id
                                         ORDER BY due.available_at) AS n
               FROM due LEFT JOIN held h ON h.endpoint_id = due.endpoint_id
           ), locked AS (
               SELECT d.id FROM webhook_deliveries d
               WHERE d.id IN (SELECT id FROM ranked WHERE n <= $3 - held
                              ORDER BY available_at LIMIT $1)
                 AND ((d.status IN ('PENDING', 'FAILED') AND d.available_at <= now())
                      OR (d.status = 'PROCESSING' AND d.locked_until < now()))
               FOR UPDATE SKIP LOCKED
           ), claimed AS (
               UPDATE webhook_deliveries d
               SET status = 'PROCESSING', locked_until = now() + make_interval(secs => $2)
               FROM locked WHERE d.id = locked.id
               RETURNING d.id, d.event_id, d.endpoint_id, d.attempts, d.failures, d.deferrals
           )
           SELECT c.id AS "id!", c.event_id AS "event_id!", c.endpoint_id AS "endpoint_id!",
                  c.attempts AS "attempts!", c.failures AS "failures!",
                  c.deferrals AS "deferrals!", e.url, e.secret,
                  CASE WHEN e.previous_secret_until > now() THEN e.previous_secret END
                      AS previous_secret, e.event_grid_key,
                  ev.type AS "event_type: EventType", ev.data AS event_data,
                  ev.created_at AS event_created_at, ev.trace_id
           FROM claimed c
           JOIN webhook_endpoints e ON e.id = c.endpoint_id
           JOIN events ev ON ev.id = c.event_id"#,
        limit,
        lease.as_secs_f64(),
        per_endpoint,
        held,
        held_counts
    )
    .fetch_all(db)
    .await
}

/// The heartbeat of a batch: extends the claims of its rows still PROCESSING. A row locked
/// right now is being recorded (by this batch, or by a replay's revival): skipped, not waited
/// for, so the heartbeat never joins a lock cycle.
pub async fn extend_claims(
    db: impl PgExecutor<'_>,
    ids: &[Uuid],
    lease: Duration,
) -> sqlx::Result<u64> {
    let done = sqlx::query!(
        r#"UPDATE webhook_deliveries SET locked_until = now() + make_interval(secs => $2)
           WHERE id IN (SELECT id FROM webhook_deliveries
                        WHERE id = ANY ($1) AND status = 'PROCESSING' FOR UPDATE SKIP LOCKED)"#,
        ids,
        lease.as_secs_f64()
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

/// [`Due`] for the deliveries of enabled endpoints.
pub async fn due(db: impl PgExecutor<'_>) -> sqlx::Result<Due> {
    let row = sqlx::query!(
        r#"SELECT
             (SELECT count(*) FROM webhook_deliveries
              WHERE status = 'PROCESSING' AND locked_until >= now()) AS "held!",
             extract(epoch FROM least(
                 (SELECT min(d.available_at) FROM webhook_deliveries d
                  JOIN webhook_endpoints e ON e.id = d.endpoint_id
                  WHERE d.status IN ('PENDING', 'FAILED') AND e.enabled),
                 (SELECT min(locked_until) FROM webhook_deliveries WHERE status = 'PROCESSING'))
               - now())::float8 AS next_in_secs"#
    )
    .fetch_one(db)
    .await?;
    Ok(Due {
        held: row.held,
        next_in_secs: row.next_in_secs.map(|s| s.max(0.0)),
    })
}

/// The deliveries a scaler acts on: how many a worker could claim right now.
pub const SCALER_BACKLOG_QUERY: &str = "SELECT count(*) FROM webhook_deliveries_claimable";

/// One request made, for the attempt log.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    pub event_id: Uuid,
    pub attempt: i32,
    pub status_code: Option<i32>,
    /// `delivered`, `failed`, `timeout`, `unreachable` or `gone`.
    pub outcome: &'static str,
    pub duration_ms: i32,
    pub error: Option<String>,
}

/// What became of one claimed delivery.
#[derive(Debug, Clone, PartialEq)]
pub enum Settled {
    Delivered,
    /// Failed: due again after `retry_in`, or DEAD when `dead`.
    Failed {
        retry_in: Duration,
        dead: bool,
        error: String,
    },
    /// Not sent (its endpoint was found down by another request): due again after `retry_in`,
    /// no attempt spent.
    Deferred {
        retry_in: Duration,
        error: String,
    },
}

/// What an endpoint's batch says about the endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// A request succeeded: it is not failing.
    Answering,
    /// Every request failed: failing since now if not already; disabled with reason `failing`
    /// once that is longer ago than the given time.
    Failing(Duration),
    /// It answered 410: disabled at once with reason `gone`.
    Gone,
    /// Nothing was sent.
    Unknown,
}

/// How one endpoint's batch was recorded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recorded {
    /// Rows still ours when recorded (a row whose claim expired and was taken over is not).
    pub updated: u64,
    /// The endpoint was disabled by this batch (`gone` or `failing`).
    pub disabled: bool,
}

/// Records one endpoint's batch in one transaction: the attempt log, each delivery's new state
/// (only rows still PROCESSING, i.e. still ours) and the endpoint's health.
pub async fn record(
    conn: &mut PgConnection,
    endpoint_id: Uuid,
    attempts: &[Attempt],
    settled: &[(Uuid, Settled)],
    health: Health,
) -> sqlx::Result<Recorded> {
    lock_settled(&mut *conn, settled).await?;
    log_attempts(&mut *conn, endpoint_id, attempts).await?;
    let delivered = mark_delivered(&mut *conn, settled).await?;
    let failed = mark_failed(&mut *conn, settled).await?;
    let disabled = record_health(&mut *conn, endpoint_id, health).await?;
    Ok(Recorded {
        updated: delivered + failed,
        disabled,
    })
}

/// Locks the settled rows still ours, first, in one order (their ids), skipping none: every
/// other statement that locks delivery rows either takes them in this order too or skips locked
/// ones (claims, heartbeats, replays), so recording never deadlocks with them.
async fn lock_settled(conn: &mut PgConnection, settled: &[(Uuid, Settled)]) -> sqlx::Result<()> {
    let ids: Vec<Uuid> = settled.iter().map(|(id, _)| *id).collect();
    sqlx::query!(
        r#"SELECT id FROM webhook_deliveries WHERE id = ANY ($1) AND status = 'PROCESSING'
           ORDER BY id FOR UPDATE"#,
        &ids
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(())
}

/// Adds the batch's requests to the attempt log.
async fn log_attempts(
    conn: &mut PgConnection,
    endpoint_id: Uuid,
    attempts: &[Attempt],
) -> sqlx::Result<()> {
    if !attempts.is_empty() {
        // First in the transaction, before it holds anything an added partition would wait for.
        super::event_log::ensure(&mut *conn).await?;
        let event_ids: Vec<Uuid> = attempts.iter().map(|a| a.event_id).collect();
        let numbers: Vec<i32> = attempts.iter().map(|a| a.attempt).collect();
        let codes: Vec<Option<i32>> = attempts.iter().map(|a| a.status_code).collect();
        let outcomes: Vec<String> = attempts.iter().map(|a| a.outcome.to_owned()).collect();
        let durations: Vec<i32> = attempts.iter().map(|a| a.duration_ms).collect();
        let errors: Vec<Option<String>> = attempts.iter().map(|a| a.error.clone()).collect();
        sqlx::query!(
            r#"INSERT INTO webhook_attempts
                   (endpoint_id, event_id, attempt, status_code, outcome, duration_ms, error)
               SELECT $1, a.event_id, a.attempt, a.status_code, a.outcome, a.duration_ms, a.error
               FROM unnest($2::uuid[], $3::int[], $4::int[], $5::text[], $6::int[], $7::text[])
                    AS a (event_id, attempt, status_code, outcome, duration_ms, error)"#,
            endpoint_id,
            &event_ids,
            &numbers,
            &codes as &[Option<i32>],
            &outcomes,
            &durations,
            &errors as &[Option<String>]
        )
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Sets the delivered rows `DELIVERED`; how many were still ours.
async fn mark_delivered(conn: &mut PgConnection, settled: &[(Uuid, Settled)]) -> sqlx::Result<u64> {
    let mut updated = 0;
    let delivered: Vec<Uuid> = settled
        .iter()
        .filter(|(_, s)| matches!(s, Settled::Delivered))
        .map(|(id, _)| *id)
        .collect();
    if !delivered.is_empty() {
        updated = sqlx::query!(
            r#"UPDATE webhook_deliveries
               SET status = 'DELIVERED', attempts = attempts + 1, delivered_at = now(),
                   locked_until = NULL, last_error = NULL
               WHERE id = ANY ($1) AND status = 'PROCESSING'"#,
            &delivered
        )
        .execute(&mut *conn)
        .await?
        .rows_affected();
    }
    Ok(updated)
}

/// Sets the failed and deferred rows `FAILED` (or `DEAD`), due again after their delay, counting
/// an attempt for a failure and a deferral otherwise; how many were still ours.
async fn mark_failed(conn: &mut PgConnection, settled: &[(Uuid, Settled)]) -> sqlx::Result<u64> {
    let mut updated = 0;
    let FailedColumns {
        ids,
        delays,
        dead,
        tried,
        errors,
    } = FailedColumns::of(settled.iter().map(|(id, s)| (*id, s)));
    if !ids.is_empty() {
        updated = sqlx::query!(
            r#"UPDATE webhook_deliveries d
               SET status = CASE WHEN u.dead THEN 'DEAD'::delivery_status
                                 ELSE 'FAILED'::delivery_status END,
                   attempts = d.attempts + u.tried::int,
                   failures = d.failures + u.tried::int,
                   deferrals = d.deferrals + (NOT u.tried)::int,
                   available_at = now() + make_interval(secs => u.delay),
                   locked_until = NULL, last_error = u.error
               FROM unnest($1::uuid[], $2::float8[], $3::bool[], $4::bool[], $5::text[])
                    AS u (id, delay, dead, tried, error)
               WHERE d.id = u.id AND d.status = 'PROCESSING'"#,
            &ids,
            &delays,
            &dead,
            &tried,
            &errors
        )
        .execute(&mut *conn)
        .await?
        .rows_affected();
    }
    Ok(updated)
}

/// The failed and deferred rows of a batch as the columns of one `unnest`: each row's id, delay
/// in seconds, whether it is dead, whether it was tried (an attempt spent) and its error. The
/// webhook and destination deliveries settle their rows alike.
#[derive(Debug, Default)]
pub(super) struct FailedColumns {
    pub ids: Vec<Uuid>,
    pub delays: Vec<f64>,
    pub dead: Vec<bool>,
    pub tried: Vec<bool>,
    pub errors: Vec<String>,
}

impl FailedColumns {
    pub(super) fn of<'a>(settled: impl Iterator<Item = (Uuid, &'a Settled)>) -> Self {
        let mut c = Self::default();
        for (id, s) in settled {
            let (retry_in, is_dead, was_tried, error) = match s {
                Settled::Delivered => continue,
                Settled::Failed {
                    retry_in,
                    dead,
                    error,
                } => (retry_in, *dead, true, error),
                Settled::Deferred { retry_in, error } => (retry_in, false, false, error),
            };
            c.ids.push(id);
            c.delays.push(retry_in.as_secs_f64());
            c.dead.push(is_dead);
            c.tried.push(was_tried);
            c.errors.push(error.clone());
        }
        c
    }
}

/// Records what the batch says about the endpoint's health; whether that disabled it.
async fn record_health(
    conn: &mut PgConnection,
    endpoint_id: Uuid,
    health: Health,
) -> sqlx::Result<bool> {
    let disabled = match health {
        Health::Unknown => false,
        Health::Answering => {
            sqlx::query!(
                "UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL",
                endpoint_id
            )
            .execute(&mut *conn)
            .await?;
            false
        }
        Health::Failing(disable_after) => {
            sqlx::query!(
                r#"UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, now())
                   WHERE id = $1"#,
                endpoint_id
            )
            .execute(&mut *conn)
            .await?;
            sqlx::query!(
                r#"UPDATE webhook_endpoints
                   SET enabled = false, disabled_reason = 'failing', disabled_at = now()
                   WHERE id = $1 AND enabled
                     AND failing_since < now() - make_interval(secs => $2)"#,
                endpoint_id,
                disable_after.as_secs_f64()
            )
            .execute(&mut *conn)
            .await?
            .rows_affected()
                == 1
        }
        Health::Gone => {
            sqlx::query!(
                r#"UPDATE webhook_endpoints
                   SET enabled = false, disabled_reason = 'gone', disabled_at = now()
                   WHERE id = $1 AND enabled"#,
                endpoint_id
            )
            .execute(&mut *conn)
            .await?
            .rows_affected()
                == 1
        }
    };
    Ok(disabled)
}

/// Hands claimed but unsent deliveries back at shutdown, due at once.
pub async fn release(db: impl PgExecutor<'_>, ids: &[Uuid]) -> sqlx::Result<u64> {
    let done = sqlx::query!(
        r#"UPDATE webhook_deliveries SET status = 'PENDING', locked_until = NULL,
               available_at = now()
           WHERE id = ANY ($1) AND status = 'PROCESSING'"#,
        ids
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

/// The delivery backlog an operator watches: how long the oldest event still waiting for an
/// enabled endpoint has waited, and how many endpoints the worker disabled, by reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Backlog {
    /// Seconds since the oldest undelivered event of an enabled endpoint was written; 0 when
    /// none waits.
    pub oldest_undelivered_secs: f64,
    pub disabled_gone: i64,
    pub disabled_failing: i64,
}

pub async fn backlog(db: impl PgExecutor<'_>) -> sqlx::Result<Backlog> {
    let row = sqlx::query!(
        r#"SELECT
             COALESCE(extract(epoch FROM now() - (
                 SELECT min(ev.created_at) FROM webhook_deliveries d
                 JOIN webhook_endpoints e ON e.id = d.endpoint_id
                 JOIN events ev ON ev.id = d.event_id
                 WHERE d.status IN ('PENDING', 'FAILED', 'PROCESSING') AND e.enabled
             ))::float8, 0) AS "oldest!",
             (SELECT count(*) FROM webhook_endpoints WHERE disabled_reason = 'gone') AS "gone!",
             (SELECT count(*) FROM webhook_endpoints WHERE disabled_reason = 'failing')
                 AS "failing!""#
    )
    .fetch_one(db)
    .await?;
    Ok(Backlog {
        oldest_undelivered_secs: row.oldest.max(0.0),
        disabled_gone: row.gone,
        disabled_failing: row.failing,
    })
}
