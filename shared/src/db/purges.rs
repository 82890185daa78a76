//! `tenant_purges`: tenants whose removal was asked for (`api tenants purge`). Asking revokes
//! the tenant's API keys in the same transaction, so they stop working at once; the worker's
//! purge job then removes the tenant's files ([`super::removal`]) and, once none is left, the
//! rest of what it owns, a bounded batch per statement ([`delete_owned`]), and closes the
//! request. The row stays as the record of the purge.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor};

/// A purge request as `api tenants show` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Purge {
    pub tenant_id: String,
    pub requested_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// Whether `tenant` owns anything at all: a key, a file, a template, a webhook, a destination,
/// a Blob source,
/// a remembered mapping, learned column name or value, an event, or limits of its own.
pub async fn owns_anything(db: impl PgExecutor<'_>, tenant: &str) -> sqlx::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM api_keys WHERE tenant_id = $1)
               OR EXISTS (SELECT 1 FROM source_files WHERE tenant_id = $1)
               OR EXISTS (SELECT 1 FROM templates WHERE tenant_id = $1)
               OR EXISTS (SELECT 1 FROM webhook_endpoints WHERE tenant_id = $1)
               OR EXISTS (SELECT 1 FROM destinations WHERE tenant_id = $1)
               OR EXISTS (SELECT 1 FROM sources WHERE tenant_id = $1)
               OR EXISTS (SELECT 1 FROM remembered_mappings WHERE tenant_id = $1)
               OR EXISTS (SELECT 1 FROM learned_columns WHERE tenant_id = $1)
               OR EXISTS (SELECT 1 FROM learned_values WHERE tenant_id = $1)
               OR EXISTS (SELECT 1 FROM events WHERE tenant_id = $1)
               OR EXISTS (SELECT 1 FROM tenant_limits WHERE tenant_id = $1)
               OR EXISTS (SELECT 1 FROM tenant_usage WHERE tenant_id = $1 AND stored_bytes > 0)
               AS "owns!""#,
        tenant
    )
    .fetch_one(db)
    .await
}

/// Records (or reopens) the purge of `tenant`, revokes its keys and stops its Blob sources, in
/// the caller's transaction: the keys stop working and no file is imported any more when it
/// commits, before any file is touched.
pub async fn request(conn: &mut PgConnection, tenant: &str) -> sqlx::Result<Purge> {
    revoke_keys(&mut *conn, tenant).await?;
    sqlx::query!(
        "UPDATE sources SET enabled = false WHERE tenant_id = $1",
        tenant
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query_as!(
        Purge,
        r#"INSERT INTO tenant_purges (tenant_id) VALUES ($1)
           ON CONFLICT (tenant_id) DO UPDATE
               SET requested_at = now(), finished_at = NULL
           RETURNING tenant_id, requested_at, finished_at"#,
        tenant
    )
    .fetch_one(&mut *conn)
    .await
}

/// Revokes every key of `tenant` that is not revoked yet.
pub async fn revoke_keys(db: impl PgExecutor<'_>, tenant: &str) -> sqlx::Result<u64> {
    let done = sqlx::query!(
        "UPDATE api_keys SET revoked_at = now() WHERE tenant_id = $1 AND revoked_at IS NULL",
        tenant
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

/// The purge of `tenant`, open or finished.
pub async fn find(db: impl PgExecutor<'_>, tenant: &str) -> sqlx::Result<Option<Purge>> {
    sqlx::query_as!(
        Purge,
        r#"SELECT tenant_id, requested_at, finished_at
           FROM tenant_purges WHERE tenant_id = $1"#,
        tenant
    )
    .fetch_optional(db)
    .await
}

/// The tenants whose purge is open, oldest request first.
pub async fn open(db: impl PgExecutor<'_>) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar!(
        r#"SELECT tenant_id FROM tenant_purges WHERE finished_at IS NULL
           ORDER BY requested_at, tenant_id"#
    )
    .fetch_all(db)
    .await
}

/// How many files `tenant` still has (marked or not).
pub async fn files_left(db: impl PgExecutor<'_>, tenant: &str) -> sqlx::Result<i64> {
    sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM source_files WHERE tenant_id = $1"#,
        tenant
    )
    .fetch_one(db)
    .await
}

/// Deletes up to `limit` rows `tenant` owns besides its files (call once it has none: its
/// templates are what its files were checked against), one table per call, the ones that grow
/// first: events (with their deliveries), webhook attempts, then endpoints, destinations (with
/// their deliveries), sources (with what they found), remembered mappings, learned column names, template versions and API
/// keys, and last its limits, usage and upload bucket.
/// Returns how many it deleted; 0 means nothing is left.
pub async fn delete_owned(db: &sqlx::PgPool, tenant: &str, limit: i64) -> sqlx::Result<u64> {
    let steps = [
        sqlx::query!(
            "DELETE FROM events WHERE id IN (SELECT id FROM events WHERE tenant_id = $1 LIMIT $2)",
            tenant,
            limit
        ),
        sqlx::query!(
            "DELETE FROM webhook_attempts WHERE id IN (
                 SELECT a.id FROM webhook_attempts a
                 JOIN webhook_endpoints e ON e.id = a.endpoint_id
                 WHERE e.tenant_id = $1 LIMIT $2)",
            tenant,
            limit
        ),
        sqlx::query!(
            "DELETE FROM webhook_endpoints WHERE id IN (
                 SELECT id FROM webhook_endpoints WHERE tenant_id = $1 LIMIT $2)",
            tenant,
            limit
        ),
        sqlx::query!(
            "DELETE FROM destinations WHERE id IN (
                 SELECT id FROM destinations WHERE tenant_id = $1 LIMIT $2)",
            tenant,
            limit
        ),
        sqlx::query!(
            "DELETE FROM sources WHERE id IN (
                 SELECT id FROM sources WHERE tenant_id = $1 LIMIT $2)",
            tenant,
            limit
        ),
        sqlx::query!(
            "DELETE FROM remembered_mappings WHERE (tenant_id, template_name, header_key) IN (
                 SELECT tenant_id, template_name, header_key FROM remembered_mappings
                 WHERE tenant_id = $1 LIMIT $2)",
            tenant,
            limit
        ),
        sqlx::query!(
            "DELETE FROM learned_columns WHERE (tenant_id, template_name, header_text) IN (
                 SELECT tenant_id, template_name, header_text FROM learned_columns
                 WHERE tenant_id = $1 LIMIT $2)",
            tenant,
            limit
        ),
        sqlx::query!(
            "DELETE FROM learned_values WHERE (tenant_id, template_name, field, text) IN (
                 SELECT tenant_id, template_name, field, text FROM learned_values
                 WHERE tenant_id = $1 LIMIT $2)",
            tenant,
            limit
        ),
        sqlx::query!(
            "DELETE FROM templates WHERE (tenant_id, name, version) IN (
                 SELECT tenant_id, name, version FROM templates WHERE tenant_id = $1 LIMIT $2)",
            tenant,
            limit
        ),
        sqlx::query!(
            "DELETE FROM api_keys WHERE id IN (
                 SELECT id FROM api_keys WHERE tenant_id = $1 LIMIT $2)",
            tenant,
            limit
        ),
        sqlx::query!("DELETE FROM tenant_limits WHERE tenant_id = $1", tenant),
        sqlx::query!("DELETE FROM upload_buckets WHERE tenant_id = $1", tenant),
        sqlx::query!("DELETE FROM tenant_usage WHERE tenant_id = $1", tenant),
        sqlx::query!("DELETE FROM tenant_row_usage WHERE tenant_id = $1", tenant),
        sqlx::query!("DELETE FROM import_sessions WHERE tenant_id = $1", tenant),
    ];
    for step in steps {
        let n = step.execute(db).await?.rows_affected();
        if n > 0 {
            return Ok(n);
        }
    }
    Ok(0)
}

/// Closes the purge of `tenant` if it has no file left; returns whether it did.
pub async fn finish(db: impl PgExecutor<'_>, tenant: &str) -> sqlx::Result<bool> {
    let done = sqlx::query!(
        "UPDATE tenant_purges SET finished_at = now()
         WHERE tenant_id = $1 AND finished_at IS NULL
           AND NOT EXISTS (SELECT 1 FROM source_files WHERE tenant_id = $1)",
        tenant
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}
