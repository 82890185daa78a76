//! `/api/v1/webhooks`: a tenant's webhook endpoints. An endpoint is a URL and the event types it
//! takes; its signing secret is made here, shown once (on create, and on each rotation), and
//! stored sealed under `WEBHOOK_SECRET_KEY` ([`shared::webhooks::secret`]), so it cannot be read
//! back. A URL must be `https` and reach only public addresses ([`shared::webhooks::address`];
//! the worker checks again when it connects). Also here: the secret's rotation, the attempt log,
//! and the replay of every event since a time.

mod views;

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use shared::db;
use shared::domain::EventType;
use shared::webhooks::{address, SealingKey, SigningSecret};
use uuid::Uuid;

pub use views::{
    AttemptList, AttemptView, AttemptsQuery, CreateWebhook, CreatedWebhook, EventGridTopic,
    PatchWebhook, ReplayRequest, Replayed, RotatedSecret, WebhookList, WebhookView,
};

use super::query;
use crate::auth::Principal;
use crate::error::{ApiError, ApiErrorCode, ErrorBody};
use crate::extract::PathId;
use crate::extract::{AppJson, AppQuery};
use crate::state::AppState;

const MAX_DESCRIPTION: usize = 1024;
const MAX_URL: usize = 2048;
/// How long the api waits for a URL's host to resolve before refusing it.
const RESOLVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Register a webhook endpoint.
#[utoipa::path(
    post,
    path = "/api/v1/webhooks",
    tag = "webhooks",
    security(("api_key" = []), ("entra_id" = [])),
    request_body(content = CreateWebhook, content_type = "application/json"),
    responses(
        (status = 201, description = "Created; `secret` is shown this once", body = CreatedWebhook),
        (status = 400, description = "A body that is not the request's JSON, or an unknown event type", body = ErrorBody),
        (status = 409, description = "`too_many_webhooks`: the tenant has WEBHOOK_MAX_ENDPOINTS", body = ErrorBody),
        (status = 422, description = "`unsafe_url`: not https, or a host that is or resolves to a non-public address", body = ErrorBody),
        (status = 503, description = "`webhooks_unavailable`: WEBHOOK_SECRET_KEY is not set; or Postgres or Entra ID unavailable", body = ErrorBody),
    )
)]
pub async fn create_webhook(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    AppJson(request): AppJson<CreateWebhook>,
) -> Result<Response, ApiError> {
    let events = event_types(request.events.as_deref());
    let description = checked_description(request.description.as_deref())?;
    let url = checked_url(&state, &request.url).await?;
    let key = sealing_key(&state)?;
    let id = Uuid::now_v7();
    let secret = SigningSecret::generate();
    let sealed = key.seal(id, &secret);
    let event_grid = request
        .event_grid
        .as_ref()
        .map(|topic| sealed_topic_key(key, id, topic))
        .transpose()?;
    let endpoint = db::webhooks::insert(
        &state.db,
        &db::webhooks::NewEndpoint {
            id,
            tenant_id: &principal.tenant_id,
            url: &url,
            events: &events,
            description,
            sealed_secret: &sealed,
            sealed_event_grid_key: event_grid.as_deref(),
        },
        state.webhooks.max_endpoints,
    )
    .await?
    .ok_or_else(|| ApiError::Conflict {
        code: ApiErrorCode::TooManyWebhooks,
        message: format!(
            "a tenant may have {} webhook endpoints; delete one first",
            state.webhooks.max_endpoints
        ),
    })?;
    tracing::info!(webhook_id = %id, tenant_id = %principal.tenant_id, "webhook endpoint created");
    let location = HeaderValue::from_str(&format!("/api/v1/webhooks/{id}"))
        .map_err(|e| ApiError::Internal(e.into()))?;
    let body = CreatedWebhook {
        webhook: (&endpoint).into(),
        secret: secret.to_whsec(),
    };
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(body),
    )
        .into_response())
}

/// The caller's webhook endpoints.
#[utoipa::path(
    get,
    path = "/api/v1/webhooks",
    tag = "webhooks",
    security(("api_key" = []), ("entra_id" = [])),
    responses(
        (status = 200, body = WebhookList),
    )
)]
pub async fn list_webhooks(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
) -> Result<Json<WebhookList>, ApiError> {
    let endpoints = db::webhooks::list(&state.db, &principal.tenant_id).await?;
    Ok(Json(WebhookList {
        webhooks: endpoints.iter().map(WebhookView::from).collect(),
    }))
}

/// One webhook endpoint.
#[utoipa::path(
    get,
    path = "/api/v1/webhooks/{webhook_id}",
    tag = "webhooks",
    security(("api_key" = []), ("entra_id" = [])),
    params(("webhook_id" = Uuid, Path, description = "Webhook endpoint id")),
    responses(
        (status = 200, body = WebhookView),
        (status = 400, description = "The id is not a UUID", body = ErrorBody),
        (status = 404, body = ErrorBody),
    )
)]
pub async fn get_webhook(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
) -> Result<Json<WebhookView>, ApiError> {
    let endpoint = db::webhooks::find(&state.db, &principal.tenant_id, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    Ok(Json((&endpoint).into()))
}

/// Change a webhook endpoint's URL, event types, description, or whether it is enabled.
#[utoipa::path(
    patch,
    path = "/api/v1/webhooks/{webhook_id}",
    tag = "webhooks",
    security(("api_key" = []), ("entra_id" = [])),
    params(("webhook_id" = Uuid, Path, description = "Webhook endpoint id")),
    request_body(content = PatchWebhook, content_type = "application/json"),
    responses(
        (status = 200, body = WebhookView),
        (status = 400, description = "Bad id or body", body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 422, description = "`unsafe_url`", body = ErrorBody),
    )
)]
pub async fn patch_webhook(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
    AppJson(request): AppJson<PatchWebhook>,
) -> Result<Json<WebhookView>, ApiError> {
    let url = match &request.url {
        Some(url) => Some(checked_url(&state, url).await?),
        None => None,
    };
    let events = request.events.as_deref().map(|e| event_types(Some(e)));
    let description = match &request.description {
        Some(d) if d.is_empty() => Some(""),
        Some(d) => checked_description(Some(d))?,
        None => None,
    };
    let event_grid = match &request.event_grid {
        Some(Some(topic)) => Some(Some(sealed_topic_key(sealing_key(&state)?, id, topic)?)),
        Some(None) => Some(None),
        None => None,
    };
    let change = db::webhooks::Change {
        url: url.as_deref(),
        events: events.as_deref(),
        enabled: request.enabled,
        description,
        event_grid_key: event_grid.as_ref().map(Option::as_deref),
    };
    let endpoint = db::webhooks::update(&state.db, &principal.tenant_id, id, &change)
        .await?
        .ok_or_else(|| not_found(id))?;
    tracing::info!(webhook_id = %id, enabled = endpoint.enabled, "webhook endpoint changed");
    Ok(Json((&endpoint).into()))
}

/// Delete a webhook endpoint with its pending deliveries and attempt log.
#[utoipa::path(
    delete,
    path = "/api/v1/webhooks/{webhook_id}",
    tag = "webhooks",
    security(("api_key" = []), ("entra_id" = [])),
    params(("webhook_id" = Uuid, Path, description = "Webhook endpoint id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "The id is not a UUID", body = ErrorBody),
        (status = 404, body = ErrorBody),
    )
)]
pub async fn delete_webhook(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
) -> Result<StatusCode, ApiError> {
    if db::webhooks::delete(&state.db, &principal.tenant_id, id).await? {
        tracing::info!(webhook_id = %id, "webhook endpoint deleted");
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(not_found(id))
    }
}

/// Make a new signing secret. During WEBHOOK_ROTATION_WINDOW every delivery is signed with both
/// the new and the old secret, so a receiver can switch at its own pace.
#[utoipa::path(
    post,
    path = "/api/v1/webhooks/{webhook_id}/secret/rotate",
    tag = "webhooks",
    security(("api_key" = []), ("entra_id" = [])),
    params(("webhook_id" = Uuid, Path, description = "Webhook endpoint id")),
    responses(
        (status = 200, description = "The new secret, shown this once", body = RotatedSecret),
        (status = 400, description = "The id is not a UUID", body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 503, description = "`webhooks_unavailable`: WEBHOOK_SECRET_KEY is not set; or Postgres or Entra ID unavailable", body = ErrorBody),
    )
)]
pub async fn rotate_secret(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
) -> Result<Json<RotatedSecret>, ApiError> {
    let key = sealing_key(&state)?;
    let secret = SigningSecret::generate();
    let endpoint = db::webhooks::rotate(
        &state.db,
        &principal.tenant_id,
        id,
        &key.seal(id, &secret),
        state.webhooks.rotation_window,
    )
    .await?
    .ok_or_else(|| not_found(id))?;
    tracing::info!(webhook_id = %id, "webhook secret rotated");
    Ok(Json(RotatedSecret {
        secret: secret.to_whsec(),
        previous_secret_expires_at: endpoint.previous_secret_until,
    }))
}

/// Deliver again every event of the endpoint's types written since a time (delivered ones too).
#[utoipa::path(
    post,
    path = "/api/v1/webhooks/{webhook_id}/replay",
    tag = "webhooks",
    security(("api_key" = []), ("entra_id" = [])),
    params(("webhook_id" = Uuid, Path, description = "Webhook endpoint id")),
    request_body(content = ReplayRequest, content_type = "application/json"),
    responses(
        (status = 202, description = "Queued", body = Replayed),
        (status = 400, description = "Bad id or body", body = ErrorBody),
        (status = 404, body = ErrorBody),
    )
)]
pub async fn replay(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
    AppJson(request): AppJson<ReplayRequest>,
) -> Result<(StatusCode, Json<Replayed>), ApiError> {
    let queued = db::webhooks::replay(&state.db, &principal.tenant_id, id, request.since)
        .await?
        .ok_or_else(|| not_found(id))?;
    tracing::info!(webhook_id = %id, since = %request.since, queued, "webhook replay queued");
    Ok((StatusCode::ACCEPTED, Json(Replayed { queued })))
}

/// The endpoint's attempt log, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/webhooks/{webhook_id}/attempts",
    tag = "webhooks",
    security(("api_key" = []), ("entra_id" = [])),
    params(("webhook_id" = Uuid, Path, description = "Webhook endpoint id"), AttemptsQuery),
    responses(
        (status = 200, body = AttemptList),
        (status = 400, description = "Bad id, after or limit", body = ErrorBody),
        (status = 404, body = ErrorBody),
    )
)]
pub async fn list_attempts(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
    AppQuery(q): AppQuery<AttemptsQuery>,
) -> Result<Json<AttemptList>, ApiError> {
    let limit = query::limit(q.limit, 100)?;
    db::webhooks::find(&state.db, &principal.tenant_id, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    let mut attempts =
        db::webhooks::attempts(&state.db, &principal.tenant_id, id, q.after, limit + 1).await?;
    let next_after = if attempts.len() as i64 > limit {
        attempts.truncate(limit as usize);
        attempts.last().map(|a| a.id)
    } else {
        None
    };
    Ok(Json(AttemptList {
        attempts: attempts
            .into_iter()
            .map(|a| AttemptView {
                event_id: a.event_id,
                attempt: a.attempt,
                status_code: a.status_code,
                outcome: a.outcome,
                duration_ms: a.duration_ms,
                at: a.at,
            })
            .collect(),
        next_after,
    }))
}

fn not_found(id: Uuid) -> ApiError {
    ApiError::NotFound(format!("no webhook endpoint {id}"))
}

/// The key that seals secrets; without it no secret can be made.
pub(crate) fn sealing_key(state: &AppState) -> Result<&SealingKey, ApiError> {
    state
        .webhooks
        .keys
        .secret_key
        .as_ref()
        .ok_or_else(|| ApiError::Refused {
            status: StatusCode::SERVICE_UNAVAILABLE,
            code: ApiErrorCode::WebhooksUnavailable,
            message: "webhooks are not set up on this server (WEBHOOK_SECRET_KEY)".into(),
        })
}

/// `422 unsafe_url` unless the URL is one a webhook may go to, its host resolved now (a name
/// that does not resolve cannot be shown to be public).
pub(crate) async fn checked_url(state: &AppState, url: &str) -> Result<String, ApiError> {
    let unsafe_url = |message: String| ApiError::Refused {
        status: StatusCode::UNPROCESSABLE_ENTITY,
        code: ApiErrorCode::UnsafeUrl,
        message,
    };
    if url.len() > MAX_URL {
        return Err(ApiError::bad_request(
            ApiErrorCode::InvalidParameter,
            format!("a webhook URL is at most {MAX_URL} bytes"),
        ));
    }
    let allow_private = state.webhooks.keys.allow_private_networks;
    let parsed = address::check_url(url, allow_private).map_err(|e| unsafe_url(e.to_string()))?;
    if allow_private {
        // Local use: any host goes, resolvable yet or not.
        return Ok(parsed.to_string());
    }
    match tokio::time::timeout(
        RESOLVE_TIMEOUT,
        address::resolve_public(&parsed, allow_private),
    )
    .await
    {
        Ok(Ok(_)) => Ok(parsed.to_string()),
        Ok(Err(e)) => Err(unsafe_url(e.to_string())),
        Err(_) => Err(unsafe_url(format!(
            "{} did not resolve within {RESOLVE_TIMEOUT:?}",
            parsed.host_str().unwrap_or_default()
        ))),
    }
}

/// The requested types, each once, in the contract's order; all of them by default. None at
/// all (`[]`) is an endpoint only validation hooks call (contract v1.3).
fn event_types(requested: Option<&[EventType]>) -> Vec<String> {
    let wanted = requested.map_or_else(|| EventType::ALL.to_vec(), <[EventType]>::to_vec);
    EventType::ALL
        .iter()
        .filter(|t| wanted.contains(t))
        .map(|t| t.as_str().to_owned())
        .collect()
}

/// Longest Event Grid access key accepted (Azure's are 44 characters of base64).
const MAX_TOPIC_KEY: usize = 256;

/// An Event Grid topic's key, checked to fit a header and sealed for endpoint `id`.
fn sealed_topic_key(
    key: &SealingKey,
    id: Uuid,
    topic: &EventGridTopic,
) -> Result<Vec<u8>, ApiError> {
    let k = &topic.key;
    if k.is_empty() || k.len() > MAX_TOPIC_KEY || !k.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ApiError::bad_request(
            ApiErrorCode::InvalidParameter,
            format!(
                "event_grid.key is the topic's access key: 1 to {MAX_TOPIC_KEY} printable \
                 characters without spaces"
            ),
        ));
    }
    Ok(key.seal_bytes(id, k.as_bytes()))
}

pub(crate) fn checked_description(description: Option<&str>) -> Result<Option<&str>, ApiError> {
    match description {
        Some(d) if d.chars().count() > MAX_DESCRIPTION => Err(ApiError::bad_request(
            ApiErrorCode::InvalidParameter,
            format!("a description is at most {MAX_DESCRIPTION} characters"),
        )),
        other => Ok(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_types_default_to_all_and_come_out_once_in_order() {
        let all: Vec<String> = EventType::ALL
            .iter()
            .map(|t| t.as_str().to_owned())
            .collect();
        assert_eq!(event_types(None), all);
        assert_eq!(
            event_types(Some(&[
                EventType::FileDeleted,
                EventType::TaskCompleted,
                EventType::FileDeleted
            ])),
            vec!["task.completed".to_owned(), "file.deleted".to_owned()]
        );
        // An endpoint only validation hooks call takes none.
        assert!(event_types(Some(&[])).is_empty());
    }
}
