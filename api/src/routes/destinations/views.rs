//! The JSON shapes of `/api/v1/destinations`: request bodies and answers. Kept apart from the
//! handlers so the wire format changes only here. A credential or secret is read from a request
//! and never written into an answer, but for a `webhook_rows` secret in its `201`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use shared::db;
use shared::storage::external::{ContainerCredential, GivenCredential};
use uuid::Uuid;

/// `POST /api/v1/destinations` body: an `azure_blob` or a `webhook_rows` destination.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum CreateDestination {
    AzureBlob {
        /// `https://<account>.blob.core.windows.net/<container>` (path-style for Azurite).
        #[schema(max_length = 2048)]
        container_url: String,
        /// Put before every blob name, e.g. `imports/`.
        #[schema(max_length = 512)]
        prefix: Option<String>,
        /// `parquet` (default), `csv` or `ndjson`.
        format: Option<String>,
        /// `{"sas": "<token>"}`, `{"connection_string": "<…>"}` or `{"managed_identity": true}`.
        #[schema(value_type = ContainerCredential)]
        credential: GivenCredential,
        /// Only files uploaded with one of these templates (default: every file).
        templates: Option<Vec<String>>,
        #[schema(max_length = 1024)]
        description: Option<String>,
    },
    WebhookRows {
        /// `https`, to a public address (the webhook rules).
        #[schema(max_length = 2048)]
        url: String,
        /// Rows per request, 1..10000 (default 1000).
        chunk_size: Option<i32>,
        templates: Option<Vec<String>>,
        #[schema(max_length = 1024)]
        description: Option<String>,
    },
}

/// `PATCH /api/v1/destinations/{id}` body: what to change (fields of the other kind are
/// refused). A new `container_url` needs its `credential` again, and the other way round.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchDestination {
    pub container_url: Option<String>,
    #[schema(value_type = Option<ContainerCredential>)]
    pub credential: Option<GivenCredential>,
    pub prefix: Option<String>,
    pub format: Option<String>,
    pub url: Option<String>,
    pub chunk_size: Option<i32>,
    /// Left out: unchanged; `null`: every template's files again; a list: only those.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Vec<String>>)]
    pub templates: Option<Option<Vec<String>>>,
    /// An empty string removes it.
    pub description: Option<String>,
    /// `false` stops deliveries (they wait); `true` starts them again, also after the worker
    /// disabled the destination.
    pub enabled: Option<bool>,
}

/// A field that is present, even as `null` (`Some(None)`), told apart from one left out (`None`,
/// by `#[serde(default)]`).
pub(crate) fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// A destination. Its credential or secret is never shown.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DestinationView {
    pub id: Uuid,
    /// `azure_blob` or `webhook_rows`.
    pub kind: String,
    /// `azure_blob` only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// `azure_blob`: which credential it has (`sas`, `connection_string`, `managed_identity`),
    /// never the credential.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
    /// `webhook_rows` only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk_size: Option<i32>,
    /// The templates whose files it takes; null: every file.
    pub templates: Option<Vec<String>>,
    pub description: Option<String>,
    pub enabled: bool,
    /// `failing` when the worker disabled it (every delivery failed for
    /// `DESTINATION_DISABLE_AFTER`); null when enabled or disabled by its owner.
    pub disabled_reason: Option<String>,
    pub disabled_at: Option<DateTime<Utc>>,
    /// Since when every delivery has failed; null while deliveries succeed.
    pub failing_since: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

impl From<&db::destinations::Destination> for DestinationView {
    fn from(d: &db::destinations::Destination) -> Self {
        let blob = d.kind == "azure_blob";
        Self {
            id: d.id,
            kind: d.kind.clone(),
            container_url: blob.then(|| d.url.clone()),
            prefix: blob.then(|| d.prefix.clone()),
            format: d.format.clone(),
            credential: d.credential_kind.clone(),
            url: (!blob).then(|| d.url.clone()),
            chunk_size: d.chunk_size,
            templates: d.templates.clone(),
            description: d.description.clone(),
            enabled: d.enabled,
            disabled_reason: d.disabled_reason.clone(),
            disabled_at: d.disabled_at,
            failing_since: d.failing_since,
            created_at: d.created_at,
        }
    }
}

/// `201` of a create: the destination and, for `webhook_rows`, this once, its secret.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CreatedDestination {
    #[serde(flatten)]
    pub destination: DestinationView,
    /// `webhook_rows`: `whsec_<base64>` to verify its requests with (Standard Webhooks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DestinationList {
    pub destinations: Vec<DestinationView>,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeliveriesQuery {
    /// The previous page's `next_after`.
    pub after: Option<Uuid>,
    /// Page size, 1..1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
}

/// One file's delivery to the destination.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DeliveryView {
    pub file_id: Uuid,
    /// `PENDING`, `DELIVERING`, `DELIVERED`, `FAILED` (retried) or `DEAD` (retries used up;
    /// a redelivery starts it again).
    pub status: String,
    /// The corrections revision delivered (0: as uploaded).
    pub revision: i32,
    /// `webhook_rows`: requests in all (null until counted) and acknowledged so far.
    pub chunks: Option<i32>,
    pub chunks_acked: i32,
    pub attempts: i32,
    /// The last attempt's error, while it is not delivered.
    pub error: Option<String>,
    pub updated_at: DateTime<Utc>,
}

impl From<db::destination_deliveries::Listed> for DeliveryView {
    fn from(d: db::destination_deliveries::Listed) -> Self {
        Self {
            file_id: d.source_file_id,
            status: d.status,
            revision: d.revision,
            chunks: d.chunks,
            chunks_acked: d.chunks_acked,
            attempts: d.attempts,
            error: d.last_error,
            updated_at: d.updated_at,
        }
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DeliveryList {
    pub deliveries: Vec<DeliveryView>,
    /// The cursor of the next page; null at the end.
    pub next_after: Option<Uuid>,
}

/// `POST /api/v1/destinations/{id}/redeliver` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RedeliverRequest {
    pub file_id: Uuid,
}
