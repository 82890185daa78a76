//! Small uploads travel inside their queue message, so the worker parses them without
//! downloading the blob; larger ones are downloaded. Proved by deleting the blobs before the
//! worker runs: the small file is still parsed, the large one fails as `source_missing`.

use std::time::Duration;

use harness::app::TestApp;
use harness::worker::{eventually_some, RunningWorker};
use reqwest::StatusCode;
use serde_json::{json, Value};
use shared::domain::ParseTaskPayload;

/// Uploads `content` as `name`; returns the task id and the file id.
async fn upload(app: &TestApp, name: &str, content: Vec<u8>) -> (String, String) {
    let resp = app.upload(name, content, None).await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let body: Value = resp.json().await.expect("upload body");
    (
        body["task"]["id"].as_str().expect("task id").to_owned(),
        body["source_file"]["id"]
            .as_str()
            .expect("file id")
            .to_owned(),
    )
}

#[tokio::test]
async fn a_small_file_is_parsed_from_its_message_and_a_large_one_from_its_blob() {
    let app = TestApp::spawn().await;
    let small = "id,city\n1,大阪\n2,\"Zürich, CH\"\n";
    let (small_task, small_file) = upload(&app, "small.csv", small.as_bytes().to_vec()).await;
    let mut large = String::from("id,pad\n");
    while large.len() <= ParseTaskPayload::INLINE_MAX {
        large.push_str("1,xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n");
    }
    let (large_task, _) = upload(&app, "large.csv", large.into_bytes()).await;

    let blobs = app.blob_names().await;
    assert_eq!(blobs.len(), 2, "both uploads are stored as blobs");
    for name in &blobs {
        app.blobs.delete(name).await.expect("delete blob");
    }

    let cfg = harness::worker::run_config(&app.config.database.url, app.config.storage.clone());
    let worker = RunningWorker::start(cfg);
    let status = |task: String| {
        let app = &app;
        async move {
            eventually_some(Duration::from_secs(30), "a final status", || async {
                let (_, t) = app.get_json(&format!("/api/v1/tasks/{task}")).await;
                matches!(t["status"].as_str(), Some("COMPLETED" | "FAILED")).then_some(t)
            })
            .await
        }
    };
    let small_done = status(small_task).await;
    let large_done = status(large_task).await;
    worker.stop().await;

    assert_eq!(small_done["status"], "COMPLETED", "{small_done}");
    let (_, page) = app
        .get_json(&format!("/api/v1/files/{small_file}/rows"))
        .await;
    assert_eq!(
        page["rows"],
        json!([
            {"index": 0, "values": [1, "大阪"]},
            {"index": 1, "values": [2, "Zürich, CH"]},
        ])
    );
    assert_eq!(large_done["status"], "FAILED", "{large_done}");
    assert_eq!(
        large_done["error"]["code"], "source_missing",
        "{large_done}"
    );
}
