//! Key values and hooks: a value a hook writes into a unique field is checked against the whole
//! file like any value, and the key index corrections read follows the hooks (written values
//! replace the old ones; rows a hook dropped hold none).

use std::time::Duration;

use harness::app::TestApp;
use reqwest::StatusCode;
use serde_json::{json, Value};

use super::receiver::{HookReceiver, Reply};
use super::{answer, endpoint, final_task, template, upload, upload_hooked, CUSTOMERS};

/// Customer c@x.test's id is written back as 1 (row 2's), b@x.test's as 9 (no other row's).
fn renumbering_hook(_: usize, request: &Value) -> Reply {
    let mut values = Vec::new();
    for row in request["rows"].as_array().into_iter().flatten() {
        let n = row["row"].clone();
        match row["values"]["email"].as_str() {
            Some("b@x.test") => values.push(json!({"row": n, "field": "id", "value": 9})),
            Some("c@x.test") => values.push(json!({"row": n, "field": "id", "value": "1"})),
            _ => {}
        }
    }
    answer(json!([]), json!(values))
}

async fn correct(app: &TestApp, file_id: &str, corrections: Value) -> (StatusCode, Value) {
    app.patch_json(
        &format!("/api/v1/files/{file_id}/corrections"),
        &json!({ "corrections": corrections }),
    )
    .await
}

#[tokio::test]
async fn a_written_back_key_another_row_holds_is_a_duplicate_and_the_index_follows() {
    let app = TestApp::spawn().await;
    let hook = HookReceiver::start(renumbering_hook).await;
    let (task_id, file_id) = upload_hooked(&app, &hook, "drop_invalid_rows", CUSTOMERS).await;
    let task = final_task(&app, &task_id, Duration::from_secs(600)).await;
    assert_eq!(task["status"], "COMPLETED", "{task}");
    let v = &task["result"]["validation"];
    // Row 4 (customer 3, now id 1) collides with row 2; row 6's amount is not an integer.
    assert_eq!(v["rows_valid"], 3, "{v}");
    assert_eq!(v["rows_rejected"], 2, "{v}");
    assert_eq!(
        v["errors_by_code"],
        json!({"type-error": 1, "unique-error": 1})
    );
    let (_, report) = app
        .get_json(&format!("/api/v1/files/{file_id}/errors"))
        .await;
    let first = &report["errors"][0];
    assert_eq!(first["row"], 4, "{report}");
    assert_eq!(first["code"], "unique-error", "{report}");
    assert_eq!(first["field"], "id", "{report}");
    assert!(
        first["message"]
            .as_str()
            .is_some_and(|m| m.contains("row 2")),
        "{report}"
    );
    let (_, rows) = app.get_json(&format!("/api/v1/files/{file_id}/rows")).await;
    let ids: Vec<&Value> = rows["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| &r["values"][0])
        .collect();
    assert_eq!(ids, [&json!(1), &json!(9), &json!(4)], "{rows}");

    // Row 3 holds 9 now, not 2: a correction taking 9 collides with it, one taking 2 does not.
    let (status, answer) = correct(
        &app,
        &file_id,
        json!([{"sheet": 0, "row": 6, "field": "id", "value": "9"},
               {"sheet": 0, "row": 6, "field": "amount", "value": "60"}]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let codes: Vec<&Value> = answer["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| &e["code"])
        .collect();
    assert_eq!(codes, [&json!("unique-error")], "{answer}");
    assert!(answer["errors"][0]["message"]
        .as_str()
        .is_some_and(|m| m.contains("row 3")));
    let (status, answer) = correct(
        &app,
        &file_id,
        json!([{"sheet": 0, "row": 6, "field": "id", "value": "2"}]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["errors"], json!([]), "{answer}");
}

/// Customer b@x.test does not exist (by email, so a corrected row keeps its answer).
fn unknown_email_hook(_: usize, request: &Value) -> Reply {
    let errors: Vec<Value> = request["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["values"]["email"] == "b@x.test")
        .map(|r| json!({"row": r["row"], "field": "email", "message": "no such customer"}))
        .collect();
    answer(json!(errors), json!([]))
}

#[tokio::test]
async fn a_row_a_hook_dropped_holds_no_key_a_correction_could_collide_with() {
    let app = TestApp::spawn().await;
    let hook = HookReceiver::start(unknown_email_hook).await;
    let (webhook, _) = endpoint(&app, &hook.url()).await;
    template(&app, json!({"webhook": webhook}), "drop_invalid_rows").await;
    let (task_id, file_id) = upload(&app, CUSTOMERS).await;
    let task = final_task(&app, &task_id, Duration::from_secs(600)).await;
    assert_eq!(task["status"], "COMPLETED", "{task}");
    assert_eq!(task["result"]["validation"]["rows_valid"], 3, "{task}");
    // Row 3 (id 2) was dropped by the hook: id 2 is free for the corrected row 6.
    let (status, answer) = correct(
        &app,
        &file_id,
        json!([{"sheet": 0, "row": 6, "field": "id", "value": "2"},
               {"sheet": 0, "row": 6, "field": "amount", "value": "60"}]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["errors"], json!([]), "{answer}");
    assert_eq!(answer["validation"]["rows_valid"], 4, "{answer}");
}

#[tokio::test]
async fn hooks_writing_more_key_values_than_allowed_fail_the_task_without_rows() {
    // The hook writes ids on two rows; each is held until the file's end to be checked against
    // all of it, and this worker holds one at most.
    let app = TestApp::spawn().await;
    let hook = HookReceiver::start(renumbering_hook).await;
    let (task_id, file_id) = upload_hooked(&app, &hook, "keep_invalid_rows", CUSTOMERS).await;
    let task = app
        .run_worker_with_until_final(&task_id, |cfg| cfg.consumer.hook_max_key_writes = 1)
        .await;
    assert_eq!(task["status"], "FAILED", "{task}");
    assert_eq!(task["error"]["code"], "too_many_key_writes", "{task}");
    let message = task["error"]["message"].as_str().expect("a message");
    assert!(message.contains("more than 1 rows"), "{message}");
    assert!(message.contains("HOOK_MAX_KEY_WRITES"), "{message}");
    let (status, _) = app.get_json(&format!("/api/v1/files/{file_id}/rows")).await;
    assert_eq!(status, StatusCode::CONFLICT, "no rows stored");
}
