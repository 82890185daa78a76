//! Blob sources (contract v1.3): made and refused over the api ([`api`]); blobs dropped into
//! an Azurite container found by listing and imported once each, with their outcomes in the
//! source's status ([`listing`]); Event Grid events in their real schema, duplicated, replayed
//! and reordered, on the events queue and posted to the api, racing listings and two workers,
//! still one task per blob version ([`events`]); a worker killed mid-way, still one each
//! ([`killed`]). Real Postgres, Azurite, api and worker.

mod api;
mod events;
mod killed;
mod listing;

use std::time::Duration;

use futures::stream;
use harness::app::TestApp;
use harness::worker::{eventually_some, run_config, RunningWorker};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use shared::storage::BlobStore;

const WAIT: Duration = Duration::from_secs(40);

/// `method path` with a JSON body (or none) as the default tenant: status and body.
async fn call(
    app: &TestApp,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    crate::webhooks::call(app, &app.client, method, path, body).await
}

/// Creates a source on `url` (opened with the connection string `cs`) with `extra` settings;
/// its `201` body.
async fn create(app: &TestApp, url: &str, cs: &str, extra: Value) -> Value {
    let mut body = json!({"kind": "azure_blob", "container_url": url,
                          "credential": {"connection_string": cs}});
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    let (status, created) = call(app, Method::POST, "/api/v1/sources", Some(body)).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    created
}

/// Writes `bytes` as the blob `name`; its ETag.
pub(crate) async fn put(store: &BlobStore, name: &str, bytes: &[u8]) -> String {
    let body = stream::iter([Ok::<_, std::convert::Infallible>(bytes::Bytes::from(
        bytes.to_vec(),
    ))]);
    store
        .upload(name, "application/octet-stream", body)
        .await
        .expect("write a blob");
    store
        .properties(name)
        .await
        .expect("properties")
        .expect("the blob")
        .etag
        .trim_matches('"')
        .to_owned()
}

/// The source's blobs as `/blobs` lists them.
async fn blobs(app: &TestApp, source: &str) -> Vec<Value> {
    let (status, body) = call(
        app,
        Method::GET,
        &format!("/api/v1/sources/{source}/blobs?limit=1000"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["blobs"].as_array().cloned().unwrap_or_default()
}

/// Waits until every one of `names` has a finished row (IMPORTED or SKIPPED); the rows.
async fn settled(app: &TestApp, source: &str, names: &[&str]) -> Vec<Value> {
    eventually_some(WAIT, "the blobs are imported or skipped", || async {
        let all = blobs(app, source).await;
        let done = names.iter().all(|n| {
            all.iter()
                .any(|b| b["blob"] == *n && (b["status"] == "IMPORTED" || b["status"] == "SKIPPED"))
        });
        done.then_some(all)
    })
    .await
}

/// The tenant's files, newest first.
async fn files(app: &TestApp) -> Vec<Value> {
    let (status, body) = call(app, Method::GET, "/api/v1/files?limit=1000", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["files"].as_array().cloned().unwrap_or_default()
}

/// A worker with every loop.
fn worker(app: &TestApp) -> RunningWorker {
    RunningWorker::start(worker_config(app))
}

fn worker_config(app: &TestApp) -> worker::config::RunConfig {
    run_config(&app.config.database.url, app.config.storage.clone())
}

/// `name` percent-encoded as a blob URL's path writes it (`/` kept).
fn encoded(name: &str) -> String {
    name.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A `BlobCreated` event of the blob `name` in `container_url`, in Event Grid's own schema.
fn blob_created(container_url: &str, name: &str, etag: &str, size: usize) -> Value {
    json!({
        "topic": "/subscriptions/0/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/devstoreaccount1",
        "subject": format!("/blobServices/default/containers/drop/blobs/{name}"),
        "eventType": "Microsoft.Storage.BlobCreated",
        "id": uuid::Uuid::new_v4().to_string(),
        "eventTime": "2026-11-28T12:00:00.0000000Z",
        "dataVersion": "",
        "metadataVersion": "1",
        "data": {
            "api": "PutBlob",
            "clientRequestId": uuid::Uuid::new_v4().to_string(),
            "requestId": uuid::Uuid::new_v4().to_string(),
            "eTag": format!("\"{etag}\""),
            "contentType": "text/csv",
            "contentLength": size,
            "blobType": "BlockBlob",
            "url": format!("{container_url}/{}", encoded(name)),
            "sequencer": "00000000000000000000000000005B4F0000000000000001",
            "storageDiagnostics": {"batchId": "b68529f3-68cd-4744-baa4-3c0498ec19f0"}
        }
    })
}
