//! `destinations`: where a tenant wants its finished files' rows pushed (contract v1.3): its own
//! Blob container (`azure_blob`) or a row webhook (`webhook_rows`). A destination's secret part
//! (a SAS or connection string, or the webhook's signing secret) is stored sealed and never
//! read back by the api. Its deliveries are [`super::destination_deliveries`].

use chrono::{DateTime, Utc};
use sqlx::PgExecutor;
use uuid::Uuid;

/// A destination as its owner sees it (the sealed secret stays in the table).
#[derive(Debug, Clone, PartialEq)]
pub struct Destination {
    pub id: Uuid,
    pub tenant_id: String,
    /// `azure_blob` or `webhook_rows`.
    pub kind: String,
    /// The container URL or the webhook URL.
    pub url: String,
    pub prefix: String,
    pub format: Option<String>,
    pub chunk_size: Option<i32>,
    pub credential_kind: Option<String>,
    pub templates: Option<Vec<String>>,
    pub description: Option<String>,
    pub enabled: bool,
    pub disabled_reason: Option<String>,
    pub disabled_at: Option<DateTime<Utc>>,
    pub failing_since: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

/// What a new destination is made of.
#[derive(Debug, Clone)]
pub struct NewDestination<'a> {
    pub id: Uuid,
    pub tenant_id: &'a str,
    pub kind: &'a str,
    pub url: &'a str,
    pub prefix: &'a str,
    pub format: Option<&'a str>,
    pub chunk_size: Option<i32>,
    pub credential_kind: Option<&'a str>,
    pub sealed_secret: Option<&'a [u8]>,
    pub templates: Option<&'a [String]>,
    pub description: Option<&'a str>,
}

/// Inserts the destination unless the tenant already has `max`; `None` then.
pub async fn insert(
    db: impl PgExecutor<'_>,
    new: &NewDestination<'_>,
    max: i64,
) -> sqlx::Result<Option<Destination>> {
    sqlx::query_as!(
        Destination,
        r#"INSERT INTO destinations (id, tenant_id, kind, url, prefix, format, chunk_size,
                                     credential_kind, sealed_secret, templates, description)
           SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11
           WHERE (SELECT count(*) FROM destinations WHERE tenant_id = $2) < $12
           RETURNING id, tenant_id, kind, url, prefix, format, chunk_size, credential_kind,
                     templates, description, enabled, disabled_reason, disabled_at,
                     failing_since, created_at"#,
        new.id,
        new.tenant_id,
        new.kind,
        new.url,
        new.prefix,
        new.format,
        new.chunk_size,
        new.credential_kind,
        new.sealed_secret,
        new.templates,
        new.description,
        max
    )
    .fetch_optional(db)
    .await
}

pub async fn list(db: impl PgExecutor<'_>, tenant_id: &str) -> sqlx::Result<Vec<Destination>> {
    sqlx::query_as!(
        Destination,
        r#"SELECT id, tenant_id, kind, url, prefix, format, chunk_size, credential_kind,
                  templates, description, enabled, disabled_reason, disabled_at,
                  failing_since, created_at
           FROM destinations WHERE tenant_id = $1 ORDER BY created_at, id"#,
        tenant_id
    )
    .fetch_all(db)
    .await
}

pub async fn find(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    id: Uuid,
) -> sqlx::Result<Option<Destination>> {
    sqlx::query_as!(
        Destination,
        r#"SELECT id, tenant_id, kind, url, prefix, format, chunk_size, credential_kind,
                  templates, description, enabled, disabled_reason, disabled_at,
                  failing_since, created_at
           FROM destinations WHERE id = $1 AND tenant_id = $2"#,
        id,
        tenant_id
    )
    .fetch_optional(db)
    .await
}

/// What a `PATCH` changes; `None` leaves a column as it is. An empty description removes it.
#[derive(Debug, Clone, Default)]
pub struct Change<'a> {
    pub url: Option<&'a str>,
    pub prefix: Option<&'a str>,
    pub format: Option<&'a str>,
    pub chunk_size: Option<i32>,
    pub credential_kind: Option<&'a str>,
    /// With `credential_kind`: the new sealed secret (`None` for a managed identity).
    pub sealed_secret: Option<&'a [u8]>,
    /// `Some(None)`: no filter any more (every template's files).
    pub templates: Option<Option<&'a [String]>>,
    pub description: Option<&'a str>,
    pub enabled: Option<bool>,
}

/// Applies `change`; enabling clears the worker's reason and makes waiting deliveries due now.
pub async fn update(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    id: Uuid,
    change: &Change<'_>,
) -> sqlx::Result<Option<Destination>> {
    sqlx::query_as!(
        Destination,
        r#"WITH changed AS (
               UPDATE destinations SET
                   url = COALESCE($3, url),
                   prefix = COALESCE($4, prefix),
                   format = COALESCE($5, format),
                   chunk_size = COALESCE($6, chunk_size),
                   sealed_secret = CASE WHEN $7::text IS NULL THEN sealed_secret ELSE $8 END,
                   credential_kind = COALESCE($7, credential_kind),
                   templates = CASE WHEN $12 THEN NULL ELSE COALESCE($9, templates) END,
                   description = CASE WHEN $10::text IS NULL THEN description
                                      ELSE NULLIF($10, '') END,
                   enabled = COALESCE($11, enabled),
                   disabled_at = CASE WHEN $11 IS NULL THEN disabled_at
                                      WHEN $11 THEN NULL
                                      ELSE COALESCE(disabled_at, now()) END,
                   disabled_reason = CASE WHEN $11 IS TRUE THEN NULL ELSE disabled_reason END,
                   failing_since = CASE WHEN $11 IS TRUE THEN NULL ELSE failing_since END
               WHERE id = $1 AND tenant_id = $2
               RETURNING id, tenant_id, kind, url, prefix, format, chunk_size, credential_kind,
                         templates, description, enabled, disabled_reason, disabled_at,
                         failing_since, created_at
           ), due AS (
               UPDATE destination_deliveries SET available_at = now()
               WHERE destination_id IN (SELECT id FROM changed WHERE $11 IS TRUE)
                 AND status IN ('PENDING', 'FAILED')
           )
           SELECT id AS "id!", tenant_id AS "tenant_id!", kind AS "kind!", url AS "url!",
                  prefix AS "prefix!", format, chunk_size, credential_kind, templates,
                  description, enabled AS "enabled!", disabled_reason, disabled_at,
                  failing_since, created_at AS "created_at!"
           FROM changed"#,
        id,
        tenant_id,
        change.url,
        change.prefix,
        change.format,
        change.chunk_size,
        change.credential_kind,
        change.sealed_secret,
        change.templates.flatten(),
        change.description,
        change.enabled,
        change.templates == Some(None)
    )
    .fetch_optional(db)
    .await
}

/// Deletes the destination with its deliveries; false when the tenant has no such one.
pub async fn delete(db: impl PgExecutor<'_>, tenant_id: &str, id: Uuid) -> sqlx::Result<bool> {
    let done = sqlx::query!(
        "DELETE FROM destinations WHERE id = $1 AND tenant_id = $2",
        id,
        tenant_id
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}
