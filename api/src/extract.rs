//! Extractors whose rejection is the API's own error: a malformed body, query or path id is a
//! JSON `400` (or `413`) with the contract's code, never axum's plain-text answer. Handlers take
//! `AppJson<T>`, `AppQuery<T>` and [`PathId`] instead of mapping each rejection by hand.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::Json;
use uuid::Uuid;

use crate::error::{ApiError, ApiErrorCode};

/// A JSON body: `400 invalid_body` when it does not read as `T`, `413 payload_too_large` past
/// the route's body limit.
pub struct AppJson<T>(pub T);

impl<T, S> FromRequest<S> for AppJson<T>
where
    Json<T>: FromRequest<S, Rejection = JsonRejection>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(value)) => Ok(AppJson(value)),
            Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => Err(ApiError::Refused {
                status: StatusCode::PAYLOAD_TOO_LARGE,
                code: ApiErrorCode::PayloadTooLarge,
                message: format!(
                    "the JSON body is larger than this endpoint takes: {}",
                    e.body_text()
                ),
            }),
            Err(e) => Err(ApiError::bad_request(
                ApiErrorCode::InvalidBody,
                e.body_text(),
            )),
        }
    }
}

/// A query string: `400 invalid_parameter` when it does not read as `T`.
pub struct AppQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for AppQuery<T>
where
    Query<T>: FromRequestParts<S, Rejection = QueryRejection>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Query(value) = Query::<T>::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::bad_request(ApiErrorCode::InvalidParameter, e.body_text()))?;
        Ok(AppQuery(value))
    }
}

/// The `{source_file_id}` or `{task_id}` of a path; anything but a UUID is a JSON `400`.
pub struct PathId(pub Uuid);

impl<S: Send + Sync> FromRequestParts<S> for PathId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Path(id) = Path::<Uuid>::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::bad_request(ApiErrorCode::InvalidParameter, e.body_text()))?;
        Ok(PathId(id))
    }
}
