//! `PATCH /api/v1/sources/{id}`: a source's settings changed in place, checked as a create
//! checks them. Its container and prefix stay (they are what the source is); a new credential
//! is for the same container, and makes the listing and the blobs waiting on a retry due now.

use axum::extract::State;
use axum::{Extension, Json};
use shared::db;

use super::views::{PatchSource, SourceView};
use super::{not_found, settings};
use crate::auth::Principal;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{AppJson, PathId};
use crate::routes::destinations::checks::Problems;
use crate::routes::webhooks::checked_description;
use crate::state::AppState;

/// Change a source's credential, template, settings, or whether it is enabled.
#[utoipa::path(
    patch,
    path = "/api/v1/sources/{source_id}",
    tag = "sources",
    security(("api_key" = []), ("entra_id" = [])),
    params(("source_id" = uuid::Uuid, Path, description = "Source id")),
    request_body(content = PatchSource, content_type = "application/json"),
    responses(
        (status = 200, body = SourceView),
        (status = 400, description = "Bad id or body", body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 422, description = "`unsafe_url`; `unknown_template`; `invalid_source` with every problem in `details`", body = ErrorBody),
    )
)]
pub async fn patch_source(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
    AppJson(request): AppJson<PatchSource>,
) -> Result<Json<SourceView>, ApiError> {
    let tenant = &principal.tenant_id;
    let current = db::sources::find(&state.db, tenant, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    let mut p = Problems::for_source();
    let on_invalid = request
        .on_invalid
        .as_ref()
        .map(|o| settings::on_invalid(&mut p, o.as_deref()));
    let after_import = settings::after_import(&mut p, request.after_import.as_deref());
    let metadata = request
        .metadata
        .map(|m| m.and_then(|m| settings::metadata(&mut p, Some(m))));
    let description = match &request.description {
        Some(d) if d.is_empty() => Some(""),
        Some(d) => checked_description(Some(d))?,
        None => None,
    };
    let sealed = match request.credential {
        Some(credential) => {
            settings::container(&state, &mut p, id, &current.container_url, credential).await?
        }
        None => None,
    };
    let template = request.template.as_ref().map(Option::as_deref);
    let has_template = template
        .unwrap_or(current.template_name.as_deref())
        .is_some();
    let keeps_on_invalid = on_invalid
        .as_ref()
        .map_or(current.on_invalid.is_some(), Option::is_some);
    if keeps_on_invalid && !has_template {
        p.add("/on_invalid", "on_invalid applies only with a template");
    }
    p.done()?;
    settings::template(&state, tenant, template.flatten()).await?;
    let change = db::sources::Change {
        credential: sealed
            .as_ref()
            .map(|s| (s.credential_kind, s.sealed.as_deref())),
        template_name: template,
        on_invalid: on_invalid.as_ref().map(Option::as_deref),
        metadata: metadata.as_ref().map(Option::as_ref),
        description,
        after_import: after_import.as_deref(),
        enabled: request.enabled,
    };
    let mut conn = state.db.acquire().await?;
    let s = db::sources::update(&mut conn, tenant, id, &change)
        .await?
        .ok_or_else(|| not_found(id))?;
    tracing::info!(source_id = %id, enabled = s.enabled, "source changed");
    Ok(Json(s.into()))
}
