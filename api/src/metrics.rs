//! Prometheus metrics: one recorder per process, and a middleware that counts and times every
//! request by its route template and method (never the raw path or an invented method, which
//! would grow the label set without bound).

use std::sync::OnceLock;
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

/// The process-wide recorder's handle (installed on first use; tests start many apps in one
/// process and share it).
pub fn handle() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        PrometheusBuilder::new()
            .install_recorder()
            .unwrap_or_else(|_| PrometheusBuilder::new().build_recorder().handle())
    })
}

pub async fn track(req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "unmatched".to_owned());
    let method = method_label(req.method());
    let start = Instant::now();
    let response = next.run(req).await;
    let status = response.status().as_u16().to_string();
    let labels = [
        ("method", method.to_owned()),
        ("route", route),
        ("status", status),
    ];
    metrics::counter!("sheetrelay_http_requests_total", &labels).increment(1);
    metrics::histogram!("sheetrelay_http_request_duration_seconds", &labels)
        .record(start.elapsed().as_secs_f64());
    response
}

/// The standard methods by name; anything a client invents is `other`, so the label set stays
/// bounded whatever clients send.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PATCH => "PATCH",
        Method::TRACE => "TRACE",
        Method::CONNECT => "CONNECT",
        _ => "other",
    }
}
