//! `GET /api/v1/files` (the caller's files, newest first), `GET /api/v1/files/{id}` and
//! `DELETE /api/v1/files/{id}`. Every query takes the caller's tenant: another tenant's id is a
//! `404`, exactly like an id that does not exist, so ids reveal nothing.

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::Deserialize;
use shared::db;
use shared::db::source_files::Announce;
use uuid::Uuid;

use super::query;
use crate::auth::Principal;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{AppQuery, PathId};
use crate::state::AppState;
use crate::views::{FileList, FileView};

const DEFAULT_LIMIT: i64 = 50;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Page size, 1..1000 (default 50).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
    /// The previous page's `next_after`: files uploaded before that one.
    pub after: Option<Uuid>,
}

/// The caller's files with their tasks, newest first, in keyset pages.
#[utoipa::path(
    get,
    path = "/api/v1/files",
    tag = "files",
    security(("api_key" = []), ("entra_id" = [])),
    params(ListQuery),
    responses(
        (status = 200, body = FileList),
        (status = 400, description = "Bad limit or after", body = ErrorBody),
    )
)]
pub async fn list_files(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    AppQuery(q): AppQuery<ListQuery>,
) -> Result<Json<FileList>, ApiError> {
    let limit = query::limit(q.limit, DEFAULT_LIMIT)?;
    let files = db::source_files::list(&state.db, &principal.tenant_id, q.after, limit + 1).await?;
    let (files, next_after) = query::cut(files, limit, |f| f.file.id);
    Ok(Json(FileList {
        files: files
            .iter()
            .map(|f| FileView::new(&f.file, &f.task))
            .collect(),
        next_after,
    }))
}

/// A source file and its task.
#[utoipa::path(
    get,
    path = "/api/v1/files/{source_file_id}",
    tag = "files",
    security(("api_key" = []), ("entra_id" = [])),
    params(("source_file_id" = Uuid, Path, description = "Source file id")),
    responses(
        (status = 200, body = FileView),
        (status = 400, description = "The id is not a UUID", body = ErrorBody),
        (status = 404, body = ErrorBody),
    )
)]
pub async fn get_file(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
) -> Result<Json<FileView>, ApiError> {
    let (file, task) = db::source_files::find_with_task(&state.db, &principal.tenant_id, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no source file {id}")))?;
    Ok(Json(FileView::new(&file, &task)))
}

/// Deletes a file with its blob, task, outbox messages and parsed rows.
#[utoipa::path(
    delete,
    path = "/api/v1/files/{source_file_id}",
    tag = "files",
    security(("api_key" = []), ("entra_id" = [])),
    params(("source_file_id" = Uuid, Path, description = "Source file id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "The id is not a UUID", body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 503, description = "Postgres, Blob Storage or Entra ID's signing keys unavailable", body = ErrorBody),
    )
)]
pub async fn delete_file(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
) -> Result<StatusCode, ApiError> {
    // The rows go only once the blob is gone: a failed blob delete leaves everything as it was.
    let mut tx = state.db.begin().await?;
    let blob_name =
        db::source_files::delete(&mut tx, &principal.tenant_id, id, Announce::FileDeleted)
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("no source file {id}")))?;
    state
        .blobs
        .delete(&blob_name)
        .await
        .map_err(ApiError::StorageUnavailable)?;
    tx.commit().await?;
    tracing::info!(source_file_id = %id, tenant_id = %principal.tenant_id, "file deleted");
    Ok(StatusCode::NO_CONTENT)
}
