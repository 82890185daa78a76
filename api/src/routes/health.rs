//! Liveness and readiness probes (public port).

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use serde::Serialize;

use crate::error::{ApiErrorCode, ErrorDetail};
use crate::state::AppState;

/// How long readiness waits for each dependency before calling it down.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Which dependency answers; when one does not, also the contract's `error` (every error status
/// carries `{"error": {code, message}}`), naming the first that is down.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Readiness {
    pub postgres: bool,
    pub blob_storage: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorDetail>,
}

/// 200 while the process runs.
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200)))]
pub async fn healthz() -> &'static str {
    "ok"
}

/// 200 when Postgres and Blob Storage answer, else 503.
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses((status = 200, body = Readiness), (status = 503, body = Readiness)))]
pub async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    let pg = tokio::time::timeout(PROBE_TIMEOUT, sqlx::query("SELECT 1").execute(&state.db));
    let blob = tokio::time::timeout(PROBE_TIMEOUT, state.blobs.ping());
    let (pg, blob) = tokio::join!(pg, blob);
    let (postgres, blob_storage) = (matches!(pg, Ok(Ok(_))), matches!(blob, Ok(Ok(_))));
    let down = |code: ApiErrorCode, what: &str| ErrorDetail {
        code,
        message: format!("not ready: {what} does not answer"),
        details: None,
    };
    let ready = Readiness {
        postgres,
        blob_storage,
        error: if !postgres {
            Some(down(ApiErrorCode::DatabaseUnavailable, "Postgres"))
        } else if !blob_storage {
            Some(down(ApiErrorCode::StorageUnavailable, "Blob Storage"))
        } else {
            None
        },
    };
    let status = if ready.error.is_none() {
        StatusCode::OK
    } else {
        tracing::warn!(
            postgres = ready.postgres,
            blob_storage = ready.blob_storage,
            "not ready"
        );
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(ready))
}
