//! Webhook endpoints over the api: the secret shown once and stored sealed, one tenant's
//! endpoints only, changes, rotation, replay, the fan-out of events into deliveries, and the
//! limits.

use harness::app::TestApp;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use shared::webhooks::SigningSecret;
use uuid::Uuid;

use super::{call, create, register};

const ALL_TYPES: [&str; 6] = [
    "task.completed",
    "task.failed",
    "task.needs_review",
    "file.deleted",
    "file.corrected",
    "file.delivered",
];

async fn sealed_secrets(app: &TestApp, id: &str) -> (Vec<u8>, Option<Vec<u8>>) {
    sqlx::query_as("SELECT secret, previous_secret FROM webhook_endpoints WHERE id = $1::uuid")
        .bind(id)
        .fetch_one(&app.db)
        .await
        .expect("the endpoint's row")
}

fn open(app: &TestApp, id: &str, sealed: &[u8]) -> SigningSecret {
    let key = app.config.webhooks.keys.secret_key.as_ref().expect("a key");
    key.open(id.parse().expect("uuid"), sealed)
        .expect("the secret opens")
}

#[tokio::test]
async fn an_endpoint_shows_its_secret_once_and_keeps_it_sealed() {
    let app = TestApp::spawn().await;
    let resp = app
        .client
        .post(app.url("/api/v1/webhooks"))
        .json(&json!({"url": "https://hooks.example.test/in", "description": "orders"}))
        .send()
        .await
        .expect("create");
    assert_eq!(resp.status(), StatusCode::CREATED);
    let location = resp.headers()["location"]
        .to_str()
        .expect("ascii")
        .to_owned();
    let created: Value = resp.json().await.expect("json");
    let id = created["id"].as_str().expect("id").to_owned();
    assert_eq!(location, format!("/api/v1/webhooks/{id}"));
    assert_eq!(created["url"], "https://hooks.example.test/in");
    assert_eq!(created["events"], json!(ALL_TYPES));
    assert_eq!(created["description"], "orders");
    assert_eq!(created["enabled"], true);
    let shown = created["secret"].as_str().expect("secret");
    let secret = SigningSecret::from_whsec(shown).expect("a whsec_ secret");
    assert_eq!(secret.key().len(), 32);

    // Never again: not in the endpoint, not in the list.
    let (status, got) = call(&app, &app.client, Method::GET, &location, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(got.get("secret").is_none(), "{got}");
    let (_, list) = call(&app, &app.client, Method::GET, "/api/v1/webhooks", None).await;
    assert_eq!(list["webhooks"].as_array().map(Vec::len), Some(1));
    assert!(!list.to_string().contains(&shown[6..]), "{list}");
    // Stored sealed: the row does not hold it, and opens to it with the key.
    let (sealed, previous) = sealed_secrets(&app, &id).await;
    assert!(previous.is_none());
    assert!(!sealed.windows(32).any(|w| w == secret.key()));
    assert_eq!(open(&app, &id, &sealed), secret);
}

#[tokio::test]
async fn endpoints_are_their_tenants_own() {
    let app = TestApp::spawn().await;
    let mine = register(&app, "https://hooks.example.test/a").await;
    let id = mine["id"].as_str().expect("id");
    let other = app.client_for("globex").await;
    for (method, path, body) in [
        (Method::GET, format!("/api/v1/webhooks/{id}"), None),
        (
            Method::PATCH,
            format!("/api/v1/webhooks/{id}"),
            Some(json!({"enabled": false})),
        ),
        (Method::DELETE, format!("/api/v1/webhooks/{id}"), None),
        (
            Method::POST,
            format!("/api/v1/webhooks/{id}/secret/rotate"),
            None,
        ),
        (
            Method::POST,
            format!("/api/v1/webhooks/{id}/replay"),
            Some(json!({"since": "2020-01-01T00:00:00Z"})),
        ),
        (Method::GET, format!("/api/v1/webhooks/{id}/attempts"), None),
    ] {
        let (status, body) = call(&app, &other, method.clone(), &path, body).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}: {body}");
        assert_eq!(body["error"]["code"], "not_found");
    }
    let resp = other
        .get(app.url("/api/v1/webhooks"))
        .send()
        .await
        .expect("list");
    assert_eq!(
        resp.json::<Value>().await.expect("json"),
        json!({"webhooks": []})
    );
    let (_, still) = call(
        &app,
        &app.client,
        Method::GET,
        &format!("/api/v1/webhooks/{id}"),
        None,
    )
    .await;
    assert_eq!(
        still["enabled"], true,
        "the other tenant's PATCH changed nothing"
    );
}

#[tokio::test]
async fn an_endpoint_is_changed_disabled_enabled_and_deleted() {
    let app = TestApp::spawn().await;
    let created = register(&app, "https://hooks.example.test/a").await;
    let path = format!("/api/v1/webhooks/{}", created["id"].as_str().expect("id"));

    let (status, changed) = call(
        &app,
        &app.client,
        Method::PATCH,
        &path,
        Some(json!({
            "url": "https://hooks.example.test/b",
            "events": ["file.deleted", "task.failed"],
            "description": "b",
        })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(changed["url"], "https://hooks.example.test/b");
    assert_eq!(changed["events"], json!(["task.failed", "file.deleted"]));
    assert_eq!(changed["description"], "b");

    let (_, disabled) = call(
        &app,
        &app.client,
        Method::PATCH,
        &path,
        Some(json!({"enabled": false})),
    )
    .await;
    assert_eq!(disabled["enabled"], false);
    assert!(disabled["disabled_at"].is_string(), "{disabled}");
    assert_eq!(
        disabled["disabled_reason"],
        Value::Null,
        "disabled by its owner"
    );
    let (_, enabled) = call(
        &app,
        &app.client,
        Method::PATCH,
        &path,
        Some(json!({"enabled": true, "description": ""})),
    )
    .await;
    assert_eq!(enabled["enabled"], true);
    assert_eq!(enabled["disabled_at"], Value::Null);
    assert_eq!(enabled["description"], Value::Null);
    assert_eq!(
        enabled["url"], "https://hooks.example.test/b",
        "unchanged when not given"
    );

    // An endpoint that only validation hooks call takes no events (contract v1.3).
    let (status, none) = call(
        &app,
        &app.client,
        Method::PATCH,
        &path,
        Some(json!({"events": []})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{none}");
    assert_eq!(none["events"], json!([]));
    for bad in [
        json!({"events": ["task.started"]}),
        json!({"secret": "whsec_AAAA"}),
        json!({"description": "x".repeat(1025)}),
        // Postgres text cannot hold it (found by schemathesis: it was a 500).
        json!({"description": "a\u{0}b"}),
    ] {
        let (status, body) = call(&app, &app.client, Method::PATCH, &path, Some(bad.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert!(body["error"]["code"].is_string(), "{body}");
    }
    let (_, unchanged) = call(&app, &app.client, Method::GET, &path, None).await;
    assert_eq!(unchanged["description"], Value::Null, "{unchanged}");

    let (status, _) = call(&app, &app.client, Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = call(&app, &app.client, Method::GET, &path, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = call(&app, &app.client, Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_rotation_shows_a_new_secret_and_keeps_the_old_one_for_the_window() {
    let app = TestApp::spawn().await;
    let created = register(&app, "https://hooks.example.test/a").await;
    let id = created["id"].as_str().expect("id");
    let old =
        SigningSecret::from_whsec(created["secret"].as_str().expect("secret")).expect("secret");
    let before = chrono::Utc::now();
    let (status, rotated) = call(
        &app,
        &app.client,
        Method::POST,
        &format!("/api/v1/webhooks/{id}/secret/rotate"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    let new =
        SigningSecret::from_whsec(rotated["secret"].as_str().expect("secret")).expect("secret");
    assert_ne!(new, old);
    let until: chrono::DateTime<chrono::Utc> = rotated["previous_secret_expires_at"]
        .as_str()
        .expect("an end")
        .parse()
        .expect("RFC 3339");
    let window = until - before;
    assert!(
        window > chrono::Duration::hours(23)
            && window <= chrono::Duration::hours(24) + chrono::Duration::minutes(1),
        "{window}"
    );
    let (sealed, previous) = sealed_secrets(&app, id).await;
    assert_eq!(open(&app, id, &sealed), new);
    assert_eq!(open(&app, id, &previous.expect("the old one is kept")), old);
}

#[tokio::test]
async fn events_fan_out_to_the_enabled_endpoints_that_take_their_type() {
    let app = TestApp::spawn().await;
    let failed_only = register(&app, "https://hooks.example.test/failed").await;
    let (_, _) = call(
        &app,
        &app.client,
        Method::PATCH,
        &format!(
            "/api/v1/webhooks/{}",
            failed_only["id"].as_str().expect("id")
        ),
        Some(json!({"events": ["task.failed"]})),
    )
    .await;
    let (_, completed_only) = create(
        &app,
        &app.client,
        json!({"url": "https://hooks.example.test/completed", "events": ["task.completed"]}),
    )
    .await;
    let disabled = register(&app, "https://hooks.example.test/off").await;
    call(
        &app,
        &app.client,
        Method::PATCH,
        &format!("/api/v1/webhooks/{}", disabled["id"].as_str().expect("id")),
        Some(json!({"enabled": false})),
    )
    .await;
    let other = app.client_for("globex").await;
    let (_, theirs) = create(
        &app,
        &other,
        json!({"url": "https://hooks.example.test/theirs"}),
    )
    .await;

    let (task, _) = crate::events::upload_pending(&app, &app.client, "a.csv").await;
    crate::events::fail_task(&app.db, task).await;

    let endpoints: Vec<Uuid> = sqlx::query_scalar("SELECT endpoint_id FROM webhook_deliveries")
        .fetch_all(&app.db)
        .await
        .expect("deliveries");
    let id = |v: &Value| v["id"].as_str().expect("id").parse::<Uuid>().expect("uuid");
    assert_eq!(
        endpoints,
        [id(&failed_only)],
        "not {:?}",
        [id(&completed_only), id(&disabled), id(&theirs)]
    );
}

#[tokio::test]
async fn a_replay_queues_every_event_of_the_endpoints_types_since_a_time() {
    let app = TestApp::spawn().await;
    let mut tasks = Vec::new();
    for i in 0..4 {
        tasks.push(
            crate::events::upload_pending(&app, &app.client, &format!("f{i}.csv"))
                .await
                .0,
        );
    }
    crate::events::fail_task(&app.db, tasks[0]).await;
    let since = chrono::Utc::now();
    crate::events::fail_task(&app.db, tasks[1]).await;
    crate::events::fail_task(&app.db, tasks[2]).await;
    // Registered after those: it gets only what comes next...
    let endpoint = register(&app, "https://hooks.example.test/late").await;
    let id = endpoint["id"].as_str().expect("id");
    crate::events::fail_task(&app.db, tasks[3]).await;
    let count = |sql: &'static str| {
        let db = app.db.clone();
        async move {
            sqlx::query_scalar::<_, i64>(sql)
                .fetch_one(&db)
                .await
                .expect("count")
        }
    };
    assert_eq!(count("SELECT count(*) FROM webhook_deliveries").await, 1);
    sqlx::query("UPDATE webhook_deliveries SET status = 'DEAD', failures = 8")
        .execute(&app.db)
        .await
        .expect("mark the delivery dead");

    // ...until a replay since `since`: two older events, and the dead one again.
    let (status, body) = call(
        &app,
        &app.client,
        Method::POST,
        &format!("/api/v1/webhooks/{id}/replay"),
        Some(json!({"since": since})),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body, json!({"queued": 3}));
    assert_eq!(
        count("SELECT count(*) FROM webhook_deliveries WHERE status = 'PENDING' AND failures = 0")
            .await,
        3
    );
    let (status, _) = call(
        &app,
        &app.client,
        Method::POST,
        &format!("/api/v1/webhooks/{id}/replay"),
        Some(json!({"since": "yesterday"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn webhooks_need_the_sealing_key_and_stay_within_the_tenants_limit() {
    let app = TestApp::spawn_with(|c| {
        c.webhooks.keys.secret_key = None;
    })
    .await;
    let (status, body) = create(
        &app,
        &app.client,
        json!({"url": "https://hooks.example.test/a"}),
    )
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "webhooks_unavailable");

    let app = TestApp::spawn_with(|c| c.webhooks.max_endpoints = 1).await;
    register(&app, "https://hooks.example.test/a").await;
    let (status, body) = create(
        &app,
        &app.client,
        json!({"url": "https://hooks.example.test/b"}),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "too_many_webhooks");
}
