//! `PATCH /api/v1/destinations/{id}`: a destination's settings changed in place, checked as a
//! create checks them; a field of the other kind is refused. A new container URL needs its
//! credential again (and a new credential its URL), so the pair is always checked together.

use axum::extract::State;
use axum::{Extension, Json};
use shared::db;

use super::checks::{self, Problems};
use super::views::{DestinationView, PatchDestination};
use super::{not_found, sealing_key};
use crate::auth::Principal;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{AppJson, PathId};
use crate::routes::webhooks::{checked_description, checked_url};
use crate::state::AppState;

/// Change a destination's settings, or whether it is enabled.
#[utoipa::path(
    patch,
    path = "/api/v1/destinations/{destination_id}",
    tag = "destinations",
    security(("api_key" = []), ("entra_id" = [])),
    params(("destination_id" = uuid::Uuid, Path, description = "Destination id")),
    request_body(content = PatchDestination, content_type = "application/json"),
    responses(
        (status = 200, body = DestinationView),
        (status = 400, description = "Bad id or body", body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 422, description = "`unsafe_url`; `invalid_destination` with every problem in `details`", body = ErrorBody),
    )
)]
pub async fn patch_destination(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
    AppJson(request): AppJson<PatchDestination>,
) -> Result<Json<DestinationView>, ApiError> {
    let tenant = &principal.tenant_id;
    let current = db::destinations::find(&state.db, tenant, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    let blob = current.kind == "azure_blob";
    let mut p = Problems::default();
    let foreign: &[(&str, bool)] = if blob {
        &[
            ("url", request.url.is_some()),
            ("chunk_size", request.chunk_size.is_some()),
        ]
    } else {
        &[
            ("container_url", request.container_url.is_some()),
            ("credential", request.credential.is_some()),
            ("prefix", request.prefix.is_some()),
            ("format", request.format.is_some()),
        ]
    };
    for (field, given) in foreign {
        if *given {
            p.add(
                &format!("/{field}"),
                format!("a {} destination has no {field}", current.kind),
            );
        }
    }
    let prefix = request
        .prefix
        .as_deref()
        .map(|x| checks::prefix(&mut p, Some(x)));
    let format = request
        .format
        .as_deref()
        .map(|x| checks::format(&mut p, Some(x)));
    let chunk_size = request
        .chunk_size
        .map(|x| checks::chunk_size(&mut p, Some(x)));
    // `Some(None)`: the filter goes, every template's files are taken again.
    let templates = request
        .templates
        .as_ref()
        .map(|t| checks::templates(&mut p, t.as_deref()));
    let description = match &request.description {
        Some(d) if d.is_empty() => Some(""),
        Some(d) => checked_description(Some(d))?,
        None => None,
    };
    let (mut url, mut credential_kind, mut sealed) = (None, None, None);
    match (blob, request.container_url, request.credential) {
        (true, Some(container_url), Some(credential)) => {
            if let Some(c) = checks::container(&state, &mut p, &container_url, credential).await? {
                let key = sealing_key(&state)?;
                sealed = c
                    .credential
                    .secret()
                    .map(|s| key.seal_bytes(id, s.as_bytes()));
                credential_kind = Some(c.credential.kind());
                url = Some(c.url());
            }
        }
        (true, Some(_), None) => p.add("/credential", "a new container_url needs its credential"),
        (true, None, Some(_)) => {
            p.add("/container_url", "a new credential needs its container_url")
        }
        _ => {}
    }
    if !blob {
        if let Some(u) = &request.url {
            url = Some(checked_url(&state, u).await?);
        }
    }
    p.done()?;
    let change = db::destinations::Change {
        url: url.as_deref(),
        prefix: prefix.as_deref(),
        format: format.as_deref(),
        chunk_size,
        credential_kind,
        sealed_secret: sealed.as_deref(),
        templates: templates.as_ref().map(Option::as_deref),
        description,
        enabled: request.enabled,
    };
    let d = db::destinations::update(&state.db, tenant, id, &change)
        .await?
        .ok_or_else(|| not_found(id))?;
    tracing::info!(destination_id = %id, enabled = d.enabled, "destination changed");
    Ok(Json((&d).into()))
}
