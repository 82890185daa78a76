//! The sheetrelay upload API: accepts files over HTTP, streams them into Blob Storage and records
//! each with its parse task and outbox message in one Postgres transaction. It never talks to the
//! queue: the worker's relay does. `main` is a thin wrapper over [`run`] so tests drive the real
//! server in-process through [`app`].

// Functions short enough to read at once (with the workspace's lints, from Cargo.toml).
#![warn(clippy::too_many_lines)]

pub mod auth;
pub mod body_guard;
pub mod compiler;
pub mod config;
pub mod corrections;
pub mod digests;
pub mod edge;
pub mod error;
pub mod event_hub;
pub mod extract;
pub mod keys_cli;
pub mod lingering;
pub mod metered_field;
pub mod metrics;
pub mod openapi;
pub mod routes;
pub mod sheets;
pub mod state;
pub mod tenants_cli;
pub mod uploads;
pub mod views;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::extract::DefaultBodyLimit;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

pub use config::Config;
use state::AppState;

/// The router with every route of the contract. `/api/v1` answers only with credentials; the
/// probes, the OpenAPI document and the page are public.
pub fn app(state: AppState) -> Router {
    // Install the recorder before the first request records anything.
    metrics::handle();
    // The upload enforces its own limit on the file part, precisely and with our error body;
    // this outer bound only stops a body that is far past it (multipart framing is small).
    let body_limit =
        usize::try_from(state.max_upload_bytes.saturating_add(1024 * 1024)).unwrap_or(usize::MAX);
    // Layers run outside in: the credentials first, then what a session's token and a
    // source's events token may do.
    let api = routes::api()
        .route_layer(axum::middleware::from_fn(auth::source_events::check))
        .route_layer(axum::middleware::from_fn_with_state(
            state.db.clone(),
            auth::session_scope::check,
        ))
        .route_layer(axum::middleware::from_fn_with_state(
            state.auth.clone(),
            auth::require,
        ));
    let (router, _) = routes::public().merge(api).split_for_parts();
    let request_timeout = state.http.request_timeout;
    let cors_origins = state.http.cors_allowed_origins.clone();
    router
        .fallback(|| async { error::ApiError::NotFound("no such route".into()) })
        .method_not_allowed_fallback(edge::method_not_allowed)
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(axum::middleware::from_fn_with_state(
            request_timeout,
            edge::deadline,
        ))
        .layer(axum::middleware::from_fn(metrics::track))
        .layer(axum::middleware::from_fn(
            routes::resumable::protocol::tus_resumable,
        ))
        .layer(axum::middleware::from_fn(edge::security_headers))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(
            TraceLayer::new_for_http().make_span_with(|req: &axum::http::Request<_>| {
                let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
                let span = tracing::info_span!("request",
                    otel.name = %req.method(), otel.kind = "server",
                    method = %req.method(), uri = %req.uri(),
                    request_id = header("x-request-id").unwrap_or_default(),
                    tenant_id = tracing::field::Empty);
                // A client that traces its own calls gets our spans in its trace.
                shared::telemetry::propagation::continue_trace(&span, header("traceparent"));
                span
            }),
        )
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        .layer(axum::middleware::from_fn_with_state(
            edge::cors_layer(&cors_origins, state.db.clone()),
            edge::cors,
        ))
        .layer(axum::middleware::from_fn(edge::limits))
        .layer(axum::middleware::from_fn(lingering::close_unread))
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
    let auth =
        auth::Authenticator::new(db.clone(), &cfg.entra).context("invalid Entra ID settings")?;
    Ok(AppState {
        events: event_hub::EventHub::new(db.clone(), cfg.events.clone()),
        db,
        blobs,
        auth: Arc::new(auth),
        max_upload_bytes: cfg.max_upload_bytes,
        http: Arc::new(cfg.http.clone()),
        webhooks: Arc::new(cfg.webhooks.clone()),
        limits: Arc::new(cfg.limits.clone()),
        resumable: Arc::new(cfg.resumable.clone()),
        digests: Arc::default(),
        compiler: compiler::Compiler::default(),
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
/// to `grace`. Connections are served by hyper directly (not `axum::serve`) because that is where
/// the header-read timeout is set: without it a client trickling its headers holds a connection
/// for as long as it likes.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: CancellationToken,
    grace: Duration,
) -> anyhow::Result<()> {
    let header_timeout = state.http.header_timeout;
    // Event streams never end by themselves: they end when the server stops taking requests.
    let streams = state.events.closed().clone();
    let service = TowerToHyperService::new(app(state));
    // HTTP/1.1 only: hyper's HTTP/2 server has no header-read timeout, so a cleartext HTTP/2
    // client could hold a connection open with a request it never finishes. TLS and HTTP/2
    // towards clients are the ingress's job (Container Apps, an Ingress controller).
    let mut builder =
        hyper_util::server::conn::auto::Builder::new(TokioExecutor::new()).http1_only();
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        // Above the edge's own limits, so those answer with JSON (see `edge`).
        .max_headers(10 * edge::MAX_HEADERS);
    let graceful = GracefulShutdown::new();
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Out of file descriptors and the like: keep serving the open connections.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = shutdown.cancelled() => break,
        };
        // Not `serve_connection_with_upgrades`: that one sniffs for HTTP/2 whatever the builder
        // allows (hyper-util 0.1.21), and nothing here upgrades a connection.
        let conn = builder
            .serve_connection(TokioIo::new(stream), service.clone())
            .into_owned();
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    streams.cancel();
    if tokio::time::timeout(grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            ?grace,
            "in-flight requests did not finish in the grace period"
        );
    }
    Ok(())
}

/// Serves Prometheus `/metrics` on its own listener, so the public port never exposes them
/// ([`shared::metrics::serve`], as the worker does).
pub async fn serve_metrics(
    listener: TcpListener,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    shared::metrics::serve(listener, shutdown).await
}

/// Everything `api serve` does: migrate, connect, listen, serve until the token is cancelled.
pub async fn run(cfg: Config, shutdown: CancellationToken) -> anyhow::Result<()> {
    migrate(&cfg).await?;
    let state = state(&cfg).await?;
    let listener = TcpListener::bind(cfg.listen_addr)
        .await
        .with_context(|| format!("cannot listen on {}", cfg.listen_addr))?;
    let metrics =
        shared::metrics::listener::bind(cfg.metrics_addr, config::DEFAULT_METRICS_ADDR).await?;
    let metrics_addr = metrics.local_addr().context("metrics listener address")?;
    tracing::info!(addr = %cfg.listen_addr, %metrics_addr, "api listening");
    let metrics = tokio::spawn(serve_metrics(metrics, shutdown.clone()));
    let served = serve(listener, state, shutdown.clone(), cfg.shutdown_grace).await;
    shutdown.cancel();
    metrics.await.context("metrics server panicked")??;
    served
}
