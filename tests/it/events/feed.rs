//! The feed: a tenant's events in commit order, paged by an event id, and never skipping an
//! event that commits after a later one was read.

use harness::app::TestApp;
use reqwest::StatusCode;
use serde_json::Value;
use shared::db;
use uuid::Uuid;

use super::{fail_task, upload_pending};

fn ids(page: &Value) -> Vec<String> {
    page["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["id"].as_str().expect("id").to_owned())
        .collect()
}

#[tokio::test]
async fn the_feed_pages_through_a_tenants_events_in_commit_order() {
    let app = TestApp::spawn().await;
    let (status, empty) = app.get_json("/api/v1/events").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(empty, serde_json::json!({"events": [], "next_after": null}));

    let mut tasks = Vec::new();
    for i in 0..5 {
        let (task, _) = upload_pending(&app, &app.client, &format!("f{i}.csv")).await;
        tasks.push(task);
    }
    let other = app.client_for("globex").await;
    let (theirs, _) = upload_pending(&app, &other, "theirs.csv").await;
    for task in &tasks {
        fail_task(&app.db, *task).await;
    }
    fail_task(&app.db, theirs).await;

    let mut seen = Vec::new();
    let mut path = "/api/v1/events?limit=2".to_owned();
    loop {
        let (status, page) = app.get_json(&path).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let page_ids = ids(&page);
        assert!(page_ids.len() <= 2);
        for e in page["events"].as_array().expect("events") {
            assert_eq!(e["type"], "task.failed");
            seen.push(
                e["data"]["task_id"]
                    .as_str()
                    .expect("task id")
                    .parse::<Uuid>()
                    .expect("uuid"),
            );
        }
        let next = page["next_after"].as_str().expect("next_after").to_owned();
        if page_ids.is_empty() {
            // The end: the cursor stays where it was, to poll again with.
            assert!(path.ends_with(&next), "{path} {next}");
            break;
        }
        assert_eq!(page_ids.last(), Some(&next));
        path = format!("/api/v1/events?limit=2&after={next}");
    }
    assert_eq!(seen, tasks, "all five in order, none of the other tenant's");

    // The other tenant's cursor is unknown here, and so is one that never existed.
    let (_, theirs_page) = app.get_json("/api/v1/events").await;
    let (_, globex) = {
        let resp = other
            .get(app.url("/api/v1/events"))
            .send()
            .await
            .expect("feed");
        (resp.status(), resp.json::<Value>().await.expect("json"))
    };
    assert_eq!(ids(&globex).len(), 1);
    assert_eq!(ids(&theirs_page).len(), 5);
    for cursor in [ids(&globex)[0].clone(), Uuid::new_v4().to_string()] {
        let (status, body) = app
            .get_json(&format!("/api/v1/events?after={cursor}"))
            .await;
        assert_eq!(status, StatusCode::GONE, "{body}");
        assert_eq!(body["error"]["code"], "unknown_cursor");
    }
    for bad in ["limit=0", "limit=1001", "after=not-an-id"] {
        let (status, body) = app.get_json(&format!("/api/v1/events?{bad}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }
}

#[tokio::test]
async fn an_event_that_commits_after_a_later_one_is_not_skipped() {
    let app = TestApp::spawn().await;
    let (first, _) = upload_pending(&app, &app.client, "first.csv").await;
    let (second, _) = upload_pending(&app, &app.client, "second.csv").await;

    // The first failure is written, but its transaction stays open...
    let mut slow = app.db.begin().await.expect("begin");
    assert!(db::tasks::fail(
        &mut *slow,
        first,
        None,
        shared::domain::TaskErrorCode::InvalidMessage,
        "slow",
        None
    )
    .await
    .expect("fail"));
    // ...while the second commits and is read.
    fail_task(&app.db, second).await;
    let (_, page) = app.get_json("/api/v1/events").await;
    assert_eq!(page["events"].as_array().map(Vec::len), Some(1), "{page}");
    assert_eq!(page["events"][0]["data"]["task_id"], second.to_string());
    let cursor = page["next_after"].as_str().expect("cursor").to_owned();

    // Once the first commits, a reader at the cursor still gets it.
    slow.commit().await.expect("commit");
    let (_, page) = app
        .get_json(&format!("/api/v1/events?after={cursor}"))
        .await;
    assert_eq!(page["events"].as_array().map(Vec::len), Some(1), "{page}");
    assert_eq!(page["events"][0]["data"]["task_id"], first.to_string());
}

#[tokio::test]
async fn the_openapi_document_describes_the_feed_and_the_stream() {
    let app = TestApp::spawn().await;
    let (_, doc) = app.get_json("/openapi.json").await;
    let feed = &doc["paths"]["/api/v1/events"]["get"];
    assert!(feed["responses"]["200"].is_object(), "{feed}");
    assert!(feed["responses"]["410"].is_object(), "{feed}");
    let stream = &doc["paths"]["/api/v1/events/stream"]["get"];
    assert!(
        stream["responses"]["200"]["content"]["text/event-stream"].is_object(),
        "{stream}"
    );
    let resume = stream["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .find(|p| p["name"] == "Last-Event-ID")
        .expect("Last-Event-ID is documented");
    assert_eq!(resume["in"], "header");
    assert!(doc["components"]["schemas"]["EventView"].is_object());
}
