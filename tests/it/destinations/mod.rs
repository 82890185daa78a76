//! Destinations (contract v1.3): made and refused over the api ([`api`]), a templated upload
//! written into an Azurite container as Parquet with its manifest, read back by pyarrow and
//! written again with the same bytes ([`blob`]), and rows posted in order to a real receiver,
//! signed, resumed at the right chunk ([`rows`]). Real Postgres, Azurite, api and worker.

mod api;
mod blob;
mod rows;

use std::time::Duration;

use harness::app::TestApp;
use harness::worker::{eventually_some, run_config, RunningWorker};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use shared::storage::{BlobStore, StorageConfig};

const WAIT: Duration = Duration::from_secs(30);

/// `method path` with a JSON body (or none) as the default tenant: status and body.
async fn call(
    app: &TestApp,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    crate::webhooks::call(app, &app.client, method, path, body).await
}

/// Creates a destination; its `201` body.
async fn create(app: &TestApp, body: Value) -> Value {
    let (status, created) = call(app, Method::POST, "/api/v1/destinations", Some(body)).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    created
}

/// A fresh container in the tests' Azurite, created: its client, its path-style URL, and the
/// connection string that opens it.
pub(crate) async fn container(app: &TestApp) -> (BlobStore, String, String) {
    let cs = app
        .config
        .storage
        .connection_string
        .clone()
        .expect("a connection string");
    let endpoint = shared::storage::ConnectionString::parse(&cs)
        .expect("parses")
        .blob_endpoint;
    let name = format!("dest-{}", uuid::Uuid::new_v4().simple());
    let store = BlobStore::new(&StorageConfig::from_connection_string(
        cs.clone(),
        name.clone(),
        "",
    ))
    .expect("a blob client");
    store
        .ensure_container()
        .await
        .expect("create the container");
    (
        store,
        format!("{}/{name}", endpoint.as_str().trim_end_matches('/')),
        cs,
    )
}

/// The `people` template: an integer id and a name.
pub(crate) async fn people_template(app: &TestApp) {
    let template = json!({"schema": {"fields": [{"name": "id", "type": "integer"},
                                                {"name": "name", "type": "string"}]}});
    let (status, body) = app.put_json("/api/v1/templates/people", &template).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

/// Uploads `csv` (with `fields`), the upload's body.
async fn upload(app: &TestApp, name: &str, csv: &str, fields: &[(&str, &str)]) -> Value {
    let resp = app.upload_with(name, csv.as_bytes().to_vec(), fields).await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    resp.json().await.expect("upload body")
}

/// A worker with every loop, its retry schedule `schedule`.
fn worker(app: &TestApp, schedule: &str) -> RunningWorker {
    let mut cfg = run_config(&app.config.database.url, app.config.storage.clone());
    cfg.webhooks.retry_schedule =
        worker::webhooks::RetrySchedule::parse(schedule).expect("a schedule");
    RunningWorker::start(cfg)
}

/// The destination's deliveries.
async fn deliveries(app: &TestApp, destination: &str) -> Vec<Value> {
    let (status, body) = call(
        app,
        Method::GET,
        &format!("/api/v1/destinations/{destination}/deliveries"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["deliveries"].as_array().cloned().unwrap_or_default()
}

/// Waits until the file's delivery to the destination has `status` (and `attempts`, if
/// given); the delivery.
async fn delivery_in(
    app: &TestApp,
    destination: &str,
    file: &str,
    status: &str,
    attempts: Option<i64>,
) -> Value {
    eventually_some(WAIT, &format!("the delivery is {status}"), || async {
        deliveries(app, destination).await.into_iter().find(|d| {
            d["file_id"] == file
                && d["status"] == status
                && attempts.is_none_or(|n| d["attempts"].as_i64() == Some(n))
        })
    })
    .await
}

/// The sheet's rows as the rows endpoint gives them.
async fn rows_of(app: &TestApp, file: &str) -> Vec<Value> {
    let (status, page) = app
        .get_json(&format!("/api/v1/files/{file}/rows?limit=1000"))
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    page["rows"].as_array().cloned().unwrap_or_default()
}

/// How many destinations the database holds, any tenant's.
async fn destinations_stored(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM destinations")
        .fetch_one(&app.db)
        .await
        .expect("count")
}

/// The tenant's `file.delivered` event in the feed (there is one).
async fn delivered_event(app: &TestApp) -> Value {
    let (_, feed) = app.get_json("/api/v1/events?limit=1000").await;
    feed["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["type"] == "file.delivered")
        .cloned()
        .expect("a file.delivered event")
}
