//! Sources over the api: made with their credential never shown (and sealed in the database),
//! listed, changed, deleted; refused with a pointer at what is wrong, as `unsafe_url`, as
//! `unknown_template`, and as `source_taken` when another tenant's source watches an
//! overlapping prefix of the same container; closed to import sessions; Event Grid's
//! handshakes answered.

use harness::app::TestApp;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::call;
use crate::destinations::people_template;

const CONTAINER: &str = "http://127.0.0.1:10000/devstoreaccount1/drop";
const SAS: &str = "sv=2024-08-04&sp=rl&sig=c2VjcmV0LXNpZ25hdHVyZQ%3D%3D";

fn source(prefix: &str) -> Value {
    json!({"kind": "azure_blob", "container_url": CONTAINER, "prefix": prefix,
           "credential": {"sas": SAS}})
}

#[tokio::test]
async fn a_source_is_made_listed_changed_and_deleted_and_its_credential_never_shown() {
    let app = TestApp::spawn().await;
    people_template(&app).await;
    let mut body = source("incoming/");
    body["template"] = json!("people");
    body["on_invalid"] = json!("keep_invalid_rows");
    body["metadata"] = json!({"partner": "acme"});
    let (status, created) = call(&app, Method::POST, "/api/v1/sources", Some(body)).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["container_url"], CONTAINER);
    assert_eq!(created["prefix"], "incoming/");
    assert_eq!(created["credential"], "sas");
    assert_eq!(created["template"], "people");
    assert_eq!(created["metadata"], json!({"partner": "acme"}));
    assert_eq!(
        (&created["import_existing"], &created["after_import"]),
        (&json!(true), &json!("keep"))
    );
    assert_eq!(
        created["status"],
        json!({"passes": 0, "listed_at": null, "waiting": 0, "imported": 0, "skipped": 0,
               "error": null})
    );
    assert!(!created.to_string().contains("c2VjcmV0"), "{created}");
    let stored: Vec<u8> = sqlx::query_scalar("SELECT sealed_secret FROM sources")
        .fetch_one(&app.db)
        .await
        .expect("sealed");
    assert!(!stored.windows(8).any(|w| w == b"c2VjcmV0"));

    let id = created["id"].as_str().expect("id");
    let path = format!("/api/v1/sources/{id}");
    let (status, got) = call(&app, Method::GET, &path, None).await;
    assert_eq!((status, &got["id"]), (StatusCode::OK, &created["id"]));
    let (status, list) = call(&app, Method::GET, "/api/v1/sources", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["sources"].as_array().map(Vec::len), Some(1));

    let change = json!({"template": null, "on_invalid": null, "metadata": null,
                        "description": "partner drop", "enabled": false,
                        "after_import": "delete",
                        "credential": {"connection_string": "UseDevelopmentStorage=true"}});
    let (status, changed) = call(&app, Method::PATCH, &path, Some(change)).await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(changed["template"], Value::Null);
    assert_eq!(changed["metadata"], Value::Null);
    assert_eq!(changed["credential"], "connection_string");
    assert_eq!(
        (&changed["enabled"], &changed["after_import"]),
        (&json!(false), &json!("delete"))
    );
    assert_eq!(changed["description"], "partner drop");

    let (status, _) = call(&app, Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = call(&app, Method::GET, &path, None).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
}

#[tokio::test]
async fn bad_sources_are_refused_with_what_is_wrong_and_nothing_is_stored() {
    let app = TestApp::spawn().await;
    let refused = |body: Value| {
        let app = &app;
        async move {
            let (status, body) = call(app, Method::POST, "/api/v1/sources", Some(body)).await;
            (
                status,
                body["error"]["code"].as_str().unwrap_or("").to_owned(),
                body,
            )
        }
    };
    let (status, code, body) = refused(
        json!({"kind": "ftp", "container_url": "http://127.0.0.1:10000/devstoreaccount1/Bad_Name",
        "prefix": "/abs", "credential": {"sas": "sv=1"}, "on_invalid": "maybe",
        "after_import": "move", "metadata": [1]}),
    )
    .await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_source")
    );
    let mut pointers: Vec<&str> = body["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .filter_map(|d| d["pointer"].as_str())
        .collect();
    pointers.sort_unstable();
    assert_eq!(
        pointers,
        [
            "/after_import",
            "/container_url",
            "/kind",
            "/metadata",
            "/on_invalid",
            "/on_invalid",
            "/prefix"
        ],
        "{body}"
    );

    let mut unknown = source("");
    unknown["template"] = json!("nope");
    let (status, code, _) = refused(unknown).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, "unknown_template")
    );

    let mut credential = source("");
    credential["credential"] = json!({"password": "hunter2"});
    let (status, code, body) = refused(credential).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_source")
    );
    assert_eq!(
        body["error"]["details"][0]["pointer"], "/credential",
        "{body}"
    );
    assert!(!body.to_string().contains("hunter2"), "{body}");

    let strict = TestApp::spawn_with(|c| c.webhooks.keys.allow_private_networks = false).await;
    let (status, body) = call(
        &strict,
        Method::POST,
        "/api/v1/sources",
        Some(
            json!({"kind": "azure_blob", "container_url": "https://10.0.0.1/acct/drop",
                    "credential": {"sas": SAS}}),
        ),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("unsafe_url"))
    );
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM sources")
        .fetch_one(&app.db)
        .await
        .expect("count");
    assert_eq!(count, 0);
}

#[tokio::test]
async fn a_container_and_prefix_belong_to_one_source_of_one_tenant() {
    let app = TestApp::spawn().await;
    let other = app.client_for("other-tenant").await;
    let (status, ours) = call(
        &app,
        Method::POST,
        "/api/v1/sources",
        Some(source("partners/acme/")),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    // Another tenant sees none of it, by id or in its list.
    let path = format!("/api/v1/sources/{}", ours["id"].as_str().expect("id"));
    for (method, path, body) in [
        (Method::GET, path.clone(), None),
        (Method::PATCH, path.clone(), Some(json!({"enabled": false}))),
        (Method::GET, format!("{path}/blobs"), None),
        (Method::POST, format!("{path}/events"), Some(json!([]))),
        (Method::DELETE, path.clone(), None),
    ] {
        let (status, body) = crate::webhooks::call(&app, &other, method, &path, body).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (StatusCode::NOT_FOUND, Some("not_found")),
            "{path}"
        );
    }
    let (_, listed) =
        crate::webhooks::call(&app, &other, Method::GET, "/api/v1/sources", None).await;
    assert_eq!(listed["sources"], json!([]));
    let (status, mine) = call(&app, Method::GET, &path, None).await;
    assert_eq!((status, &mine["enabled"]), (StatusCode::OK, &json!(true)));
    for (prefix, taken) in [
        ("partners/acme/", true),
        ("partners/", true),
        ("", true),
        ("partners/acme/2026/", true),
        ("partners/beta/", false),
    ] {
        let (status, body) = crate::webhooks::call(
            &app,
            &other,
            Method::POST,
            "/api/v1/sources",
            Some(source(prefix)),
        )
        .await;
        if taken {
            assert_eq!(
                (status, body["error"]["code"].as_str()),
                (StatusCode::CONFLICT, Some("source_taken")),
                "{prefix}: {body}"
            );
        } else {
            assert_eq!(status, StatusCode::CREATED, "{prefix}: {body}");
        }
    }
    // Nor twice by the same tenant: each blob would be imported twice.
    let (status, body) = call(
        &app,
        Method::POST,
        "/api/v1/sources",
        Some(source("partners/acme/x")),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("source_taken"))
    );
}

#[tokio::test]
async fn an_import_session_may_not_touch_sources() {
    let app = TestApp::spawn().await;
    people_template(&app).await;
    let session = json!({"template": "people", "end_user": {"id": "u-1"},
                         "allowed_origins": ["https://app.example.com"]});
    let (status, session) = call(&app, Method::POST, "/api/v1/sessions", Some(session)).await;
    assert_eq!(status, StatusCode::CREATED, "{session}");
    let client = harness::app::authenticated_client(session["token"].as_str().expect("token"));
    for (method, body) in [(Method::GET, None), (Method::POST, Some(source("")))] {
        let (status, body) =
            crate::webhooks::call(&app, &client, method, "/api/v1/sources", body).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (StatusCode::FORBIDDEN, Some("forbidden"))
        );
    }
}

#[tokio::test]
async fn event_grid_handshakes_are_answered_and_bad_bodies_refused() {
    let app = TestApp::spawn().await;
    let (_, created) = call(&app, Method::POST, "/api/v1/sources", Some(source("in/"))).await;
    let path = format!(
        "/api/v1/sources/{}/events",
        created["id"].as_str().expect("id")
    );
    let handshake = json!([{
        "id": "2d1781af-3a4c-4d7c-bd0c-e34b19da4e66",
        "topic": "/subscriptions/0/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/acct",
        "subject": "", "eventTime": "2026-11-28T12:00:00Z", "metadataVersion": "1",
        "dataVersion": "2",
        "eventType": "Microsoft.EventGrid.SubscriptionValidationEvent",
        "data": {"validationCode": "512d38b6-c7b8-40c8-89fe-f46f9e9622b6",
                 "validationUrl": "https://rp-eastus2.eventgrid.azure.net:553/x"}
    }]);
    let (status, body) = call(&app, Method::POST, &path, Some(handshake)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({"validationResponse": "512d38b6-c7b8-40c8-89fe-f46f9e9622b6"})
    );

    let resp = app
        .client
        .request(Method::OPTIONS, app.url(&path))
        .header("WebHook-Request-Origin", "eventemitter.example.com")
        .send()
        .await
        .expect("options");
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        resp.headers()
            .get("webhook-allowed-origin")
            .and_then(|v| v.to_str().ok()),
        Some("eventemitter.example.com")
    );

    let resp = app
        .client
        .post(app.url(&path))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .expect("post");
    let (status, code) = harness::app::code_of(resp).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::BAD_REQUEST, "invalid_body")
    );

    // Events of blobs outside the source (another container, another prefix) are ignored.
    let outside = json!([
        super::blob_created("http://127.0.0.1:10000/devstoreaccount1/other", "in/a.csv", "0x1", 3),
        super::blob_created(CONTAINER, "out/a.csv", "0x1", 3),
        {"eventType": "Microsoft.Storage.BlobDeleted", "data": {"url": format!("{CONTAINER}/in/a.csv")}},
    ]);
    let (status, body) = call(&app, Method::POST, &path, Some(outside)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, json!({"accepted": 0, "ignored": 3}));

    let unauthenticated = reqwest::Client::new()
        .post(app.url(&path))
        .json(&json!([]))
        .send()
        .await
        .expect("post");
    assert_eq!(unauthenticated.status(), StatusCode::UNAUTHORIZED);
}

/// A source's events token posts events for its own source and does nothing else; it is shown
/// when the source is made and when a new one is made, never in a view, and a new one ends the
/// old one.
#[tokio::test]
async fn a_sources_events_token_posts_its_own_events_and_nothing_else() {
    let app = TestApp::spawn().await;
    let (status, created) = call(&app, Method::POST, "/api/v1/sources", Some(source("in/"))).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let token = created["events_token"]
        .as_str()
        .expect("events_token")
        .to_owned();
    assert!(token.starts_with("sre_"), "{token}");
    let id = created["id"].as_str().expect("id").to_owned();
    let (_, shown) = call(&app, Method::GET, &format!("/api/v1/sources/{id}"), None).await;
    assert!(shown.get("events_token").is_none(), "{shown}");
    assert!(!shown.to_string().contains(&token), "{shown}");
    let (status, other) = call(&app, Method::POST, "/api/v1/sources", Some(source("out/"))).await;
    assert_eq!(status, StatusCode::CREATED, "{other}");
    let other_id = other["id"].as_str().expect("id").to_owned();

    let as_token = |token: &str| harness::app::authenticated_client(token);
    let events = |source: &str| format!("/api/v1/sources/{source}/events");
    let event = json!([super::blob_created(CONTAINER, "in/a.csv", "0x1", 3)]);
    let client = as_token(&token);
    let post_event = async |client: &reqwest::Client| {
        crate::webhooks::call(
            &app,
            client,
            Method::POST,
            &events(&id),
            Some(event.clone()),
        )
        .await
    };
    let (status, body) = post_event(&client).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"accepted": 1, "ignored": 0}));
    for (method, path) in [
        (Method::POST, events(&other_id)),
        (Method::GET, format!("/api/v1/sources/{id}")),
        (Method::GET, format!("/api/v1/sources/{id}/blobs")),
        (Method::GET, "/api/v1/files".to_owned()),
        (
            Method::POST,
            format!("/api/v1/sources/{id}/events_token/rotate"),
        ),
    ] {
        let (status, body) =
            crate::webhooks::call(&app, &client, method.clone(), &path, Some(json!([]))).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (StatusCode::FORBIDDEN, Some("forbidden")),
            "{method} {path}: {body}"
        );
    }

    let (status, rotated) = call(
        &app,
        Method::POST,
        &format!("/api/v1/sources/{id}/events_token/rotate"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    let new = rotated["events_token"].as_str().expect("events_token");
    assert_ne!(new, token);
    let (status, body) = post_event(&client).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("unauthorized")),
        "{body}"
    );
    let (status, _) = post_event(&as_token(new)).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = call(
        &app,
        Method::POST,
        &format!(
            "/api/v1/sources/{}/events_token/rotate",
            uuid::Uuid::now_v7()
        ),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
