//! The stream: events as Server-Sent Events the moment they commit, a `Last-Event-ID` resume
//! after a dropped connection that misses nothing and repeats nothing, keep-alive comments,
//! one tenant's events only, and a bounded number of streams.

use std::time::Duration;

use harness::app::TestApp;
use reqwest::StatusCode;
use uuid::Uuid;

use super::sse::{Item, SseReader};
use super::{fail_task, upload_pending};

const WAIT: Duration = Duration::from_secs(10);

async fn open(app: &TestApp, client: &reqwest::Client, last_event_id: Option<&str>) -> SseReader {
    let mut req = client.get(app.url("/api/v1/events/stream"));
    if let Some(id) = last_event_id {
        req = req.header("Last-Event-ID", id);
    }
    let resp = req.send().await.expect("open the stream");
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    SseReader::new(resp)
}

/// Waits until the default tenant opens a stream again, once one of its streams closed (the
/// server learns of it at its next keep-alive write).
async fn place_is_free_again(app: &TestApp) {
    harness::worker::eventually(WAIT, "the closed stream's place is free", || async {
        app.client
            .get(app.url("/api/v1/events/stream"))
            .send()
            .await
            .is_ok_and(|r| r.status() == StatusCode::OK)
    })
    .await;
}

#[tokio::test]
async fn a_stream_resumed_after_a_dropped_connection_misses_and_repeats_nothing() {
    let app = TestApp::spawn().await;
    let mut tasks = Vec::new();
    for i in 0..5 {
        tasks.push(
            upload_pending(&app, &app.client, &format!("f{i}.csv"))
                .await
                .0,
        );
    }
    let other = app.client_for("globex").await;
    let (theirs, _) = upload_pending(&app, &other, "theirs.csv").await;
    // A stream without Last-Event-ID starts with the next event: this one is not on it.
    fail_task(&app.db, tasks[0]).await;

    let mut stream = open(&app, &app.client, None).await;
    fail_task(&app.db, theirs).await;
    fail_task(&app.db, tasks[1]).await;
    let (id, event, data) = stream.next_event(WAIT).await;
    assert_eq!(event, "task.failed");
    assert_eq!(data["id"], id.as_str(), "the id line is the event's id");
    assert_eq!(data["type"], "task.failed");
    assert_eq!(data["data"]["task_id"], tasks[1].to_string());
    assert_eq!(data["data"]["status"], "FAILED");
    let last_seen = id;

    // The connection drops; two events commit meanwhile.
    drop(stream);
    fail_task(&app.db, tasks[2]).await;
    fail_task(&app.db, tasks[3]).await;
    let mut resumed = open(&app, &app.client, Some(&last_seen)).await;
    fail_task(&app.db, tasks[4]).await;
    let mut got = Vec::new();
    for _ in 0..3 {
        let (_, _, data) = resumed.next_event(WAIT).await;
        got.push(
            data["data"]["task_id"]
                .as_str()
                .expect("task id")
                .parse::<Uuid>()
                .expect("uuid"),
        );
    }
    assert_eq!(
        got,
        tasks[2..5],
        "the missed two, then the live one, in order"
    );

    // Nothing more: only keep-alives, no repeat and nothing of the other tenant's.
    let quiet = tokio::time::timeout(Duration::from_millis(500), resumed.next(WAIT)).await;
    assert!(
        !matches!(quiet, Ok(Some(Item::Event { .. }))),
        "unexpected: {quiet:?}"
    );
}

#[tokio::test]
async fn an_idle_stream_sends_keep_alive_comments() {
    let app = TestApp::spawn_with(|c| c.events.keepalive = Duration::from_millis(200)).await;
    let mut stream = open(&app, &app.client, None).await;
    for _ in 0..2 {
        assert_eq!(
            stream.next(WAIT).await,
            Some(Item::Comment("keep-alive".into()))
        );
    }
}

#[tokio::test]
async fn a_stream_refuses_an_unknown_resume_point_and_past_its_limit() {
    // A short keep-alive: a write is how the server learns that a client went away.
    let app = TestApp::spawn_with(|c| {
        c.events.max_streams = 1;
        c.events.keepalive = Duration::from_millis(200);
    })
    .await;
    let resp = app
        .client
        .get(app.url("/api/v1/events/stream"))
        .header("Last-Event-ID", Uuid::new_v4().to_string())
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), StatusCode::GONE);
    let resp = app
        .client
        .get(app.url("/api/v1/events/stream"))
        .header("Last-Event-ID", "42")
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);

    let first = open(&app, &app.client, None).await;
    let resp = app
        .client
        .get(app.url("/api/v1/events/stream"))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: serde_json::Value = resp.json().await.expect("json");
    assert_eq!(body["error"]["code"], "too_many_streams");
    // Its place is given back when it closes.
    drop(first);
    place_is_free_again(&app).await;
}

#[tokio::test]
async fn one_tenant_cannot_hold_every_stream_of_the_server() {
    let app = TestApp::spawn_with(|c| {
        c.events.max_streams = 4;
        c.events.max_streams_per_tenant = 2;
        c.events.keepalive = Duration::from_millis(200);
    })
    .await;
    let status_of_another = |client: reqwest::Client| {
        let url = app.url("/api/v1/events/stream");
        async move {
            let resp = client.get(url).send().await.expect("request");
            let status = resp.status();
            let body: serde_json::Value = if status == StatusCode::OK {
                serde_json::Value::Null
            } else {
                resp.json().await.expect("json")
            };
            (status, body["error"]["code"].as_str().map(str::to_owned))
        }
    };
    let first = open(&app, &app.client, None).await;
    let _second = open(&app, &app.client, None).await;
    // The tenant is at its share: its next stream is refused, as too many requests of its own...
    assert_eq!(
        status_of_another(app.client.clone()).await,
        (
            StatusCode::TOO_MANY_REQUESTS,
            Some("too_many_streams".to_owned())
        )
    );
    // ...while another tenant still gets one, for the server has places left.
    let other = app.client_for("globex").await;
    let _theirs = open(&app, &other, None).await;
    // A place the tenant gives back is its own again.
    drop(first);
    place_is_free_again(&app).await;
}
