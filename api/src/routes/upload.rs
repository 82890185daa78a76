//! `POST /api/v1/files`: the upload.
//!
//! The `file` part streams into Blob Storage, then the source file, its task and the outbox
//! message that will announce it are recorded in one statement (`db::uploads`), atomic like a
//! transaction. Either all three rows exist or none: if the statement fails the blob is deleted
//! (best effort; an orphaned blob is harmless, a task without a file is not).
//!
//! An `Idempotency-Key` belongs to the caller's tenant and to the file it first came with: a
//! retry with the same key and the same bytes (size and SHA-256) gets the original answer and
//! stores nothing; the same key with other bytes is a `409`. The key is honoured only for a
//! request that is itself a valid upload, so the body is read (and hashed, not stored) even
//! when the key is known.

use axum::extract::{FromRequest as _, Multipart, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use chrono::Utc;
use futures::StreamExt as _;
use shared::db::source_files::{NewSourceFile, SourceFile, TemplateRef};
use shared::db::{self, uploads::NewUpload};
use shared::domain::{FileFormat, OnInvalid};
use shared::storage::UploadError;
use uuid::Uuid;

use crate::auth::Principal;
use crate::body_guard::{self, Trip, Tripped};
use crate::error::{ApiError, ApiErrorCode, ErrorBody};
use crate::metered_field::{clean_file_name, BodyError, MeteredField, Streamed};
use crate::state::AppState;
use crate::views::UploadView;

/// Room for multipart boundaries and part headers on top of the file size limit.
const MULTIPART_OVERHEAD: u64 = 64 * 1024;
const IDEMPOTENCY_KEY: &str = "idempotency-key";
const IDEMPOTENCY_KEY_CONSTRAINT: &str = "source_files_tenant_idempotency_key";
const TEMPLATE_PART: &str = "template";
const ON_INVALID_PART: &str = "on_invalid";
/// The most bytes a text part (`template`, `on_invalid`) may hold.
const MAX_TEXT_PART: usize = 256;

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
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 408, description = "The body stalled", body = ErrorBody),
        (status = 409, description = "Idempotency-Key reused with a different file", body = ErrorBody),
        (status = 413, description = "File over the configured limit", body = ErrorBody),
        (status = 415, description = "Not CSV/TSV/xlsx/xlsm/xlsb/xls/ods", body = ErrorBody),
        (status = 422, description = "unknown_template: no such template; invalid_parameter: a bad `on_invalid`", body = ErrorBody),
        (status = 503, description = "Postgres, Blob Storage or Entra ID's signing keys unavailable", body = ErrorBody),
    )
)]
#[tracing::instrument(name = "upload", skip_all)]
pub async fn upload(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    request: Request,
) -> Result<Response, ApiError> {
    let key = idempotency_key(request.headers())?;
    let limit = state.max_upload_bytes;
    if content_length(request.headers()).is_some_and(|len| len > limit + MULTIPART_OVERHEAD) {
        // Refuse before reading the body at all.
        return Err(ApiError::PayloadTooLarge { limit });
    }
    let trip = Trip::default();
    let mut multipart = guarded_multipart(request, &state, trip.clone()).await?;
    let errors = Errors { limit, trip };

    let mut form = FormFields::default();
    let field = loop {
        match multipart
            .next_field()
            .await
            .map_err(|e| errors.multipart(e))?
        {
            Some(field) if field.name() == Some("file") => break field,
            Some(field) => form.read(field, &errors).await?,
            None => {
                return Err(ApiError::bad_request(
                    ApiErrorCode::MissingFilePart,
                    "the multipart body has no part named `file`",
                ))
            }
        }
    };
    // The template is resolved before a byte of the file is stored.
    let template = form.template(&state, &principal).await?;
    let file_name = clean_file_name(field.file_name());
    let mut body = MeteredField::start(field, limit)
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
            {
                let mut stream = std::pin::pin!(body.stream());
                while let Some(chunk) = stream.next().await {
                    chunk.map_err(|e| errors.body(e))?;
                }
            }
            let streamed = body.finish();
            only_one_file_part(&mut multipart, &errors).await?;
            return replay(&state, &existing, &streamed).await;
        }
    }

    let source_file_id = Uuid::now_v7();
    let blob_name = format!("{}/{source_file_id}", Utc::now().format("%Y/%m/%d"));
    match state
        .blobs
        .upload(&blob_name, format.content_type(), Box::pin(body.stream()))
        .await
    {
        Ok(_) => {}
        Err(UploadError::Body(e)) => return Err(errors.body(e)),
        Err(UploadError::Storage(e)) => return Err(ApiError::StorageUnavailable(e)),
    }
    let streamed = body.finish();
    if let Err(e) = only_one_file_part(&mut multipart, &errors).await {
        discard_blob(&state, &blob_name).await;
        return Err(e);
    }

    let new_file = NewSourceFile {
        id: source_file_id,
        tenant_id: &principal.tenant_id,
        uploaded_by: &principal.subject,
        file_name: &file_name,
        content_type: format.content_type(),
        format: format.as_str(),
        size_bytes: i64::try_from(streamed.size).unwrap_or(i64::MAX),
        sha256: &streamed.sha256,
        blob_name: &blob_name,
        idempotency_key: key.as_deref(),
        template: template.as_ref().map(|t| TemplateRef {
            name: &t.name,
            version: t.version,
            on_invalid: t.on_invalid.as_str(),
        }),
    };
    // The upload's trace continues through the relay and the consumer (see
    // shared::telemetry::propagation).
    let traceparent = shared::telemetry::propagation::current_traceparent();
    let upload = NewUpload {
        file: new_file,
        task_id: Uuid::now_v7(),
        message_id: Uuid::now_v7(),
        inline: streamed.small.as_deref(),
        traceparent: traceparent.as_deref(),
    };
    match db::uploads::insert(&state.db, &upload).await {
        Ok((file, task)) => {
            tracing::info!(source_file_id = %file.id, task_id = %task.id, format = %format,
                           size_bytes = streamed.size, tenant_id = %principal.tenant_id,
                           "upload accepted");
            metrics::counter!("sheetrelay_uploads_total", "format" => format.as_str()).increment(1);
            metrics::counter!("sheetrelay_upload_bytes_total").increment(streamed.size);
            Ok(accepted(&file, &task))
        }
        Err(err) => {
            discard_blob(&state, &blob_name).await;
            // A concurrent retry with the same key won the race: answer as it was answered.
            if is_constraint(&err, IDEMPOTENCY_KEY_CONSTRAINT) {
                if let Some(key) = key.as_deref() {
                    if let Some(existing) = db::source_files::find_by_idempotency_key(
                        &state.db,
                        &principal.tenant_id,
                        key,
                    )
                    .await?
                    {
                        return replay(&state, &existing, &streamed).await;
                    }
                }
            }
            Err(ApiError::NotRecorded(err))
        }
    }
}

/// The request's multipart body behind the part-header and idle guards.
async fn guarded_multipart(
    request: Request,
    state: &AppState,
    trip: Trip,
) -> Result<Multipart, ApiError> {
    let malformed =
        |message: String| ApiError::bad_request(ApiErrorCode::MalformedMultipart, message);
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let boundary = multer::parse_boundary(content_type)
        .map_err(|_| malformed("the body is not multipart/form-data with a boundary".into()))?;
    let (parts, body) = request.into_parts();
    let guarded = body_guard::guard(
        body,
        &boundary,
        state.http.max_part_header_bytes,
        state.http.body_idle_timeout,
        trip,
    );
    let request = Request::from_parts(parts, axum::body::Body::from_stream(guarded));
    Multipart::from_request(request, state)
        .await
        .map_err(|e| malformed(e.body_text()))
}

/// After the `file` part: any other part named `file` makes the request a `400`.
async fn only_one_file_part(multipart: &mut Multipart, errors: &Errors) -> Result<(), ApiError> {
    while let Some(field) = multipart
        .next_field()
        .await
        .map_err(|e| errors.multipart(e))?
    {
        match field.name() {
            Some("file") => {
                return Err(ApiError::bad_request(
                    ApiErrorCode::MultipleFileParts,
                    "the multipart body has more than one part named `file`",
                ))
            }
            Some(name @ (TEMPLATE_PART | ON_INVALID_PART)) => {
                return Err(ApiError::bad_request(
                    ApiErrorCode::MisplacedPart,
                    format!("the `{name}` part must come before the `file` part"),
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

async fn discard_blob(state: &AppState, blob_name: &str) {
    if let Err(e) = state.blobs.delete(blob_name).await {
        tracing::warn!(blob_name, error = %e, "could not delete the blob of a refused upload");
    }
}

/// The original answer to a request that reused `file`'s key, if it sent the same bytes.
async fn replay(
    state: &AppState,
    file: &SourceFile,
    streamed: &Streamed,
) -> Result<Response, ApiError> {
    let same = u64::try_from(file.size_bytes).ok() == Some(streamed.size)
        && file.sha256 == streamed.sha256;
    if !same {
        return Err(ApiError::Conflict {
            code: ApiErrorCode::IdempotencyKeyReused,
            message: "this Idempotency-Key was used for a different file".into(),
        });
    }
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
            ApiErrorCode::InvalidIdempotencyKey,
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

/// Turns body and multipart failures into answers, knowing which guard (if any) tripped.
struct Errors {
    limit: u64,
    trip: Trip,
}

impl Errors {
    fn multipart(&self, err: axum::extract::multipart::MultipartError) -> ApiError {
        match self.trip.get() {
            Some(Tripped::PartHeaderTooLarge) => ApiError::bad_request(
                ApiErrorCode::PartHeaderTooLarge,
                "a multipart part header is larger than the limit",
            ),
            Some(Tripped::Idle) => ApiError::Refused {
                status: StatusCode::REQUEST_TIMEOUT,
                code: ApiErrorCode::BodyTimeout,
                message: "the request body stopped arriving".into(),
            },
            None if err.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                ApiError::PayloadTooLarge { limit: self.limit }
            }
            None => ApiError::bad_request(ApiErrorCode::MalformedMultipart, err.body_text()),
        }
    }

    fn body(&self, err: BodyError) -> ApiError {
        match err {
            BodyError::TooLarge => ApiError::PayloadTooLarge { limit: self.limit },
            BodyError::Multipart(e) => self.multipart(e),
        }
    }
}

fn is_constraint(err: &sqlx::Error, name: &str) -> bool {
    matches!(err, sqlx::Error::Database(db) if db.constraint() == Some(name))
}

/// The text parts that may precede `file`.
#[derive(Default)]
struct FormFields {
    template: Option<String>,
    on_invalid: Option<String>,
}

/// The template version an upload is checked against, with its policy.
struct ChosenTemplate {
    name: String,
    version: i32,
    on_invalid: OnInvalid,
}

impl FormFields {
    /// Reads one part before `file`: `template` and `on_invalid` are kept, others ignored.
    async fn read(
        &mut self,
        mut field: axum::extract::multipart::Field<'_>,
        errors: &Errors,
    ) -> Result<(), ApiError> {
        let slot = match field.name() {
            Some(TEMPLATE_PART) => &mut self.template,
            Some(ON_INVALID_PART) => &mut self.on_invalid,
            _ => return Ok(()),
        };
        let name = field.name().unwrap_or_default().to_owned();
        let mut text = Vec::new();
        while let Some(chunk) = field.chunk().await.map_err(|e| errors.multipart(e))? {
            if text.len() + chunk.len() > MAX_TEXT_PART {
                return Err(unprocessable(
                    ApiErrorCode::InvalidParameter,
                    format!("the `{name}` part is longer than {MAX_TEXT_PART} bytes"),
                ));
            }
            text.extend_from_slice(&chunk);
        }
        let text = String::from_utf8(text).map_err(|_| {
            unprocessable(
                ApiErrorCode::InvalidParameter,
                format!("the `{name}` part is not UTF-8"),
            )
        })?;
        *slot = Some(text.trim().to_owned());
        Ok(())
    }

    /// The latest version of the named template of the caller's tenant; `422` when there is
    /// none, or for an `on_invalid` that is not a policy.
    async fn template(
        &self,
        state: &AppState,
        principal: &Principal,
    ) -> Result<Option<ChosenTemplate>, ApiError> {
        let on_invalid = match self.on_invalid.as_deref() {
            None => None,
            Some(text) => Some(OnInvalid::parse(text).ok_or_else(|| {
                unprocessable(
                    ApiErrorCode::InvalidParameter,
                    "on_invalid must be reject_file, drop_invalid_rows or keep_invalid_rows",
                )
            })?),
        };
        let Some(name) = self.template.as_deref() else {
            if on_invalid.is_some() {
                return Err(unprocessable(
                    ApiErrorCode::InvalidParameter,
                    "on_invalid applies only to an upload with a template",
                ));
            }
            return Ok(None);
        };
        let unknown = || {
            unprocessable(
                ApiErrorCode::UnknownTemplate,
                format!("no template {name:?}"),
            )
        };
        if !crate::routes::templates::valid_name(name) {
            return Err(unknown());
        }
        let template = db::templates::find(&state.db, &principal.tenant_id, name, None)
            .await?
            .ok_or_else(unknown)?;
        let on_invalid = match on_invalid {
            Some(p) => p,
            None => OnInvalid::parse(&template.on_invalid).unwrap_or_default(),
        };
        Ok(Some(ChosenTemplate {
            name: template.name,
            version: template.version,
            on_invalid,
        }))
    }
}

fn unprocessable(code: ApiErrorCode, message: impl Into<String>) -> ApiError {
    ApiError::Refused {
        status: StatusCode::UNPROCESSABLE_ENTITY,
        code,
        message: message.into(),
    }
}
