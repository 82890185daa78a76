//! Event Grid's `BlobCreated` events in their real schema: put on the events queue (Base64, as
//! Event Grid writes them, and plain JSON), each three times and in reverse order, posted to the
//! api as well, while two workers list the same container: one task per blob version. An event
//! for a blob deleted since, and a forged one (a wrong ETag, another account), import nothing.

use base64::Engine as _;
use harness::app::TestApp;
use harness::worker::{eventually, RunningWorker};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use shared::storage::QueueClient;

use super::{blob_created, blobs, call, create, files, put, settled, worker_config, WAIT};
use crate::destinations::container;

const CSV: &[u8] = b"id,name\n1,Ada\n2,Grace\n";

#[tokio::test]
async fn events_delivered_again_and_again_racing_listings_and_two_workers_give_one_task_each() {
    let app = TestApp::spawn().await;
    let (store, url, cs) = container(&app).await;
    let source = create(&app, &url, &cs, json!({"prefix": "drop/"})).await;
    let id = source["id"].as_str().expect("id").to_owned();
    let names: Vec<String> = (0..12).map(|i| format!("drop/file-{i:02}.csv")).collect();
    let mut events = Vec::new();
    for name in &names {
        let etag = put(&store, name, CSV).await;
        events.push(blob_created(&url, name, &etag, CSV.len()));
    }
    let queue = QueueClient::new(
        &app.config.storage,
        &format!("{}-src", app.config.storage.queue_name),
    )
    .expect("queue client");
    queue.ensure_exists().await.expect("the events queue");
    // Each event three times, newest first; every other one Base64 (Event Grid's encoding).
    for round in 0..3 {
        for (i, event) in events.iter().enumerate().rev() {
            let text = event.to_string();
            let body = if (i + round) % 2 == 0 {
                base64::engine::general_purpose::STANDARD.encode(text)
            } else {
                text
            };
            queue.send(&body).await.expect("enqueue an event");
        }
    }
    // The same events pushed to the api, twice.
    let path = format!("/api/v1/sources/{id}/events");
    for _ in 0..2 {
        let (status, body) =
            call(&app, Method::POST, &path, Some(Value::from(events.clone()))).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body, json!({"accepted": 12, "ignored": 0}));
    }
    // Two workers list, read the queue and import at once.
    let first = RunningWorker::start(worker_config(&app));
    let second = RunningWorker::start(worker_config(&app));
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let rows = settled(&app, &id, &refs).await;
    assert_eq!(rows.len(), 12, "{rows:?}");
    assert!(rows.iter().all(|b| b["status"] == "IMPORTED"), "{rows:?}");
    assert!(rows.iter().all(|b| b["found_by"] == "event"), "{rows:?}");
    let drained = tokio::time::timeout(
        WAIT,
        eventually(WAIT * 2, "the queue drained", || async {
            queue.approximate_length().await.unwrap_or(1) == 0
        }),
    )
    .await;
    assert!(
        drained.is_ok(),
        "left on the queue: {:?} {:?}",
        queue.approximate_length().await,
        queue.peek(32).await
    );
    let all = files(&app).await;
    assert_eq!(all.len(), 12, "one file per blob");
    let mut origins: Vec<String> = all
        .iter()
        .map(|f| f["origin"]["blob"].as_str().unwrap_or_default().to_owned())
        .collect();
    origins.sort();
    assert_eq!(origins, names);
    let tasks: i64 = sqlx::query_scalar("SELECT count(*) FROM tasks")
        .fetch_one(&app.db)
        .await
        .expect("count");
    assert_eq!(tasks, 12);
    first.stop().await;
    second.stop().await;
}

#[tokio::test]
async fn an_event_for_a_blob_gone_or_forged_imports_nothing() {
    let app = TestApp::spawn().await;
    let (store, url, cs) = container(&app).await;
    let source = create(&app, &url, &cs, json!({})).await;
    let id = source["id"].as_str().expect("id").to_owned();
    let etag = put(&store, "gone.csv", CSV).await;
    store.delete("gone.csv").await.expect("delete");
    let real = put(&store, "real.csv", CSV).await;
    let events = json!([
        blob_created(&url, "gone.csv", &etag, CSV.len()),
        // A forged ETag for a blob that is there: that version never existed.
        blob_created(&url, "real.csv", "0x8DEADBEEF", CSV.len()),
        // Another account's container of the same name.
        blob_created(
            &url.replace("devstoreaccount1", "otheraccount"),
            "real.csv",
            &real,
            CSV.len()
        ),
    ]);
    let (status, body) = call(
        &app,
        Method::POST,
        &format!("/api/v1/sources/{id}/events"),
        Some(events),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, json!({"accepted": 2, "ignored": 1}));
    // One listing pass only: a skipped row no pass sees is pruned when the next pass ends.
    let mut cfg = worker_config(&app);
    cfg.sources.poll_interval = std::time::Duration::from_secs(600);
    let w = RunningWorker::start(cfg);
    eventually(
        WAIT,
        "both events settled and the real blob listed",
        || async {
            let rows = blobs(&app, &id).await;
            let state = |etag: &str| {
                rows.iter()
                    .find(|b| b["etag"] == etag)
                    .map(|b| (b["status"].clone(), b["outcome"].clone()))
            };
            state(&etag) == Some((json!("SKIPPED"), json!("blob_gone")))
                && state("0x8DEADBEEF") == Some((json!("SKIPPED"), json!("blob_gone")))
                && state(&real).is_some_and(|(s, _)| s == "IMPORTED")
        },
    )
    .await;
    let all = files(&app).await;
    assert_eq!(
        all.len(),
        1,
        "only the real blob, found by listing: {all:?}"
    );
    assert_eq!(all[0]["origin"]["etag"], real.as_str());
    w.stop().await;
}
