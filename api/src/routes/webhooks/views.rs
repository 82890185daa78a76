//! The JSON shapes of `/api/v1/webhooks`: request bodies and answers. Kept apart from the
//! handlers so the wire format changes only here.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use shared::db;
use shared::domain::EventType;
use uuid::Uuid;

/// `POST /api/v1/webhooks` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWebhook {
    /// `https`, to a public address.
    #[schema(max_length = 2048)]
    pub url: String,
    /// The event types to send (default: all; `[]` for an endpoint only validation hooks
    /// call).
    pub events: Option<Vec<EventType>>,
    #[schema(max_length = 1024)]
    pub description: Option<String>,
    /// The URL is an Azure Event Grid topic's endpoint: deliveries are CloudEvents 1.0 with this
    /// access key (an extension).
    pub event_grid: Option<EventGridTopic>,
}

/// An Azure Event Grid topic's credential: its access key, sent as `aeg-sas-key`, sealed like
/// the signing secret and never shown again.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EventGridTopic {
    #[schema(min_length = 1, max_length = 256)]
    pub key: String,
}

/// `PATCH /api/v1/webhooks/{id}` body: what to change.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchWebhook {
    #[schema(max_length = 2048)]
    pub url: Option<String>,
    pub events: Option<Vec<EventType>>,
    /// `false` stops deliveries (they wait); `true` starts them again, also after the worker
    /// disabled the endpoint.
    pub enabled: Option<bool>,
    /// An empty string removes it.
    #[schema(max_length = 1024)]
    pub description: Option<String>,
    /// Left out: unchanged; `null`: Standard Webhooks requests again; a topic: CloudEvents with
    /// its key.
    #[serde(
        default,
        deserialize_with = "crate::routes::destinations::views::present"
    )]
    #[schema(value_type = Option<EventGridTopic>)]
    pub event_grid: Option<Option<EventGridTopic>>,
}

/// A webhook endpoint. Its secret is never shown again after it is made.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WebhookView {
    pub id: Uuid,
    pub url: String,
    pub events: Vec<String>,
    pub description: Option<String>,
    pub enabled: bool,
    /// Why the worker disabled it: `gone` (it answered 410) or `failing` (every attempt failed
    /// for WEBHOOK_DISABLE_AFTER); null when enabled or disabled by its owner.
    pub disabled_reason: Option<String>,
    pub disabled_at: Option<DateTime<Utc>>,
    /// Since when every attempt has failed; null while deliveries succeed.
    pub failing_since: Option<DateTime<Utc>>,
    /// An Azure Event Grid topic: deliveries are CloudEvents 1.0 with its access key (which is
    /// never shown).
    pub event_grid: bool,
    pub created_at: DateTime<Utc>,
}

impl From<&db::webhooks::Endpoint> for WebhookView {
    fn from(e: &db::webhooks::Endpoint) -> Self {
        Self {
            id: e.id,
            url: e.url.clone(),
            events: e.events.clone(),
            description: e.description.clone(),
            enabled: e.enabled,
            disabled_reason: e.disabled_reason.clone(),
            disabled_at: e.disabled_at,
            failing_since: e.failing_since,
            event_grid: e.event_grid,
            created_at: e.created_at,
        }
    }
}

/// `201` of a create: the endpoint and, this once, its secret.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CreatedWebhook {
    #[serde(flatten)]
    pub webhook: WebhookView,
    /// `whsec_<base64>`: verify deliveries with it (Standard Webhooks). Shown only here.
    pub secret: String,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WebhookList {
    pub webhooks: Vec<WebhookView>,
}

/// `200` of a rotation: the new secret, shown this once.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RotatedSecret {
    /// The new `whsec_…`.
    pub secret: String,
    /// Until then deliveries carry a signature with the old secret too.
    pub previous_secret_expires_at: Option<DateTime<Utc>>,
}

/// `POST /api/v1/webhooks/{id}/replay` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayRequest {
    /// Every event written since then (RFC 3339) is delivered again.
    pub since: DateTime<Utc>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Replayed {
    /// How many events were queued for the endpoint.
    pub queued: i64,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AttemptsQuery {
    /// The previous page's `next_after`: older attempts.
    pub after: Option<i64>,
    /// Page size, 1..1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
}

/// One request made to the endpoint.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AttemptView {
    pub event_id: Uuid,
    /// 1 for the event's first request to this endpoint, and so on.
    pub attempt: i32,
    /// The answer's status; null when there was none.
    pub status_code: Option<i32>,
    /// `delivered` (2xx), `failed` (another status), `timeout`, `unreachable` (no answer), or
    /// `gone` (410: the endpoint was disabled).
    pub outcome: String,
    pub duration_ms: i32,
    pub at: DateTime<Utc>,
}

/// The attempt log, newest first.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AttemptList {
    pub attempts: Vec<AttemptView>,
    /// The cursor of the next (older) page; null at the end.
    pub next_after: Option<i64>,
}
