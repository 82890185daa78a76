//! Upload metadata (contract v1.3): a JSON object of at most 4 KiB given with an upload, stored
//! with the file, shown in its view and carried in every event about it; anything else refused
//! with `422 invalid_metadata` and nothing stored.

use harness::app::{code_of, TestApp, UploadRows};
use reqwest::StatusCode;
use serde_json::{json, Value};

const CSV: &[u8] = b"id,name\n1,Ada\n2,Grace\n";

/// The feed's events about file `id`.
async fn events_of(app: &TestApp, id: &str) -> Vec<Value> {
    let (status, page) = app.get_json("/api/v1/events?limit=100").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    page["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["source_file_id"] == id || e["data"]["source_file_id"] == id)
        .cloned()
        .collect()
}

#[tokio::test]
async fn metadata_is_stored_shown_and_carried_in_every_event_of_its_file() {
    let app = TestApp::spawn().await;
    let metadata = json!({"customer_id": 4711, "batch": "2026-11", "tags": ["a", "b"]});
    let resp = app
        .upload_with(
            "people.csv",
            CSV.to_vec(),
            &[("metadata", &metadata.to_string())],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let upload: Value = resp.json().await.expect("upload body");
    assert_eq!(upload["source_file"]["metadata"], metadata);
    assert_eq!(upload["source_file"]["end_user"], Value::Null);
    let id = upload["source_file"]["id"].as_str().expect("id").to_owned();
    app.run_worker_until_completed(upload["task"]["id"].as_str().expect("task id"))
        .await;

    let (_, file) = app.get_json(&format!("/api/v1/files/{id}")).await;
    assert_eq!(file["metadata"], metadata);
    assert_eq!(file["end_user"], Value::Null);
    let (_, list) = app.get_json("/api/v1/files").await;
    assert_eq!(list["files"][0]["metadata"], metadata);

    let completed = events_of(&app, &id).await;
    assert_eq!(completed.len(), 1, "{completed:?}");
    assert_eq!(completed[0]["type"], "task.completed");
    assert_eq!(completed[0]["data"]["metadata"], metadata);
    assert_eq!(completed[0]["data"]["end_user"], Value::Null);

    // The deletion's event carries it too: the file is gone, the receiver still knows whose.
    let resp = app
        .client
        .delete(app.url(&format!("/api/v1/files/{id}")))
        .send()
        .await
        .expect("delete");
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    let events = events_of(&app, &id).await;
    let deleted = events
        .iter()
        .find(|e| e["type"] == "file.deleted")
        .expect("a file.deleted event");
    assert_eq!(deleted["data"]["metadata"], metadata);

    // A file uploaded without metadata shows null, in its view and its events.
    let plain = app.upload_parsed("plain.csv", CSV.to_vec()).await;
    let (_, file) = app.get_json(&format!("/api/v1/files/{plain}")).await;
    assert_eq!(file["metadata"], Value::Null);
    let events = events_of(&app, &plain).await;
    assert_eq!(events[0]["data"]["metadata"], Value::Null);
}

#[tokio::test]
async fn metadata_that_is_not_a_small_json_object_is_refused_and_nothing_is_stored() {
    let app = TestApp::spawn().await;
    let big = json!({"k": "x".repeat(4089)}).to_string();
    let at_bound = json!({"k": "x".repeat(4088)}).to_string();
    assert_eq!(at_bound.len(), 4096);
    for bad in [
        r#"{"nul": "a\u0000b"}"#,
        "[1, 2]",
        "\"text\"",
        "{\"unclosed\": ",
        "null",
        big.as_str(),
    ] {
        let resp = app
            .upload_with("bad.csv", CSV.to_vec(), &[("metadata", bad)])
            .await;
        assert_eq!(
            code_of(resp).await,
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_metadata".into()),
            "{bad:.40}"
        );
    }
    assert_eq!(app.upload_rows().await, UploadRows::each(0));
    assert!(
        app.blob_names().await.is_empty(),
        "no blob of a refused upload"
    );

    // After the file part, the metadata would come too late to store with it.
    let form = reqwest::multipart::Form::new()
        .part(
            "file",
            reqwest::multipart::Part::bytes(CSV.to_vec()).file_name("late.csv"),
        )
        .text("metadata", "{}");
    let resp = app
        .client
        .post(app.url("/api/v1/files"))
        .multipart(form)
        .send()
        .await
        .expect("upload");
    assert_eq!(
        code_of(resp).await,
        (StatusCode::BAD_REQUEST, "misplaced_part".into())
    );

    // Exactly 4 KiB is accepted.
    let resp = app
        .upload_with("edge.csv", CSV.to_vec(), &[("metadata", &at_bound)])
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
}
