//! `sources`: a tenant's Blob containers (and prefixes) whose new blobs are imported without an
//! HTTP upload (contract v1.3). A source's secret part (a SAS or connection string) is stored
//! sealed and never read back by the api. What it found is [`super::source_blobs`]; this module
//! also holds the listing's bookkeeping (the marker, the pass, who lists), which the worker's
//! discovery claims like a queue row: one worker lists a source at a time, for a lease.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

/// A source as its owner sees it, with what it has found so far.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    pub id: Uuid,
    pub tenant_id: String,
    pub kind: String,
    pub container_url: String,
    pub prefix: String,
    pub credential_kind: String,
    pub template_name: Option<String>,
    pub on_invalid: Option<String>,
    pub metadata: Option<serde_json::Value>,
    pub description: Option<String>,
    pub import_existing: bool,
    pub after_import: String,
    pub enabled: bool,
    pub passes: i32,
    pub listed_at: Option<DateTime<Utc>>,
    pub last_error_code: Option<String>,
    pub last_error: Option<String>,
    pub last_error_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    /// Blobs found and not yet imported (waiting, being imported, or retried).
    pub waiting: i64,
    pub imported: i64,
    pub skipped: i64,
}

/// What a new source is made of.
#[derive(Debug, Clone)]
pub struct NewSource<'a> {
    pub id: Uuid,
    pub tenant_id: &'a str,
    pub container_url: &'a str,
    pub prefix: &'a str,
    pub credential_kind: &'a str,
    pub sealed_secret: Option<&'a [u8]>,
    pub template_name: Option<&'a str>,
    pub on_invalid: Option<&'a str>,
    pub metadata: Option<&'a serde_json::Value>,
    pub description: Option<&'a str>,
    pub import_existing: bool,
    pub after_import: &'a str,
    /// The SHA-256 of its events token.
    pub events_token_hash: &'a [u8],
}

/// Why a source was not created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The tenant has `max` sources already.
    TooMany,
    /// Another source (of this tenant or another) watches the container at an overlapping
    /// prefix: one of the two prefixes starts with the other.
    Claimed,
}

/// Inserts the source unless the tenant has `max` already or the container and prefix overlap
/// another source's. Serialised per container by an advisory lock taken in `tx`, so two
/// tenants racing for one container cannot both win.
pub async fn insert(
    tx: &mut PgConnection,
    new: &NewSource<'_>,
    max: i64,
) -> sqlx::Result<Result<Source, Refused>> {
    sqlx::query!(
        "SELECT pg_advisory_xact_lock(hashtextextended('sources:' || $1, 0))",
        new.container_url
    )
    .execute(&mut *tx)
    .await?;
    let taken = sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM sources
                          WHERE container_url = $1
                            AND (starts_with($2, prefix) OR starts_with(prefix, $2)))
                  AS "taken!""#,
        new.container_url,
        new.prefix
    )
    .fetch_one(&mut *tx)
    .await?;
    if taken {
        return Ok(Err(Refused::Claimed));
    }
    let id = sqlx::query_scalar!(
        r#"INSERT INTO sources (id, tenant_id, kind, container_url, prefix, credential_kind,
                                sealed_secret, template_name, on_invalid, metadata,
                                description, import_existing, after_import, events_token_hash)
           SELECT $1, $2, 'azure_blob', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $14
           WHERE (SELECT count(*) FROM sources WHERE tenant_id = $2) < $13
           RETURNING id"#,
        new.id,
        new.tenant_id,
        new.container_url,
        new.prefix,
        new.credential_kind,
        new.sealed_secret,
        new.template_name,
        new.on_invalid,
        new.metadata,
        new.description,
        new.import_existing,
        new.after_import,
        max,
        new.events_token_hash
    )
    .fetch_optional(&mut *tx)
    .await?;
    match id {
        None => Ok(Err(Refused::TooMany)),
        Some(id) => find(&mut *tx, new.tenant_id, id)
            .await?
            .map(Ok)
            .ok_or_else(|| sqlx::Error::RowNotFound),
    }
}

/// The select list of a [`Source`] (`s`) with its counts (`c`).
macro_rules! source_query {
    ($where:literal, $($arg:expr),*) => {
        sqlx::query_as!(
            Source,
            r#"SELECT s.id, s.tenant_id, s.kind, s.container_url, s.prefix, s.credential_kind,
                      s.template_name, s.on_invalid, s.metadata, s.description,
                      s.import_existing, s.after_import, s.enabled, s.passes, s.listed_at,
                      s.last_error_code, s.last_error, s.last_error_at, s.created_at,
                      c.waiting AS "waiting!", c.imported AS "imported!", c.skipped AS "skipped!"
               FROM sources s CROSS JOIN LATERAL (
                   SELECT count(*) FILTER (WHERE b.status IN ('PENDING', 'IMPORTING', 'FAILED'))
                              AS waiting,
                          count(*) FILTER (WHERE b.status = 'IMPORTED') AS imported,
                          count(*) FILTER (WHERE b.status = 'SKIPPED') AS skipped
                   FROM source_blobs b WHERE b.source_id = s.id) c
               "# + $where,
            $($arg),*
        )
    };
}

pub async fn list(db: impl PgExecutor<'_>, tenant_id: &str) -> sqlx::Result<Vec<Source>> {
    source_query!(
        "WHERE s.tenant_id = $1 ORDER BY s.created_at, s.id",
        tenant_id
    )
    .fetch_all(db)
    .await
}

pub async fn find(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    id: Uuid,
) -> sqlx::Result<Option<Source>> {
    source_query!("WHERE s.id = $1 AND s.tenant_id = $2", id, tenant_id)
        .fetch_optional(db)
        .await
}

/// What a `PATCH` changes; `None` leaves a column as it is.
#[derive(Debug, Clone, Default)]
pub struct Change<'a> {
    /// A new credential's kind and sealed secret (`None` for a managed identity).
    pub credential: Option<(&'a str, Option<&'a [u8]>)>,
    /// `Some(None)`: no template any more.
    pub template_name: Option<Option<&'a str>>,
    pub on_invalid: Option<Option<&'a str>>,
    pub metadata: Option<Option<&'a serde_json::Value>>,
    /// An empty description removes it.
    pub description: Option<&'a str>,
    pub after_import: Option<&'a str>,
    pub enabled: Option<bool>,
}

/// Applies `change`. A new credential or enabling makes the listing and the blobs waiting on a
/// retry due now (their last failure may have been the credential's).
pub async fn update(
    db: &mut PgConnection,
    tenant_id: &str,
    id: Uuid,
    change: &Change<'_>,
) -> sqlx::Result<Option<Source>> {
    let (credential_kind, sealed) = change.credential.unzip();
    let retry_now = change.credential.is_some() || change.enabled == Some(true);
    sqlx::query!(
        r#"WITH changed AS (
               UPDATE sources SET
                   sealed_secret = CASE WHEN $3::text IS NULL THEN sealed_secret ELSE $4 END,
                   credential_kind = COALESCE($3, credential_kind),
                   template_name = CASE WHEN $5 THEN $6 ELSE template_name END,
                   on_invalid = CASE WHEN $7 THEN $8 ELSE on_invalid END,
                   metadata = CASE WHEN $9 THEN $10 ELSE metadata END,
                   description = CASE WHEN $11::text IS NULL THEN description
                                      ELSE NULLIF($11, '') END,
                   after_import = COALESCE($12, after_import),
                   enabled = COALESCE($13, enabled),
                   list_due_at = CASE WHEN $14 THEN now() ELSE list_due_at END
               WHERE id = $1 AND tenant_id = $2
               RETURNING id
           )
           UPDATE source_blobs SET available_at = now()
           WHERE $14 AND source_id IN (SELECT id FROM changed) AND status IN ('PENDING', 'FAILED')"#,
        id,
        tenant_id,
        credential_kind,
        sealed.flatten(),
        change.template_name.is_some(),
        change.template_name.flatten(),
        change.on_invalid.is_some(),
        change.on_invalid.flatten(),
        change.metadata.is_some(),
        change.metadata.flatten(),
        change.description,
        change.after_import,
        change.enabled,
        retry_now
    )
    .execute(&mut *db)
    .await?;
    find(&mut *db, tenant_id, id).await
}

/// Gives the source a new events token (its SHA-256); the old one stops working at once.
/// `false` for another tenant's or an unknown source.
pub async fn set_events_token(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    id: Uuid,
    hash: &[u8],
) -> sqlx::Result<bool> {
    let done = sqlx::query!(
        "UPDATE sources SET events_token_hash = $3 WHERE id = $1 AND tenant_id = $2",
        id,
        tenant_id,
        hash
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The source (id, tenant) whose events token has this SHA-256.
pub async fn by_events_token(
    db: impl PgExecutor<'_>,
    hash: &[u8],
) -> sqlx::Result<Option<(Uuid, String)>> {
    let row = sqlx::query!(
        "SELECT id, tenant_id FROM sources WHERE events_token_hash = $1",
        hash
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(|r| (r.id, r.tenant_id)))
}

/// Deletes the source with what it found (the files it imported stay, with their `origin`);
/// false when the tenant has no such one.
pub async fn delete(db: impl PgExecutor<'_>, tenant_id: &str, id: Uuid) -> sqlx::Result<bool> {
    let done = sqlx::query!(
        "DELETE FROM sources WHERE id = $1 AND tenant_id = $2",
        id,
        tenant_id
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A source claimed for listing, with what opening its container needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    pub id: Uuid,
    pub tenant_id: String,
    pub container_url: String,
    pub prefix: String,
    pub credential_kind: String,
    pub sealed_secret: Option<Vec<u8>>,
    pub import_existing: bool,
    pub list_marker: Option<String>,
    pub passes: i32,
}

/// Claims the enabled source whose listing is most overdue, for `lease`; `None` when none is
/// due. Two workers never list one source at once.
pub async fn claim_listing(
    db: impl PgExecutor<'_>,
    lease: Duration,
) -> sqlx::Result<Option<Listing>> {
    sqlx::query_as!(
        Listing,
        r#"UPDATE sources s SET list_locked_until = now() + make_interval(secs => $1)
           WHERE s.id = (SELECT id FROM sources
                         WHERE enabled AND list_due_at <= now()
                           AND (list_locked_until IS NULL OR list_locked_until < now())
                         ORDER BY list_due_at LIMIT 1
                         FOR UPDATE SKIP LOCKED)
           RETURNING s.id, s.tenant_id, s.container_url, s.prefix, s.credential_kind,
                     s.sealed_secret, s.import_existing, s.list_marker, s.passes"#,
        lease.as_secs_f64()
    )
    .fetch_optional(db)
    .await
}

/// Seconds until the next enabled source's listing is due (negative: overdue); `None` when
/// there is no enabled source.
pub async fn next_listing_in(db: impl PgExecutor<'_>) -> sqlx::Result<Option<f64>> {
    sqlx::query_scalar!(
        r#"SELECT extract(epoch FROM min(list_due_at) - now())::float8
           FROM sources WHERE enabled"#
    )
    .fetch_one(db)
    .await
}

/// How a listing step ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listed {
    /// A page was read; `next` is where the following one starts (`None`: the pass ended, the
    /// next starts after `interval`).
    Page {
        next: Option<String>,
        interval: Duration,
    },
    /// The container could not be listed: retried after `retry_in`, the marker kept.
    Failed {
        code: &'static str,
        message: String,
        retry_in: Duration,
    },
}

/// Records a listing step of `source` (in the transaction that wrote the page's blobs, so a
/// worker killed midway lists the same page again) and hands the listing back. A pass that
/// ends prunes the finished blobs no longer seen (see the migration).
pub async fn listed(tx: &mut PgConnection, source: &Listing, step: &Listed) -> sqlx::Result<()> {
    match step {
        Listed::Page { next, interval } => {
            let ended = next.is_none();
            sqlx::query!(
                r#"UPDATE sources SET list_marker = $2, list_locked_until = NULL,
                       passes = passes + $3::int, listed_at = now(),
                       list_due_at = now() + make_interval(secs => $4),
                       last_error_code = CASE WHEN last_error_code = 'source_unreachable'
                                              THEN NULL ELSE last_error_code END,
                       last_error = CASE WHEN last_error_code = 'source_unreachable'
                                         THEN NULL ELSE last_error END
                   WHERE id = $1"#,
                source.id,
                next.as_deref(),
                i32::from(ended),
                if ended { interval.as_secs_f64() } else { 0.0 }
            )
            .execute(&mut *tx)
            .await?;
            if ended {
                sqlx::query!(
                    r#"DELETE FROM source_blobs
                       WHERE source_id = $1 AND status IN ('IMPORTED', 'SKIPPED')
                         AND seen_pass < $2"#,
                    source.id,
                    source.passes
                )
                .execute(&mut *tx)
                .await?;
            }
        }
        Listed::Failed {
            code,
            message,
            retry_in,
        } => {
            sqlx::query!(
                r#"UPDATE sources SET list_locked_until = NULL,
                       list_due_at = now() + make_interval(secs => $2),
                       last_error_code = $3, last_error = $4, last_error_at = now()
                   WHERE id = $1"#,
                source.id,
                retry_in.as_secs_f64(),
                code,
                message
            )
            .execute(&mut *tx)
            .await?;
        }
    }
    Ok(())
}

/// The enabled sources whose container is `container_url` and whose prefix `blob` starts with:
/// where an event about that blob belongs (overlapping prefixes are refused, so at most one).
pub async fn watching(
    db: impl PgExecutor<'_>,
    container_url: &str,
    blob: &str,
) -> sqlx::Result<Option<Uuid>> {
    sqlx::query_scalar!(
        r#"SELECT id FROM sources
           WHERE container_url = $1 AND starts_with($2, prefix) AND enabled
           LIMIT 1"#,
        container_url,
        blob
    )
    .fetch_optional(db)
    .await
}

/// Records a failure of the source itself (its credential refused, its container gone), seen
/// while importing a blob of it.
pub async fn failed(
    db: impl PgExecutor<'_>,
    id: Uuid,
    code: &str,
    message: &str,
) -> sqlx::Result<()> {
    sqlx::query!(
        r#"UPDATE sources SET last_error_code = $2, last_error = $3, last_error_at = now()
           WHERE id = $1"#,
        id,
        code,
        message
    )
    .execute(db)
    .await?;
    Ok(())
}
