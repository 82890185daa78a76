//! A Blob source's events token: `sre_` followed by 43 base64url characters (256 random bits),
//! stored as a SHA-256 like API keys and shown once (when the source is made, and each time a
//! new one is made). It is what an Event Grid subscription pushing to
//! `POST /api/v1/sources/{id}/events` holds instead of a tenant's API key: it may post events
//! for its own source and do nothing else, so a leaked subscription exposes no file.

use axum::extract::{MatchedPath, Request};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::Principal;
use crate::error::{ApiError, ApiErrorCode};

/// What every events token starts with.
pub const PREFIX: &str = "sre_";

/// The route the token opens, for its own source only.
const EVENTS_ROUTE: &str = "/api/v1/sources/{source_id}/events";

/// True when `token` has the shape of an events token.
pub fn looks_like_token(token: &str) -> bool {
    token.starts_with(PREFIX)
}

/// A new token.
pub fn new_token() -> String {
    super::random_token(PREFIX)
}

/// Middleware on every `/api/v1` route, after authentication: a source's events token passes
/// only to its own source's events route (`403 forbidden` elsewhere, another source's id
/// included).
pub async fn check(req: Request, next: Next) -> Response {
    let Some(source) = req.extensions().get::<Principal>().and_then(|p| p.source) else {
        return next.run(req).await;
    };
    let matched = req
        .extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str);
    let own = matched == Some(EVENTS_ROUTE)
        && matches!(*req.method(), Method::POST | Method::OPTIONS)
        && req.uri().path().split('/').nth(4) == Some(source.to_string().as_str());
    if own {
        return next.run(req).await;
    }
    ApiError::Refused {
        status: StatusCode::FORBIDDEN,
        code: ApiErrorCode::Forbidden,
        message: "a source's events token may only post events for its own source".into(),
    }
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_and_told_from_keys_and_sessions() {
        let (a, b) = (new_token(), new_token());
        assert_ne!(a, b);
        assert!(looks_like_token(&a) && a.len() == PREFIX.len() + 43);
        assert!(!super::super::api_key::looks_like_key(&a));
        assert!(!super::super::session::looks_like_token(&a));
    }
}
