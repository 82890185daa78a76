//! The sheetrelay upload API: accepts files over HTTP, streams them into Blob Storage and records
//! each with its parse task and outbox message in one Postgres transaction. It never talks to the
//! queue: the worker's relay does. `main` is a thin wrapper over [`run`] so tests drive the real
//! server in-process through [`app`].

pub mod config;
pub mod error;
pub mod metrics;
pub mod openapi;
pub mod routes;
pub mod state;
pub mod upload;
pub mod views;

use std::future::IntoFuture as _;
use std::time::Duration;

use anyhow::Context as _;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

pub use config::Config;
use state::AppState;

/// The router with every route of the contract.
pub fn app(state: AppState) -> Router {
    // Install the recorder before the first request records anything.
    metrics::handle();
    // The upload enforces its own limit on the file part, precisely and with our error body;
    // this outer bound only stops a body that is far past it (multipart framing is small).
    let body_limit =
        usize::try_from(state.max_upload_bytes.saturating_add(1024 * 1024)).unwrap_or(usize::MAX);
    Router::new()
        .route("/api/v1/files", post(routes::files::upload))
        .route(
            "/api/v1/files/{source_file_id}",
            get(routes::files::get_file),
        )
        .route(
            "/api/v1/files/{source_file_id}/rows",
            get(routes::rows::list_rows),
        )
        .route("/api/v1/tasks/{task_id}", get(routes::tasks::get_task))
        .route("/healthz", get(routes::health::healthz))
        .route("/readyz", get(routes::health::readyz))
        .route("/metrics", get(routes::health::metrics))
        .route("/openapi.json", get(openapi::openapi_json))
        .fallback(|| async { error::ApiError::NotFound("no such route".into()) })
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(axum::middleware::from_fn(metrics::track))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(
            TraceLayer::new_for_http().make_span_with(|req: &axum::http::Request<_>| {
                let request_id = req
                    .headers()
                    .get("x-request-id")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default();
                tracing::info_span!("request", method = %req.method(), uri = %req.uri(), request_id)
            }),
        )
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        .with_state(state)
}

/// Builds the shared state: the pool (lazy), the blob store, and the container if missing.
pub async fn state(cfg: &Config) -> anyhow::Result<AppState> {
    let db = cfg.database.pool().context("invalid DATABASE_URL")?;
    let blobs =
        shared::storage::BlobStore::new(&cfg.storage).context("invalid storage settings")?;
    blobs
        .ensure_container()
        .await
        .context("cannot create the blob container")?;
    Ok(AppState {
        db,
        blobs,
        max_upload_bytes: cfg.max_upload_bytes,
    })
}

/// Applies pending migrations (under sqlx's advisory lock, so concurrent starts are safe).
pub async fn migrate(cfg: &Config) -> anyhow::Result<()> {
    let pool = cfg.database.pool().context("invalid DATABASE_URL")?;
    shared::db::MIGRATOR
        .run(&pool)
        .await
        .context("database migration failed")?;
    Ok(())
}

/// Serves on `listener` until `shutdown` is cancelled, then lets in-flight requests finish for up
/// to `grace`.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: CancellationToken,
    grace: Duration,
) -> anyhow::Result<()> {
    let server = axum::serve(listener, app(state))
        .with_graceful_shutdown(shutdown.clone().cancelled_owned());
    let mut server = std::pin::pin!(server.into_future());
    tokio::select! {
        res = &mut server => return res.context("server error"),
        () = shutdown.cancelled() => {}
    }
    match tokio::time::timeout(grace, server).await {
        Ok(res) => res.context("server error"),
        Err(_) => {
            tracing::warn!(
                ?grace,
                "in-flight requests did not finish in the grace period"
            );
            Ok(())
        }
    }
}

/// Everything `api serve` does: migrate, connect, listen, serve until the token is cancelled.
pub async fn run(cfg: Config, shutdown: CancellationToken) -> anyhow::Result<()> {
    migrate(&cfg).await?;
    let state = state(&cfg).await?;
    let listener = TcpListener::bind(cfg.listen_addr)
        .await
        .with_context(|| format!("cannot listen on {}", cfg.listen_addr))?;
    tracing::info!(addr = %cfg.listen_addr, "api listening");
    serve(
        listener,
        state,
        shutdown,
        Duration::from_secs(cfg.shutdown_grace_secs),
    )
    .await
}
