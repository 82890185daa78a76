//! Entra ID access tokens against a local OIDC discovery + JWKS server whose RSA keys the test
//! generates: valid tokens map to their tenant, and expired, mis-addressed, mis-issued,
//! unknown-key, role-less, unsigned and algorithm-confused tokens are refused; a rotated key is
//! picked up without a restart.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use aws_lc_rs::encoding::{AsDer, Pkcs8V1Der};
use aws_lc_rs::rsa::{KeyPair, KeySize};
use aws_lc_rs::signature::KeyPair as _;
use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use base64::Engine as _;
use harness::app::{authenticated_client, TestApp};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::StatusCode;
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
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("sign")
    }
}

/// The identity provider: discovery at `/{tenant}/v2.0/.well-known/openid-configuration`, keys
/// at `/keys`, which the test can replace (rotation). Counts JWKS fetches.
#[derive(Clone)]
struct Provider {
    base: String,
    keys: Arc<RwLock<Vec<Value>>>,
}

async fn start_provider() -> Provider {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let provider = Provider {
        base,
        keys: Arc::new(RwLock::new(Vec::new())),
    };
    let app = Router::new()
        .route(
            "/{tenant}/v2.0/.well-known/openid-configuration",
            get(
                |State(p): State<Provider>,
                 axum::extract::Path(tenant): axum::extract::Path<String>| async move {
                    Json(json!({
                        "issuer": format!("{}/{tenant}/v2.0", p.base),
                        "jwks_uri": format!("{}/keys", p.base),
                    }))
                },
            ),
        )
        .route(
            "/keys",
            get(|State(p): State<Provider>| async move {
                let keys = p.keys.read().expect("lock").clone();
                Json(json!({ "keys": keys }))
            }),
        )
        .with_state(provider.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    provider
}

fn claims(provider: &Provider, overrides: Value) -> Value {
    let now = jsonwebtoken::get_current_timestamp();
    let mut c = json!({
        "iss": format!("{}/{TENANT}/v2.0", provider.base),
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

async fn status_with(app: &TestApp, token: &str) -> StatusCode {
    authenticated_client(token)
        .get(app.url("/api/v1/files"))
        .send()
        .await
        .expect("request")
        .status()
}

#[tokio::test]
async fn entra_tokens_are_validated_against_the_tenants_keys() {
    let provider = start_provider().await;
    let key1 = SigningKey::generate("k1");
    provider.keys.write().expect("lock").push(key1.jwk.clone());
    let authority = provider.base.clone();
    let app = TestApp::spawn_with(|cfg| {
        cfg.entra.tenant_id = Some(TENANT.into());
        cfg.entra.audience = vec![AUDIENCE.into()];
        cfg.entra.authority = authority;
        cfg.entra.jwks_min_refresh = Duration::ZERO;
    })
    .await;

    // A valid token: its files belong to its tenant.
    let token = key1.sign(&claims(&provider, json!({})));
    let client = authenticated_client(&token);
    let part = reqwest::multipart::Part::bytes(b"a\n1\n".to_vec()).file_name("a.csv");
    let resp = client
        .post(app.url("/api/v1/files"))
        .multipart(reqwest::multipart::Form::new().part("file", part))
        .send()
        .await
        .expect("upload");
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let (tenant, by): (String, String) =
        sqlx::query_as("SELECT tenant_id, uploaded_by FROM source_files")
            .fetch_one(&app.db)
            .await
            .expect("row");
    assert_eq!(tenant, TENANT);
    assert_eq!(by, "entra:00000000-0000-0000-0000-0000000000aa");
    // The default tenant's API key does not see it.
    let (_, listed) = app.get_json("/api/v1/files").await;
    assert_eq!(listed["files"], json!([]));

    // A delegated scope works as well as an app role.
    let scoped = key1.sign(&claims(
        &provider,
        json!({"roles": null, "scp": format!("User.Read {ROLE}")}),
    ));
    assert_eq!(status_with(&app, &scoped).await, StatusCode::OK);

    let now = jsonwebtoken::get_current_timestamp();
    let refused = [
        (
            "expired",
            key1.sign(&claims(
                &provider,
                json!({"exp": now - 3600, "nbf": now - 7200}),
            )),
        ),
        (
            "not yet valid",
            key1.sign(&claims(&provider, json!({"nbf": now + 3600}))),
        ),
        (
            "wrong audience",
            key1.sign(&claims(&provider, json!({"aud": "api://other"}))),
        ),
        (
            "no audience",
            key1.sign(&claims(&provider, json!({"aud": null}))),
        ),
        (
            "wrong issuer",
            key1.sign(&claims(
                &provider,
                json!({"iss": "https://evil.example/v2.0"}),
            )),
        ),
        (
            "another tenant",
            key1.sign(&claims(
                &provider,
                json!({
                    "tid": "11111111-1111-1111-1111-111111111111",
                    "iss": format!("{}/11111111-1111-1111-1111-111111111111/v2.0", provider.base),
                }),
            )),
        ),
        (
            "no role or scope",
            key1.sign(&claims(&provider, json!({"roles": ["Other.Role"]}))),
        ),
        (
            "unknown key",
            SigningKey::generate("ghost").sign(&claims(&provider, json!({}))),
        ),
        ("alg none", {
            let b64 =
                |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
            format!(
                "{}.{}.",
                b64(&json!({"alg": "none", "typ": "JWT", "kid": "k1"})),
                b64(&claims(&provider, json!({})))
            )
        }),
        ("HS256 with the public key as secret", {
            let mut header = Header::new(Algorithm::HS256);
            header.kid = Some("k1".into());
            let secret = key1.jwk["n"].as_str().expect("n").as_bytes().to_vec();
            jsonwebtoken::encode(
                &header,
                &claims(&provider, json!({})),
                &EncodingKey::from_secret(&secret),
            )
            .expect("sign")
        }),
        ("garbage", "eyJ.not.a-token".to_owned()),
    ];
    for (what, token) in &refused {
        assert_eq!(
            status_with(&app, token).await,
            StatusCode::UNAUTHORIZED,
            "{what}"
        );
    }

    // Rotation: the provider swaps k1 for k2; a k2 token works at once, k1 tokens stop.
    let key2 = SigningKey::generate("k2");
    *provider.keys.write().expect("lock") = vec![key2.jwk.clone()];
    assert_eq!(
        status_with(&app, &key2.sign(&claims(&provider, json!({})))).await,
        StatusCode::OK,
        "a token from the rotated key"
    );
    assert_eq!(
        status_with(&app, &token).await,
        StatusCode::UNAUTHORIZED,
        "the retired key"
    );
    // API keys keep working beside Entra.
    let (status, _) = app.get_json("/api/v1/files").await;
    assert_eq!(status, StatusCode::OK);
}
