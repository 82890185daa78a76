//! `/api/v1/uploads`: resumable uploads, tus 1.0 (core, creation, termination, checksum with
//! `sha256`, expiration), for files too large or connections too poor for one multipart
//! request.
//!
//! `POST` creates an upload of a declared `Upload-Length` (checked against
//! `RESUMABLE_MAX_UPLOAD_BYTES`, the template and the tenant's rate and quota, as a multipart
//! upload is, before a byte is stored); `PATCH` requests append to it from its offset
//! ([`append`]), each byte staged as part of a block in Blob Storage and counted in Postgres, so
//! the offset that `HEAD` reports survives a cut connection and an api restart; with the last
//! byte the upload is recorded as a multipart upload is ([`finish`]) and `GET` answers with the
//! file and its task. `DELETE` ends an upload and drops its blocks; unfinished uploads expire
//! (`RESUMABLE_UPLOAD_EXPIRY`) and the worker deletes them.

mod append;
pub mod protocol;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use chrono::Utc;
use shared::db::resumable_uploads::{self, NewResumableUpload, ResumableUpload};
use shared::db::source_files::TemplateRef;
use uuid::Uuid;

use crate::auth::Principal;
use crate::error::{ApiError, ApiErrorCode, ErrorBody};
use crate::extract::PathId;
use crate::metered_field::clean_file_name;
use crate::routes::upload::form::{self, FormFields};
use crate::state::AppState;
use crate::uploads::{finish, limits, record};
use crate::views::UploadView;
use finish::Finished;
use protocol::{
    TUS_CHECKSUM_ALGORITHM, TUS_EXTENSION, TUS_MAX_SIZE, TUS_VERSION, UPLOAD_EXPIRES,
    UPLOAD_LENGTH, UPLOAD_OFFSET,
};

/// What this server supports of tus.
#[utoipa::path(
    options,
    path = "/api/v1/uploads",
    tag = "uploads",
    security(("api_key" = []), ("entra_id" = [])),
    responses(
        (status = 204, description = "The tus versions, extensions, largest size and checksum algorithms",
         headers(("Tus-Version" = String), ("Tus-Extension" = String), ("Tus-Max-Size" = u64),
                 ("Tus-Checksum-Algorithm" = String), ("Tus-Resumable" = String))),
    )
)]
pub async fn options(State(state): State<AppState>) -> Response {
    let mut headers = HeaderMap::new();
    headers.insert(&TUS_VERSION, HeaderValue::from_static(protocol::VERSION));
    headers.insert(
        &TUS_EXTENSION,
        HeaderValue::from_static(protocol::EXTENSIONS),
    );
    headers.insert(
        &TUS_MAX_SIZE,
        HeaderValue::from(state.resumable.max_upload_bytes),
    );
    headers.insert(
        &TUS_CHECKSUM_ALGORITHM,
        HeaderValue::from_static(protocol::CHECKSUM_ALGORITHM),
    );
    (StatusCode::NO_CONTENT, headers).into_response()
}

/// Start a resumable upload (tus creation).
#[utoipa::path(
    post,
    path = "/api/v1/uploads",
    tag = "uploads",
    security(("api_key" = []), ("entra_id" = [])),
    params(
        ("Tus-Resumable" = String, Header, description = "`1.0.0`"),
        ("Upload-Length" = u64, Header, description = "The file's size in bytes"),
        ("Upload-Metadata" = Option<String>, Header,
         description = "Comma-separated `key base64(value)` pairs: `filename`, and optionally `template` and `on_invalid` as for a multipart upload"),
        ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 200,
         pattern = "^[!-~]([ -~]*[!-~])?$",
         description = "As for a multipart upload: checked when the upload completes"),
    ),
    responses(
        (status = 201, description = "Created; send the bytes with PATCH to the Location",
         headers(("Location" = String, description = "/api/v1/uploads/{upload_id}"),
                 ("Upload-Expires" = String, description = "When an unfinished upload is deleted"),
                 ("Tus-Resumable" = String))),
        (status = 202, description = "An upload of 0 bytes, complete and recorded at once", body = UploadView,
         headers(("Location" = String, description = "/api/v1/uploads/{upload_id}"))),
        (status = 400, description = "A missing or malformed Upload-Length, Upload-Metadata or Idempotency-Key", body = ErrorBody),
        (status = 403, description = "quota_exceeded: the declared length does not fit the tenant's storage quota", body = ErrorBody),
        (status = 409, description = "An upload of 0 bytes whose Idempotency-Key was used for another file", body = ErrorBody),
        (status = 412, description = "tus_version_unsupported: no `Tus-Resumable: 1.0.0`", body = ErrorBody),
        (status = 413, description = "Upload-Length over RESUMABLE_MAX_UPLOAD_BYTES", body = ErrorBody),
        (status = 415, description = "An upload of 0 bytes that is not a supported format", body = ErrorBody),
        (status = 422, description = "unknown_template, or a bad `on_invalid`", body = ErrorBody),
        (status = 429, description = "rate_limited", body = ErrorBody,
         headers(("Retry-After" = u64, description = "Seconds until an upload is allowed"))),
        (status = 503, description = "Postgres or Blob Storage unavailable", body = ErrorBody),
    )
)]
#[tracing::instrument(name = "resumable_create", skip_all)]
pub async fn create(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let key = form::idempotency_key(&headers)?;
    let length = protocol::required_number(&headers, &UPLOAD_LENGTH)?;
    let limit = state.resumable.max_upload_bytes;
    if length > limit {
        return Err(ApiError::PayloadTooLarge { limit });
    }
    let metadata = protocol::metadata(&headers)?;
    // The template is resolved before a byte is stored, as for a multipart upload.
    let mut fields = FormFields::new(
        metadata.template,
        metadata.on_invalid,
        metadata.metadata.as_deref().map(str::as_bytes),
    )?;
    fields.apply_session(&state, &principal).await?;
    let template = fields.template(&state, &principal).await?;
    let file_name = clean_file_name(metadata.filename.as_deref());
    limits::admit(&state, &principal.tenant_id, length).await?;
    let id = Uuid::now_v7();
    let blob_name = record::blob_name(id);
    let expires_at = Utc::now() + state.resumable.expiry;
    let new = NewResumableUpload {
        id,
        tenant_id: &principal.tenant_id,
        uploaded_by: &principal.subject,
        file_name: &file_name,
        upload_length: i64::try_from(length).unwrap_or(i64::MAX),
        blob_name: &blob_name,
        idempotency_key: key.as_deref(),
        template: template.as_ref().map(|t| TemplateRef {
            name: &t.name,
            version: t.version,
            on_invalid: t.on_invalid.as_str(),
        }),
        metadata: fields.metadata.as_ref(),
        session: principal.session.as_deref().map(|s| (s.id, &s.end_user)),
        expires_at,
    };
    resumable_uploads::insert(&state.db, &new).await?;
    tracing::info!(upload_id = %id, upload_length = length, tenant_id = %principal.tenant_id,
                   "resumable upload created");
    let location = format!("{}/{id}", protocol::ROOT);
    if length == 0 {
        // Complete at creation: nothing will PATCH it.
        let upload = load(&state, &principal, id).await?;
        let (file, task) = recorded_now(&state, &upload).await?;
        let body = UploadView {
            source_file: (&file).into(),
            task: (&task).into(),
        };
        return Ok((
            StatusCode::ACCEPTED,
            [(header::LOCATION, location)],
            Json(body),
        )
            .into_response());
    }
    let mut response = (StatusCode::CREATED, [(header::LOCATION, location)]).into_response();
    response
        .headers_mut()
        .insert(&UPLOAD_EXPIRES, protocol::http_date(expires_at));
    Ok(response)
}

/// Where an upload stands (tus `HEAD`).
#[utoipa::path(
    head,
    path = "/api/v1/uploads/{upload_id}",
    tag = "uploads",
    security(("api_key" = []), ("entra_id" = [])),
    params(
        ("upload_id" = Uuid, Path, description = "The upload's id, from its Location"),
        ("Tus-Resumable" = String, Header, description = "`1.0.0`"),
    ),
    responses(
        (status = 200, description = "The upload's offset and length (no body)",
         headers(("Upload-Offset" = u64), ("Upload-Length" = u64),
                 ("Upload-Expires" = String, description = "Absent once the upload is complete"),
                 ("Cache-Control" = String, description = "no-store"), ("Tus-Resumable" = String))),
        (status = 400, description = "The id is not a UUID", body = ErrorBody),
        (status = 404, description = "No such upload for the caller", body = ErrorBody),
        (status = 410, description = "upload_expired", body = ErrorBody),
        (status = 412, description = "tus_version_unsupported", body = ErrorBody),
    )
)]
pub async fn status(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    let upload = load_unexpired(&state, &principal, id).await?;
    Ok((StatusCode::OK, position(&upload)).into_response())
}

/// Append bytes at the upload's offset (tus `PATCH`).
#[utoipa::path(
    patch,
    path = "/api/v1/uploads/{upload_id}",
    tag = "uploads",
    security(("api_key" = []), ("entra_id" = [])),
    params(
        ("upload_id" = Uuid, Path, description = "The upload's id, from its Location"),
        ("Tus-Resumable" = String, Header, description = "`1.0.0`"),
        ("Upload-Offset" = u64, Header, description = "The upload's offset, as HEAD gave it"),
        ("Upload-Checksum" = Option<String>, Header,
         description = "`sha256 <base64 digest of this request's body>`: nothing of the body counts unless it matches"),
    ),
    request_body(content = Vec<u8>, content_type = "application/offset+octet-stream",
                 description = "The next bytes of the file"),
    responses(
        (status = 204, description = "The bytes counted; with the last byte the upload is recorded",
         headers(("Upload-Offset" = u64, description = "The new offset"),
                 ("Upload-Expires" = String), ("Tus-Resumable" = String))),
        (status = 400, description = "A missing or malformed Upload-Offset or Upload-Checksum, a body cut off, a bad id", body = ErrorBody),
        (status = 403, description = "quota_exceeded at the last byte: nothing is kept", body = ErrorBody),
        (status = 404, description = "No such upload for the caller", body = ErrorBody),
        (status = 408, description = "The body stalled; what arrived before counts (without a checksum)", body = ErrorBody),
        (status = 409, description = "offset_mismatch: Upload-Offset is not the upload's offset; idempotency_key_reused at the last byte", body = ErrorBody),
        (status = 410, description = "upload_expired", body = ErrorBody),
        (status = 412, description = "tus_version_unsupported", body = ErrorBody),
        (status = 413, description = "upload_length_exceeded: more bytes than Upload-Length; too_many_chunks", body = ErrorBody),
        (status = 415, description = "wrong_content_type: not application/offset+octet-stream; unsupported_format at the last byte", body = ErrorBody),
        (status = 460, description = "checksum_mismatch: the body's SHA-256 is not Upload-Checksum; none of it counts", body = ErrorBody),
        (status = 503, description = "Postgres or Blob Storage unavailable", body = ErrorBody),
    )
)]
#[tracing::instrument(name = "resumable_append", skip_all, fields(upload_id = tracing::field::Empty))]
pub async fn append(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
    request: Request,
) -> Result<Response, ApiError> {
    tracing::Span::current().record("upload_id", tracing::field::display(id));
    let headers = request.headers();
    protocol::require_offset_octet_stream(headers)?;
    let from = protocol::required_number(headers, &UPLOAD_OFFSET)?;
    let checksum = protocol::checksum(headers)?;
    let declared = form::content_length(headers);
    let upload = load(&state, &principal, id).await?;
    if upload.upload_offset.unsigned_abs() != from {
        return Err(protocol::offset_mismatch(upload.upload_offset, from));
    }
    if upload.source_file_id.is_none() && upload.expires_at <= Utc::now() {
        return Err(protocol::expired());
    }
    if declared.is_some_and(|n| from.saturating_add(n) > upload.upload_length.unsigned_abs()) {
        return Err(protocol::length_exceeded(upload.upload_length));
    }
    let offset = if upload.is_complete() {
        upload.upload_offset
    } else {
        append::Append::new(&state, &upload, checksum)
            .run(request.into_body())
            .await?
    };
    let upload = load(&state, &principal, id).await?;
    if offset == upload.upload_length {
        // Every byte counted: the answer is 204 whether this request or another records it.
        finish::finish(&state, &upload).await?;
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    response
        .headers_mut()
        .insert(&UPLOAD_OFFSET, HeaderValue::from(offset));
    if upload.source_file_id.is_none() {
        response
            .headers_mut()
            .insert(&UPLOAD_EXPIRES, protocol::http_date(upload.expires_at));
    }
    Ok(response)
}

/// End an upload (tus termination).
#[utoipa::path(
    delete,
    path = "/api/v1/uploads/{upload_id}",
    tag = "uploads",
    security(("api_key" = []), ("entra_id" = [])),
    params(
        ("upload_id" = Uuid, Path, description = "The upload's id, from its Location"),
        ("Tus-Resumable" = String, Header, description = "`1.0.0`"),
    ),
    responses(
        (status = 204, description = "The upload and its staged blocks are gone (a recorded upload's file stays: delete it at /api/v1/files/{id})",
         headers(("Tus-Resumable" = String))),
        (status = 400, description = "The id is not a UUID", body = ErrorBody),
        (status = 404, description = "No such upload for the caller", body = ErrorBody),
        (status = 409, description = "upload_incomplete: the upload is being recorded right now", body = ErrorBody),
        (status = 412, description = "tus_version_unsupported", body = ErrorBody),
    )
)]
pub async fn terminate(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
) -> Result<StatusCode, ApiError> {
    match resumable_uploads::delete(&state.db, &principal.tenant_id, id).await? {
        Some(removed) => {
            if !removed.recorded {
                finish::discard(&state, &removed.blob_name).await;
            }
            Ok(StatusCode::NO_CONTENT)
        }
        None => {
            load(&state, &principal, id).await?;
            Err(being_recorded())
        }
    }
}

/// The file and task a complete upload became.
#[utoipa::path(
    get,
    path = "/api/v1/uploads/{upload_id}",
    tag = "uploads",
    security(("api_key" = []), ("entra_id" = [])),
    params(("upload_id" = Uuid, Path, description = "The upload's id, from its Location")),
    responses(
        (status = 200, description = "Recorded: the same body as a multipart upload's 202", body = UploadView,
         headers(("Location" = String, description = "/api/v1/tasks/{task_id}"))),
        (status = 400, description = "The id is not a UUID", body = ErrorBody),
        (status = 403, description = "quota_exceeded when recording: nothing is kept", body = ErrorBody),
        (status = 404, description = "No such upload for the caller (or its file was deleted)", body = ErrorBody),
        (status = 409, description = "upload_incomplete: bytes are missing (the message says how many) or it is being recorded; idempotency_key_reused", body = ErrorBody),
        (status = 410, description = "upload_expired", body = ErrorBody),
        (status = 415, description = "unsupported_format when recording: nothing is kept", body = ErrorBody),
        (status = 503, description = "Postgres or Blob Storage unavailable", body = ErrorBody),
    )
)]
pub async fn result(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    let upload = load(&state, &principal, id).await?;
    if !upload.is_complete() {
        if upload.expires_at <= Utc::now() {
            return Err(protocol::expired());
        }
        return Err(ApiError::Conflict {
            code: ApiErrorCode::UploadIncomplete,
            message: format!(
                "the upload has {} of its {} bytes; PATCH the rest from Upload-Offset {}",
                upload.upload_offset, upload.upload_length, upload.upload_offset
            ),
        });
    }
    let (file, task) = recorded_now(&state, &upload).await?;
    let location = format!("/api/v1/tasks/{}", task.id);
    let body = UploadView {
        source_file: (&file).into(),
        task: (&task).into(),
    };
    Ok((StatusCode::OK, [(header::LOCATION, location)], Json(body)).into_response())
}

/// The caller's upload, or `404` (another tenant's id included).
async fn load(
    state: &AppState,
    principal: &Principal,
    id: Uuid,
) -> Result<ResumableUpload, ApiError> {
    resumable_uploads::find(&state.db, &principal.tenant_id, id)
        .await?
        .ok_or_else(|| ApiError::NotFound("no such upload".into()))
}

/// Like [`load`], with `410` for an unfinished upload past its expiry.
async fn load_unexpired(
    state: &AppState,
    principal: &Principal,
    id: Uuid,
) -> Result<ResumableUpload, ApiError> {
    let upload = load(state, principal, id).await?;
    if upload.source_file_id.is_none() && !upload.is_complete() && upload.expires_at <= Utc::now() {
        return Err(protocol::expired());
    }
    Ok(upload)
}

/// A complete upload's file and task, recording it first if no request has yet.
async fn recorded_now(
    state: &AppState,
    upload: &ResumableUpload,
) -> Result<
    (
        shared::db::source_files::SourceFile,
        shared::db::tasks::Task,
    ),
    ApiError,
> {
    match finish::finish(state, upload).await? {
        Finished::Recorded(recorded) => Ok(*recorded),
        Finished::InProgress => Err(being_recorded()),
    }
}

fn being_recorded() -> ApiError {
    ApiError::Conflict {
        code: ApiErrorCode::UploadIncomplete,
        message: "the upload is being recorded; ask again in a moment".into(),
    }
}

/// `Upload-Offset`, `Upload-Length`, `Upload-Expires` (while unfinished) and `no-store`.
fn position(upload: &ResumableUpload) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(&UPLOAD_OFFSET, HeaderValue::from(upload.upload_offset));
    headers.insert(&UPLOAD_LENGTH, HeaderValue::from(upload.upload_length));
    if !upload.is_complete() {
        headers.insert(&UPLOAD_EXPIRES, protocol::http_date(upload.expires_at));
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers
}
