//! What a token must be: valid tokens map to their tenant, and expired, mis-addressed,
//! mis-issued, unknown-key, role-less, unsigned and algorithm-confused tokens are refused, told
//! only that they expired or are not valid; a rotated key is picked up without a restart.

use base64::Engine as _;

use super::*;

#[tokio::test]
async fn entra_tokens_are_validated_against_the_tenants_keys() {
    let provider = Provider::start().await;
    let key1 = SigningKey::generate("k1");
    provider.publish(&[&key1]);
    let app = spawn_app(
        &provider.base,
        &[
            ("ENTRA_TENANT_ID", TENANT),
            ("ENTRA_JWKS_MIN_REFRESH", "0s"),
        ],
    )
    .await;

    // A valid token: its files belong to its tenant.
    let token = key1.sign(&claims(&provider.base, json!({})));
    assert_eq!(upload(&app, &token).await.status(), StatusCode::ACCEPTED);
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
        &provider.base,
        json!({"roles": null, "scp": format!("User.Read {ROLE}")}),
    ));
    assert_eq!(status_with(&app, &scoped).await, StatusCode::OK);

    let now = jsonwebtoken::get_current_timestamp();
    let refused = [
        (
            "expired",
            key1.sign(&claims(
                &provider.base,
                json!({"exp": now - 3600, "nbf": now - 7200}),
            )),
        ),
        (
            "not yet valid",
            key1.sign(&claims(&provider.base, json!({"nbf": now + 3600}))),
        ),
        (
            "wrong audience",
            key1.sign(&claims(&provider.base, json!({"aud": "api://other"}))),
        ),
        (
            "no audience",
            key1.sign(&claims(&provider.base, json!({"aud": null}))),
        ),
        (
            "wrong issuer",
            key1.sign(&claims(
                &provider.base,
                json!({"iss": "https://evil.example/v2.0"}),
            )),
        ),
        (
            "another tenant",
            key1.sign(&claims(
                &provider.base,
                json!({
                    "tid": "11111111-1111-1111-1111-111111111111",
                    "iss": provider.issuer("11111111-1111-1111-1111-111111111111"),
                }),
            )),
        ),
        (
            "no role or scope",
            key1.sign(&claims(&provider.base, json!({"roles": ["Other.Role"]}))),
        ),
        (
            "unknown key",
            SigningKey::generate("ghost").sign(&claims(&provider.base, json!({}))),
        ),
        ("alg none", {
            let b64 =
                |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
            format!(
                "{}.{}.",
                b64(&json!({"alg": "none", "typ": "JWT", "kid": "k1"})),
                b64(&claims(&provider.base, json!({})))
            )
        }),
        ("HS256 with the public key as secret", {
            let mut header = Header::new(Algorithm::HS256);
            header.kid = Some("k1".into());
            let secret = key1.jwk["n"].as_str().expect("n").as_bytes().to_vec();
            jsonwebtoken::encode(
                &header,
                &claims(&provider.base, json!({})),
                &EncodingKey::from_secret(&secret),
            )
            .expect("sign")
        }),
        ("garbage", "eyJ.not.a-token".to_owned()),
    ];
    // Only an expired token is told why: the caller can act on that (get a new one).
    for (what, token) in &refused {
        let error = error_of(
            list_files(&app, token).await,
            StatusCode::UNAUTHORIZED,
            what,
        )
        .await;
        assert_eq!(error["code"], "unauthorized", "{what}");
        let reason = match *what {
            "expired" => "the access token has expired",
            _ => "the access token is not valid",
        };
        assert_eq!(
            error["message"],
            format!("missing or invalid credentials: {reason}"),
            "{what}"
        );
    }

    // Rotation: the provider swaps k1 for k2; a k2 token works at once, k1 tokens stop.
    let key2 = SigningKey::generate("k2");
    provider.publish(&[&key2]);
    assert_eq!(
        status_with(&app, &key2.sign(&claims(&provider.base, json!({})))).await,
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
