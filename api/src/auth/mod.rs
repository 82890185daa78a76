//! Who is calling. Every `/api/v1` request carries `Authorization: Bearer <token>`, where the
//! token is an API key (`srk_…`) or an Entra ID access token; both resolve to a [`Principal`]
//! (tenant + subject), which the [`require`] middleware puts in the request's extensions for the
//! handlers. Anything else is a `401 unauthorized` with `WWW-Authenticate: Bearer`, whose message
//! (RFC 6750's error description) says only what the caller can act on: no bearer token, an
//! unknown or revoked API key (one message for both, so no answer tells whether a key exists),
//! an expired access token, or an invalid one. Which check an Entra token failed goes to the
//! log only. When Entra's signing keys cannot be fetched the token is not at fault: that is a
//! `503 auth_unavailable`, so the client keeps its token and retries.

pub mod api_key;
pub mod entra;
pub mod session;
pub mod session_scope;
pub mod source_events;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use rand::RngCore as _;
use shared::db;
use sqlx::PgPool;

use crate::config::EntraConfig;
use crate::error::ApiError;
use entra::{EntraError, EntraValidator};

/// The tenant of keys created without `--tenant`, and of files uploaded before tenants existed.
pub const DEFAULT_TENANT: &str = "default";

/// An authenticated caller: every file it uploads belongs to `tenant_id`, and it sees only that
/// tenant's files; with an import session's token, only the session's own
/// ([`session_scope`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Principal {
    pub tenant_id: String,
    /// `key:<api key id>`, `entra:<object id>` or `session:<session id>`.
    pub subject: String,
    /// The import session whose token this is.
    pub session: Option<Arc<db::sessions::Session>>,
    /// The Blob source whose events token this is ([`source_events`]).
    pub source: Option<uuid::Uuid>,
}

impl Principal {
    /// `None` when `tenant_id` is not a valid tenant id (see [`valid_tenant_id`]).
    pub fn new(tenant_id: String, subject: String) -> Option<Self> {
        valid_tenant_id(&tenant_id).then_some(Self {
            tenant_id,
            subject,
            session: None,
            source: None,
        })
    }
}

/// 1–64 characters of `[A-Za-z0-9._-]`, starting with a letter or digit: a name such as
/// `default` or `acme`, or a GUID (Entra tenant ids). The schema checks the same.
pub fn valid_tenant_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && id.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Resolves bearer tokens to principals.
pub struct Authenticator {
    db: PgPool,
    entra: Option<EntraValidator>,
}

impl Authenticator {
    pub fn new(db: PgPool, entra: &EntraConfig) -> anyhow::Result<Self> {
        let entra = if entra.enabled() {
            Some(EntraValidator::new(entra.clone())?)
        } else {
            None
        };
        Ok(Self { db, entra })
    }

    /// The principal of `token`, `Unauthorized` when it is not a valid credential, or a 503
    /// when the key or Entra's signing keys cannot be looked up.
    pub async fn authenticate(&self, token: &str) -> Result<Principal, ApiError> {
        if session::looks_like_token(token) {
            let found = db::sessions::find_live(&self.db, &api_key::hash(token))
                .await?
                .ok_or(ApiError::Unauthorized(
                    "unknown, expired or deleted session token",
                ))?;
            return Ok(Principal {
                tenant_id: found.tenant_id.clone(),
                subject: format!("session:{}", found.id),
                session: Some(Arc::new(found)),
                source: None,
            });
        }
        if source_events::looks_like_token(token) {
            let (id, tenant_id) = db::sources::by_events_token(&self.db, &api_key::hash(token))
                .await?
                .ok_or(ApiError::Unauthorized(
                    "unknown or replaced source events token",
                ))?;
            return Ok(Principal {
                tenant_id,
                subject: format!("source:{id}"),
                session: None,
                source: Some(id),
            });
        }
        if api_key::looks_like_key(token) {
            let key = db::api_keys::find_active(&self.db, &api_key::hash(token))
                .await?
                .ok_or(ApiError::Unauthorized("unknown or revoked API key"))?;
            // The schema checks tenant ids as `valid_tenant_id` does: a bad one is our fault.
            return Principal::new(key.tenant_id, format!("key:{}", key.id)).ok_or_else(|| {
                ApiError::Internal(anyhow::anyhow!(
                    "API key {} has an invalid tenant id",
                    key.id
                ))
            });
        }
        let Some(entra) = &self.entra else {
            return Err(ApiError::Unauthorized(
                "not an API key, and Entra ID is not configured",
            ));
        };
        entra.validate(token).await.map_err(|e| match e {
            EntraError::Token(e) => {
                tracing::info!(error = %e, "Entra token refused");
                ApiError::Unauthorized(e.public_reason())
            }
            EntraError::KeysUnavailable(e) => ApiError::AuthUnavailable(Box::new(e)),
        })
    }
}

/// A new secret token: `prefix` and 43 base64url characters (256 random bits).
pub fn random_token(prefix: &str) -> String {
    let mut random = [0u8; 32];
    rand::rng().fill_bytes(&mut random);
    format!(
        "{prefix}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random)
    )
}

/// The bearer token of a request's headers, if they carry one.
pub(crate) fn bearer(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Middleware on every `/api/v1` route: no principal, no answer. It takes the authenticator
/// alone, not the whole `AppState`, which holds the authenticator.
pub async fn require(
    State(auth): State<Arc<Authenticator>>,
    mut req: Request,
    next: Next,
) -> Response {
    let Some(token) = bearer(req.headers()) else {
        return ApiError::Unauthorized("no bearer token").into_response();
    };
    match auth.authenticate(token).await {
        Ok(principal) => {
            tracing::Span::current().record("tenant_id", principal.tenant_id.as_str());
            req.extensions_mut().insert(principal);
            next.run(req).await
        }
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_ids_are_names_or_guids() {
        assert!(valid_tenant_id("default"));
        assert!(valid_tenant_id("72f988bf-86f1-41af-91ab-2d7cd011db47"));
        assert!(valid_tenant_id("acme.eu_1"));
        assert!(!valid_tenant_id(""));
        assert!(!valid_tenant_id("-x"));
        assert!(!valid_tenant_id("a b"));
        assert!(!valid_tenant_id(&"a".repeat(65)));
    }
}
