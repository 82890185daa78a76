//! An endpoint that is an Azure Event Grid topic (`"event_grid": {"key"}`): each event goes as a
//! CloudEvents 1.0 event in the structured JSON mode with the topic's key in `aeg-sas-key`, as a
//! topic whose input schema is CloudEvents takes it. Read back by the CloudEvents SDK for Python
//! (the reference a topic's consumers use) and compared with the same event sent to a Standard
//! Webhooks endpoint beside it. The key is sealed and never shown.

use std::time::Duration;

use harness::app::TestApp;
use harness::receiver::Receiver;
use harness::worker::{run_config, RunningWorker};
use reqwest::{Method, StatusCode};
use serde_json::json;

use super::verifiers::{python, verdicts};
use super::{call, create, register};
use crate::events::{fail_task, upload_pending};

const WAIT: Duration = Duration::from_secs(20);
/// What an Event Grid access key looks like: 44 characters of base64.
const KEY: &str = "c2hlZXRyZWxheS1ldmVudC1ncmlkLXRvcGljLWtleQ==";

#[tokio::test]
async fn an_event_grid_topic_gets_cloudevents_with_its_key_that_the_sdk_reads() {
    let app = TestApp::spawn().await;
    let plain = Receiver::start().await;
    let topic = Receiver::start().await;
    register(&app, &plain.url()).await;
    let (status, created) = create(
        &app,
        &app.client,
        json!({"url": topic.url(), "event_grid": {"key": KEY}}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["event_grid"], true, "{created}");
    assert!(!created.to_string().contains(KEY), "{created}");
    let id = created["id"].as_str().expect("id").to_owned();
    let (_, shown) = call(
        &app,
        &app.client,
        Method::GET,
        &format!("/api/v1/webhooks/{id}"),
        None,
    )
    .await;
    assert_eq!(shown["event_grid"], true, "{shown}");
    assert!(!shown.to_string().contains(KEY), "{shown}");

    let worker = RunningWorker::start(run_config(
        &app.config.database.url,
        app.config.storage.clone(),
    ));
    let (task, _) = upload_pending(&app, &app.client, "a.csv").await;
    fail_task(&app.db, task).await;
    let sent = topic.wait_for(1, WAIT).await;
    let reference = plain.wait_for(1, WAIT).await;
    worker.stop().await;
    let (r, webhook) = (&sent[0], reference[0].json());
    assert_eq!(r.header("aeg-sas-key"), KEY);
    assert_eq!(
        r.header("content-type"),
        "application/cloudevents+json; charset=utf-8"
    );
    let cases = json!([{
        "headers": {"content-type": r.header("content-type")},
        "body": std::str::from_utf8(&r.body).expect("UTF-8"),
    }]);
    let verdict = &verdicts(&python(), "cloudevents_read.py", &cases).await[0];
    assert_eq!(verdict["ok"], true, "{verdict}");
    let attributes = &verdict["attributes"];
    assert_eq!(attributes["specversion"], "1.0", "{verdict}");
    assert_eq!(attributes["type"], webhook["type"], "{verdict}");
    assert_eq!(attributes["id"], webhook["id"], "{verdict}");
    assert_eq!(
        attributes["source"],
        format!("/sheetrelay/webhooks/{id}"),
        "{verdict}"
    );
    assert_eq!(attributes["datacontenttype"], "application/json");
    let time = chrono::DateTime::parse_from_rfc3339(attributes["time"].as_str().expect("time"))
        .expect("an RFC 3339 time");
    let timestamp =
        chrono::DateTime::parse_from_rfc3339(webhook["timestamp"].as_str().expect("timestamp"))
            .expect("an RFC 3339 timestamp");
    assert_eq!(time, timestamp);
    assert_eq!(verdict["data"], webhook["data"], "{verdict}");
    // Signed too, as every endpoint's request is.
    assert_eq!(r.header("webhook-id"), webhook["id"].as_str().expect("id"));

    // A key that is not one is refused; `null` makes the endpoint a Standard Webhooks one again.
    let path = format!("/api/v1/webhooks/{id}");
    let (status, refused) = call(
        &app,
        &app.client,
        Method::PATCH,
        &path,
        Some(json!({"event_grid": {"key": "two words"}})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert_eq!(refused["error"]["code"], "invalid_parameter", "{refused}");
    let (status, changed) = call(
        &app,
        &app.client,
        Method::PATCH,
        &path,
        Some(json!({"event_grid": null})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(changed["event_grid"], false, "{changed}");
}
