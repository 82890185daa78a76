//! Entra ID access tokens against a local OIDC discovery + JWKS server whose RSA keys the tests
//! generate, and which counts the requests it gets: what a token must be ([`tokens`]),
//! multi-tenant apps ([`tenants`]), and the key cache: its fetch limit, key rotation, and a
//! provider that cannot be reached or fails ([`keys`]). Each api is configured with the
//! `ENTRA_…` variables a deployment sets.

mod keys;
mod tenants;
mod tokens;

use std::ffi::OsStr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use api::config::EntraConfig;
use aws_lc_rs::encoding::{AsDer, Pkcs8V1Der};
use aws_lc_rs::rsa::{KeyPair, KeySize};
use aws_lc_rs::signature::KeyPair as _;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use base64::Engine as _;
use clap::{Args as _, FromArgMatches as _};
use harness::app::{authenticated_client, TestApp};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

const TENANT: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";
const AUDIENCE: &str = "api://sheetrelay";
const ROLE: &str = "Files.ReadWrite";

/// An RSA signing key and its JWK.
struct SigningKey {
    kid: String,
    encoding: EncodingKey,
    jwk: Value,
}

impl SigningKey {
    fn generate(kid: &str) -> Self {
        let pair = KeyPair::generate(KeySize::Rsa2048).expect("generate an RSA key");
        let der: Pkcs8V1Der<'static> = pair.as_der().expect("PKCS#8");
        let b64 = base64::engine::general_purpose::STANDARD.encode(der.as_ref());
        let pem = format!("-----BEGIN PRIVATE KEY-----\n{b64}\n-----END PRIVATE KEY-----\n");
        let url = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        let public = pair.public_key();
        let jwk = json!({
            "kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid,
            "n": url(public.modulus().big_endian_without_leading_zero()),
            "e": url(public.exponent().big_endian_without_leading_zero()),
        });
        Self {
            kid: kid.to_owned(),
            encoding: EncodingKey::from_rsa_pem(pem.as_bytes()).expect("PEM key"),
            jwk,
        }
    }

    fn sign(&self, claims: &Value) -> String {
        self.sign_as(&self.kid, claims)
    }

    /// Signed by this key but naming key id `kid`: a token whose key the provider may not know,
    /// without the cost of generating an RSA key for each.
    fn sign_as(&self, kid: &str, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("sign")
    }
}

/// The identity provider: discovery at `/{tenant}/v2.0/.well-known/openid-configuration` (for
/// `organizations` and `common` with the `{tenantid}` issuer template, as Entra's), keys at
/// `/keys`, which a test can replace (rotation) or fail (an outage: both answer 500). Counts the
/// requests it gets, failed ones included.
#[derive(Clone)]
struct Provider {
    base: String,
    keys: Arc<RwLock<Vec<Value>>>,
    outage: Arc<AtomicBool>,
    discovery_fetches: Arc<AtomicUsize>,
    jwks_fetches: Arc<AtomicUsize>,
}

impl Provider {
    async fn start() -> Provider {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let provider = Provider {
            base: format!("http://{}", listener.local_addr().expect("addr")),
            keys: Arc::default(),
            outage: Arc::default(),
            discovery_fetches: Arc::default(),
            jwks_fetches: Arc::default(),
        };
        let app = Router::new()
            .route(
                "/{tenant}/v2.0/.well-known/openid-configuration",
                get(discovery),
            )
            .route("/keys", get(jwks))
            .with_state(provider.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        provider
    }

    /// The v2.0 issuer of `tenant`.
    fn issuer(&self, tenant: &str) -> String {
        format!("{}/{tenant}/v2.0", self.base)
    }

    /// Serves exactly these keys from now on.
    fn publish(&self, keys: &[&SigningKey]) {
        *self.keys.write().expect("lock") = keys.iter().map(|k| k.jwk.clone()).collect();
    }

    fn set_outage(&self, down: bool) {
        self.outage.store(down, Ordering::SeqCst);
    }

    /// Discovery documents and key sets asked for so far.
    fn fetches(&self) -> (usize, usize) {
        (
            self.discovery_fetches.load(Ordering::SeqCst),
            self.jwks_fetches.load(Ordering::SeqCst),
        )
    }
}

async fn discovery(State(p): State<Provider>, Path(tenant): Path<String>) -> Response {
    p.discovery_fetches.fetch_add(1, Ordering::SeqCst);
    if p.outage.load(Ordering::SeqCst) {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    let issuer_tenant = match tenant.as_str() {
        "organizations" | "common" => "{tenantid}",
        tenant => tenant,
    };
    Json(json!({
        "issuer": p.issuer(issuer_tenant),
        "jwks_uri": format!("{}/keys", p.base),
    }))
    .into_response()
}

async fn jwks(State(p): State<Provider>) -> Response {
    p.jwks_fetches.fetch_add(1, Ordering::SeqCst);
    if p.outage.load(Ordering::SeqCst) {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    let keys = p.keys.read().expect("lock").clone();
    Json(json!({ "keys": keys })).into_response()
}

/// An api taking Entra tokens for [`AUDIENCE`] from `authority`, with the settings `vars`
/// (`ENTRA_TENANT_ID`, …) as a deployment gives them.
async fn spawn_app(authority: &str, vars: &[(&str, &str)]) -> TestApp {
    let mut all = vec![("ENTRA_AUDIENCE", AUDIENCE), ("ENTRA_AUTHORITY", authority)];
    all.extend_from_slice(vars);
    let entra = entra_config(&all);
    TestApp::spawn_with(|cfg| cfg.entra = entra).await
}

/// `EntraConfig` from environment variables, read by the api's own definitions of them: each
/// variable is given as its flag, since the environment is the whole test process's.
fn entra_config(vars: &[(&str, &str)]) -> EntraConfig {
    let command = EntraConfig::augment_args(clap::Command::new("api"));
    let flags: Vec<String> = vars
        .iter()
        .map(|(name, value)| {
            let arg = command
                .get_arguments()
                .find(|arg| arg.get_env() == Some(OsStr::new(name)))
                .unwrap_or_else(|| panic!("{name} is not an Entra setting"));
            format!("--{}={value}", arg.get_long().expect("a long flag"))
        })
        .collect();
    let matches = command
        .try_get_matches_from(std::iter::once("api".to_owned()).chain(flags))
        .expect("valid Entra settings");
    EntraConfig::from_arg_matches(&matches).expect("Entra settings")
}

/// A token's claims: issued by `authority` for [`TENANT`] and [`AUDIENCE`] with [`ROLE`], valid
/// for ten minutes, but for `overrides` (a null removes a claim).
fn claims(authority: &str, overrides: Value) -> Value {
    let now = jsonwebtoken::get_current_timestamp();
    let mut c = json!({
        "iss": format!("{authority}/{TENANT}/v2.0"),
        "aud": AUDIENCE,
        "tid": TENANT,
        "oid": "00000000-0000-0000-0000-0000000000aa",
        "roles": [ROLE],
        "iat": now, "nbf": now - 5, "exp": now + 600,
    });
    for (k, v) in overrides.as_object().expect("object") {
        if v.is_null() {
            c.as_object_mut().expect("object").remove(k);
        } else {
            c[k] = v.clone();
        }
    }
    c
}

/// `POST /api/v1/files` of a small CSV with `token`.
async fn upload(app: &TestApp, token: &str) -> reqwest::Response {
    let part = reqwest::multipart::Part::bytes(b"a\n1\n".to_vec()).file_name("a.csv");
    authenticated_client(token)
        .post(app.url("/api/v1/files"))
        .multipart(reqwest::multipart::Form::new().part("file", part))
        .send()
        .await
        .expect("upload")
}

/// `GET /api/v1/files` with `token`.
async fn list_files(app: &TestApp, token: &str) -> reqwest::Response {
    authenticated_client(token)
        .get(app.url("/api/v1/files"))
        .send()
        .await
        .expect("request")
}

async fn status_with(app: &TestApp, token: &str) -> StatusCode {
    list_files(app, token).await.status()
}

/// Sends a request with each of `tokens`, all at once, and asserts that every one is answered
/// `expected`.
async fn assert_all_at_once(app: &TestApp, tokens: &[String], expected: StatusCode) {
    let statuses =
        futures::future::join_all(tokens.iter().map(|token| status_with(app, token))).await;
    assert!(
        statuses.iter().all(|s| *s == expected),
        "expected {expected} for every one: {statuses:?}"
    );
}

/// The `error` object of an error answer with `status`.
async fn error_of(resp: reqwest::Response, status: StatusCode, what: &str) -> Value {
    assert_eq!(resp.status(), status, "{what}");
    let body: Value = resp.json().await.expect("a JSON error body");
    body["error"].clone()
}
