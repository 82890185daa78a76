//! `templates`: a tenant's import templates, one row per version. A `PUT` of an existing name
//! adds a version; an upload names the exact version it is checked against; a delete hides every
//! version (uploads keep theirs). Old versions that no upload names are pruned as new ones come,
//! so a name holds at most [`KEPT_VERSIONS`] unused versions however often it is edited, and a
//! delete removes at once the versions no upload names. Every stored version's bytes (its schema's
//! JSON text) count toward the tenant's storage quota (the `templates_usage` trigger keeps them
//! in `tenant_usage` beside the files'), so what a tenant's templates hold is bounded too.

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use crate::domain::hook::Hook;
use crate::domain::OnInvalid;

/// Unused versions kept per name, besides the ones uploads name.
pub const KEPT_VERSIONS: i32 = 100;

/// Live (not deleted) template names a tenant may hold.
pub const MAX_TEMPLATES_PER_TENANT: i64 = 1000;

#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    pub name: String,
    pub version: i32,
    // A Table Schema, left as JSON: `shared` does not know templates; the `template` crate
    // compiles it where it is used (the api when it is saved, the parse child).
    pub schema: serde_json::Value,
    pub on_invalid: OnInvalid,
    pub sheet: Option<String>,
    /// The application's checks of each batch of rows.
    pub hooks: Json<Vec<Hook>>,
    pub created_at: DateTime<Utc>,
}

pub struct NewTemplate<'a> {
    pub tenant_id: &'a str,
    pub name: &'a str,
    // A Table Schema the api compiled before storing it (see `Template::schema`).
    pub schema: &'a serde_json::Value,
    pub on_invalid: &'a str,
    pub sheet: Option<&'a str>,
    pub hooks: &'a [Hook],
    /// The tenant's storage quota, which the new version must fit beside what it stores.
    pub quota_bytes: i64,
}

/// What a `PUT` did.
pub enum Stored {
    Created(Template),
    NewVersion(Template),
    /// The tenant already holds [`MAX_TEMPLATES_PER_TENANT`] live templates.
    LimitReached,
    /// The version's `bytes` do not fit beside the `used` bytes of the tenant's quota.
    QuotaExceeded {
        used: i64,
        bytes: i64,
    },
}

/// Stores a new version of `new.name`: version 1 for a new (or deleted) name, else the latest
/// plus one. Serialised per name by a transaction-scoped advisory lock, so two concurrent
/// `PUT`s make two versions rather than a key conflict.
pub async fn put(conn: &mut PgConnection, new: &NewTemplate<'_>) -> sqlx::Result<Stored> {
    let lock_key = format!("template:{}:{}", new.tenant_id, new.name);
    sqlx::query!(
        "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
        lock_key
    )
    .execute(&mut *conn)
    .await?;
    let latest = sqlx::query!(
        r#"SELECT max(version) AS "version", bool_and(deleted_at IS NULL) AS "live"
           FROM templates WHERE tenant_id = $1 AND name = $2"#,
        new.tenant_id,
        new.name
    )
    .fetch_one(&mut *conn)
    .await?;
    let live = latest.version.is_some() && latest.live == Some(true);
    // The quota's exact path (as an upload's when no usage shard has room): every usage shard
    // of the tenant locked to the end of the transaction, so two `PUT`s (or a `PUT` and an
    // upload) cannot both take the last of the quota, and the template's bytes granted to the
    // shard its trigger counts them in.
    let room = sqlx::query!(
        r#"SELECT g.used AS "used!", g.fits AS "fits!", template_bytes($2) AS "bytes!"
           FROM usage_regrant($1, $3, template_bytes($2)) g"#,
        new.tenant_id,
        new.schema,
        new.quota_bytes
    )
    .fetch_one(&mut *conn)
    .await?;
    if !room.fits {
        return Ok(Stored::QuotaExceeded {
            used: room.used,
            bytes: room.bytes,
        });
    }
    if !live {
        let count = sqlx::query_scalar!(
            r#"SELECT count(DISTINCT name) AS "n!" FROM templates
               WHERE tenant_id = $1 AND deleted_at IS NULL"#,
            new.tenant_id
        )
        .fetch_one(&mut *conn)
        .await?;
        if count >= MAX_TEMPLATES_PER_TENANT {
            return Ok(Stored::LimitReached);
        }
    }
    let version = latest.version.unwrap_or(0) + 1;
    let stored = sqlx::query_as!(
        Template,
        r#"INSERT INTO templates (tenant_id, name, version, schema, on_invalid, sheet, hooks)
           VALUES ($1, $2, $3, $4, $5, $6, $7)
           RETURNING name, version, schema, on_invalid AS "on_invalid: OnInvalid", sheet,
                     hooks AS "hooks: Json<Vec<Hook>>", created_at"#,
        new.tenant_id,
        new.name,
        version,
        new.schema,
        new.on_invalid,
        new.sheet,
        Json(new.hooks) as _
    )
    .fetch_one(&mut *conn)
    .await?;
    // Old versions no upload names go; those uploads name stay for their reports.
    sqlx::query!(
        r#"DELETE FROM templates t
           WHERE t.tenant_id = $1 AND t.name = $2 AND t.version <= $3::int - $4::int
             AND NOT EXISTS (SELECT 1 FROM source_files f
                             WHERE f.tenant_id = t.tenant_id AND f.template_name = t.name
                               AND f.template_version = t.version)"#,
        new.tenant_id,
        new.name,
        version,
        KEPT_VERSIONS
    )
    .execute(&mut *conn)
    .await?;
    Ok(if live {
        Stored::NewVersion(stored)
    } else {
        Stored::Created(stored)
    })
}

/// The latest live version of `name`, or the given version of a live template.
pub async fn find(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    name: &str,
    version: Option<i32>,
) -> sqlx::Result<Option<Template>> {
    sqlx::query_as!(
        Template,
        r#"SELECT name, version, schema, on_invalid AS "on_invalid: OnInvalid", sheet,
                  hooks AS "hooks: Json<Vec<Hook>>", created_at
           FROM templates
           WHERE tenant_id = $1 AND name = $2 AND deleted_at IS NULL
             AND ($3::int IS NULL OR version = $3)
           ORDER BY version DESC LIMIT 1"#,
        tenant_id,
        name,
        version
    )
    .fetch_optional(db)
    .await
}

/// A template with the size of its schema's JSON text, for pages bounded in bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Sized {
    pub template: Template,
    pub bytes: i64,
}

/// The latest version of up to `limit` live templates named after `after`, by name.
pub async fn list_latest(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    after: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<Sized>> {
    let rows = sqlx::query!(
        r#"SELECT DISTINCT ON (name) name, version, schema,
                  on_invalid AS "on_invalid: OnInvalid", sheet,
                  hooks AS "hooks: Json<Vec<Hook>>", created_at,
                  template_bytes(schema) AS "bytes!"
           FROM templates
           WHERE tenant_id = $1 AND deleted_at IS NULL AND ($2::text IS NULL OR name > $2)
           ORDER BY name, version DESC
           LIMIT $3"#,
        tenant_id,
        after,
        limit
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| Sized {
            template: Template {
                name: r.name,
                version: r.version,
                schema: r.schema,
                on_invalid: r.on_invalid,
                sheet: r.sheet,
                hooks: r.hooks,
                created_at: r.created_at,
            },
            bytes: r.bytes,
        })
        .collect())
}

/// Hides every version of `name`, removes those no upload names (their bytes leave the quota)
/// and forgets the mappings remembered and the column names and values learned for it (a template made
/// again under the name starts afresh); `false` when there was no live template of that name.
pub async fn delete(db: impl PgExecutor<'_>, tenant_id: &str, name: &str) -> sqlx::Result<bool> {
    let done = sqlx::query!(
        r#"WITH forgotten AS (
               DELETE FROM remembered_mappings WHERE tenant_id = $1 AND template_name = $2
           ), unlearned AS (
               DELETE FROM learned_columns WHERE tenant_id = $1 AND template_name = $2
           ), unmapped AS (
               DELETE FROM learned_values WHERE tenant_id = $1 AND template_name = $2
           ), live AS (
               SELECT t.version, EXISTS (SELECT 1 FROM source_files f
                                         WHERE f.tenant_id = t.tenant_id
                                           AND f.template_name = t.name
                                           AND f.template_version = t.version) AS named
               FROM templates t
               WHERE t.tenant_id = $1 AND t.name = $2 AND t.deleted_at IS NULL
           ), hidden AS (
               -- Versions an upload names stay, hidden, for the upload's report...
               UPDATE templates SET deleted_at = now()
               WHERE tenant_id = $1 AND name = $2
                 AND version IN (SELECT version FROM live WHERE named)
           ), removed AS (
               -- ...the others go (two disjoint sets: one statement cannot change a row twice).
               DELETE FROM templates
               WHERE tenant_id = $1 AND name = $2
                 AND version IN (SELECT version FROM live WHERE NOT named)
           )
           SELECT count(*) AS "hidden!" FROM live"#,
        tenant_id,
        name
    )
    .fetch_one(db)
    .await?;
    Ok(done.hidden > 0)
}

/// The template version a source file is checked against, with the upload's policy (which may
/// override the template's): for the worker, whatever happened to the template since.
#[derive(Debug, Clone, PartialEq)]
pub struct FileTemplate {
    pub name: String,
    pub version: i32,
    // A Table Schema, compiled by the parse child (see `Template::schema`).
    pub schema: serde_json::Value,
    /// The upload's policy (which may override the template's).
    pub on_invalid: OnInvalid,
    pub sheet: Option<String>,
    pub hooks: Json<Vec<Hook>>,
}

pub async fn of_file(
    db: impl PgExecutor<'_>,
    source_file_id: Uuid,
) -> sqlx::Result<Option<FileTemplate>> {
    sqlx::query_as!(
        FileTemplate,
        r#"SELECT t.name, t.version, t.schema, f.on_invalid AS "on_invalid!: OnInvalid",
                  t.sheet, t.hooks AS "hooks: Json<Vec<Hook>>"
           FROM source_files f
           JOIN templates t ON t.tenant_id = f.tenant_id AND t.name = f.template_name
                           AND t.version = f.template_version
           WHERE f.id = $1"#,
        source_file_id
    )
    .fetch_optional(db)
    .await
}
