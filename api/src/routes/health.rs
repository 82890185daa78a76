//! Liveness and readiness probes (public port).

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use serde::Serialize;

use crate::state::AppState;

/// How long readiness waits for each dependency before calling it down.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Readiness {
    pub postgres: bool,
    pub blob_storage: bool,
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
    let ready = Readiness {
        postgres: matches!(pg, Ok(Ok(_))),
        blob_storage: matches!(blob, Ok(Ok(_))),
    };
    let status = if ready.postgres && ready.blob_storage {
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
