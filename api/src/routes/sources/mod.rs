//! `/api/v1/sources` (contract v1.3, "Blob sources"): a tenant's own Blob container (and
//! prefix) whose new blobs are imported like uploads. A source's SAS or connection string is
//! sealed under `WEBHOOK_SECRET_KEY` like a destination's and never read back here. The
//! container URL follows the webhook rules (`unsafe_url`), checked again by the worker at every
//! connection. A container and prefix belong to one source: another whose prefix overlaps
//! (one starts with the other), of any tenant, is `409 source_taken`. Finding and importing
//! blobs is the worker's (`worker::sources`); Event Grid may also post its events here
//! ([`events`]). Import sessions' tokens are refused (`403 forbidden`).

mod events;
mod patch;
mod settings;
mod views;

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use shared::db;
use shared::db::sources::{NewSource, Refused};
use uuid::Uuid;

pub use events::{
    __path_options_events, __path_post_events, __path_rotate_events_token, options_events,
    post_events, rotate_events_token, MAX_EVENTS_BYTES,
};
pub use patch::{__path_patch_source, patch_source};
pub use views::{
    BlobList, BlobView, BlobsQuery, CreateSource, CreatedSource, EventsAccepted, EventsToken,
    PatchSource, SourceList, SourceView, ValidationResponse,
};

use super::query;
use super::webhooks::checked_description;
use crate::auth::{api_key, source_events, Principal};
use crate::error::{ApiError, ApiErrorCode, ErrorBody};
use crate::extract::{AppJson, AppQuery, PathId};
use crate::routes::destinations::checks::Problems;
use crate::state::AppState;

/// Create a Blob source.
#[utoipa::path(
    post,
    path = "/api/v1/sources",
    tag = "sources",
    security(("api_key" = []), ("entra_id" = [])),
    request_body(content = CreateSource, content_type = "application/json"),
    responses(
        (status = 201, description = "Created: its blobs are found from the next listing (and events) on; `events_token` is shown this once", body = CreatedSource),
        (status = 400, description = "A body that is not the request's JSON", body = ErrorBody),
        (status = 403, description = "`forbidden`: an import session's token", body = ErrorBody),
        (status = 409, description = "`too_many_sources`: the tenant has SOURCE_MAX_PER_TENANT; `source_taken`: another source watches the container at an overlapping prefix", body = ErrorBody),
        (status = 422, description = "`unsafe_url`; `unknown_template`; `invalid_source` with every problem in `details`", body = ErrorBody),
        (status = 503, description = "`webhooks_unavailable`: WEBHOOK_SECRET_KEY (which seals credentials) is not set; or Postgres unavailable", body = ErrorBody),
    )
)]
pub async fn create_source(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    AppJson(request): AppJson<CreateSource>,
) -> Result<Response, ApiError> {
    let tenant = &principal.tenant_id;
    let description = checked_description(request.description.as_deref())?;
    let id = Uuid::now_v7();
    let mut p = Problems::for_source();
    if request.kind != "azure_blob" {
        p.add("/kind", "kind is `azure_blob`");
    }
    let prefix = settings::prefix(&mut p, request.prefix.as_deref());
    let on_invalid = settings::on_invalid(&mut p, request.on_invalid.as_deref());
    let after_import = settings::after_import(&mut p, request.after_import.as_deref());
    let metadata = settings::metadata(&mut p, request.metadata);
    if on_invalid.is_some() && request.template.is_none() {
        p.add("/on_invalid", "on_invalid applies only with a template");
    }
    let container = settings::container(
        &state,
        &mut p,
        id,
        &request.container_url,
        request.credential,
    )
    .await?;
    p.done()?;
    settings::template(&state, tenant, request.template.as_deref()).await?;
    let container = container.ok_or_else(|| {
        ApiError::Internal(anyhow::anyhow!("a checked container without a value"))
    })?;
    let max = state.webhooks.max_sources;
    let events_token = source_events::new_token();
    let events_token_hash = api_key::hash(&events_token);
    let mut tx = state.db.begin().await?;
    let created = db::sources::insert(
        &mut tx,
        &NewSource {
            id,
            tenant_id: tenant,
            container_url: &container.container_url,
            prefix: &prefix,
            credential_kind: container.credential_kind,
            sealed_secret: container.sealed.as_deref(),
            template_name: request.template.as_deref(),
            on_invalid: on_invalid.as_deref(),
            metadata: metadata.as_ref(),
            description,
            import_existing: request.import_existing.unwrap_or(true),
            after_import: after_import.as_deref().unwrap_or("keep"),
            events_token_hash: &events_token_hash,
        },
        max,
    )
    .await?;
    let source = match created {
        Ok(source) => source,
        Err(Refused::TooMany) => {
            return Err(ApiError::Conflict {
                code: ApiErrorCode::TooManySources,
                message: format!("a tenant may have {max} sources; delete one first"),
            })
        }
        Err(Refused::Claimed) => {
            return Err(ApiError::Conflict {
                code: ApiErrorCode::SourceTaken,
                message: "another source watches this container at an overlapping prefix".into(),
            })
        }
    };
    tx.commit().await?;
    tracing::info!(source_id = %id, tenant_id = %tenant, "source created");
    let location = HeaderValue::from_str(&format!("/api/v1/sources/{id}"))
        .map_err(|e| ApiError::Internal(e.into()))?;
    let created = CreatedSource {
        source: SourceView::from(source),
        events_token,
    };
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(created),
    )
        .into_response())
}

/// The caller's Blob sources, with what each found so far.
#[utoipa::path(
    get,
    path = "/api/v1/sources",
    tag = "sources",
    security(("api_key" = []), ("entra_id" = [])),
    responses((status = 200, body = SourceList))
)]
pub async fn list_sources(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
) -> Result<Json<SourceList>, ApiError> {
    let all = db::sources::list(&state.db, &principal.tenant_id).await?;
    Ok(Json(SourceList {
        sources: all.into_iter().map(SourceView::from).collect(),
    }))
}

/// One Blob source and its status.
#[utoipa::path(
    get,
    path = "/api/v1/sources/{source_id}",
    tag = "sources",
    security(("api_key" = []), ("entra_id" = [])),
    params(("source_id" = Uuid, Path, description = "Source id")),
    responses(
        (status = 200, body = SourceView),
        (status = 400, description = "The id is not a UUID", body = ErrorBody),
        (status = 404, body = ErrorBody),
    )
)]
pub async fn get_source(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
) -> Result<Json<SourceView>, ApiError> {
    let s = db::sources::find(&state.db, &principal.tenant_id, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    Ok(Json(s.into()))
}

/// Delete a source and what it found; the files it imported stay (with their `origin`).
#[utoipa::path(
    delete,
    path = "/api/v1/sources/{source_id}",
    tag = "sources",
    security(("api_key" = []), ("entra_id" = [])),
    params(("source_id" = Uuid, Path, description = "Source id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "The id is not a UUID", body = ErrorBody),
        (status = 404, body = ErrorBody),
    )
)]
pub async fn delete_source(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
) -> Result<StatusCode, ApiError> {
    if db::sources::delete(&state.db, &principal.tenant_id, id).await? {
        tracing::info!(source_id = %id, "source deleted");
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(not_found(id))
    }
}

/// The blob versions the source found, most recent first, and what became of each.
#[utoipa::path(
    get,
    path = "/api/v1/sources/{source_id}/blobs",
    tag = "sources",
    security(("api_key" = []), ("entra_id" = [])),
    params(("source_id" = Uuid, Path, description = "Source id"), BlobsQuery),
    responses(
        (status = 200, body = BlobList),
        (status = 400, description = "Bad id, after or limit", body = ErrorBody),
        (status = 404, body = ErrorBody),
    )
)]
pub async fn list_blobs(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
    AppQuery(q): AppQuery<BlobsQuery>,
) -> Result<Json<BlobList>, ApiError> {
    let limit = query::limit(q.limit, 100)?;
    db::sources::find(&state.db, &principal.tenant_id, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    let rows = db::source_blobs::list(&state.db, id, q.after, limit + 1).await?;
    let (rows, next_after) = query::cut(rows, limit, |b| b.id);
    Ok(Json(BlobList {
        blobs: rows.into_iter().map(BlobView::from).collect(),
        next_after,
    }))
}

fn not_found(id: Uuid) -> ApiError {
    ApiError::NotFound(format!("no source {id}"))
}
