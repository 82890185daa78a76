//! `/api/v1/sessions`: import sessions (contract v1.3). An application's back end, holding the
//! tenant's key, mints a short-lived token for one end user and one template; the end user's
//! browser then uploads and follows its own files with it, never holding the key. The token is
//! shown once, stored as a SHA-256 only, and named in logs and traces by the session's id.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use shared::db;
use shared::domain::metadata;
use uuid::Uuid;

use crate::auth::{api_key, session, Principal};
use crate::error::{ApiError, ApiErrorCode, ErrorBody};
use crate::extract::{AppJson, PathId};
use crate::state::AppState;

const MIN_TTL: Duration = Duration::from_secs(60);
const MAX_TTL: Duration = Duration::from_secs(3600);
const DEFAULT_TTL: Duration = Duration::from_secs(15 * 60);
const DEFAULT_MAX_UPLOADS: i32 = 10;

/// The end user a session is for, as the application knows them.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
pub struct EndUser {
    /// The application's id of the end user: 1 to 128 characters.
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

/// `POST /api/v1/sessions`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct CreateSession {
    /// The template every upload of the session is checked against.
    pub template: String,
    pub end_user: EndUser,
    /// A JSON object of at most 4 KiB, stored with every file of the session.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<serde_json::Value>,
    /// The exact origins (`scheme://host[:port]`) of the pages that may use the token: 1 to 10.
    pub allowed_origins: Vec<String>,
    /// 1 to 100 uploads; 10 when absent.
    pub max_uploads: Option<i32>,
    /// How long the token lives: `1m` to `1h`; `15m` when absent.
    pub ttl: Option<String>,
}

/// A session; `token` only in the answer that creates it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SessionView {
    pub id: Uuid,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    pub expires_at: DateTime<Utc>,
    pub template: String,
    #[schema(value_type = Object)]
    pub end_user: serde_json::Value,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<serde_json::Value>,
    pub allowed_origins: Vec<String>,
    pub max_uploads: i32,
    pub uploads_used: i32,
}

/// Mint an import session's token for one end user.
#[utoipa::path(
    post,
    path = "/api/v1/sessions",
    tag = "sessions",
    security(("api_key" = []), ("entra_id" = [])),
    request_body(content = CreateSession, content_type = "application/json"),
    responses(
        (status = 201, description = "Created; `token` is shown this once", body = SessionView),
        (status = 400, description = "A body that is not the request's JSON", body = ErrorBody),
        (status = 403, description = "`forbidden`: a session's token cannot make sessions", body = ErrorBody),
        (status = 422, description = "`unknown_template`, `invalid_metadata`, or `invalid_parameter` (end user, origins, max_uploads, ttl)", body = ErrorBody),
        (status = 429, description = "`too_many_sessions`: the tenant holds 10,000 live sessions", body = ErrorBody),
    )
)]
pub async fn create_session(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    AppJson(request): AppJson<CreateSession>,
) -> Result<Response, ApiError> {
    let checked = Checked::from(&request)?;
    super::templates::named(&state, &principal.tenant_id, &request.template).await?;
    let token = session::new_token();
    let end_user =
        serde_json::to_value(&request.end_user).map_err(|e| ApiError::Internal(e.into()))?;
    let expires_at = Utc::now()
        + chrono::Duration::from_std(checked.ttl).map_err(|e| ApiError::Internal(e.into()))?;
    let stored = db::sessions::insert(
        &state.db,
        &db::sessions::NewSession {
            id: Uuid::now_v7(),
            tenant_id: &principal.tenant_id,
            token_hash: &api_key::hash(&token),
            template_name: &request.template,
            end_user: &end_user,
            metadata: checked.metadata.as_ref(),
            allowed_origins: &request.allowed_origins,
            max_uploads: checked.max_uploads,
            expires_at,
        },
    )
    .await?
    .ok_or_else(|| ApiError::Refused {
        status: StatusCode::TOO_MANY_REQUESTS,
        code: ApiErrorCode::TooManySessions,
        message: format!(
            "the tenant holds {} live import sessions, as many as allowed; end some or let them \
             expire",
            db::sessions::MAX_LIVE_PER_TENANT
        ),
    })?;
    tracing::info!(session_id = %stored.id, tenant_id = %principal.tenant_id,
                   template = %stored.template_name, "import session created");
    let mut view = view(stored);
    view.token = Some(token);
    Ok((StatusCode::CREATED, Json(view)).into_response())
}

/// End an import session: its token is refused from now on.
#[utoipa::path(
    delete,
    path = "/api/v1/sessions/{session_id}",
    tag = "sessions",
    security(("api_key" = []), ("entra_id" = [])),
    params(("session_id" = Uuid, Path, description = "Session id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "The id is not a UUID", body = ErrorBody),
        (status = 403, description = "`forbidden`: a session's token cannot end sessions", body = ErrorBody),
        (status = 404, body = ErrorBody),
    )
)]
pub async fn delete_session(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    PathId(id): PathId,
) -> Result<StatusCode, ApiError> {
    if !db::sessions::delete(&state.db, &principal.tenant_id, id).await? {
        return Err(ApiError::NotFound(format!("no session {id}")));
    }
    tracing::info!(session_id = %id, tenant_id = %principal.tenant_id, "import session deleted");
    Ok(StatusCode::NO_CONTENT)
}

/// A request's values within the contract's bounds.
struct Checked {
    metadata: Option<serde_json::Value>,
    max_uploads: i32,
    ttl: Duration,
}

impl Checked {
    fn from(request: &CreateSession) -> Result<Self, ApiError> {
        let invalid =
            |message: String| ApiError::unprocessable(ApiErrorCode::InvalidParameter, message);
        let user = &request.end_user;
        if user.id.is_empty() || user.id.chars().count() > 128 {
            return Err(invalid("end_user.id must be 1 to 128 characters".into()));
        }
        let long = |v: &Option<String>| v.as_ref().is_some_and(|s| s.chars().count() > 256);
        if long(&user.name) || long(&user.email) {
            return Err(invalid(
                "end_user.name and email are at most 256 characters".into(),
            ));
        }
        if request.allowed_origins.is_empty() || request.allowed_origins.len() > 10 {
            return Err(invalid("allowed_origins lists 1 to 10 origins".into()));
        }
        if let Some(bad) = request.allowed_origins.iter().find(|o| !is_origin(o)) {
            return Err(invalid(format!(
                "{bad:?} is not an origin: scheme://host[:port], http or https, nothing more"
            )));
        }
        let max_uploads = request.max_uploads.unwrap_or(DEFAULT_MAX_UPLOADS);
        if !(1..=100).contains(&max_uploads) {
            return Err(invalid("max_uploads must be 1 to 100".into()));
        }
        let ttl = match request.ttl.as_deref() {
            None => DEFAULT_TTL,
            Some(text) => shared::config::parse_duration(text)
                .ok()
                .filter(|d| (MIN_TTL..=MAX_TTL).contains(d))
                .ok_or_else(|| invalid(format!("ttl {text:?} must be from 1m to 1h")))?,
        };
        let metadata = request
            .metadata
            .clone()
            .map(metadata::check)
            .transpose()
            .map_err(|why| ApiError::unprocessable(ApiErrorCode::InvalidMetadata, why))?;
        Ok(Self {
            metadata,
            max_uploads,
            ttl,
        })
    }
}

/// An exact origin as a browser sends it in `Origin`: `scheme://host[:port]`, nothing more.
fn is_origin(text: &str) -> bool {
    url::Url::parse(text).is_ok_and(|u| {
        matches!(u.scheme(), "http" | "https") && u.origin().ascii_serialization() == text
    })
}

fn view(s: db::sessions::Session) -> SessionView {
    SessionView {
        id: s.id,
        token: None,
        expires_at: s.expires_at,
        template: s.template_name,
        end_user: s.end_user,
        metadata: s.metadata,
        allowed_origins: s.allowed_origins,
        max_uploads: s.max_uploads,
        uploads_used: s.uploads_used,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_is_scheme_host_and_port_exactly() {
        assert!(is_origin("https://app.example.com"));
        assert!(is_origin("http://localhost:5173"));
        for bad in [
            "https://app.example.com/",
            "https://app.example.com/path",
            "app.example.com",
            "ftp://example.com",
            "https://example.com:443",
            "*",
        ] {
            assert!(!is_origin(bad), "{bad}");
        }
    }
}
