//! `webhook_endpoints` and their attempt log, as their owners manage them: every function takes
//! the caller's tenant, so another tenant's id finds nothing. Secrets go in sealed and never come
//! out here (the worker reads them through [`super::deliveries`]).

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::PgExecutor;
use uuid::Uuid;

#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub id: Uuid,
    pub tenant_id: String,
    pub url: String,
    pub events: Vec<String>,
    pub description: Option<String>,
    pub enabled: bool,
    /// `gone` or `failing` when the worker disabled it.
    pub disabled_reason: Option<String>,
    pub disabled_at: Option<DateTime<Utc>>,
    /// Since when every attempt has failed.
    pub failing_since: Option<DateTime<Utc>>,
    /// Until when the secret before the last rotation still signs.
    pub previous_secret_until: Option<DateTime<Utc>>,
    /// An Azure Event Grid topic: its deliveries are CloudEvents with the topic's key.
    pub event_grid: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

pub struct NewEndpoint<'a> {
    pub id: Uuid,
    pub tenant_id: &'a str,
    pub url: &'a str,
    pub events: &'a [String],
    pub description: Option<&'a str>,
    /// The signing secret, sealed for this endpoint's id.
    pub sealed_secret: &'a [u8],
    /// An Event Grid topic's access key, sealed for this endpoint's id.
    pub sealed_event_grid_key: Option<&'a [u8]>,
}

/// Creates the endpoint unless the tenant already has `max` of them (`None`).
pub async fn insert(
    db: impl PgExecutor<'_>,
    new: &NewEndpoint<'_>,
    max: i64,
) -> sqlx::Result<Option<Endpoint>> {
    sqlx::query_as!(
        Endpoint,
        r#"INSERT INTO webhook_endpoints
               (id, tenant_id, url, events, description, secret, event_grid_key)
           SELECT $1, $2, $3, $4, $5, $6, $8
           WHERE (SELECT count(*) FROM webhook_endpoints WHERE tenant_id = $2) < $7
           RETURNING id, tenant_id, url, events, description, enabled, disabled_reason,
                     disabled_at, failing_since, previous_secret_until,
                     event_grid_key IS NOT NULL AS "event_grid!", created_at, updated_at"#,
        new.id,
        new.tenant_id,
        new.url,
        new.events,
        new.description,
        new.sealed_secret,
        max,
        new.sealed_event_grid_key
    )
    .fetch_optional(db)
    .await
}

pub async fn list(db: impl PgExecutor<'_>, tenant_id: &str) -> sqlx::Result<Vec<Endpoint>> {
    sqlx::query_as!(
        Endpoint,
        r#"SELECT id, tenant_id, url, events, description, enabled, disabled_reason, disabled_at,
                  failing_since, previous_secret_until,
                  event_grid_key IS NOT NULL AS "event_grid!", created_at, updated_at
           FROM webhook_endpoints WHERE tenant_id = $1 ORDER BY created_at, id"#,
        tenant_id
    )
    .fetch_all(db)
    .await
}

pub async fn find(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    id: Uuid,
) -> sqlx::Result<Option<Endpoint>> {
    sqlx::query_as!(
        Endpoint,
        r#"SELECT id, tenant_id, url, events, description, enabled, disabled_reason, disabled_at,
                  failing_since, previous_secret_until,
                  event_grid_key IS NOT NULL AS "event_grid!", created_at, updated_at
           FROM webhook_endpoints WHERE id = $1 AND tenant_id = $2"#,
        id,
        tenant_id
    )
    .fetch_optional(db)
    .await
}

/// What a `PATCH` changes; `None` leaves a field as it is.
#[derive(Debug, Default)]
pub struct Change<'a> {
    pub url: Option<&'a str>,
    pub events: Option<&'a [String]>,
    pub enabled: Option<bool>,
    /// `Some("")` clears it.
    pub description: Option<&'a str>,
    /// `Some(None)` makes it a Standard Webhooks endpoint again; `Some(Some(sealed))` an Event
    /// Grid topic with that key.
    pub event_grid_key: Option<Option<&'a [u8]>>,
}

/// Applies `change`. Enabling a disabled endpoint forgets why it was disabled and how long it
/// had been failing, and makes its waiting deliveries due at once; disabling keeps them waiting.
pub async fn update(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    id: Uuid,
    change: &Change<'_>,
) -> sqlx::Result<Option<Endpoint>> {
    sqlx::query_as!(
        Endpoint,
        r#"WITH old AS (
               SELECT enabled FROM webhook_endpoints WHERE id = $1 AND tenant_id = $2
           ), changed AS (
               UPDATE webhook_endpoints SET
                   url = COALESCE($3, url),
                   events = COALESCE($4, events),
                   description = CASE WHEN $6::text IS NULL THEN description
                                      ELSE NULLIF($6, '') END,
                   enabled = COALESCE($5, enabled),
                   disabled_at = CASE WHEN $5 IS NULL THEN disabled_at
                                      WHEN $5 THEN NULL
                                      ELSE COALESCE(disabled_at, now()) END,
                   disabled_reason = CASE WHEN $5 IS TRUE THEN NULL ELSE disabled_reason END,
                   failing_since = CASE WHEN $5 IS TRUE THEN NULL ELSE failing_since END,
                   event_grid_key = CASE WHEN $7 THEN $8 ELSE event_grid_key END,
                   updated_at = now()
               WHERE id = $1 AND tenant_id = $2
               RETURNING id, tenant_id, url, events, description, enabled, disabled_reason,
                         disabled_at, failing_since, previous_secret_until,
                         event_grid_key IS NOT NULL AS event_grid, created_at, updated_at
           ), due AS (
               UPDATE webhook_deliveries SET available_at = now()
               WHERE endpoint_id IN (SELECT id FROM changed WHERE enabled)
                 AND EXISTS (SELECT 1 FROM old WHERE NOT old.enabled)
                 AND status IN ('PENDING', 'FAILED')
           )
           SELECT id AS "id!", tenant_id AS "tenant_id!", url AS "url!", events AS "events!",
                  description, enabled AS "enabled!", disabled_reason, disabled_at,
                  failing_since, previous_secret_until, event_grid AS "event_grid!",
                  created_at AS "created_at!", updated_at AS "updated_at!"
           FROM changed"#,
        id,
        tenant_id,
        change.url,
        change.events,
        change.enabled,
        change.description,
        change.event_grid_key.is_some(),
        change.event_grid_key.flatten()
    )
    .fetch_optional(db)
    .await
}

/// Deletes the endpoint with its deliveries and attempt log.
pub async fn delete(db: impl PgExecutor<'_>, tenant_id: &str, id: Uuid) -> sqlx::Result<bool> {
    let done = sqlx::query!(
        "DELETE FROM webhook_endpoints WHERE id = $1 AND tenant_id = $2",
        id,
        tenant_id
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Rotates the secret: the current one keeps signing, beside `sealed_secret`, for `window`.
pub async fn rotate(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    id: Uuid,
    sealed_secret: &[u8],
    window: Duration,
) -> sqlx::Result<Option<Endpoint>> {
    sqlx::query_as!(
        Endpoint,
        r#"UPDATE webhook_endpoints
           SET previous_secret = secret,
               previous_secret_until = now() + make_interval(secs => $4),
               secret = $3, updated_at = now()
           WHERE id = $1 AND tenant_id = $2
           RETURNING id, tenant_id, url, events, description, enabled, disabled_reason,
                     disabled_at, failing_since, previous_secret_until,
                     event_grid_key IS NOT NULL AS "event_grid!", created_at, updated_at"#,
        id,
        tenant_id,
        sealed_secret,
        window.as_secs_f64()
    )
    .fetch_optional(db)
    .await
}

/// Queues again, for the endpoint, every event of its tenant and types written since `since`:
/// delivered, failed and dead ones alike, and ones from before it existed (not those in flight,
/// which are being delivered). Each starts its retry schedule over. `None` for an unknown
/// endpoint; else how many were queued.
///
/// It never waits for a row another transaction holds, so no number of replays at once, beside
/// a worker recording outcomes, can make a lock cycle: existing rows are revived with `SKIP
/// LOCKED` (a locked one is in flight: being claimed or recorded, so it is delivered or retried
/// anyway), and only events with no row yet are inserted, in event order (two replays inserting
/// the same rows take them in the same order).
pub async fn replay(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    id: Uuid,
    since: DateTime<Utc>,
) -> sqlx::Result<Option<i64>> {
    let row = sqlx::query!(
        r#"WITH endpoint AS (
               SELECT id, events FROM webhook_endpoints WHERE id = $1 AND tenant_id = $2
           ), wanted AS (
               SELECT ev.id, event_delivery_time(ev.created_at) AS at
               FROM events ev, endpoint
               WHERE ev.tenant_id = $2 AND ev.created_at >= $3 AND ev.type = ANY (endpoint.events)
           ), revived AS (
               UPDATE webhook_deliveries d
               SET status = 'PENDING', failures = 0, deferrals = 0, available_at = now(),
                   locked_until = NULL, delivered_at = NULL
               WHERE d.id IN (
                   SELECT x.id FROM webhook_deliveries x JOIN wanted w
                       ON x.event_id = w.id AND x.event_created_at = w.at
                   WHERE x.endpoint_id = $1 AND x.status <> 'PROCESSING'
                   FOR UPDATE OF x SKIP LOCKED)
               RETURNING 1
           ), inserted AS (
               INSERT INTO webhook_deliveries (event_id, event_created_at, endpoint_id)
               SELECT w.id, w.at, endpoint.id FROM wanted w, endpoint
               WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                                 WHERE d.endpoint_id = endpoint.id AND d.event_id = w.id
                                   AND d.event_created_at = w.at)
               ORDER BY w.id
               ON CONFLICT (endpoint_id, event_id, event_created_at) DO NOTHING
               RETURNING 1
           ), queued AS (
               SELECT 1 FROM revived UNION ALL SELECT 1 FROM inserted
           )
           -- Revived rows are updates, which the insert trigger does not see: wake the
           -- delivery loops here.
           SELECT (SELECT count(*) FROM endpoint) AS "found!",
                  (SELECT count(*) FROM queued) AS "queued!",
                  (SELECT pg_notify('webhook_deliveries', '') FROM queued LIMIT 1) IS NULL
                      AS "woken""#,
        id,
        tenant_id,
        since
    )
    .fetch_one(db)
    .await?;
    Ok((row.found > 0).then_some(row.queued))
}

/// One request of the attempt log.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    /// The log's order and its paging cursor.
    pub id: i64,
    pub event_id: Uuid,
    pub attempt: i32,
    pub status_code: Option<i32>,
    pub outcome: String,
    pub duration_ms: i32,
    pub error: Option<String>,
    pub at: DateTime<Utc>,
}

/// Up to `limit` of the endpoint's attempts, newest first, older than attempt `before` when
/// given. Empty for another tenant's endpoint.
pub async fn attempts(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    endpoint_id: Uuid,
    before: Option<i64>,
    limit: i64,
) -> sqlx::Result<Vec<Attempt>> {
    sqlx::query_as!(
        Attempt,
        r#"SELECT a.id, a.event_id, a.attempt, a.status_code, a.outcome, a.duration_ms, a.error,
                  a.at
           FROM webhook_attempts a JOIN webhook_endpoints e ON e.id = a.endpoint_id
           WHERE a.endpoint_id = $1 AND e.tenant_id = $2 AND ($3::bigint IS NULL OR a.id < $3)
           ORDER BY a.id DESC
           LIMIT $4"#,
        endpoint_id,
        tenant_id,
        before,
        limit
    )
    .fetch_all(db)
    .await
}
