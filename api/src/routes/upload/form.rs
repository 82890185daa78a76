//! The multipart side of an upload: the request's checks (`Idempotency-Key`, the declared
//! length), the guarded multipart body, the text parts that come before `file`, and the answers
//! to a body or multipart failure.

use axum::extract::multipart::Field;
use axum::extract::{FromRequest as _, Multipart, Request};
use axum::http::{header, HeaderMap, StatusCode};
use shared::db;
use shared::domain::{metadata, OnInvalid};

use crate::auth::Principal;
use crate::body_guard::{self, Trip, Tripped};
use crate::error::{ApiError, ApiErrorCode};
use crate::metered_field::BodyError;
use crate::state::AppState;
use crate::uploads::record::ChosenTemplate;

const IDEMPOTENCY_KEY: &str = "idempotency-key";
const TEMPLATE_PART: &str = "template";
const ON_INVALID_PART: &str = "on_invalid";
const METADATA_PART: &str = "metadata";
/// The most bytes a text part (`template`, `on_invalid`) may hold.
const MAX_TEXT_PART: usize = 256;

pub(crate) fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
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

pub(crate) fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// Turns body and multipart failures into answers, knowing which guard (if any) tripped.
pub(super) struct Errors {
    pub limit: u64,
    pub trip: Trip,
}

impl Errors {
    pub fn multipart(&self, err: axum::extract::multipart::MultipartError) -> ApiError {
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

    pub fn body(&self, err: BodyError) -> ApiError {
        match err {
            BodyError::TooLarge => ApiError::PayloadTooLarge { limit: self.limit },
            BodyError::Multipart(e) => self.multipart(e),
        }
    }
}

/// The request's multipart body behind the part-header and idle guards.
pub(super) async fn guarded_multipart(
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
pub(super) async fn only_one_file_part(
    multipart: &mut Multipart,
    errors: &Errors,
) -> Result<(), ApiError> {
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
            Some(name @ (TEMPLATE_PART | ON_INVALID_PART | METADATA_PART)) => {
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

/// The text parts that may precede `file` (or a resumable upload's metadata of the same names).
#[derive(Default)]
pub(crate) struct FormFields {
    template: Option<String>,
    on_invalid: Option<String>,
    /// The upload's metadata, read and checked ([`metadata::parse`]).
    pub(crate) metadata: Option<serde_json::Value>,
}

impl FormFields {
    /// The fields as given some other way than multipart parts; `metadata` as its JSON text.
    pub(crate) fn new(
        template: Option<String>,
        on_invalid: Option<String>,
        metadata: Option<&[u8]>,
    ) -> Result<Self, ApiError> {
        Ok(Self {
            template,
            on_invalid,
            metadata: metadata.map(checked_metadata).transpose()?,
        })
    }

    /// Reads one part before `file`: `template`, `on_invalid` and `metadata` are kept, others
    /// ignored.
    pub(super) async fn read(&mut self, field: Field<'_>, errors: &Errors) -> Result<(), ApiError> {
        let slot = match field.name() {
            Some(TEMPLATE_PART) => &mut self.template,
            Some(ON_INVALID_PART) => &mut self.on_invalid,
            Some(METADATA_PART) => {
                // Its bound is on the compact JSON: a generous read, then the exact check.
                let text = read_part(field, errors, 4 * metadata::MAX_METADATA_BYTES).await?;
                self.metadata = Some(checked_metadata(&text)?);
                return Ok(());
            }
            _ => return Ok(()),
        };
        let name = field.name().unwrap_or_default().to_owned();
        let text = read_part(field, errors, MAX_TEXT_PART).await?;
        let text = String::from_utf8(text).map_err(|_| {
            ApiError::unprocessable(
                ApiErrorCode::InvalidParameter,
                format!("the `{name}` part is not UTF-8"),
            )
        })?;
        *slot = Some(text.trim().to_owned());
        Ok(())
    }

    /// An import session's upload: always against the session's template, with its metadata;
    /// a part naming another is `403 forbidden`. Counts the upload against the session
    /// (`403 session_exhausted` past its `max_uploads`). Nothing for other callers.
    pub(crate) async fn apply_session(
        &mut self,
        state: &AppState,
        principal: &Principal,
    ) -> Result<(), ApiError> {
        let Some(session) = principal.session.as_deref() else {
            return Ok(());
        };
        let forbidden = |what: &str| ApiError::Refused {
            status: StatusCode::FORBIDDEN,
            code: ApiErrorCode::Forbidden,
            message: format!("an import session uploads with its own {what}; leave it out"),
        };
        if self
            .template
            .as_deref()
            .is_some_and(|t| t != session.template_name)
        {
            return Err(forbidden("template"));
        }
        if self.metadata.is_some() && self.metadata != session.metadata {
            return Err(forbidden("metadata"));
        }
        self.template = Some(session.template_name.clone());
        self.metadata.clone_from(&session.metadata);
        if !db::sessions::take_upload(&state.db, session.id).await? {
            return Err(ApiError::Refused {
                status: StatusCode::FORBIDDEN,
                code: ApiErrorCode::SessionExhausted,
                message: format!(
                    "this import session made the {} uploads it may",
                    session.max_uploads
                ),
            });
        }
        Ok(())
    }

    /// The latest version of the named template of the caller's tenant; `422` when there is
    /// none, or for an `on_invalid` that is not a policy.
    pub(crate) async fn template(
        &self,
        state: &AppState,
        principal: &Principal,
    ) -> Result<Option<ChosenTemplate>, ApiError> {
        let on_invalid = match self.on_invalid.as_deref() {
            None => None,
            Some(text) => Some(text.parse::<OnInvalid>().map_err(|_| {
                ApiError::unprocessable(
                    ApiErrorCode::InvalidParameter,
                    "on_invalid must be reject_file, drop_invalid_rows or keep_invalid_rows",
                )
            })?),
        };
        let Some(name) = self.template.as_deref() else {
            if on_invalid.is_some() {
                return Err(ApiError::unprocessable(
                    ApiErrorCode::InvalidParameter,
                    "on_invalid applies only to an upload with a template",
                ));
            }
            return Ok(None);
        };
        let template = crate::routes::templates::named(state, &principal.tenant_id, name).await?;
        let on_invalid = match on_invalid {
            Some(p) => p,
            None => template.on_invalid,
        };
        Ok(Some(ChosenTemplate {
            name: template.name,
            version: template.version,
            on_invalid,
        }))
    }
}

/// A text part's bytes: `422` past `limit` (`invalid_metadata` for the metadata part).
async fn read_part(
    mut field: Field<'_>,
    errors: &Errors,
    limit: usize,
) -> Result<Vec<u8>, ApiError> {
    let name = field.name().unwrap_or_default().to_owned();
    let mut text = Vec::new();
    while let Some(chunk) = field.chunk().await.map_err(|e| errors.multipart(e))? {
        if text.len() + chunk.len() > limit {
            let code = if name == METADATA_PART {
                ApiErrorCode::InvalidMetadata
            } else {
                ApiErrorCode::InvalidParameter
            };
            return Err(ApiError::unprocessable(
                code,
                format!("the `{name}` part is longer than {limit} bytes"),
            ));
        }
        text.extend_from_slice(&chunk);
    }
    Ok(text)
}

/// Upload metadata read as the contract says, or `422 invalid_metadata`.
fn checked_metadata(text: &[u8]) -> Result<serde_json::Value, ApiError> {
    metadata::parse(text).map_err(|why| ApiError::unprocessable(ApiErrorCode::InvalidMetadata, why))
}
