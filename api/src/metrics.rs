//! The api's Prometheus metrics: a middleware that counts and times every request by its route
//! template and method (never the raw path or an invented method, which would grow the label set
//! without bound). The recorder, its histogram buckets and the `/metrics` listener are
//! [`shared::metrics`]'s, the same as the worker's.

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use metrics_exporter_prometheus::PrometheusHandle;
use shared::metrics::catalogue;

/// The process-wide recorder's handle ([`shared::metrics::handle`]; tests start many apps in one
/// process and share it).
pub fn handle() -> &'static PrometheusHandle {
    shared::metrics::handle()
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
    metrics::counter!(catalogue::HTTP_REQUESTS, &labels).increment(1);
    metrics::histogram!(catalogue::HTTP_REQUEST_DURATION, &labels)
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
