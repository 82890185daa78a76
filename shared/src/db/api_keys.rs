//! `api_keys`: the callers' keys. Only a SHA-256 of each secret is stored; a lookup hashes the
//! presented key and finds the row by that hash. Revocation is a timestamp, so a revoked key's
//! row stays for the audit trail and is refused from the moment it is set.

use chrono::{DateTime, Utc};
use sqlx::PgExecutor;
use uuid::Uuid;

#[derive(Debug, Clone, PartialEq)]
pub struct ApiKey {
    pub id: Uuid,
    pub tenant_id: String,
    pub name: String,
    pub prefix: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

pub struct NewApiKey<'a> {
    pub id: Uuid,
    pub tenant_id: &'a str,
    pub name: &'a str,
    pub prefix: &'a str,
    pub secret_hash: &'a [u8],
}

pub async fn insert(db: impl PgExecutor<'_>, key: &NewApiKey<'_>) -> sqlx::Result<ApiKey> {
    sqlx::query_as!(
        ApiKey,
        r#"INSERT INTO api_keys (id, tenant_id, name, prefix, secret_hash)
           VALUES ($1, $2, $3, $4, $5)
           RETURNING id, tenant_id, name, prefix, created_at, revoked_at"#,
        key.id,
        key.tenant_id,
        key.name,
        key.prefix,
        key.secret_hash,
    )
    .fetch_one(db)
    .await
}

/// The key whose secret hashes to `secret_hash`, unless it was revoked.
pub async fn find_active(
    db: impl PgExecutor<'_>,
    secret_hash: &[u8],
) -> sqlx::Result<Option<ApiKey>> {
    sqlx::query_as!(
        ApiKey,
        r#"SELECT id, tenant_id, name, prefix, created_at, revoked_at
           FROM api_keys WHERE secret_hash = $1 AND revoked_at IS NULL"#,
        secret_hash
    )
    .fetch_optional(db)
    .await
}

/// Every key, newest first (no secrets: only their hashes are stored).
pub async fn list(db: impl PgExecutor<'_>) -> sqlx::Result<Vec<ApiKey>> {
    sqlx::query_as!(
        ApiKey,
        r#"SELECT id, tenant_id, name, prefix, created_at, revoked_at
           FROM api_keys ORDER BY created_at DESC, id DESC"#
    )
    .fetch_all(db)
    .await
}

/// Revokes the key; `None` when there is no such key. Revoking twice keeps the first time.
pub async fn revoke(db: impl PgExecutor<'_>, id: Uuid) -> sqlx::Result<Option<ApiKey>> {
    sqlx::query_as!(
        ApiKey,
        r#"UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1
           RETURNING id, tenant_id, name, prefix, created_at, revoked_at"#,
        id
    )
    .fetch_optional(db)
    .await
}
