//! `POST /api/v1/files`: the upload.
//!
//! The `file` part streams into Blob Storage, then [`record::record`] records the source file,
//! its task and the outbox message that will announce it, all or none.
//!
//! An `Idempotency-Key` belongs to the caller's tenant and to the file it first came with: a
//! retry with the same key and the same bytes (size and SHA-256) gets the original answer and
//! stores nothing; the same key with other bytes is a `409`. The key is honoured only for a
//! request that is itself a valid upload, so the body is read (and hashed, not stored) even
//! when the key is known.

pub(crate) mod form;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use futures::StreamExt as _;
use shared::db::source_files::SourceFile;
use shared::db::{self, tasks::Task};
use shared::domain::{FileFormat, OnInvalid};
use shared::storage::UploadError;
use uuid::Uuid;

use crate::auth::Principal;
use crate::body_guard::Trip;
use crate::error::{ApiError, ApiErrorCode, ErrorBody};
use crate::metered_field::{clean_file_name, MeteredField, Streamed};
use crate::state::AppState;
use crate::uploads::limits;
use crate::uploads::record::{self, StoredFile};
use crate::views::UploadView;
use form::{Errors, FormFields};

/// Room for multipart boundaries and part headers on top of the file size limit.
const MULTIPART_OVERHEAD: u64 = 64 * 1024;

/// The multipart body of an upload (for the OpenAPI document).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // read by utoipa's derive only
pub struct UploadForm {
    /// The name of an import template of the caller's tenant: the file is validated against
    /// its latest version. Must come before `file`.
    #[schema(pattern = "^[a-z0-9][a-z0-9_-]{0,63}$")]
    template: Option<String>,
    /// Overrides the template's policy for rows with errors. Must come before `file`.
    on_invalid: Option<OnInvalid>,
    /// The file: CSV, TSV, xlsx, xlsm, xlsb, xls or ods. Its filename is kept as `file_name`.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
}

/// Upload a CSV/TSV or Excel file for parsing.
#[utoipa::path(
    post,
    path = "/api/v1/files",
    tag = "files",
    security(("api_key" = []), ("entra_id" = [])),
    params(("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 200,
            pattern = "^[!-~]([ -~]*[!-~])?$",
            description = "Opaque key (1–200 visible ASCII characters), scoped to the tenant: a retry with the same key and file returns the original result")),
    request_body(content = UploadForm, content_type = "multipart/form-data",
                 description = "Exactly one part named `file`"),
    responses(
        (status = 202, description = "Stored; parsing is queued", body = UploadView,
         headers(("Location" = String, description = "/api/v1/tasks/{task_id}"))),
        (status = 400, description = "Malformed multipart, no `file` part or more than one, a `template` or `on_invalid` part after `file`, a part header over the limit, bad Idempotency-Key", body = ErrorBody),
        (status = 403, description = "quota_exceeded: the file would take the tenant past its storage quota; nothing is stored", body = ErrorBody),
        (status = 408, description = "The body stalled", body = ErrorBody),
        (status = 409, description = "Idempotency-Key reused with a different file", body = ErrorBody),
        (status = 413, description = "File over the configured limit", body = ErrorBody),
        (status = 415, description = "Not CSV/TSV/xlsx/xlsm/xlsb/xls/ods", body = ErrorBody),
        (status = 422, description = "unknown_template: no such template; invalid_parameter: a bad `on_invalid`", body = ErrorBody),
        (status = 429, description = "rate_limited: over the tenant's upload rate; nothing is stored", body = ErrorBody,
         headers(("Retry-After" = u64, description = "Seconds until an upload is allowed"))),
        (status = 503, description = "Postgres, Blob Storage or Entra ID's signing keys unavailable", body = ErrorBody),
    )
)]
#[tracing::instrument(name = "upload", skip_all)]
pub async fn upload(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    request: Request,
) -> Result<Response, ApiError> {
    let key = form::idempotency_key(request.headers())?;
    let limit = state.max_upload_bytes;
    if form::content_length(request.headers()).is_some_and(|len| len > limit + MULTIPART_OVERHEAD) {
        // Refuse before reading the body at all.
        return Err(ApiError::PayloadTooLarge { limit });
    }
    let quota_bytes = limits::admit(&state, &principal.tenant_id, 0).await?;
    let trip = Trip::default();
    let mut multipart = form::guarded_multipart(request, &state, trip.clone()).await?;
    let errors = Errors { limit, trip };

    let mut fields = FormFields::default();
    let field = loop {
        match multipart
            .next_field()
            .await
            .map_err(|e| errors.multipart(e))?
        {
            Some(field) if field.name() == Some("file") => break field,
            Some(field) => fields.read(field, &errors).await?,
            None => {
                return Err(ApiError::bad_request(
                    ApiErrorCode::MissingFilePart,
                    "the multipart body has no part named `file`",
                ))
            }
        }
    };
    // The template is resolved before a byte of the file is stored.
    fields.apply_session(&state, &principal).await?;
    let template = fields.template(&state, &principal).await?;
    let file_name = clean_file_name(field.file_name());
    let body = MeteredField::start(field, limit)
        .await
        .map_err(|e| errors.body(e))?;
    let format = FileFormat::detect(body.head(), &file_name).ok_or_else(|| {
        ApiError::UnsupportedFormat(format!(
            "{file_name:?} is not a CSV, TSV, xlsx, xlsm, xlsb, xls or ods file"
        ))
    })?;

    // A key we already hold: read the file to compare it, store nothing.
    if let Some(key) = key.as_deref() {
        if let Some(existing) =
            db::source_files::find_by_idempotency_key(&state.db, &principal.tenant_id, key).await?
        {
            let streamed = drain(body, &errors).await?;
            form::only_one_file_part(&mut multipart, &errors).await?;
            let (file, task) = record::replay(&state, existing, &streamed).await?;
            return Ok(accepted(&file, &task));
        }
    }

    let source_file_id = Uuid::now_v7();
    let blob_name = record::blob_name(source_file_id);
    let streamed = store(&state, &blob_name, format, body, &errors).await?;
    if let Err(e) = form::only_one_file_part(&mut multipart, &errors).await {
        record::discard_blob(&state, &blob_name).await;
        return Err(e);
    }
    let stored = StoredFile {
        id: source_file_id,
        blob_name: &blob_name,
        file_name: &file_name,
        format,
        streamed: &streamed,
        idempotency_key: key.as_deref(),
        template: template.as_ref(),
        metadata: fields.metadata.as_ref(),
        session: principal.session.as_deref().map(|s| (s.id, &s.end_user)),
        quota_bytes,
        resumable: None,
    };
    let (file, task) = record::record(&state, &principal, stored).await?;
    Ok(accepted(&file, &task))
}

/// Reads the rest of the file part without storing it: its size and digest.
async fn drain(mut body: MeteredField<'_>, errors: &Errors) -> Result<Streamed, ApiError> {
    {
        let mut stream = std::pin::pin!(body.stream());
        while let Some(chunk) = stream.next().await {
            chunk.map_err(|e| errors.body(e))?;
        }
    }
    Ok(body.finish())
}

/// Streams the file part into the blob `blob_name`; nothing is left under that name when the
/// body or the storage fails.
async fn store(
    state: &AppState,
    blob_name: &str,
    format: FileFormat,
    mut body: MeteredField<'_>,
    errors: &Errors,
) -> Result<Streamed, ApiError> {
    match state
        .blobs
        .upload(blob_name, format.content_type(), Box::pin(body.stream()))
        .await
    {
        Ok(_) => Ok(body.finish()),
        Err(UploadError::Body(e)) => Err(errors.body(e)),
        Err(UploadError::Storage(e)) => Err(ApiError::StorageUnavailable(e)),
    }
}

/// `202` with the file and its task, and the task's address.
fn accepted(file: &SourceFile, task: &Task) -> Response {
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
