//! Entra ID access tokens: RS256 JWTs signed by a key from the tenant's JWKS (found through OIDC
//! discovery), checked for audience, issuer (per tenant, including multi-tenant apps), expiry
//! with a small skew, and a required app role or delegated scope. `tid` becomes the principal's
//! tenant and `oid` its subject.
//!
//! Keys are cached and fetched again when a token names a key id the cache does not hold (Entra
//! rotates its signing keys), at most once per `ENTRA_JWKS_MIN_REFRESH`, so a stream of tokens
//! with made-up key ids cannot turn into a stream of requests to Entra. The cache is also
//! refreshed once it is older than a day. A fetch that fails (Entra unreachable, a 5xx) is not
//! the token's fault, so it is [`EntraError::KeysUnavailable`] rather than a refusal; it counts
//! as a fetch too, and stands as the answer until the next fetch is allowed, so an outage does
//! not turn every request into a request to Entra either.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use tokio::sync::{Mutex, RwLock};

use super::Principal;
use crate::config::EntraConfig;

/// The JWKS is fetched again after this long even when every key id is known.
const MAX_KEY_AGE: Duration = Duration::from_secs(24 * 60 * 60);
/// Bound on the discovery and JWKS requests.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a token was not accepted: its own fault (401), or keys out of reach (503, because the
/// token may be perfectly good and the client should keep it and retry rather than discard it).
#[derive(Debug, thiserror::Error)]
pub enum EntraError {
    #[error(transparent)]
    Token(#[from] TokenError),
    #[error(transparent)]
    KeysUnavailable(#[from] KeysUnavailable),
}

/// Why a token was refused. Logged; the caller is told only [`TokenError::public_reason`].
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("malformed token: {0}")]
    Malformed(jsonwebtoken::errors::Error),
    #[error("token signed with an unsupported algorithm {0:?}")]
    Algorithm(Algorithm),
    #[error("token has no key id")]
    NoKeyId,
    #[error("token signed by an unknown key {0:?}")]
    UnknownKey(String),
    #[error("token has expired")]
    Expired,
    #[error("invalid token: {0}")]
    Invalid(jsonwebtoken::errors::Error),
    #[error("token issuer {iss:?} is not the issuer of tenant {tid:?}")]
    Issuer { iss: String, tid: String },
    #[error("token tenant {0:?} is not allowed")]
    Tenant(String),
    #[error("token carries neither the role nor the scope {0:?}")]
    Role(String),
}

impl TokenError {
    /// What the caller is told: that its token has expired, which it can act on (get a new
    /// one), or that it is not valid. Which other check failed would tell a prober what this
    /// server accepts (audiences, tenants, roles), so that goes to the log only.
    pub fn public_reason(&self) -> &'static str {
        match self {
            TokenError::Expired => "the access token has expired",
            _ => "the access token is not valid",
        }
    }

    /// An expired signature apart, so the caller can be told; the rest is [`TokenError::Invalid`].
    fn from_validation(err: jsonwebtoken::errors::Error) -> Self {
        match err.kind() {
            ErrorKind::ExpiredSignature => TokenError::Expired,
            _ => TokenError::Invalid(err),
        }
    }
}

/// Entra's discovery document or key set could not be fetched: now, or by the last fetch, less
/// than `ENTRA_JWKS_MIN_REFRESH` ago. Cloned into every answer until the next fetch.
#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot fetch Entra ID signing keys: GET {url}")]
pub struct KeysUnavailable {
    url: String,
    #[source]
    source: Arc<reqwest::Error>,
}

#[derive(Debug, Deserialize)]
struct Claims {
    iss: String,
    tid: String,
    oid: String,
    #[serde(default)]
    roles: Vec<String>,
    #[serde(default)]
    scp: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Discovery {
    issuer: String,
    jwks_uri: String,
}

struct Keys {
    by_kid: HashMap<String, DecodingKey>,
    /// The discovery document's issuer; `{tenantid}` in it stands for the token's tenant.
    issuer: String,
    fetched: Instant,
}

/// When the keys were last fetched, and how that went.
struct LastFetch {
    at: Instant,
    outcome: Result<(), KeysUnavailable>,
}

/// Validates Entra access tokens against the configured tenant's keys.
pub struct EntraValidator {
    cfg: EntraConfig,
    http: reqwest::Client,
    keys: RwLock<Option<Keys>>,
    /// Serialises fetches and remembers the last one.
    last_fetch: Mutex<Option<LastFetch>>,
}

impl EntraValidator {
    pub fn new(cfg: EntraConfig) -> anyhow::Result<Self> {
        // `consumers` names personal Microsoft accounts, which share one tenant: there is no
        // organisation to isolate by, and treating it as multi-tenant would admit any tenant's
        // v1.0-issuer tokens. Refused rather than guessed at.
        anyhow::ensure!(
            cfg.tenant_id.as_deref() != Some("consumers"),
            "ENTRA_TENANT_ID=consumers is not supported: give a tenant id, `organizations` or `common`"
        );
        let http = reqwest::Client::builder().timeout(FETCH_TIMEOUT).build()?;
        Ok(Self {
            cfg,
            http,
            keys: RwLock::new(None),
            last_fetch: Mutex::new(None),
        })
    }

    /// The principal of a valid token.
    pub async fn validate(&self, token: &str) -> Result<Principal, EntraError> {
        let header = jsonwebtoken::decode_header(token).map_err(TokenError::Malformed)?;
        if header.alg != Algorithm::RS256 {
            return Err(TokenError::Algorithm(header.alg).into());
        }
        let kid = header.kid.ok_or(TokenError::NoKeyId)?;
        let (key, issuer) = self.key(&kid).await?;

        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_audience(&self.cfg.audience);
        validation.set_required_spec_claims(&["exp", "aud", "iss"]);
        validation.leeway = self.cfg.clock_skew.as_secs();
        validation.validate_nbf = true;
        let claims = jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map_err(TokenError::from_validation)?
            .claims;

        self.check_issuer(&claims, &issuer)?;
        let role = &self.cfg.required_role;
        let has_scope = claims
            .scp
            .as_deref()
            .is_some_and(|s| s.split(' ').any(|s| s == role));
        if !claims.roles.iter().any(|r| r == role) && !has_scope {
            return Err(TokenError::Role(role.clone()).into());
        }
        Principal::new(claims.tid.clone(), format!("entra:{}", claims.oid))
            .ok_or_else(|| TokenError::Tenant(claims.tid).into())
    }

    /// The issuer must be the token's own tenant's (v2.0 form from discovery, or the v1.0
    /// `sts.windows.net` form), and the tenant must be the configured one or, for a multi-tenant
    /// app, an allowed one.
    fn check_issuer(&self, claims: &Claims, issuer: &str) -> Result<(), TokenError> {
        let tid = &claims.tid;
        let expected_v2 = issuer.replace("{tenantid}", tid);
        let expected_v1 = format!("https://sts.windows.net/{tid}/");
        if claims.iss != expected_v2 && claims.iss != expected_v1 {
            return Err(TokenError::Issuer {
                iss: claims.iss.clone(),
                tid: tid.clone(),
            });
        }
        let allowed = if self.cfg.multi_tenant() {
            self.cfg.allowed_tenants.is_empty() || self.cfg.allowed_tenants.contains(tid)
        } else {
            self.cfg.tenant_id.as_deref() == Some(tid.as_str())
        };
        if allowed {
            Ok(())
        } else {
            Err(TokenError::Tenant(tid.clone()))
        }
    }

    /// The key `kid` and the issuer template, fetching the keys again when `kid` is unknown.
    async fn key(&self, kid: &str) -> Result<(DecodingKey, String), EntraError> {
        if let Some(found) = self.cached(kid).await {
            return Ok(found);
        }
        {
            let mut last = self.last_fetch.lock().await;
            // Another request may have fetched while we waited for the lock.
            if let Some(found) = self.cached(kid).await {
                return Ok(found);
            }
            self.refresh(&mut last).await?;
        }
        self.cached(kid)
            .await
            .ok_or_else(|| TokenError::UnknownKey(kid.to_owned()).into())
    }

    /// Fetches the keys, unless the last fetch was less than `jwks_min_refresh` ago: then its
    /// outcome stands (the keys it got, or its failure).
    async fn refresh(&self, last: &mut Option<LastFetch>) -> Result<(), KeysUnavailable> {
        if let Some(recent) = last
            .as_ref()
            .filter(|l| l.at.elapsed() < self.cfg.jwks_min_refresh)
        {
            return recent.outcome.clone();
        }
        let at = Instant::now();
        let fetched = self.fetch().await;
        *last = Some(LastFetch {
            at,
            outcome: fetched.as_ref().map(|_| ()).map_err(Clone::clone),
        });
        let keys = fetched?;
        tracing::info!(keys = keys.by_kid.len(), "Entra signing keys fetched");
        *self.keys.write().await = Some(keys);
        Ok(())
    }

    async fn cached(&self, kid: &str) -> Option<(DecodingKey, String)> {
        let keys = self.keys.read().await;
        let keys = keys.as_ref()?;
        if keys.fetched.elapsed() > MAX_KEY_AGE {
            return None;
        }
        let key = keys.by_kid.get(kid)?.clone();
        Some((key, keys.issuer.clone()))
    }

    async fn fetch(&self) -> Result<Keys, KeysUnavailable> {
        let tenant = self.cfg.tenant_id.as_deref().unwrap_or("common");
        let url = format!(
            "{}/{tenant}/v2.0/.well-known/openid-configuration",
            self.cfg.authority.trim_end_matches('/')
        );
        let discovery: Discovery = self.get_json(&url).await?;
        let set: JwkSet = self.get_json(&discovery.jwks_uri).await?;
        let by_kid = set
            .keys
            .iter()
            .filter_map(|jwk| {
                let kid = jwk.common.key_id.clone()?;
                DecodingKey::from_jwk(jwk).ok().map(|key| (kid, key))
            })
            .collect();
        Ok(Keys {
            by_kid,
            issuer: discovery.issuer,
            fetched: Instant::now(),
        })
    }

    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
    ) -> Result<T, KeysUnavailable> {
        let fail = |e: reqwest::Error| KeysUnavailable {
            url: url.to_owned(),
            source: Arc::new(e),
        };
        self.http
            .get(url)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(fail)?
            .json()
            .await
            .map_err(fail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_consumers_tenant_is_refused_at_start() {
        let cfg = |tenant: &str| EntraConfig {
            tenant_id: Some(tenant.to_owned()),
            audience: vec!["api://sheetrelay".to_owned()],
            ..EntraConfig::disabled()
        };
        let err = EntraValidator::new(cfg("consumers"))
            .err()
            .expect("refused");
        assert!(err.to_string().contains("consumers"), "{err}");
        assert!(EntraValidator::new(cfg("organizations")).is_ok());
    }
}
