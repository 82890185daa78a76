//! `/api/v1/destinations` (contract v1.3): where a tenant's finished files' rows are pushed, its
//! own Blob container (`azure_blob`) or a row webhook (`webhook_rows`), and each file's delivery
//! to it. A container's SAS or connection string and a row webhook's signing secret are sealed
//! under `WEBHOOK_SECRET_KEY` like webhook secrets ([`shared::webhooks::secret`]); the api
//! never reads one back (the secret is shown once, in the `201`). URLs follow the webhook rules
//! (`unsafe_url`), checked again by the worker at every delivery. Import sessions' tokens are
//! refused here (`403 forbidden`, [`crate::auth::session_scope`]). The deliveries themselves
//! are the worker's (`worker::destinations`).

pub(crate) mod checks;
mod patch;
pub(crate) mod views;

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use shared::db;
use shared::db::destination_deliveries::Redelivery;
use shared::webhooks::SigningSecret;
use uuid::Uuid;

pub use patch::{__path_patch_destination, patch_destination};
pub use views::{
    CreateDestination, CreatedDestination, DeliveriesQuery, DeliveryList, DeliveryView,
    DestinationList, DestinationView, PatchDestination, RedeliverRequest,
};

use super::query;
use super::webhooks::{checked_description, checked_url, sealing_key};
use crate::auth::Principal;
use crate::error::{ApiError, ApiErrorCode, ErrorBody};
use crate::extract::{AppJson, AppQuery, PathId};
use crate::state::AppState;
use checks::Problems;

/// A destination's columns, checked, before it is stored.
struct Spec {
    kind: &'static str,
    url: String,
    prefix: String,
    format: Option<String>,
    chunk_size: Option<i32>,
    credential_kind: Option<&'static str>,
    sealed: Option<Vec<u8>>,
    templates: Option<Vec<String>>,
    /// `webhook_rows`: the secret to show once.
    shown: Option<String>,
}

/// Checks a create request into what is stored, sealing its secret for destination `id`.
async fn spec(state: &AppState, id: Uuid, request: CreateDestination) -> Result<Spec, ApiError> {
    let key = sealing_key(state)?;
    let mut p = Problems::default();
    match request {
        CreateDestination::AzureBlob {
            container_url,
            prefix,
            format,
            credential,
            templates,
            ..
        } => {
            let prefix = checks::prefix(&mut p, prefix.as_deref());
            let format = checks::format(&mut p, format.as_deref());
            let templates = checks::templates(&mut p, templates.as_deref());
            let container = checks::container(state, &mut p, &container_url, credential).await?;
            p.done()?;
            let container = container.ok_or_else(|| {
                ApiError::Internal(anyhow::anyhow!("a checked container without a value"))
            })?;
            Ok(Spec {
                kind: "azure_blob",
                url: container.url(),
                prefix,
                format: Some(format),
                chunk_size: None,
                credential_kind: Some(container.credential.kind()),
                sealed: container
                    .credential
                    .secret()
                    .map(|s| key.seal_bytes(id, s.as_bytes())),
                templates,
                shown: None,
            })
        }
        CreateDestination::WebhookRows {
            url,
            chunk_size,
            templates,
            ..
        } => {
            let chunk_size = checks::chunk_size(&mut p, chunk_size);
            let templates = checks::templates(&mut p, templates.as_deref());
            let url = checked_url(state, &url).await?;
            p.done()?;
            let secret = SigningSecret::generate();
            Ok(Spec {
                kind: "webhook_rows",
                url,
                prefix: String::new(),
                format: None,
                chunk_size: Some(chunk_size),
                credential_kind: None,
                sealed: Some(key.seal(id, &secret)),
                templates,
                shown: Some(secret.to_whsec()),
            })
        }
    }
}

/// Create a destination.
#[utoipa::path(
    post,
    path = "/api/v1/destinations",
    tag = "destinations",
    security(("api_key" = []), ("entra_id" = [])),
    request_body(content = CreateDestination, content_type = "application/json"),
    responses(
        (status = 201, description = "Created; a `webhook_rows` `secret` is shown this once", body = CreatedDestination),
        (status = 400, description = "A body that is not the request's JSON (an unknown kind)", body = ErrorBody),
        (status = 403, description = "`forbidden`: an import session's token", body = ErrorBody),
        (status = 409, description = "`too_many_destinations`: the tenant has DESTINATION_MAX_PER_TENANT", body = ErrorBody),
        (status = 422, description = "`unsafe_url`; `invalid_destination` with every problem in `details`", body = ErrorBody),
        (status = 503, description = "`webhooks_unavailable`: WEBHOOK_SECRET_KEY is not set; or Postgres unavailable", body = ErrorBody),
    )
)]
pub async fn create_destination(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    AppJson(request): AppJson<CreateDestination>,
) -> Result<Response, ApiError> {
    let description = match &request {
        CreateDestination::AzureBlob { description, .. }
        | CreateDestination::WebhookRows { description, .. } => description.clone(),
    };
    let description = checked_description(description.as_deref())?;
    let id = Uuid::now_v7();
    let spec = spec(&state, id, request).await?;
    let max = state.webhooks.max_destinations;
    let destination = db::destinations::insert(
        &state.db,
        &db::destinations::NewDestination {
            id,
            tenant_id: &principal.tenant_id,
            kind: spec.kind,
            url: &spec.url,
            prefix: &spec.prefix,
            format: spec.format.as_deref(),
            chunk_size: spec.chunk_size,
            credential_kind: spec.credential_kind,
            sealed_secret: spec.sealed.as_deref(),
            templates: spec.templates.as_deref(),
            description,
        },
        max,
    )
    .await?
    .ok_or_else(|| ApiError::Conflict {
        code: ApiErrorCode::TooManyDestinations,
        message: format!("a tenant may have {max} destinations; delete one first"),
    })?;
    tracing::info!(destination_id = %id, tenant_id = %principal.tenant_id, kind = spec.kind,
        "destination created");
    let location = HeaderValue::from_str(&format!("/api/v1/destinations/{id}"))
        .map_err(|e| ApiError::Internal(e.into()))?;
    let body = CreatedDestination {
        destination: (&destination).into(),
        secret: spec.shown,
    };
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(body),
    )
        .into_response())
}

/// The caller's destinations.
#[utoipa::path(
    get,
    path = "/api/v1/destinations",
    tag = "destinations",
    security(("api_key" = []), ("entra_id" = [])),
    responses((status = 200, body = DestinationList))
)]
pub async fn list_destinations(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
) -> Result<Json<DestinationList>, ApiError> {
    let all = db::destinations::list(&state.db, &principal.tenant_id).await?;
    Ok(Json(DestinationList {
        destinations: all.iter().map(DestinationView::from).collect(),
    }))
}

/// One destination.
#[utoipa::path(
    get,
    path = "/api/v1/destinations/{destination_id}",
    tag = "destinations",
    security(("api_key" = []), ("entra_id" = [])),
    params(("destination_id" = Uuid, Path, description = "Destination id")),
    responses(
        (status = 200, body = DestinationView),
        (status = 400, description = "The id is not a UUID", body = ErrorBody),
        (status = 404, body = ErrorBody),
    )
)]
pub async fn get_destination(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
) -> Result<Json<DestinationView>, ApiError> {
    let d = db::destinations::find(&state.db, &principal.tenant_id, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    Ok(Json((&d).into()))
}

/// Delete a destination with its deliveries (what it already received stays there).
#[utoipa::path(
    delete,
    path = "/api/v1/destinations/{destination_id}",
    tag = "destinations",
    security(("api_key" = []), ("entra_id" = [])),
    params(("destination_id" = Uuid, Path, description = "Destination id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "The id is not a UUID", body = ErrorBody),
        (status = 404, body = ErrorBody),
    )
)]
pub async fn delete_destination(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
) -> Result<StatusCode, ApiError> {
    if db::destinations::delete(&state.db, &principal.tenant_id, id).await? {
        tracing::info!(destination_id = %id, "destination deleted");
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(not_found(id))
    }
}

/// Each file's delivery to the destination, by file id.
#[utoipa::path(
    get,
    path = "/api/v1/destinations/{destination_id}/deliveries",
    tag = "destinations",
    security(("api_key" = []), ("entra_id" = [])),
    params(("destination_id" = Uuid, Path, description = "Destination id"), DeliveriesQuery),
    responses(
        (status = 200, body = DeliveryList),
        (status = 400, description = "Bad id, after or limit", body = ErrorBody),
        (status = 404, body = ErrorBody),
    )
)]
pub async fn list_deliveries(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
    AppQuery(q): AppQuery<DeliveriesQuery>,
) -> Result<Json<DeliveryList>, ApiError> {
    let limit = query::limit(q.limit, 100)?;
    db::destinations::find(&state.db, &principal.tenant_id, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    let rows = db::destination_deliveries::list(&state.db, id, q.after, limit + 1).await?;
    let (rows, next_after) = query::cut(rows, limit, |d| d.source_file_id);
    Ok(Json(DeliveryList {
        deliveries: rows.into_iter().map(DeliveryView::from).collect(),
        next_after,
    }))
}

/// Deliver a file again, from its first sheet or chunk, at its latest revision.
#[utoipa::path(
    post,
    path = "/api/v1/destinations/{destination_id}/redeliver",
    tag = "destinations",
    security(("api_key" = []), ("entra_id" = [])),
    params(("destination_id" = Uuid, Path, description = "Destination id")),
    request_body(content = RedeliverRequest, content_type = "application/json"),
    responses(
        (status = 202, description = "Queued"),
        (status = 400, description = "Bad id or body", body = ErrorBody),
        (status = 404, description = "No such destination or file", body = ErrorBody),
        (status = 409, description = "`not_parsed`: the file's task is not COMPLETED", body = ErrorBody),
    )
)]
pub async fn redeliver(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
    AppJson(request): AppJson<RedeliverRequest>,
) -> Result<StatusCode, ApiError> {
    let tenant = &principal.tenant_id;
    db::destinations::find(&state.db, tenant, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    match db::destination_deliveries::redeliver(&state.db, tenant, id, request.file_id).await? {
        Redelivery::Queued => {
            tracing::info!(destination_id = %id, source_file_id = %request.file_id,
                "redelivery queued");
            Ok(StatusCode::ACCEPTED)
        }
        Redelivery::NoFile => Err(ApiError::NotFound(format!(
            "no source file {}",
            request.file_id
        ))),
        Redelivery::NotCompleted => Err(ApiError::Conflict {
            code: ApiErrorCode::NotParsed,
            message: "the file has no rows to deliver: its task is not COMPLETED".into(),
        }),
    }
}

fn not_found(id: Uuid) -> ApiError {
    ApiError::NotFound(format!("no destination {id}"))
}
