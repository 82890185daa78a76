//! Callers and tenants: no `/api/v1` route answers without a valid credential, API keys are
//! stored hashed and revocable at once, and one tenant can neither see nor collide with another.

use harness::app::{authenticated_client, TestApp, UploadRows};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use sha2::Digest as _;
use uuid::Uuid;

const CSV: &[u8] = b"id,name\n1,Alice\n2,Bob\n";

/// Every `/api/v1` route, with ids that exist for tenant `default`: read from the api's OpenAPI
/// document, which is built from the same route table as its router.
fn routes(file: &str, task: &str) -> Vec<(Method, String)> {
    let doc = serde_json::to_value(api::openapi::document()).expect("the document is JSON");
    let mut routes = Vec::new();
    for (template, item) in doc["paths"].as_object().expect("paths") {
        if !template.starts_with("/api/v1/") {
            continue;
        }
        let path = template
            .replace("{source_file_id}", file)
            .replace("{task_id}", task)
            .replace("{webhook_id}", file)
            .replace("{destination_id}", file)
            .replace("{source_id}", file)
            .replace("{upload_id}", file)
            .replace("{session_id}", file)
            .replace("{name}", "invoices");
        assert!(
            !path.contains('{'),
            "a parameter this test cannot fill: {template}"
        );
        // A path item's other keys (`parameters`, `summary`) are not operations.
        let operations = item.as_object().expect("a path item").keys().filter(|k| {
            [
                "get", "put", "post", "delete", "patch", "head", "options", "trace",
            ]
            .contains(&k.as_str())
        });
        for method in operations {
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).expect("a method");
            routes.push((method, path.clone()));
        }
    }
    assert!(
        routes.len() > 20,
        "the document lists the routes: {routes:?}"
    );
    routes
}

async fn upload(
    client: &reqwest::Client,
    app: &TestApp,
    key: Option<&str>,
    body: &[u8],
) -> reqwest::Response {
    let part = reqwest::multipart::Part::bytes(body.to_vec()).file_name("people.csv");
    let mut req = client
        .post(app.url("/api/v1/files"))
        .multipart(reqwest::multipart::Form::new().part("file", part));
    if let Some(key) = key {
        req = req.header("Idempotency-Key", key);
    }
    req.send().await.expect("upload completes")
}

async fn ids(resp: reqwest::Response) -> (String, String) {
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let body: Value = resp.json().await.expect("json");
    (
        body["source_file"]["id"]
            .as_str()
            .expect("file id")
            .to_owned(),
        body["task"]["id"].as_str().expect("task id").to_owned(),
    )
}

/// Asserts a 401 as the contract has it, and returns its message.
async fn assert_unauthorized(resp: reqwest::Response, what: &str) -> String {
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED, "{what}");
    assert_eq!(
        resp.headers()["www-authenticate"].to_str().expect("ascii"),
        r#"Bearer realm="sheetrelay""#,
        "{what}"
    );
    let body: Value = resp.json().await.expect("a JSON error body");
    assert_eq!(body["error"]["code"], "unauthorized", "{what}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(!message.is_empty(), "{what}");
    message.to_owned()
}

#[tokio::test]
async fn no_api_route_answers_without_a_valid_credential() {
    let app = TestApp::spawn().await;
    let (file, task) = ids(upload(&app.client, &app, None, CSV).await).await;
    let anonymous = reqwest::Client::new();
    let revoked_key = api::auth::api_key::create(&app.db, "default", "to revoke")
        .await
        .expect("create");
    shared::db::api_keys::revoke(&app.db, revoked_key.key.id)
        .await
        .expect("revoke")
        .expect("the key exists");
    let credentials: Vec<(&str, Option<String>)> = vec![
        ("none", None),
        ("a bogus bearer", Some("Bearer nonsense".into())),
        (
            "an unknown key",
            Some(format!("Bearer srk_{}", "A".repeat(43))),
        ),
        ("basic admin:admin", Some("Basic YWRtaW46YWRtaW4=".into())),
        ("an empty bearer", Some("Bearer ".into())),
        (
            "a revoked key",
            Some(format!("Bearer {}", revoked_key.secret)),
        ),
    ];
    let mut messages = std::collections::HashMap::new();
    for (what, header) in &credentials {
        for (method, path) in routes(&file, &task) {
            let mut req = anonymous.request(method.clone(), app.url(&path));
            if let Some(h) = header {
                req = req.header("authorization", h);
            }
            if method == Method::POST {
                let part = reqwest::multipart::Part::bytes(CSV.to_vec()).file_name("x.csv");
                req = req.multipart(reqwest::multipart::Form::new().part("file", part));
            }
            let resp = req.send().await.expect("request completes");
            if method == Method::HEAD {
                // An answer to HEAD has no body to read a message from.
                assert_eq!(resp.status(), StatusCode::UNAUTHORIZED, "HEAD {path}");
                continue;
            }
            let message = assert_unauthorized(resp, &format!("{method} {path} with {what}")).await;
            messages.insert(*what, message);
        }
    }
    // An answer does not tell whether a key exists.
    assert_eq!(messages["an unknown key"], messages["a revoked key"]);
    // Nothing was read, written or deleted on their behalf.
    assert_eq!(app.upload_rows().await, UploadRows::each(1));
    let (status, _) = app.get_json(&format!("/api/v1/files/{file}")).await;
    assert_eq!(status, StatusCode::OK, "the valid key still works");
}

#[tokio::test]
async fn keys_are_stored_only_as_hashes_and_revocation_takes_effect_at_once() {
    let app = TestApp::spawn().await;
    let created = api::auth::api_key::create(&app.db, "default", "laptop")
        .await
        .expect("create");
    assert!(created.secret.starts_with("srk_") && created.secret.len() == 47);
    let (hash, prefix): (Vec<u8>, String) =
        sqlx::query_as("SELECT secret_hash, prefix FROM api_keys WHERE id = $1")
            .bind(created.key.id)
            .fetch_one(&app.db)
            .await
            .expect("row");
    assert_eq!(
        hash,
        sha2::Sha256::digest(created.secret.as_bytes()).to_vec()
    );
    assert!(created.secret.starts_with(&prefix) && prefix.len() < 16);
    let stored: String =
        sqlx::query_scalar::<_, String>("SELECT row_to_json(k)::text FROM api_keys k")
            .fetch_all(&app.db)
            .await
            .expect("rows")
            .join("\n");
    assert!(
        !stored.contains(&created.secret[4..]),
        "the secret is not stored"
    );

    let client = authenticated_client(&created.secret);
    let ok = client
        .get(app.url("/api/v1/files"))
        .send()
        .await
        .expect("get");
    assert_eq!(ok.status(), StatusCode::OK);
    shared::db::api_keys::revoke(&app.db, created.key.id)
        .await
        .expect("revoke");
    let refused = client
        .get(app.url("/api/v1/files"))
        .send()
        .await
        .expect("get");
    assert_unauthorized(refused, "the revoked key").await;
}

#[tokio::test]
async fn a_tenant_cannot_see_page_export_or_delete_another_tenants_files() {
    let app = TestApp::spawn().await;
    let (file, task) = ids(upload(&app.client, &app, None, CSV).await).await;
    let tenant_b = app.client_for("tenant-b").await;
    for (method, path) in routes(&file, &task) {
        // Uploads and listings are the caller's own; templates are checked by name
        // (tests/it/templates.rs: another tenant's template is a 404); events and webhooks are
        // the caller's own (tests/it/events/, tests/it/webhooks/); so are destinations and
        // sources (tests/it/destinations/, tests/it/sources/api.rs).
        if method == Method::POST
            || path == "/api/v1/files"
            || path.starts_with("/api/v1/templates")
            || path.starts_with("/api/v1/events")
            || path.starts_with("/api/v1/webhooks")
            || path.starts_with("/api/v1/destinations")
            || path.starts_with("/api/v1/sources")
            // Resumable uploads need their tus headers: tests/it/resumable/ checks another
            // tenant's key on a real upload.
            || path.starts_with("/api/v1/uploads")
        {
            continue;
        }
        let mut req = tenant_b.request(method.clone(), app.url(&path));
        if method == Method::PUT {
            // A well-formed body (a review's answer, a layout), so that only the tenant can
            // refuse it.
            let body = if path.ends_with("/layout") {
                serde_json::json!({"sheets": []})
            } else {
                serde_json::json!({"mapping": {}})
            };
            req = req.json(&body);
        }
        if method == Method::PATCH {
            // A well-formed body (a correction), so that only the tenant can refuse it.
            req = req.json(&serde_json::json!({"corrections": [
                {"sheet": 0, "row": 2, "field": "a", "value": "x"}
            ]}));
        }
        let resp = req.send().await.expect("request");
        assert_eq!(resp.status(), StatusCode::NOT_FOUND, "{method} {path}");
        let body: Value = resp.json().await.expect("json");
        assert_eq!(body["error"]["code"], "not_found");
    }
    let listed: Value = tenant_b
        .get(app.url("/api/v1/files"))
        .send()
        .await
        .expect("list")
        .json()
        .await
        .expect("json");
    assert_eq!(listed["files"], serde_json::json!([]));

    // A's file is untouched by B's delete and still A's.
    let (status, body) = app.get_json(&format!("/api/v1/files/{file}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["id"], file.as_str());
    let tenant: String = sqlx::query_scalar("SELECT tenant_id FROM source_files")
        .fetch_one(&app.db)
        .await
        .expect("tenant");
    assert_eq!(tenant, "default");
}

#[tokio::test]
async fn idempotency_keys_are_per_tenant_and_bound_to_the_file() {
    let app = TestApp::spawn().await;
    let tenant_b = app.client_for("tenant-b").await;
    let first = ids(upload(&app.client, &app, Some("k-1"), CSV).await).await;

    // The same key and file again: the original answer, nothing new.
    let again = ids(upload(&app.client, &app, Some("k-1"), CSV).await).await;
    assert_eq!(again, first);
    assert_eq!(app.upload_rows().await, UploadRows::each(1));

    // Another tenant's identical key is its own.
    let other = ids(upload(&tenant_b, &app, Some("k-1"), CSV).await).await;
    assert_ne!(other, first);
    assert_eq!(app.upload_rows().await, UploadRows::each(2));

    // The same key with a different file is a conflict, and stores nothing.
    let resp = upload(&app.client, &app, Some("k-1"), b"id\n42\n").await;
    assert_eq!(resp.status(), StatusCode::CONFLICT);
    let body: Value = resp.json().await.expect("json");
    assert_eq!(body["error"]["code"], "idempotency_key_reused");

    // A known key on a request that is not a valid upload is not honoured.
    let resp = app
        .client
        .post(app.url("/api/v1/files"))
        .header("Idempotency-Key", "k-1")
        .multipart(reqwest::multipart::Form::new().text("other", "x"))
        .send()
        .await
        .expect("post");
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert_eq!(app.upload_rows().await, UploadRows::each(2));
    assert_eq!(app.blob_names().await.len(), 2);
}

#[tokio::test]
async fn the_keys_command_prints_only_the_key_and_lists_without_secrets() {
    let app = TestApp::spawn().await;
    let run = |args: &[&str]| app.api_command(args);
    let created = run(&["keys", "create", "--name", "ci", "--tenant", "acme"]);
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let stdout = String::from_utf8(created.stdout).expect("utf-8");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stdout: {stdout:?}");
    let key = lines[0];
    assert!(key.starts_with("srk_"));

    let client = authenticated_client(key);
    let resp = client
        .get(app.url("/api/v1/files"))
        .send()
        .await
        .expect("get");
    assert_eq!(resp.status(), StatusCode::OK);

    let listed = run(&["keys", "list"]);
    let listing = String::from_utf8(listed.stdout).expect("utf-8");
    assert!(
        listing.contains("acme") && listing.contains("ci"),
        "{listing}"
    );
    assert!(!listing.contains(&key[12..]), "no secret in the listing");

    let id: Uuid = sqlx::query_scalar("SELECT id FROM api_keys WHERE tenant_id = 'acme'")
        .fetch_one(&app.db)
        .await
        .expect("id");
    let revoked = run(&["keys", "revoke", &id.to_string()]);
    assert!(revoked.status.success());
    let resp = client
        .get(app.url("/api/v1/files"))
        .send()
        .await
        .expect("get");
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);

    let bad = run(&["keys", "create", "--name", "x", "--tenant", "not a tenant"]);
    assert!(!bad.status.success());
}
