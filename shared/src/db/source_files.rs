//! `source_files`: one row per accepted upload, pointing at its blob.

use chrono::{DateTime, Utc};
use sqlx::PgExecutor;
use uuid::Uuid;

#[derive(Debug, Clone, PartialEq)]
pub struct SourceFile {
    pub id: Uuid,
    pub file_name: String,
    pub content_type: String,
    pub format: String,
    pub size_bytes: i64,
    pub sha256: String,
    pub blob_name: String,
    pub idempotency_key: Option<String>,
    pub created_at: DateTime<Utc>,
}

pub struct NewSourceFile<'a> {
    pub id: Uuid,
    pub file_name: &'a str,
    pub content_type: &'a str,
    pub format: &'a str,
    pub size_bytes: i64,
    pub sha256: &'a str,
    pub blob_name: &'a str,
    pub idempotency_key: Option<&'a str>,
}

pub async fn find(db: impl PgExecutor<'_>, id: Uuid) -> sqlx::Result<Option<SourceFile>> {
    sqlx::query_as!(
        SourceFile,
        r#"SELECT id, file_name, content_type, format, size_bytes, sha256, blob_name,
                  idempotency_key, created_at
           FROM source_files WHERE id = $1"#,
        id
    )
    .fetch_optional(db)
    .await
}

pub async fn find_by_idempotency_key(
    db: impl PgExecutor<'_>,
    key: &str,
) -> sqlx::Result<Option<SourceFile>> {
    sqlx::query_as!(
        SourceFile,
        r#"SELECT id, file_name, content_type, format, size_bytes, sha256, blob_name,
                  idempotency_key, created_at
           FROM source_files WHERE idempotency_key = $1"#,
        key
    )
    .fetch_optional(db)
    .await
}
