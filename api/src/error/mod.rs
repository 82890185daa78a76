//! The one error type of the HTTP layer. Every error becomes the contract's body
//! `{"error": {"code", "message"}}` with a stable machine code; 5xx answers are generic and the
//! full error chain goes to the log instead.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use shared::failure::{self, Failure};

pub mod code;
pub use code::ApiErrorCode;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{message}")]
    BadRequest { code: ApiErrorCode, message: String },
    /// The reason is told to the caller, so it is one of the few fixed texts of `crate::auth`,
    /// never a formatted error that could say more than the caller should know.
    #[error("missing or invalid credentials: {0}")]
    Unauthorized(&'static str),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    MethodNotAllowed(String),
    #[error("{message}")]
    Refused {
        status: StatusCode,
        code: ApiErrorCode,
        message: String,
    },
    #[error("the request took longer than {0:?}")]
    Timeout(std::time::Duration),
    /// Over the tenant's upload rate: `429` with `Retry-After`.
    #[error("too many uploads: the next is allowed in {} s", retry_after_secs(*.0))]
    RateLimited(std::time::Duration),
    #[error("{message}")]
    Conflict { code: ApiErrorCode, message: String },
    #[error("the file is larger than the limit of {limit} bytes")]
    PayloadTooLarge { limit: u64 },
    #[error("{0}")]
    UnsupportedFormat(String),
    #[error("the database is unavailable")]
    DatabaseUnavailable(#[source] sqlx::Error),
    #[error("the upload could not be recorded and nothing was kept")]
    NotRecorded(#[source] sqlx::Error),
    #[error("blob storage is unavailable")]
    StorageUnavailable(#[source] shared::storage::StorageError),
    /// The cause comes from `crate::auth` as a boxed error: `auth` answers with `ApiError`, so
    /// this module must not name `auth`'s types (that was an import cycle).
    #[error("Entra ID's signing keys cannot be fetched, so the access token cannot be checked")]
    AuthUnavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A template document the engine cannot run: every problem, each with its JSON pointer.
    #[error("the template is invalid: {} problem(s)", .0.len())]
    InvalidTemplate(Vec<template::Problem>),
    /// A review's answer that does not fit the template or the file: every problem, each with
    /// its JSON pointer into the request.
    #[error("the mapping is invalid: {} problem(s)", .0.len())]
    InvalidMapping(Vec<template::Problem>),
    /// A layout override that does not fit the file's sheets: every problem, each with its
    /// JSON pointer into the request.
    #[error("the layout is invalid: {} problem(s)", .0.len())]
    InvalidLayout(Vec<template::Problem>),
    /// Corrections that cannot be applied: every problem, each with its JSON pointer into the
    /// request.
    #[error("the corrections are invalid: {} problem(s)", .0.len())]
    InvalidCorrection(Vec<template::Problem>),
    /// A destination that cannot be made as asked (a bad container URL, credential shape,
    /// format, chunk size or template filter): every problem, each with its JSON pointer into
    /// the request.
    #[error("the destination is invalid: {} problem(s)", .0.len())]
    InvalidDestination(Vec<template::Problem>),
    /// A Blob source that cannot be made as asked (a bad container URL, prefix, credential
    /// shape or setting): every problem, each with its JSON pointer into the request.
    #[error("the source is invalid: {} problem(s)", .0.len())]
    InvalidSource(Vec<template::Problem>),
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

/// The error body of the contract, also used in the OpenAPI document.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorDetail {
    /// Stable, machine-readable snake_case code.
    #[schema(value_type = String)]
    pub code: ApiErrorCode,
    /// Human-readable explanation.
    pub message: String,
    /// `invalid_template`, `invalid_mapping` and `invalid_layout` only: every problem of the
    /// request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Vec<ProblemDetail>>,
}

/// One problem of an invalid template or mapping.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ProblemDetail {
    /// RFC 6901 JSON pointer into the request's `schema` (e.g. `/fields/2/type`), or into a
    /// mapping request (e.g. `/mapping/amount`).
    pub pointer: String,
    pub message: String,
}

impl ApiError {
    pub fn bad_request(code: ApiErrorCode, message: impl Into<String>) -> Self {
        ApiError::BadRequest {
            code,
            message: message.into(),
        }
    }

    /// A `422`: the request was read, and what it asks for cannot be done.
    pub fn unprocessable(code: ApiErrorCode, message: impl Into<String>) -> Self {
        ApiError::Refused {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            code,
            message: message.into(),
        }
    }

    fn status_and_code(&self) -> (StatusCode, ApiErrorCode) {
        match self {
            ApiError::BadRequest { code, .. } => (StatusCode::BAD_REQUEST, *code),
            ApiError::Unauthorized(_) => (StatusCode::UNAUTHORIZED, ApiErrorCode::Unauthorized),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, ApiErrorCode::NotFound),
            ApiError::MethodNotAllowed(_) => (
                StatusCode::METHOD_NOT_ALLOWED,
                ApiErrorCode::MethodNotAllowed,
            ),
            ApiError::Refused { status, code, .. } => (*status, *code),
            ApiError::Timeout(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                ApiErrorCode::RequestTimeout,
            ),
            ApiError::Conflict { code, .. } => (StatusCode::CONFLICT, *code),
            ApiError::RateLimited(_) => (StatusCode::TOO_MANY_REQUESTS, ApiErrorCode::RateLimited),
            ApiError::PayloadTooLarge { .. } => {
                (StatusCode::PAYLOAD_TOO_LARGE, ApiErrorCode::PayloadTooLarge)
            }
            ApiError::UnsupportedFormat(_) => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                ApiErrorCode::UnsupportedFormat,
            ),
            ApiError::DatabaseUnavailable(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                ApiErrorCode::DatabaseUnavailable,
            ),
            ApiError::StorageUnavailable(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                ApiErrorCode::StorageUnavailable,
            ),
            ApiError::AuthUnavailable(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                ApiErrorCode::AuthUnavailable,
            ),
            ApiError::NotRecorded(e) if failure::db(e) == Failure::Outage => (
                StatusCode::SERVICE_UNAVAILABLE,
                ApiErrorCode::DatabaseUnavailable,
            ),
            ApiError::NotRecorded(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                ApiErrorCode::UploadNotRecorded,
            ),
            ApiError::InvalidTemplate(_) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                ApiErrorCode::InvalidTemplate,
            ),
            ApiError::InvalidMapping(_) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                ApiErrorCode::InvalidMapping,
            ),
            ApiError::InvalidLayout(_) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                ApiErrorCode::InvalidLayout,
            ),
            ApiError::InvalidCorrection(_) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                ApiErrorCode::InvalidCorrection,
            ),
            ApiError::InvalidDestination(_) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                ApiErrorCode::InvalidDestination,
            ),
            ApiError::InvalidSource(_) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                ApiErrorCode::InvalidSource,
            ),
            ApiError::Internal(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                ApiErrorCode::InternalError,
            ),
        }
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(err: sqlx::Error) -> Self {
        // Postgres text cannot hold U+0000 (22021 for text, 22P05 for `\u0000` in jsonb), and
        // a request's JSON can carry it in any string it stores: the caller's mistake, refused
        // by the statement that would store it, with nothing written.
        let code = err.as_database_error().and_then(|e| e.code());
        if matches!(code.as_deref(), Some("22021" | "22P05")) {
            return ApiError::bad_request(
                ApiErrorCode::InvalidParameter,
                "text in the request cannot contain the NUL character (U+0000)",
            );
        }
        if failure::db(&err) == Failure::Outage {
            ApiError::DatabaseUnavailable(err)
        } else {
            ApiError::Internal(err.into())
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        if status.is_server_error() {
            tracing::error!(error = %error_chain(&self), code = code.as_str(), "request failed");
        }
        let message = match &self {
            ApiError::DatabaseUnavailable(_)
            | ApiError::StorageUnavailable(_)
            | ApiError::AuthUnavailable(_)
            | ApiError::NotRecorded(_) => {
                format!("{self}; please retry later")
            }
            other => other.to_string(),
        };
        let details = match &self {
            ApiError::InvalidTemplate(problems)
            | ApiError::InvalidMapping(problems)
            | ApiError::InvalidLayout(problems)
            | ApiError::InvalidCorrection(problems)
            | ApiError::InvalidDestination(problems)
            | ApiError::InvalidSource(problems) => Some(
                problems
                    .iter()
                    .map(|p| ProblemDetail {
                        pointer: p.pointer.clone(),
                        message: p.message.clone(),
                    })
                    .collect(),
            ),
            _ => None,
        };
        let body = ErrorBody {
            error: ErrorDetail {
                code,
                message,
                details,
            },
        };
        let mut response = (status, Json(body)).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(r#"Bearer realm="sheetrelay""#),
            );
        }
        if let ApiError::RateLimited(wait) = &self {
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(retry_after_secs(*wait)),
            );
        }
        response
    }
}

/// Whole seconds for `Retry-After`, rounded up and at least 1 (a `0` would invite a retry
/// that is refused again).
fn retry_after_secs(wait: std::time::Duration) -> u64 {
    wait.as_secs_f64().ceil().max(1.0) as u64
}

/// `outer: cause: root cause`, for logs.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}
