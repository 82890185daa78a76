//! The HTTP edge: what every request passes before a handler, so that no client can make the
//! server answer outside the contract or hold more than its share.
//!
//! - Request line and header size: checked here, below hyper's own (larger) limits, so the
//!   `414` and `431` answers carry the contract's JSON body; hyper's bare answers remain only for
//!   requests far past these limits (over 1,000 headers or ~400 KiB of them).
//! - `X-Request-Id`: a client's id is kept only when it is short and plain, else replaced, so
//!   logs and echoed headers never carry a client's arbitrary bytes.
//! - Standard security headers on every answer.
//! - A deadline on every request but uploads (multipart, and a resumable upload's `PATCH` and
//!   `GET`, which may record it) and exports, which stream for as long as data moves (their
//!   body has an idle timeout instead).
//! - The slow-header (header read) timeout lives in the connection builder (`serve`).

use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, ApiErrorCode};

/// Longest accepted request target (path and query).
pub const MAX_URI_BYTES: usize = 8 * 1024;
/// Most header bytes (names and values) in one request.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;
/// Most header fields in one request.
pub const MAX_HEADERS: usize = 100;
/// Longest client-chosen `X-Request-Id` kept.
const MAX_REQUEST_ID: usize = 64;

static X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// `414` and `431` with JSON bodies; drops a client `X-Request-Id` that is not plain and short.
/// The outermost layer, so an oversized target or header set never reaches the trace span or
/// the logs; its refusals therefore get the security headers and a request id here.
pub async fn limits(mut req: Request, next: Next) -> Response {
    if req.uri().to_string().len() > MAX_URI_BYTES {
        return refused_at_the_edge(ApiError::Refused {
            status: StatusCode::URI_TOO_LONG,
            code: ApiErrorCode::UriTooLong,
            message: format!("the request target is longer than {MAX_URI_BYTES} bytes"),
        });
    }
    let headers = req.headers();
    let header_bytes: usize = headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum();
    if headers.len() > MAX_HEADERS || header_bytes > MAX_HEADER_BYTES {
        return refused_at_the_edge(ApiError::Refused {
            status: StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            code: ApiErrorCode::HeadersTooLarge,
            message: format!(
                "the request has more than {MAX_HEADERS} headers or {MAX_HEADER_BYTES} bytes of them"
            ),
        });
    }
    if req
        .headers()
        .get(&X_REQUEST_ID)
        .is_some_and(|id| !plain_request_id(id))
    {
        req.headers_mut().remove(&X_REQUEST_ID);
    }
    next.run(req).await
}

/// 1–64 characters of letters, digits, `-`, `_`, `.` and `:`.
fn plain_request_id(id: &HeaderValue) -> bool {
    let bytes = id.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_REQUEST_ID
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

/// A refusal by [`limits`], which runs outside the layers that add these: with the security
/// headers and a fresh `X-Request-Id` like every other answer.
fn refused_at_the_edge(error: ApiError) -> Response {
    let mut response = error.into_response();
    add_security_headers(response.headers_mut());
    if let Ok(id) = HeaderValue::from_str(&uuid::Uuid::new_v4().to_string()) {
        response.headers_mut().insert(&X_REQUEST_ID, id);
    }
    response
}

/// The headers every answer carries. API answers are JSON that no browser should render, sniff,
/// frame or cache; the page sets its own `Content-Security-Policy`, which this leaves alone.
pub async fn security_headers(req: Request, next: Next) -> Response {
    let mut response = next.run(req).await;
    add_security_headers(response.headers_mut());
    response
}

fn add_security_headers(headers: &mut axum::http::HeaderMap) {
    let set = |h: &mut axum::http::HeaderMap, name: HeaderName, value: &'static str| {
        h.entry(name).or_insert(HeaderValue::from_static(value));
    };
    set(headers, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(headers, header::X_FRAME_OPTIONS, "DENY");
    set(headers, header::REFERRER_POLICY, "no-referrer");
    set(
        headers,
        header::CONTENT_SECURITY_POLICY,
        "default-src 'none'; frame-ancestors 'none'",
    );
    set(
        headers,
        header::STRICT_TRANSPORT_SECURITY,
        "max-age=31536000; includeSubDomains",
    );
    set(headers, header::CACHE_CONTROL, "no-store");
}

/// CORS for the origins of `HTTP_CORS_ALLOWED_ORIGINS` ([`cors_layer`]), for requests that
/// come from a browser page of another origin (they carry `Origin`). Only a real preflight (an
/// `OPTIONS` with `Access-Control-Request-Method`) is answered here: tower-http's layer would
/// answer every `OPTIONS`, the tus discovery request among them.
pub async fn cors(
    State(layer): State<tower_http::cors::CorsLayer>,
    req: Request,
    next: Next,
) -> Response {
    use tower::{Layer as _, ServiceExt as _};

    let cross_origin = req.headers().contains_key(header::ORIGIN);
    let preflight = req.method() == Method::OPTIONS
        && req
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    if !cross_origin || (req.method() == Method::OPTIONS && !preflight) {
        return next.run(req).await;
    }
    match layer.layer(next).oneshot(req).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// The import session token of a request, if it carries one.
fn session_token(parts: &axum::http::request::Parts) -> Option<String> {
    crate::auth::bearer(&parts.headers)
        .filter(|token| crate::auth::session::looks_like_token(token))
        .map(str::to_owned)
}

/// Whether an import session lets pages of `origin` call: the token's own session, or (for a
/// preflight, which has no token) any live one. A request without a session's token is not a
/// session's, whatever its origin. A database error allows nothing.
async fn session_allows(db: &sqlx::PgPool, origin: &HeaderValue, token: Option<&str>) -> bool {
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    let found = match token {
        Some(token) => shared::db::sessions::find_live(db, &crate::auth::api_key::hash(token))
            .await
            .map(|s| s.is_some_and(|s| s.allowed_origins.iter().any(|o| o == origin))),
        None => shared::db::sessions::origin_allowed(db, origin).await,
    };
    found.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "could not read import sessions for CORS");
        false
    })
}

/// The CORS rules: a browser page of one of `origins` may call any route with its credentials
/// header and the tus request headers, and read the tus answer headers (a tus client reads
/// `Location`, `Upload-Offset`, `Upload-Length`…). Preflights are answered before
/// authentication (a browser sends them without credentials). With no origins, no answer
/// carries `Access-Control-Allow-Origin`, so a browser refuses every cross-origin call.
///
/// Import sessions add their own origins (contract v1.3): a request carrying a session's token
/// from one of the session's `allowed_origins` is allowed; a preflight, which carries no token,
/// from an origin some live session allows. Any other origin gets no CORS header.
pub fn cors_layer(origins: &[String], db: sqlx::PgPool) -> tower_http::cors::CorsLayer {
    use tower_http::cors::{AllowOrigin, CorsLayer};

    use crate::routes::resumable::protocol;

    let origins: Vec<HeaderValue> = origins
        .iter()
        .filter_map(|o| match HeaderValue::from_str(o.trim()) {
            Ok(v) => Some(v),
            Err(_) => {
                tracing::warn!(origin = %o, "ignored an HTTP_CORS_ALLOWED_ORIGINS entry that is not a header value");
                None
            }
        })
        .collect();
    let names = |list: &[&'static str]| -> Vec<HeaderName> {
        list.iter().map(|n| HeaderName::from_static(n)).collect()
    };
    let mut allowed = names(&protocol::REQUEST_HEADERS);
    allowed.extend([
        header::AUTHORIZATION,
        header::CONTENT_TYPE,
        X_REQUEST_ID.clone(),
    ]);
    let mut exposed = names(&protocol::RESPONSE_HEADERS);
    exposed.extend([header::RETRY_AFTER, X_REQUEST_ID.clone()]);
    CorsLayer::new()
        .allow_origin(AllowOrigin::async_predicate(move |origin, parts| {
            let listed = origins.contains(&origin);
            let token = session_token(parts);
            let preflight = parts.method == Method::OPTIONS
                && parts
                    .headers
                    .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
            async move {
                listed
                    || ((token.is_some() || preflight)
                        && session_allows(&db, &origin, token.as_deref()).await)
            }
        }))
        .allow_methods([
            Method::GET,
            Method::HEAD,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
            Method::OPTIONS,
        ])
        .allow_headers(allowed)
        .expose_headers(exposed)
        .max_age(Duration::from_secs(3600))
}

/// Answers `503 request_timeout` when a request (other than an upload or export) takes longer
/// than the deadline.
pub async fn deadline(State(limit): State<Duration>, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let streams = (req.method() == Method::POST && path == "/api/v1/files")
        // A resumable upload's last PATCH (or a GET that finishes it) reads the whole blob back.
        || (matches!(*req.method(), Method::PATCH | Method::GET)
            && path.starts_with("/api/v1/uploads/"))
        || path.ends_with("/rows/export");
    if streams {
        return next.run(req).await;
    }
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(response) => response,
        Err(_) => ApiError::Timeout(limit).into_response(),
    }
}

/// The JSON `405` of a route that exists with other methods.
pub async fn method_not_allowed(method: Method) -> ApiError {
    ApiError::MethodNotAllowed(format!("{method} is not allowed here"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_short_plain_request_ids_are_kept() {
        let ok = |s: &str| plain_request_id(&HeaderValue::from_str(s).expect("header value"));
        assert!(ok("0190f1c2-7a4e-7cc3-9a1b-2f5e8d7c6b5a"));
        assert!(ok("req:42.a_b"));
        assert!(!ok(""));
        assert!(!ok("has space"));
        assert!(!ok("<script>"));
        assert!(!ok(&"a".repeat(65)));
    }
}
