//! `POST /api/v1/files` (upload) and `GET /api/v1/files/{id}`.
//!
//! An upload streams the `file` part into Blob Storage, then records the source file, its task
//! and the outbox message that will announce it in one statement (`db::uploads`), atomic like a
//! transaction. Either all three rows exist or none: if the statement fails the blob is deleted
//! (best effort; an orphaned blob is harmless, a task without a file or a file without a task
//! is not).

use axum::extract::multipart::{MultipartError, MultipartRejection};
use axum::extract::{Multipart, Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::Utc;
use shared::db::source_files::{NewSourceFile, SourceFile};
use shared::db::{self, uploads::NewUpload};
use shared::domain::FileFormat;
use shared::storage::UploadError;
use uuid::Uuid;

use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;
use crate::upload::{clean_file_name, BodyError, MeteredField};
use crate::views::{FileView, SourceFileView, TaskView, UploadView};

/// Room for multipart boundaries and part headers on top of the file size limit.
const MULTIPART_OVERHEAD: u64 = 64 * 1024;
const IDEMPOTENCY_KEY: &str = "idempotency-key";
const IDEMPOTENCY_KEY_CONSTRAINT: &str = "source_files_idempotency_key_key";

/// Upload a CSV/TSV or Excel file for parsing.
#[utoipa::path(
    post,
    path = "/api/v1/files",
    tag = "files",
    params(("Idempotency-Key" = Option<String>, Header,
            description = "Opaque key (≤ 200 chars): a retry with the same key returns the original result")),
    request_body(content_type = "multipart/form-data",
                 description = "One part named `file`; its filename is kept as `file_name`"),
    responses(
        (status = 202, description = "Stored; parsing is queued", body = UploadView,
         headers(("Location" = String, description = "/api/v1/tasks/{task_id}"))),
        (status = 400, description = "Malformed multipart, no `file` part, bad Idempotency-Key", body = ErrorBody),
        (status = 413, description = "File over the configured limit", body = ErrorBody),
        (status = 415, description = "Not CSV/TSV/xlsx/xlsm/xlsb/xls/ods", body = ErrorBody),
        (status = 503, description = "Postgres or Blob Storage unavailable", body = ErrorBody),
    )
)]
pub async fn upload(
    State(state): State<AppState>,
    headers: HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Response, ApiError> {
    let key = idempotency_key(&headers)?;
    if let Some(key) = key.as_deref() {
        if let Some(existing) = db::source_files::find_by_idempotency_key(&state.db, key).await? {
            return replay(&state, &existing).await;
        }
    }
    let limit = state.max_upload_bytes;
    if content_length(&headers).is_some_and(|len| len > limit + MULTIPART_OVERHEAD) {
        // Refuse before reading the body at all.
        return Err(ApiError::PayloadTooLarge { limit });
    }
    let mut multipart =
        multipart.map_err(|e| ApiError::bad_request("malformed_multipart", e.body_text()))?;
    let field = loop {
        match multipart
            .next_field()
            .await
            .map_err(|e| multipart_error(e, limit))?
        {
            Some(field) if field.name() == Some("file") => break field,
            Some(_) => continue,
            None => {
                return Err(ApiError::bad_request(
                    "missing_file_part",
                    "the multipart body has no part named `file`",
                ))
            }
        }
    };
    let file_name = clean_file_name(field.file_name());
    let mut body = MeteredField::start(field, limit)
        .await
        .map_err(|e| body_error(e, limit))?;
    let format = FileFormat::detect(body.head(), &file_name).ok_or_else(|| {
        ApiError::UnsupportedFormat(format!(
            "{file_name:?} is not a CSV, TSV, xlsx, xlsm, xlsb, xls or ods file"
        ))
    })?;

    let source_file_id = Uuid::now_v7();
    let blob_name = format!("{}/{source_file_id}", Utc::now().format("%Y/%m/%d"));
    match state
        .blobs
        .upload(&blob_name, format.content_type(), Box::pin(body.stream()))
        .await
    {
        Ok(_) => {}
        Err(UploadError::Body(e)) => return Err(body_error(e, limit)),
        Err(UploadError::Storage(e)) => return Err(ApiError::StorageUnavailable(e)),
    }
    let streamed = body.finish();
    let (size_bytes, sha256) = (streamed.size, streamed.sha256);

    let new_file = NewSourceFile {
        id: source_file_id,
        file_name: &file_name,
        content_type: format.content_type(),
        format: format.as_str(),
        size_bytes: i64::try_from(size_bytes).unwrap_or(i64::MAX),
        sha256: &sha256,
        blob_name: &blob_name,
        idempotency_key: key.as_deref(),
    };
    match record(&state, new_file, streamed.small.as_deref()).await {
        Ok((file, task)) => {
            tracing::info!(source_file_id = %file.id, task_id = %task.id, format = %format,
                           size_bytes, "upload accepted");
            metrics::counter!("sheetrelay_uploads_total", "format" => format.as_str()).increment(1);
            metrics::counter!("sheetrelay_upload_bytes_total").increment(size_bytes);
            Ok(accepted(&file, &task))
        }
        Err(err) => {
            if let Err(e) = state.blobs.delete(&blob_name).await {
                tracing::warn!(blob_name, error = %e, "could not delete the blob of a failed upload");
            }
            // A concurrent retry with the same key won the race: answer with its result.
            if is_constraint(&err, IDEMPOTENCY_KEY_CONSTRAINT) {
                if let Some(key) = key.as_deref() {
                    if let Some(existing) =
                        db::source_files::find_by_idempotency_key(&state.db, key).await?
                    {
                        return replay(&state, &existing).await;
                    }
                }
            }
            Err(ApiError::NotRecorded(err))
        }
    }
}

/// The three rows of an upload, in one statement. A small file's bytes go into its message
/// (`small`), so the worker needs no download.
async fn record(
    state: &AppState,
    file: NewSourceFile<'_>,
    small: Option<&[u8]>,
) -> sqlx::Result<(SourceFile, shared::db::tasks::Task)> {
    let upload = NewUpload {
        file,
        task_id: Uuid::now_v7(),
        message_id: Uuid::now_v7(),
        inline: small,
    };
    db::uploads::insert(&state.db, &upload).await
}

async fn replay(state: &AppState, file: &SourceFile) -> Result<Response, ApiError> {
    let task = db::tasks::find_by_source_file(&state.db, file.id)
        .await?
        .ok_or_else(|| {
            ApiError::Internal(anyhow::anyhow!("source file {} has no task", file.id))
        })?;
    Ok(accepted(file, &task))
}

fn accepted(file: &SourceFile, task: &shared::db::tasks::Task) -> Response {
    let location = format!("/api/v1/tasks/{}", task.id);
    let body = UploadView {
        source_file: file.into(),
        task: task.into(),
    };
    (
        StatusCode::ACCEPTED,
        [(header::LOCATION, location)],
        Json(body),
    )
        .into_response()
}

fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get(IDEMPOTENCY_KEY) else {
        return Ok(None);
    };
    let invalid = || {
        ApiError::bad_request(
            "invalid_idempotency_key",
            "Idempotency-Key must be 1 to 200 visible ASCII characters",
        )
    };
    let key = value.to_str().map_err(|_| invalid())?.trim();
    if key.is_empty() || key.len() > 200 {
        return Err(invalid());
    }
    Ok(Some(key.to_owned()))
}

fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

fn multipart_error(err: MultipartError, limit: u64) -> ApiError {
    if err.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::PayloadTooLarge { limit }
    } else {
        ApiError::bad_request("malformed_multipart", err.body_text())
    }
}

fn body_error(err: BodyError, limit: u64) -> ApiError {
    match err {
        BodyError::TooLarge => ApiError::PayloadTooLarge { limit },
        BodyError::Multipart(e) => multipart_error(e, limit),
    }
}

fn is_constraint(err: &sqlx::Error, name: &str) -> bool {
    matches!(err, sqlx::Error::Database(db) if db.constraint() == Some(name))
}

/// A source file and its task.
#[utoipa::path(
    get,
    path = "/api/v1/files/{source_file_id}",
    tag = "files",
    params(("source_file_id" = Uuid, Path, description = "Source file id")),
    responses(
        (status = 200, body = FileView),
        (status = 404, body = ErrorBody),
    )
)]
pub async fn get_file(
    State(state): State<AppState>,
    Path(id): Path<Uuid>,
) -> Result<Json<FileView>, ApiError> {
    let file = db::source_files::find(&state.db, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no source file {id}")))?;
    let task = db::tasks::find_by_source_file(&state.db, id)
        .await?
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("source file {id} has no task")))?;
    Ok(Json(FileView {
        source_file: SourceFileView::from(&file),
        task: TaskView::from(&task),
    }))
}
