//! The JSON shapes of `/api/v1/sources`: request bodies and answers. A credential is read from
//! a request and never written into an answer.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use shared::db;
use shared::storage::external::{ContainerCredential, GivenCredential};
use uuid::Uuid;

use crate::routes::destinations::views::present;

/// `POST /api/v1/sources` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSource {
    /// `azure_blob`.
    pub kind: String,
    /// `https://<account>.blob.core.windows.net/<container>` (path-style for Azurite).
    #[schema(max_length = 2048)]
    pub container_url: String,
    /// Only blobs whose name starts with it, e.g. `incoming/` (default: the whole container).
    #[schema(max_length = 512)]
    pub prefix: Option<String>,
    /// `{"sas": "<token>"}` (read, list, and delete for `after_import: delete`),
    /// `{"connection_string": "<…>"}` or `{"managed_identity": true}`.
    #[schema(value_type = ContainerCredential)]
    pub credential: GivenCredential,
    /// The template its files are checked against (its latest version at each import).
    pub template: Option<String>,
    /// `reject_file`, `drop_invalid_rows` or `keep_invalid_rows` (default: the template's).
    pub on_invalid: Option<String>,
    /// A JSON object (≤ 4 KiB) given to every file it imports, as an upload's `metadata`.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<serde_json::Value>,
    #[schema(max_length = 1024)]
    pub description: Option<String>,
    /// Whether blobs already in the container when the source is created are imported
    /// (default `true`); `false` imports only blobs that arrive later.
    pub import_existing: Option<bool>,
    /// `keep` (default) or `delete`: delete each blob from the container once it is imported.
    pub after_import: Option<String>,
}

/// `PATCH /api/v1/sources/{id}` body. A source's container and prefix do not change: a source
/// for another place is another source.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchSource {
    /// A new credential for the same container (after a SAS expired, say).
    #[schema(value_type = Option<ContainerCredential>)]
    pub credential: Option<GivenCredential>,
    /// `null`: import without a template.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub template: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub on_invalid: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Option<serde_json::Value>>,
    /// An empty string removes it.
    pub description: Option<String>,
    pub after_import: Option<String>,
    /// `false` stops listing and importing (found blobs wait); `true` starts again.
    pub enabled: Option<bool>,
}

/// Why the source's last listing or import failed.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SourceError {
    /// `source_unreachable` (the container cannot be listed or read: a credential expired or
    /// without permission, a container deleted, the account down) or `unsafe_url`.
    pub code: String,
    pub message: String,
    pub at: DateTime<Utc>,
}

/// What the source has done so far.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SourceStatus {
    /// Complete listing passes over the container.
    pub passes: i32,
    pub listed_at: Option<DateTime<Utc>>,
    /// Blobs found and not yet imported (waiting, being imported, or retried).
    pub waiting: i64,
    pub imported: i64,
    /// Blobs that will not be imported (see their `outcome` in `/blobs`).
    pub skipped: i64,
    /// Null while listing and importing succeed.
    pub error: Option<SourceError>,
}

/// A Blob source. Its credential is never shown.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SourceView {
    pub id: Uuid,
    pub kind: String,
    pub container_url: String,
    pub prefix: String,
    /// Which credential it has (`sas`, `connection_string`, `managed_identity`).
    pub credential: String,
    pub template: Option<String>,
    pub on_invalid: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<serde_json::Value>,
    pub description: Option<String>,
    pub import_existing: bool,
    pub after_import: String,
    pub enabled: bool,
    pub status: SourceStatus,
    pub created_at: DateTime<Utc>,
}

/// `201` of a create: the source and, this once, its events token.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CreatedSource {
    #[serde(flatten)]
    pub source: SourceView,
    /// `sre_…`: the bearer token an Event Grid subscription sends to
    /// `POST /api/v1/sources/{id}/events`, good for nothing else. Shown only here and when a new
    /// one is made.
    pub events_token: String,
}

/// `200` of `POST /api/v1/sources/{id}/events_token/rotate`: the new token, shown this once.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EventsToken {
    /// The new `sre_…`; the one before stops working at once.
    pub events_token: String,
}

impl From<db::sources::Source> for SourceView {
    fn from(s: db::sources::Source) -> Self {
        let error = match (s.last_error_code, s.last_error, s.last_error_at) {
            (Some(code), Some(message), Some(at)) => Some(SourceError { code, message, at }),
            _ => None,
        };
        Self {
            id: s.id,
            kind: s.kind,
            container_url: s.container_url,
            prefix: s.prefix,
            credential: s.credential_kind,
            template: s.template_name,
            on_invalid: s.on_invalid,
            metadata: s.metadata,
            description: s.description,
            import_existing: s.import_existing,
            after_import: s.after_import,
            enabled: s.enabled,
            status: SourceStatus {
                passes: s.passes,
                listed_at: s.listed_at,
                waiting: s.waiting,
                imported: s.imported,
                skipped: s.skipped,
                error,
            },
            created_at: s.created_at,
        }
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SourceList {
    pub sources: Vec<SourceView>,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BlobsQuery {
    /// The previous page's `next_after`.
    pub after: Option<Uuid>,
    /// Page size, 1..1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
}

/// One blob version the source found, and what became of it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BlobView {
    pub id: Uuid,
    pub blob: String,
    pub etag: String,
    pub size_bytes: Option<i64>,
    /// `listing` or `event`: what found it first.
    pub found_by: String,
    /// `PENDING`, `IMPORTING`, `IMPORTED`, `SKIPPED` (never imported: see `outcome`) or
    /// `FAILED` (retried).
    pub status: String,
    pub attempts: i32,
    /// `SKIPPED`/`FAILED`: `empty_file`, `file_too_large`, `unsupported_format`, `blob_gone`
    /// (deleted or overwritten before it was read), `existing` (there before the source, with
    /// `import_existing: false`), `unknown_template`, `quota_exceeded`, `source_unreachable`.
    pub outcome: Option<String>,
    pub error: Option<String>,
    /// The file it became (`IMPORTED`), while that file is kept.
    pub file_id: Option<Uuid>,
    pub found_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<db::source_blobs::Listed> for BlobView {
    fn from(b: db::source_blobs::Listed) -> Self {
        Self {
            id: b.id,
            blob: b.blob,
            etag: b.etag,
            size_bytes: b.size_bytes,
            found_by: b.found_by,
            status: b.status,
            attempts: b.attempts,
            outcome: b.outcome,
            error: b.last_error,
            file_id: b.source_file_id,
            found_at: b.found_at,
            updated_at: b.updated_at,
        }
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BlobList {
    pub blobs: Vec<BlobView>,
    /// The cursor of the next page; null at the end.
    pub next_after: Option<Uuid>,
}

/// What `POST /api/v1/sources/{id}/events` did with a batch of events.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EventsAccepted {
    /// `BlobCreated` events of blobs under the source's container and prefix, recorded (a blob
    /// already found counts too: recording it again changes nothing).
    pub accepted: usize,
    /// Other events, and blobs outside the source.
    pub ignored: usize,
}

/// The answer to Event Grid's validation handshake.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValidationResponse {
    pub validation_response: String,
}
