//! `PATCH /api/v1/files/{id}/corrections`: fix a templated file's bad cells in place (contract
//! v1.3, "Corrections"). The handler reads the request; [`crate::corrections`] does the rest.

use axum::extract::State;
use axum::{Extension, Json};

use crate::auth::Principal;
use crate::corrections::{self, CorrectionsAnswer, CorrectionsRequest};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{AppJson, PathId};
use crate::state::AppState;

/// Correct cells of a templated file: one revision, re-checked as at upload.
#[utoipa::path(
    patch,
    path = "/api/v1/files/{source_file_id}/corrections",
    tag = "files",
    security(("api_key" = []), ("entra_id" = [])),
    params(("source_file_id" = uuid::Uuid, Path, description = "Source file id")),
    request_body(content = CorrectionsRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The revision made", body = CorrectionsAnswer),
        (status = 400, description = "The id is not a UUID, or the body is not the request's JSON", body = ErrorBody),
        (status = 404, description = "Unknown file", body = ErrorBody),
        (status = 409, description = "not_parsed: the file's task is not final, or failed without a report", body = ErrorBody),
        (status = 422, description = "invalid_correction: every problem with its JSON pointer in `error.details`", body = ErrorBody),
        (status = 503, description = "hook_unavailable: a template's validation hook gave no usable answer about the corrected rows in its timeout; nothing applied", body = ErrorBody),
    )
)]
pub async fn correct(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
    AppJson(request): AppJson<CorrectionsRequest>,
) -> Result<Json<CorrectionsAnswer>, ApiError> {
    let answer = corrections::apply(&state, &principal.tenant_id, id, &request.corrections).await?;
    Ok(Json(answer))
}
