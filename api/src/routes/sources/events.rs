//! `POST /api/v1/sources/{id}/events`: Event Grid delivering `BlobCreated` events of the
//! source's container straight to the api (the other way is a storage queue the worker reads).
//! The route takes the source's own events token (`sre_…`, [`crate::auth::source_events`]), or
//! the tenant's credentials like any other: Event Grid sends it as a delivery property (an
//! `Authorization` header marked secret; see docs/sources.md). The token is made with the source
//! and again by [`rotate_events_token`]. It answers Event Grid's
//! validation handshake (`SubscriptionValidationEvent` → `{"validationResponse"}`) and, for the
//! CloudEvents schema, its `OPTIONS` abuse-protection request. Each `BlobCreated` event of a blob
//! under the source's container and prefix is recorded as found ([`db::source_blobs::found`]):
//! a replayed or duplicated event changes nothing, and a forged one can at most make the worker
//! read a blob that really is in the container, at the ETag the event names.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use shared::blob_events::{self, BlobEvent};
use shared::db;
use shared::db::source_blobs::{Finder, FoundBlob, MAX_BLOB_NAME};

use super::not_found;
use super::views::{EventsAccepted, EventsToken, ValidationResponse};
use crate::auth::{api_key, source_events, Principal};
use crate::error::{ApiError, ApiErrorCode, ErrorBody};
use crate::extract::PathId;
use crate::state::AppState;

/// The largest body accepted: Event Grid's batches are at most 1 MB.
pub const MAX_EVENTS_BYTES: usize = 1024 * 1024;

/// Receive Event Grid events about the source's container.
#[utoipa::path(
    post,
    path = "/api/v1/sources/{source_id}/events",
    tag = "sources",
    security(("api_key" = []), ("entra_id" = [])),
    params(("source_id" = uuid::Uuid, Path, description = "Source id")),
    request_body(content = Object, content_type = "application/json",
        description = "An array of Event Grid events (its own schema or CloudEvents 1.0), or one event"),
    responses(
        (status = 200, description = "A handshake's `{\"validationResponse\"}`, or what was recorded", body = EventsAccepted),
        (status = 400, description = "`invalid_body`: not an event or an array of them; or the id is not a UUID", body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 413, description = "`payload_too_large`: over 1 MiB", body = ErrorBody),
    )
)]
pub async fn post_events(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
    body: Bytes,
) -> Result<Response, ApiError> {
    let source = db::sources::find(&state.db, &principal.tenant_id, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    let events = blob_events::parse(&body).map_err(|e| {
        ApiError::bad_request(
            ApiErrorCode::InvalidBody,
            format!("not an Event Grid event or an array of them: {e}"),
        )
    })?;
    let mut found = Vec::new();
    let mut ignored = 0;
    for event in events {
        match event {
            BlobEvent::Validation { code } => {
                tracing::info!(source_id = %id, "Event Grid subscription validated");
                return Ok(Json(ValidationResponse {
                    validation_response: code,
                })
                .into_response());
            }
            BlobEvent::Created { url, etag, size } => {
                match blob_events::blob_in(&url, &source.container_url) {
                    Some(name)
                        if name.starts_with(&source.prefix) && name.len() <= MAX_BLOB_NAME =>
                    {
                        found.push(FoundBlob { name, etag, size });
                    }
                    _ => ignored += 1,
                }
            }
            BlobEvent::Other => ignored += 1,
        }
    }
    if !found.is_empty() {
        db::source_blobs::found(&state.db, id, &found, Finder::Event).await?;
    }
    tracing::debug!(source_id = %id, accepted = found.len(), ignored, "source events");
    Ok(Json(EventsAccepted {
        accepted: found.len(),
        ignored,
    })
    .into_response())
}

/// CloudEvents' abuse protection: Event Grid asks, before delivering, whether it may.
#[utoipa::path(
    options,
    path = "/api/v1/sources/{source_id}/events",
    tag = "sources",
    security(("api_key" = []), ("entra_id" = [])),
    params(("source_id" = uuid::Uuid, Path, description = "Source id")),
    responses(
        (status = 200, description = "`WebHook-Allowed-Origin` echoes `WebHook-Request-Origin`"),
        (status = 400, description = "The id is not a UUID", body = ErrorBody),
        (status = 404, body = ErrorBody),
    )
)]
pub async fn options_events(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    db::sources::find(&state.db, &principal.tenant_id, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    let origin = headers
        .get("webhook-request-origin")
        .cloned()
        .unwrap_or_else(|| HeaderValue::from_static("*"));
    Ok((
        StatusCode::OK,
        [
            ("webhook-allowed-origin", origin),
            ("webhook-allowed-rate", HeaderValue::from_static("*")),
        ],
    )
        .into_response())
}

/// Make the source a new events token; the one before stops working at once.
#[utoipa::path(
    post,
    path = "/api/v1/sources/{source_id}/events_token/rotate",
    tag = "sources",
    security(("api_key" = []), ("entra_id" = [])),
    params(("source_id" = uuid::Uuid, Path, description = "Source id")),
    responses(
        (status = 200, description = "The new token, shown this once", body = EventsToken),
        (status = 400, description = "The id is not a UUID", body = ErrorBody),
        (status = 403, description = "`forbidden`: an import session's or a source's events token", body = ErrorBody),
        (status = 404, body = ErrorBody),
    )
)]
pub async fn rotate_events_token(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
) -> Result<Json<EventsToken>, ApiError> {
    let token = source_events::new_token();
    let changed =
        db::sources::set_events_token(&state.db, &principal.tenant_id, id, &api_key::hash(&token))
            .await?;
    if !changed {
        return Err(not_found(id));
    }
    tracing::info!(source_id = %id, "source events token replaced");
    Ok(Json(EventsToken {
        events_token: token,
    }))
}
