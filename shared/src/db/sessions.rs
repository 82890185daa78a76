//! `import_sessions`: short-lived, single-template tokens an application mints for its end
//! users (contract v1.3, "Import sessions"). Looked up by the SHA-256 of the token; a session
//! past its expiry is as good as gone, and the maintenance prunes it a day later.

use chrono::{DateTime, Utc};
use sqlx::PgExecutor;
use uuid::Uuid;

/// A session as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub id: Uuid,
    pub tenant_id: String,
    pub template_name: String,
    /// `{"id", "name"?, "email"?}`, as the application gave it.
    pub end_user: serde_json::Value,
    /// The application's own JSON object for every file of the session (free-form: it is the
    /// application's).
    pub metadata: Option<serde_json::Value>,
    pub allowed_origins: Vec<String>,
    pub max_uploads: i32,
    pub uploads_used: i32,
    pub expires_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
}

/// What a new session is.
pub struct NewSession<'a> {
    pub id: Uuid,
    pub tenant_id: &'a str,
    pub token_hash: &'a [u8; 32],
    pub template_name: &'a str,
    pub end_user: &'a serde_json::Value,
    pub metadata: Option<&'a serde_json::Value>,
    pub allowed_origins: &'a [String],
    pub max_uploads: i32,
    pub expires_at: DateTime<Utc>,
}

/// The most live (unexpired) sessions a tenant may hold: far more than its end users import at
/// once, and a bound on the table whatever a tenant's back end does.
pub const MAX_LIVE_PER_TENANT: i64 = 10_000;

/// Stores `new` unless its tenant holds [`MAX_LIVE_PER_TENANT`] live sessions (`None`); two
/// racing inserts may pass the bound by one each, which keeps it a bound.
pub async fn insert(
    db: impl PgExecutor<'_>,
    new: &NewSession<'_>,
) -> sqlx::Result<Option<Session>> {
    sqlx::query_as!(
        Session,
        r#"INSERT INTO import_sessions (id, tenant_id, token_hash, template_name, end_user,
                                        metadata, allowed_origins, max_uploads, expires_at)
           SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9
           WHERE (SELECT count(*) FROM import_sessions
                  WHERE tenant_id = $2 AND expires_at > now()) < $10
           RETURNING id, tenant_id, template_name, end_user, metadata, allowed_origins,
                     max_uploads, uploads_used, expires_at, created_at"#,
        new.id,
        new.tenant_id,
        &new.token_hash[..],
        new.template_name,
        new.end_user,
        new.metadata,
        new.allowed_origins,
        new.max_uploads,
        new.expires_at,
        MAX_LIVE_PER_TENANT
    )
    .fetch_optional(db)
    .await
}

/// The live session whose token hashes to `token_hash`; `None` when unknown, deleted or expired.
pub async fn find_live(
    db: impl PgExecutor<'_>,
    token_hash: &[u8; 32],
) -> sqlx::Result<Option<Session>> {
    sqlx::query_as!(
        Session,
        r#"SELECT id, tenant_id, template_name, end_user, metadata, allowed_origins, max_uploads,
                  uploads_used, expires_at, created_at
           FROM import_sessions WHERE token_hash = $1 AND expires_at > now()"#,
        &token_hash[..]
    )
    .fetch_optional(db)
    .await
}

/// Deletes the tenant's session `id`; false when there is none.
pub async fn delete(db: impl PgExecutor<'_>, tenant_id: &str, id: Uuid) -> sqlx::Result<bool> {
    let done = sqlx::query!(
        "DELETE FROM import_sessions WHERE id = $1 AND tenant_id = $2",
        id,
        tenant_id
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// Counts one upload against the session; false when it has used all it may (or expired).
pub async fn take_upload(db: impl PgExecutor<'_>, id: Uuid) -> sqlx::Result<bool> {
    let done = sqlx::query!(
        "UPDATE import_sessions SET uploads_used = uploads_used + 1
         WHERE id = $1 AND uploads_used < max_uploads AND expires_at > now()",
        id
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// Whether `id` is a file, or the task of a file, uploaded with session `session_id`.
pub async fn owns(db: impl PgExecutor<'_>, session_id: Uuid, id: Uuid) -> sqlx::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM source_files WHERE id = $2 AND session_id = $1)
               OR EXISTS (SELECT 1 FROM tasks t JOIN source_files f ON f.id = t.source_file_id
                          WHERE t.id = $2 AND f.session_id = $1) AS "owns!""#,
        session_id,
        id
    )
    .fetch_one(db)
    .await
}

/// The files uploaded with session `session_id` (at most its 100 uploads).
pub async fn files(db: impl PgExecutor<'_>, session_id: Uuid) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar!(
        "SELECT id FROM source_files WHERE session_id = $1",
        session_id
    )
    .fetch_all(db)
    .await
}

/// Whether some live session lets pages of `origin` call: for a CORS preflight, which carries
/// no token to tell which session it is for.
pub async fn origin_allowed(db: impl PgExecutor<'_>, origin: &str) -> sqlx::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM import_sessions
                          WHERE $1 = ANY (allowed_origins) AND expires_at > now()) AS "allowed!""#,
        origin
    )
    .fetch_one(db)
    .await
}

/// Deletes up to `batch` sessions that expired more than `grace` ago; returns how many.
pub async fn prune(
    db: impl PgExecutor<'_>,
    grace: std::time::Duration,
    batch: i64,
) -> sqlx::Result<u64> {
    let done = sqlx::query!(
        "DELETE FROM import_sessions WHERE id IN (
             SELECT id FROM import_sessions
             WHERE expires_at < now() - make_interval(secs => $1)
             ORDER BY expires_at LIMIT $2)",
        grace.as_secs_f64(),
        batch
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

/// Whether the resumable upload `id` was made with session `session_id`.
pub async fn owns_upload(
    db: impl PgExecutor<'_>,
    session_id: Uuid,
    id: Uuid,
) -> sqlx::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM resumable_uploads WHERE id = $2 AND session_id = $1)
               AS "owns!""#,
        session_id,
        id
    )
    .fetch_one(db)
    .await
}
