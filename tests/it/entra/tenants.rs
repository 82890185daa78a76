//! A multi-tenant app (`ENTRA_TENANT_ID=organizations` or `common`): each tenant's tokens are
//! accepted as that tenant, whose files no other tenant sees; a token must carry its own
//! tenant's issuer; and `ENTRA_ALLOWED_TENANTS` admits only the tenants it names.

use super::*;

const CONTOSO: &str = "c0c0c0c0-0000-4000-8000-000000000001";
const FABRIKAM: &str = "fabf0000-0000-4000-8000-000000000002";
const NORTHWIND: &str = "a0a0a0a0-0000-4000-8000-000000000003";

/// A valid token of `tenant`, signed by `key`.
fn token_of(provider: &Provider, key: &SigningKey, tenant: &str) -> String {
    key.sign(&claims(
        &provider.base,
        json!({"tid": tenant, "iss": provider.issuer(tenant)}),
    ))
}

#[tokio::test]
async fn a_multi_tenant_app_accepts_each_tenant_as_itself_and_keeps_their_files_apart() {
    let provider = Provider::start().await;
    let key = SigningKey::generate("k1");
    provider.publish(&[&key]);
    let app = spawn_app(&provider.base, &[("ENTRA_TENANT_ID", "organizations")]).await;
    let contoso = token_of(&provider, &key, CONTOSO);
    let fabrikam = token_of(&provider, &key, FABRIKAM);

    let resp = upload(&app, &contoso).await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let body: Value = resp.json().await.expect("json");
    let file = body["source_file"]["id"]
        .as_str()
        .expect("file id")
        .to_owned();
    assert_eq!(upload(&app, &fabrikam).await.status(), StatusCode::ACCEPTED);
    let tenants: Vec<String> =
        sqlx::query_scalar("SELECT tenant_id FROM source_files ORDER BY tenant_id")
            .fetch_all(&app.db)
            .await
            .expect("rows");
    assert_eq!(tenants, [CONTOSO, FABRIKAM]);

    // Each lists only its own file, and Fabrikam can neither read nor delete Contoso's.
    for token in [&contoso, &fabrikam] {
        let listed: Value = list_files(&app, token).await.json().await.expect("json");
        assert_eq!(listed["files"].as_array().expect("files").len(), 1);
    }
    let as_fabrikam = authenticated_client(&fabrikam);
    let path = app.url(&format!("/api/v1/files/{file}"));
    for request in [as_fabrikam.get(&path), as_fabrikam.delete(&path)] {
        let resp = request.send().await.expect("request");
        let error = error_of(resp, StatusCode::NOT_FOUND, "Contoso's file as Fabrikam").await;
        assert_eq!(error["code"], "not_found");
    }
    let resp = authenticated_client(&contoso)
        .get(&path)
        .send()
        .await
        .expect("get");
    assert_eq!(
        resp.status(),
        StatusCode::OK,
        "Contoso's file is still there"
    );

    // The issuer must be the token's own tenant's: not another's, nor the unexpanded template.
    for (what, iss) in [
        ("Fabrikam's issuer", provider.issuer(FABRIKAM)),
        ("the template", provider.issuer("{tenantid}")),
        (
            "the multi-tenant endpoint",
            provider.issuer("organizations"),
        ),
    ] {
        let token = key.sign(&claims(&provider.base, json!({"tid": CONTOSO, "iss": iss})));
        assert_eq!(
            status_with(&app, &token).await,
            StatusCode::UNAUTHORIZED,
            "tid Contoso with {what}"
        );
    }
}

#[tokio::test]
async fn a_multi_tenant_app_with_an_allow_list_admits_only_the_tenants_on_it() {
    let provider = Provider::start().await;
    let key = SigningKey::generate("k1");
    provider.publish(&[&key]);
    let allowed = format!("{CONTOSO},{FABRIKAM}");
    let app = spawn_app(
        &provider.base,
        &[
            ("ENTRA_TENANT_ID", "common"),
            ("ENTRA_ALLOWED_TENANTS", &allowed),
        ],
    )
    .await;
    for (tenant, expected) in [
        (CONTOSO, StatusCode::OK),
        (FABRIKAM, StatusCode::OK),
        (NORTHWIND, StatusCode::UNAUTHORIZED),
    ] {
        let token = token_of(&provider, &key, tenant);
        assert_eq!(status_with(&app, &token).await, expected, "{tenant}");
    }
}
