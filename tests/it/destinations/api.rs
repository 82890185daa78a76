//! Destinations over the api: made with their secret shown once and their credential never,
//! listed, changed, deleted; refused with a pointer at what is wrong, as `unsafe_url` when the
//! URL breaks the webhook rules, over the tenant's cap, and to an import session.

use harness::app::TestApp;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::{call, create};

const CONTAINER: &str = "http://127.0.0.1:10000/devstoreaccount1/lake";
const SAS: &str = "sv=2024-08-04&sp=cw&sig=c2VjcmV0LXNpZ25hdHVyZQ%3D%3D";

#[tokio::test]
async fn a_destination_shows_its_secret_once_and_its_credential_never() {
    let app = TestApp::spawn().await;
    let blob = create(
        &app,
        json!({"kind": "azure_blob", "container_url": CONTAINER, "prefix": "imports/",
               "credential": {"sas": SAS}, "templates": ["people"], "description": "lake"}),
    )
    .await;
    assert_eq!(blob["kind"], "azure_blob");
    assert_eq!(blob["container_url"], CONTAINER);
    assert_eq!(blob["format"], "parquet", "the default format");
    assert_eq!(blob["credential"], "sas");
    assert_eq!(blob["templates"], json!(["people"]));
    assert!(blob.get("secret").is_none(), "{blob}");
    assert!(!blob.to_string().contains("c2VjcmV0"), "{blob}");

    let rows = create(
        &app,
        json!({"kind": "webhook_rows", "url": "http://127.0.0.1:9/rows"}),
    )
    .await;
    assert_eq!(rows["chunk_size"], 1000, "the default chunk size");
    let secret = rows["secret"].as_str().expect("a secret in the 201");
    assert!(secret.starts_with("whsec_"));

    let (status, list) = call(&app, Method::GET, "/api/v1/destinations", None).await;
    assert_eq!(status, StatusCode::OK);
    let text = list.to_string();
    assert_eq!(list["destinations"].as_array().map(Vec::len), Some(2));
    assert!(
        !text.contains(secret) && !text.contains("c2VjcmV0"),
        "{list}"
    );
    // Sealed in the database: neither the SAS nor the secret is stored as text.
    let stored: Vec<Vec<u8>> =
        sqlx::query_scalar("SELECT sealed_secret FROM destinations ORDER BY created_at")
            .fetch_all(&app.db)
            .await
            .expect("sealed");
    assert!(stored
        .iter()
        .all(|s| !s.windows(8).any(|w| w == b"c2VjcmV0")));

    let id = rows["id"].as_str().expect("id");
    let path = format!("/api/v1/destinations/{id}");
    let (status, changed) = call(
        &app,
        Method::PATCH,
        &path,
        Some(json!({"chunk_size": 10, "enabled": false})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(
        (changed["chunk_size"].as_i64(), &changed["enabled"]),
        (Some(10), &json!(false))
    );
    assert!(changed.get("secret").is_none());
    let (status, body) = call(&app, Method::PATCH, &path, Some(json!({"prefix": "x/"}))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["details"][0]["pointer"], "/prefix");

    // The blob destination's template filter: left out, kept; null, gone (every file again).
    let blob_path = format!("/api/v1/destinations/{}", blob["id"].as_str().expect("id"));
    let (status, kept) = call(
        &app,
        Method::PATCH,
        &blob_path,
        Some(json!({"prefix": "y/"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{kept}");
    assert_eq!(kept["templates"], json!(["people"]), "{kept}");
    let (status, all) = call(
        &app,
        Method::PATCH,
        &blob_path,
        Some(json!({"templates": null})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{all}");
    assert_eq!(all["templates"], Value::Null, "{all}");
    assert_eq!(all["prefix"], "y/", "{all}");

    let (status, _) = call(&app, Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = call(&app, Method::GET, &path, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // Another tenant sees none of them, nor one by its id.
    let other = app.client_for("other-tenant").await;
    let blob_path = format!("/api/v1/destinations/{}", blob["id"].as_str().expect("id"));
    for method in [Method::GET, Method::DELETE] {
        let (status, _) = crate::webhooks::call(&app, &other, method, &blob_path, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
    let (_, theirs) =
        crate::webhooks::call(&app, &other, Method::GET, "/api/v1/destinations", None).await;
    assert_eq!(theirs["destinations"], json!([]));
}

/// POSTs `body`; status and error.
async fn refused(app: &TestApp, body: Value) -> (StatusCode, Value) {
    let (status, answer) = call(app, Method::POST, "/api/v1/destinations", Some(body)).await;
    (status, answer["error"].clone())
}

#[tokio::test]
async fn bad_destinations_are_refused_with_a_pointer_at_each_problem() {
    let app = TestApp::spawn().await;
    let (status, error) = refused(
        &app,
        json!({"kind": "azure_blob", "container_url": CONTAINER, "format": "xlsx",
               "prefix": "/abs", "credential": {"managed_identity": false}}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error["code"], "invalid_destination");
    let pointers: Vec<&str> = error["details"]
        .as_array()
        .expect("details")
        .iter()
        .filter_map(|d| d["pointer"].as_str())
        .collect();
    assert_eq!(pointers, ["/prefix", "/format", "/credential"], "{error}");

    // A SAS without a signature; a connection string for another account than the URL's.
    for credential in [
        json!({"sas": "sv=1&sp=w"}),
        json!({"connection_string": "UseDevelopmentStorage=true"}),
    ] {
        let (status, error) = refused(
            &app,
            json!({"kind": "azure_blob", "credential": credential,
                   "container_url": "http://127.0.0.1:10000/otheraccount/lake"}),
        )
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
        assert_eq!(error["details"][0]["pointer"], "/credential", "{error}");
    }
    // A credential of none of the three shapes: its pointer, with the request's other problems.
    let (status, error) = refused(
        &app,
        json!({"kind": "azure_blob", "container_url": CONTAINER, "credential": {"key": "k"},
               "format": "xml"}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    assert_eq!(error["code"], "invalid_destination");
    let mut pointers: Vec<&str> = error["details"]
        .as_array()
        .expect("details")
        .iter()
        .filter_map(|d| d["pointer"].as_str())
        .collect();
    pointers.sort_unstable();
    assert_eq!(pointers, ["/credential", "/format"], "{error}");
    // An unknown kind: not the request's JSON.
    let (status, error) = refused(&app, json!({"kind": "s3", "url": "https://example.com"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    assert_eq!(error["code"], "invalid_body");
    let (status, error) = refused(
        &app,
        json!({"kind": "webhook_rows", "url": "https://example.com/rows", "chunk_size": 10001}),
    )
    .await;
    assert_eq!(
        (status, &error["details"][0]["pointer"]),
        (StatusCode::UNPROCESSABLE_ENTITY, &json!("/chunk_size"))
    );
}

#[tokio::test]
async fn urls_follow_the_webhook_rules() {
    let app = TestApp::spawn_with(|c| c.webhooks.keys.allow_private_networks = false).await;
    for body in [
        json!({"kind": "webhook_rows", "url": "http://example.com/rows"}),
        json!({"kind": "webhook_rows", "url": "https://127.0.0.1/rows"}),
        json!({"kind": "azure_blob", "container_url": CONTAINER,
               "credential": {"connection_string": "UseDevelopmentStorage=true"}}),
        json!({"kind": "azure_blob", "container_url": "https://10.1.2.3/acct/lake",
               "credential": {"managed_identity": true}}),
    ] {
        let (status, error) = refused(&app, body.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(error["code"], "unsafe_url", "{body}: {error}");
    }
    assert_eq!(super::destinations_stored(&app).await, 0);
}

#[tokio::test]
async fn a_tenant_has_at_most_its_cap_of_destinations() {
    let app = TestApp::spawn_with(|c| c.webhooks.max_destinations = 1).await;
    let made = json!({"kind": "azure_blob", "container_url": CONTAINER,
                      "credential": {"managed_identity": true}});
    let first = create(&app, made.clone()).await;
    assert_eq!(first["credential"], "managed_identity");
    let (status, error) = refused(&app, made).await;
    assert_eq!(
        (status, &error["code"]),
        (StatusCode::CONFLICT, &json!("too_many_destinations"))
    );
}

#[tokio::test]
async fn an_import_session_may_not_touch_destinations() {
    let app = TestApp::spawn().await;
    super::people_template(&app).await;
    let session = json!({"template": "people", "end_user": {"id": "u-1"},
                         "allowed_origins": ["https://app.example.com"]});
    let (status, session) = call(&app, Method::POST, "/api/v1/sessions", Some(session)).await;
    assert_eq!(status, StatusCode::CREATED, "{session}");
    let client = harness::app::authenticated_client(session["token"].as_str().expect("token"));
    let (status, body) =
        crate::webhooks::call(&app, &client, Method::GET, "/api/v1/destinations", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "forbidden");
}
