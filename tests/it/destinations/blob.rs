//! `azure_blob` into a real Azurite container: a templated upload's sheet as Parquet under
//! `<prefix><template>/<file_id>/0.parquet` with `manifest.json` beside it, read back by
//! pyarrow and equal to the rows endpoint, the manifest's digests recomputed, the same bytes
//! after a redelivery, a `file.delivered` event, the template filter respected; and a missing
//! container retried with its error shown until it exists.

use harness::app::TestApp;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};
use shared::storage::BlobStore;

use super::{call, container, create, delivery_in, people_template, rows_of, upload, worker};

const CSV: &str = "id,name\n1,Ada\n2,Grace\n3,=1+1\n";

async fn download(store: &BlobStore, name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    store.download_to(name, &mut out).await.expect("download");
    out
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[tokio::test]
async fn a_templated_upload_lands_as_parquet_with_its_manifest_and_again_with_the_same_bytes() {
    let app = TestApp::spawn().await;
    people_template(&app).await;
    let (store, url, cs) = container(&app).await;
    let dest = create(
        &app,
        json!({"kind": "azure_blob", "container_url": url, "prefix": "imports/",
               "credential": {"connection_string": cs},
               "templates": ["people"]}),
    )
    .await;
    let dest_id = dest["id"].as_str().expect("id").to_owned();
    let templated = upload(&app, "people.csv", CSV, &[("template", "people")]).await;
    let plain = upload(&app, "plain.csv", CSV, &[]).await;
    let file = templated["source_file"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let w = worker(&app, "200ms,400ms,800ms");
    let delivered = delivery_in(&app, &dest_id, &file, "DELIVERED", Some(1)).await;
    assert_eq!(delivered["error"], Value::Null);

    let folder = format!("imports/people/{file}");
    let mut names = store.list_names().await.expect("list");
    names.sort();
    assert_eq!(
        names,
        [
            format!("{folder}/0.parquet"),
            format!("{folder}/manifest.json")
        ]
    );
    let parquet = download(&store, &format!("{folder}/0.parquet")).await;
    let manifest: Value =
        serde_json::from_slice(&download(&store, &format!("{folder}/manifest.json")).await)
            .expect("a JSON manifest");
    assert_eq!(manifest["file_id"], file.as_str());
    assert_eq!(manifest["task_id"], templated["task"]["id"]);
    assert_eq!(
        (&manifest["template"], &manifest["revision"]),
        (&json!("people"), &json!(0))
    );
    let sheet = &manifest["sheets"][0];
    assert_eq!(sheet["path"], format!("{folder}/0.parquet"));
    assert_eq!(sheet["rows"], 3);
    assert_eq!(sheet["bytes"].as_u64(), Some(parquet.len() as u64));
    assert_eq!(
        sheet["sha256"],
        sha256_hex(&parquet),
        "the digest recomputed"
    );

    // pyarrow reads what the rows endpoint serves, typed.
    let read = crate::parquet::read(&parquet);
    assert_eq!(
        read["columns"],
        json!([["id", "int64"], ["name", "string"]])
    );
    let served: Vec<Value> = rows_of(&app, &file)
        .await
        .into_iter()
        .map(|r| r["values"].clone())
        .collect();
    assert_eq!(read["rows"].as_array().expect("rows"), &served);
    assert_eq!(served[2], json!([3, "=1+1"]));
    let export = app
        .client
        .get(app.url(&format!("/api/v1/files/{file}/rows/export?format=parquet")))
        .send()
        .await
        .expect("export");
    assert_eq!(
        export.bytes().await.expect("body").to_vec(),
        parquet,
        "the export's bytes"
    );

    // The event, with the manifest.
    let event = super::delivered_event(&app).await;
    assert_eq!(event["data"]["destination_id"], dest_id.as_str());
    assert_eq!(event["data"]["source_file_id"], file.as_str());
    assert_eq!(event["data"]["manifest"], manifest);

    // Delivered again: the same bytes under the same names.
    let (status, body) = call(
        &app,
        Method::POST,
        &format!("/api/v1/destinations/{dest_id}/redeliver"),
        Some(json!({"file_id": file})),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    delivery_in(&app, &dest_id, &file, "DELIVERED", Some(2)).await;
    w.stop().await;
    assert_eq!(
        download(&store, &format!("{folder}/0.parquet")).await,
        parquet
    );
    let again: Value =
        serde_json::from_slice(&download(&store, &format!("{folder}/manifest.json")).await)
            .expect("manifest");
    assert_eq!(again, manifest);
    // The untemplated file was not for this destination.
    let plain_id = plain["source_file"]["id"].as_str().expect("id");
    let listed = super::deliveries(&app, &dest_id).await;
    assert!(
        listed.iter().all(|d| d["file_id"] != plain_id),
        "{listed:?}"
    );
    assert_eq!(listed.len(), 1);
}

#[tokio::test]
async fn a_missing_container_is_retried_with_its_error_shown_until_it_exists() {
    let app = TestApp::spawn().await;
    let (store, url, cs) = container(&app).await;
    let missing = format!("{url}x");
    let dest = create(
        &app,
        json!({"kind": "azure_blob", "container_url": missing, "format": "csv",
               "credential": {"connection_string": cs}}),
    )
    .await;
    let dest_id = dest["id"].as_str().expect("id").to_owned();
    let up = upload(&app, "plain.csv", CSV, &[]).await;
    let file = up["source_file"]["id"].as_str().expect("id").to_owned();
    let w = worker(
        &app,
        "300ms,300ms,300ms,300ms,300ms,300ms,300ms,300ms,300ms,300ms",
    );
    let failed = delivery_in(&app, &dest_id, &file, "FAILED", None).await;
    assert!(
        failed["error"]
            .as_str()
            .is_some_and(|e| e.contains("ContainerNotFound")),
        "{failed}"
    );
    let missing_store = BlobStore::new(&shared::storage::StorageConfig::from_connection_string(
        cs,
        format!("{}x", store.container_name()),
        "",
    ))
    .expect("client");
    missing_store
        .ensure_container()
        .await
        .expect("create it now");
    let done = delivery_in(&app, &dest_id, &file, "DELIVERED", None).await;
    w.stop().await;
    assert!(done["attempts"].as_i64().is_some_and(|n| n >= 2), "{done}");
    let csv = download(&missing_store, &format!("untemplated/{file}/0.csv")).await;
    // The export's bytes, formula-safe as the export is.
    let (status, export) = app
        .get_text(&format!("/api/v1/files/{file}/rows/export?format=csv"))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(String::from_utf8(csv).expect("utf-8"), export);
    assert!(export.contains("'=1+1"), "{export}");
}

#[tokio::test]
async fn a_destination_failing_for_its_disable_time_is_disabled_and_says_so() {
    let app = TestApp::spawn().await;
    let (_store, url, cs) = container(&app).await;
    let dest = create(
        &app,
        json!({"kind": "azure_blob", "container_url": format!("{url}-gone"),
               "credential": {"connection_string": cs}}),
    )
    .await;
    let dest_id = dest["id"].as_str().expect("id").to_owned();
    upload(&app, "plain.csv", CSV, &[]).await;
    let mut cfg = harness::worker::run_config(&app.config.database.url, app.config.storage.clone());
    cfg.webhooks.retry_schedule =
        worker::webhooks::RetrySchedule::parse("200ms,200ms,200ms,200ms,200ms,200ms,200ms,200ms")
            .expect("a schedule");
    cfg.destinations.disable_after = std::time::Duration::from_millis(500);
    let w = harness::worker::RunningWorker::start(cfg);
    let path = format!("/api/v1/destinations/{dest_id}");
    let disabled = harness::worker::eventually_some(super::WAIT, "disabled", || async {
        let (_, d) = call(&app, Method::GET, &path, None).await;
        (d["disabled_reason"] == "failing").then_some(d)
    })
    .await;
    w.stop().await;
    assert_eq!(disabled["enabled"], false);
    assert!(disabled["failing_since"].is_string() && disabled["disabled_at"].is_string());
}
