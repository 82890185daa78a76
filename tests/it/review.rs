//! The mapping review end to end on real Postgres and Azurite with a real worker: a templated
//! upload whose required field has no column waits in NEEDS_REVIEW with its review document
//! (and its event, and no lease or message held); the answer resumes it through the outbox and
//! it completes with the confirmed mapping; the next file with the same header set goes
//! straight through with the remembered one. Wrong answers get 422, answers to a task not in
//! review 409 (of two at once, exactly one wins), a review nobody answers expires.

use std::time::Duration;

use harness::app::TestApp;
use reqwest::StatusCode;
use serde_json::{json, Value};
use uuid::Uuid;

/// A required `invoice` that no header names, an `amount` no header names either, and a
/// `Note` that matches exactly.
fn template() -> Value {
    json!({"schema": {"fields": [
        {"name": "invoice", "type": "string", "constraints": {"required": true}},
        {"name": "amount", "type": "number"},
        {"name": "Note", "type": "string"}
    ]}})
}

/// A title, a blank line, then the table with its own column names.
const FILE: &[u8] = b"Monthly export\n\nRef,Sum,Note\nA-1,5,x\nA-2,7,y\n";

/// Uploads `bytes` against the `invoices` template; its task id and file id.
async fn upload(app: &TestApp, bytes: &[u8]) -> (String, String) {
    let resp = app
        .upload_with("export.csv", bytes.to_vec(), &[("template", "invoices")])
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let body: Value = resp.json().await.expect("upload body");
    let id = |v: &Value| v["id"].as_str().expect("id").to_owned();
    (id(&body["task"]), id(&body["source_file"]))
}

/// An app with the template and one upload waiting in review: the app, task id and file id.
async fn in_review() -> (TestApp, String, String) {
    let app = TestApp::spawn().await;
    let (status, body) = app
        .put_json("/api/v1/templates/invoices", &template())
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (task_id, file_id) = upload(&app, FILE).await;
    let task = app.run_worker_until_review(&task_id).await;
    assert_eq!(task["status"], "NEEDS_REVIEW", "{task}");
    (app, task_id, file_id)
}

async fn put_mapping(app: &TestApp, task_id: &str, mapping: Value) -> (StatusCode, Value) {
    app.put_json(
        &format!("/api/v1/tasks/{task_id}/mapping"),
        &json!({ "mapping": mapping }),
    )
    .await
}

async fn count(app: &TestApp, sql: &str, id: &str) -> i64 {
    let id: Uuid = id.parse().expect("uuid");
    sqlx::query_scalar(sql)
        .bind(id)
        .fetch_one(&app.db)
        .await
        .expect("count")
}

/// The stored rows of a file's first sheet, as their values.
pub(crate) async fn rows(app: &TestApp, file_id: &str) -> Vec<Value> {
    let (status, body) = app
        .get_json(&format!("/api/v1/files/{file_id}/rows?sheet=0"))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["values"].clone())
        .collect()
}

fn match_kinds(task: &Value) -> Vec<&str> {
    task["result"]["validation"]["mapping"]
        .as_array()
        .expect("mapping")
        .iter()
        .map(|m| m["match"].as_str().unwrap_or("none"))
        .collect()
}

#[tokio::test]
async fn a_review_is_answered_then_completes_and_the_same_header_set_goes_straight_through() {
    let (app, task_id, file_id) = in_review().await;
    let (_, task) = app.get_json(&format!("/api/v1/tasks/{task_id}")).await;
    let review = &task["review"];
    assert_eq!(review["reason"], "required_field_unmapped", "{task}");
    assert_eq!(review["header_row"], 3);
    assert_eq!(
        review["columns"],
        json!([
            {"index": 0, "name": "Ref", "samples": ["A-1", "A-2"]},
            {"index": 1, "name": "Sum", "samples": ["5", "7"]},
            {"index": 2, "name": "Note", "samples": ["x", "y"]}
        ])
    );
    assert_eq!(
        review["suggested_mapping"],
        json!([
            {"field": "invoice", "column_index": null, "match": null, "confidence": 0.0},
            {"field": "amount", "column_index": null, "match": null, "confidence": 0.0},
            {"field": "Note", "column_index": 2, "match": "exact", "confidence": 1.0}
        ])
    );
    // Not final, holding no worker and no lease, no row stored; its event written.
    assert_eq!(task["finished_at"], Value::Null);
    let held = "SELECT count(*) FROM tasks WHERE id = $1 AND lease_expires_at IS NOT NULL";
    assert_eq!(count(&app, held, &task_id).await, 0);
    let stored = "SELECT count(*) FROM parsed_row_chunks WHERE source_file_id = $1";
    assert_eq!(count(&app, stored, &file_id).await, 0);
    let events = "SELECT count(*) FROM events WHERE task_id = $1 AND type = 'task.needs_review'";
    assert_eq!(count(&app, events, &task_id).await, 1);
    // Its message was settled: nothing waits in the queue for it.
    let storage = &app.config.storage;
    let queue = shared::storage::QueueClient::new(storage, &storage.queue_name).expect("queue");
    assert_eq!(queue.approximate_length().await.expect("length"), 0);
    // The file route embeds the task with its review too.
    let (_, file) = app.get_json(&format!("/api/v1/files/{file_id}")).await;
    assert_eq!(file["task"]["review"]["reason"], "required_field_unmapped");

    let (status, body) = put_mapping(
        &app,
        &task_id,
        json!({"invoice": 0, "amount": 1, "Note": 2}),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["status"], "PENDING");
    assert!(body.get("review").is_none(), "{body}");
    let messages = "SELECT count(*) FROM outbox_messages WHERE payload->>'task_id' = $1::text";
    assert_eq!(
        count(&app, messages, &task_id).await,
        2,
        "the upload's and the answer's"
    );

    let task = app.run_worker_until_completed(&task_id).await;
    assert_eq!(match_kinds(&task), ["confirmed"; 3]);
    assert_eq!(
        rows(&app, &file_id).await,
        [json!(["A-1", 5, "x"]), json!(["A-2", 7, "y"])]
    );

    // The same header texts in another order: mapped as remembered, no review.
    let (next, next_file) = upload(&app, b"Sum,Note,Ref\n9,z,B-1\n").await;
    let task = app.run_worker_until_final(&next).await;
    assert_eq!(task["status"], "COMPLETED", "{task}");
    assert_eq!(match_kinds(&task), ["remembered"; 3]);
    assert_eq!(rows(&app, &next_file).await, [json!(["B-1", 9, "z"])]);
    let events = "SELECT count(*) FROM events WHERE task_id = $1 AND type = 'task.needs_review'";
    assert_eq!(count(&app, events, &next).await, 0);
}

#[tokio::test]
async fn wrong_answers_get_422_with_every_problem_and_leave_the_review_waiting() {
    let (app, task_id, _) = in_review().await;
    let cases = [
        (json!({"invoice": 0, "total": 1}), "/mapping/total"),
        (json!({"invoice": 3}), "/mapping/invoice"),
        (json!({"invoice": -1}), "/mapping/invoice"),
        (json!({"invoice": 0, "amount": 0}), "/mapping/invoice"),
        (json!({"invoice": null, "amount": 1}), "/mapping/invoice"),
        (json!({"amount": 1}), "/mapping/invoice"),
    ];
    for (mapping, pointer) in cases {
        let (status, body) = put_mapping(&app, &task_id, mapping.clone()).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{mapping}: {body}"
        );
        assert_eq!(body["error"]["code"], "invalid_mapping", "{body}");
        let pointers: Vec<&str> = body["error"]["details"]
            .as_array()
            .expect("details")
            .iter()
            .map(|d| d["pointer"].as_str().expect("pointer"))
            .collect();
        assert!(pointers.contains(&pointer), "{mapping}: {body}");
    }
    let (status, body) = put_mapping(&app, &task_id, json!("not an object")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    // Another tenant does not see the task.
    let other = app.client_for("other").await;
    let resp = other
        .put(app.url(&format!("/api/v1/tasks/{task_id}/mapping")))
        .json(&json!({"mapping": {"invoice": 0}}))
        .send()
        .await
        .expect("PUT");
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let (_, task) = app.get_json(&format!("/api/v1/tasks/{task_id}")).await;
    assert_eq!(task["status"], "NEEDS_REVIEW");
    let messages = "SELECT count(*) FROM outbox_messages WHERE payload->>'task_id' = $1::text";
    assert_eq!(
        count(&app, messages, &task_id).await,
        1,
        "no answer was taken"
    );
}

#[tokio::test]
async fn of_two_answers_at_once_exactly_one_wins_and_a_task_not_in_review_gets_409() {
    let (app, task_id, _) = in_review().await;
    let answer = json!({"invoice": 0, "amount": 1});
    let (a, b) = tokio::join!(
        put_mapping(&app, &task_id, answer.clone()),
        put_mapping(&app, &task_id, answer.clone())
    );
    let mut statuses = [a.0, b.0];
    statuses.sort();
    assert_eq!(
        statuses,
        [StatusCode::ACCEPTED, StatusCode::CONFLICT],
        "{a:?} {b:?}"
    );
    let lost = if a.0 == StatusCode::CONFLICT {
        a.1
    } else {
        b.1
    };
    assert_eq!(lost["error"]["code"], "not_in_review", "{lost}");
    let messages = "SELECT count(*) FROM outbox_messages WHERE payload->>'task_id' = $1::text";
    assert_eq!(
        count(&app, messages, &task_id).await,
        2,
        "one resume message"
    );

    // A PENDING task (the answered one), and a COMPLETED one.
    let (status, body) = put_mapping(&app, &task_id, answer.clone()).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (StatusCode::CONFLICT, &json!("not_in_review"))
    );
    app.run_worker_until_completed(&task_id).await;
    let (status, _) = put_mapping(&app, &task_id, answer).await;
    assert_eq!(status, StatusCode::CONFLICT);
}

#[tokio::test]
async fn a_relay_that_dies_holding_the_answers_message_loses_nothing() {
    let (app, task_id, file_id) = in_review().await;
    let (status, body) = put_mapping(
        &app,
        &task_id,
        json!({"invoice": 0, "amount": 1, "Note": 2}),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    // A relay claimed the answer's message and died before sending it: its 2 s claim lapses
    // and the next worker's relay sends it.
    let claimed = shared::db::outbox::claim_batch(&app.db, 10, Duration::from_secs(2), 64)
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].payload["task_id"], json!(task_id));
    let task = app.run_worker_until_completed(&task_id).await;
    assert_eq!(match_kinds(&task), ["confirmed"; 3]);
    assert_eq!(rows(&app, &file_id).await.len(), 2);
    let sent = "SELECT count(*) FROM outbox_messages WHERE id = $1 AND status = 'COMPLETED'";
    assert_eq!(count(&app, sent, &claimed[0].id.to_string()).await, 1);
}

#[tokio::test]
async fn a_review_nobody_answers_expires_after_the_review_timeout() {
    let (app, task_id, _) = in_review().await;
    let cfg = worker::config::RelayConfig::default();
    assert_eq!(cfg.review_timeout, Duration::from_secs(7 * 24 * 3600));
    // Not yet: nothing changes.
    let expired = worker::maintenance::review_timeout::expire_reviews(&app.db, &cfg)
        .await
        .expect("sweep");
    assert_eq!(expired, 0);
    let id: Uuid = task_id.parse().expect("uuid");
    sqlx::query("UPDATE tasks SET review_requested_at = now() - interval '8 days' WHERE id = $1")
        .bind(id)
        .execute(&app.db)
        .await
        .expect("age the review");
    let expired = worker::maintenance::review_timeout::expire_reviews(&app.db, &cfg)
        .await
        .expect("sweep");
    assert_eq!(expired, 1);
    let (_, task) = app.get_json(&format!("/api/v1/tasks/{task_id}")).await;
    assert_eq!(task["status"], "FAILED", "{task}");
    assert_eq!(task["error"]["code"], "review_expired");
    assert!(task["finished_at"].is_string());
    let events = "SELECT count(*) FROM events WHERE task_id = $1 AND type = 'task.failed'";
    assert_eq!(count(&app, events, &task_id).await, 1);
    let (status, _) = put_mapping(&app, &task_id, json!({"invoice": 0})).await;
    assert_eq!(status, StatusCode::CONFLICT);
}

#[tokio::test]
async fn the_openapi_document_describes_the_review_and_its_answer() {
    let app = TestApp::spawn().await;
    let (status, doc) = app.get_json("/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    let put = &doc["paths"]["/api/v1/tasks/{task_id}/mapping"]["put"];
    for code in ["202", "401", "404", "409", "422"] {
        assert!(
            put["responses"][code].is_object(),
            "PUT mapping documents {code}"
        );
    }
    assert!(put["security"].is_array());
    let schemas = &doc["components"]["schemas"];
    for name in ["Review", "ReviewColumn", "SuggestedField", "MappingRequest"] {
        assert!(schemas[name].is_object(), "{name} is a component");
    }
    let statuses = &schemas["TaskStatus"]["enum"];
    assert!(
        statuses
            .as_array()
            .is_some_and(|s| s.contains(&json!("NEEDS_REVIEW"))),
        "{statuses}"
    );
}
