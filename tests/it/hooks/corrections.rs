//! Corrections and hooks: the api asks the template's hooks about a revision's corrected rows
//! (signed like an upload's batches, `webhook-id` `<task_id>.r<revision>.<batch>.<digest>`), merges their
//! errors and written values, and a hook that does not answer usably within its timeout fails
//! the request `503 hook_unavailable` with nothing of the revision kept.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use harness::app::TestApp;
use reqwest::StatusCode;
use serde_json::{json, Value};

use super::receiver::{HookReceiver, Reply};
use super::{answer, endpoint, final_task, template, upload, CUSTOMERS};
use crate::webhooks::verifiers::{python, verdicts};

async fn correct(app: &TestApp, file_id: &str, corrections: Value) -> (StatusCode, Value) {
    app.patch_json(
        &format!("/api/v1/files/{file_id}/corrections"),
        &json!({ "corrections": corrections }),
    )
    .await
}

/// By email: bad@x.test is no customer; w@x.test's amount is written back as 77.
fn email_hook(_: usize, request: &Value) -> Reply {
    let (mut errors, mut values) = (Vec::new(), Vec::new());
    for row in request["rows"].as_array().into_iter().flatten() {
        let n = row["row"].clone();
        match row["values"]["email"].as_str() {
            Some("bad@x.test") => errors.push(json!({"row": n, "field": "email",
                "message": "no such customer", "code": "unknown_customer"})),
            Some("w@x.test") => values.push(json!({"row": n, "field": "amount", "value": 77})),
            _ => {}
        }
    }
    answer(json!(errors), json!(values))
}

#[tokio::test]
async fn a_correction_asks_the_hooks_about_its_rows_and_merges_their_answer() {
    let app = TestApp::spawn().await;
    let hook = HookReceiver::start(email_hook).await;
    let (webhook, secret) = endpoint(&app, &hook.url()).await;
    template(&app, json!({"webhook": webhook}), "drop_invalid_rows").await;
    let (task_id, file_id) = upload(&app, CUSTOMERS).await;
    let task = final_task(&app, &task_id, Duration::from_secs(600)).await;
    assert_eq!(task["status"], "COMPLETED", "{task}");
    assert_eq!(hook.received().len(), 1, "the upload's one batch");

    // Row 6's amount fixed, but its new email is no customer: the hook says so.
    let (status, body) = correct(
        &app,
        &file_id,
        json!([{"sheet": 0, "row": 6, "field": "amount", "value": "60"},
               {"sheet": 0, "row": 6, "field": "email", "value": "bad@x.test"}]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["revision"], 1, "{body}");
    let errors = body["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{body}");
    assert_eq!(errors[0]["code"], "hook-error");
    assert_eq!(errors[0]["constraint"], "unknown_customer");
    assert_eq!(errors[0]["column"], "email");
    assert_eq!(errors[0]["value"], "bad@x.test");
    assert_eq!(body["validation"]["rows_valid"], 4, "{body}");
    assert_eq!(
        body["validation"]["errors_by_code"],
        json!({"hook-error": 1})
    );
    let got = hook.received();
    assert_eq!(got.len(), 2);
    let prefix = format!("{task_id}.r1.0.");
    assert!(got[1].id.starts_with(&prefix), "{}", got[1].id);
    assert_eq!(got[1].id.len(), prefix.len() + 12, "{}", got[1].id);
    assert_eq!(
        got[1].json(),
        json!({"type": "rows.validate", "task_id": task_id, "source_file_id": file_id,
               "template": "customers", "template_version": 1, "metadata": {"crm": "acme"},
               "end_user": null, "batch": 0, "revision": 1, "rows": [
                   {"row": 6, "values": {"id": 5, "email": "bad@x.test", "amount": 60}}]})
    );
    let cases = json!([{"secret": secret, "body": got[1].body, "headers": {
        "webhook-id": got[1].id, "webhook-timestamp": got[1].timestamp,
        "webhook-signature": got[1].signature}}]);
    assert_eq!(
        verdicts(&python(), "verify.py", &cases).await,
        [json!({"ok": true})]
    );

    // Another email: the hook writes the amount back, checked again, and the row joins.
    let (status, body) = correct(
        &app,
        &file_id,
        json!([{"sheet": 0, "row": 6, "field": "email", "value": "w@x.test"}]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["errors"], json!([]), "{body}");
    assert_eq!(body["validation"]["rows_valid"], 5, "{body}");
    let (_, rows) = app.get_json(&format!("/api/v1/files/{file_id}/rows")).await;
    let last = rows["rows"].as_array().and_then(|r| r.last()).cloned();
    assert_eq!(
        last.map(|r| r["values"].clone()),
        Some(json!([5, "w@x.test", 77])),
        "{rows}"
    );
}

#[tokio::test]
async fn a_hook_down_during_a_correction_fails_it_hook_unavailable_keeping_nothing() {
    let app = TestApp::spawn().await;
    let down = Arc::new(AtomicBool::new(false));
    let is_down = Arc::clone(&down);
    let hook = HookReceiver::start(move |_, request| {
        if is_down.load(Ordering::SeqCst) {
            Reply::Hang
        } else {
            email_hook(0, request)
        }
    })
    .await;
    let (webhook, _) = endpoint(&app, &hook.url()).await;
    template(
        &app,
        json!({"webhook": webhook, "timeout": "1s"}),
        "drop_invalid_rows",
    )
    .await;
    let (task_id, file_id) = upload(&app, CUSTOMERS).await;
    let task = final_task(&app, &task_id, Duration::from_secs(600)).await;
    assert_eq!(task["status"], "COMPLETED", "{task}");

    down.store(true, Ordering::SeqCst);
    let fix = json!([{"sheet": 0, "row": 6, "field": "amount", "value": "60"}]);
    let started = Instant::now();
    let (status, body) = correct(&app, &file_id, fix.clone()).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "hook_unavailable", "{body}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "bounded by the hook's timeout"
    );
    // Nothing of the revision: the report, the counts and the rows are the upload's.
    let (_, task) = app.get_json(&format!("/api/v1/tasks/{task_id}")).await;
    let v = &task["result"]["validation"];
    assert_eq!(
        (v["revision"].clone(), v["rows_valid"].clone()),
        (json!(0), json!(4))
    );
    let (_, report) = app
        .get_json(&format!("/api/v1/files/{file_id}/errors"))
        .await;
    assert_eq!(report["errors"][0]["code"], "type-error", "{report}");
    let (_, rows) = app.get_json(&format!("/api/v1/files/{file_id}/rows")).await;
    assert_eq!(rows["rows"].as_array().map(Vec::len), Some(4), "{rows}");

    // Back up: the same correction makes revision 1.
    down.store(false, Ordering::SeqCst);
    let (status, body) = correct(&app, &file_id, fix).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["revision"], 1, "{body}");
    assert_eq!(body["validation"]["rows_valid"], 5, "{body}");
}

#[tokio::test]
async fn a_corrections_hooks_are_asked_in_order_each_seeing_what_the_one_before_wrote() {
    let app = TestApp::spawn().await;
    let writer = HookReceiver::start(email_hook).await;
    // Refuses an amount of 77: only a value the first hook wrote can be 77 here.
    let checker = HookReceiver::start(|_, request: &Value| {
        let errors: Vec<Value> = request["rows"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["values"]["amount"] == 77)
            .map(|r| json!({"row": r["row"], "field": "amount", "message": "over the limit"}))
            .collect();
        answer(json!(errors), json!([]))
    })
    .await;
    let (first, _) = endpoint(&app, &writer.url()).await;
    let (second, _) = endpoint(&app, &checker.url()).await;
    let body = json!({
        "schema": {"fields": [
            {"name": "id", "type": "integer", "constraints": {"required": true, "unique": true}},
            {"name": "email"},
            {"name": "amount", "type": "integer", "constraints": {"minimum": 0}}
        ]},
        "on_invalid": "drop_invalid_rows",
        "hooks": [{"webhook": first}, {"webhook": second}]
    });
    let (status, stored) = app.put_json("/api/v1/templates/customers", &body).await;
    assert_eq!(status, StatusCode::CREATED, "{stored}");
    let (task_id, file_id) = upload(&app, CUSTOMERS).await;
    let task = final_task(&app, &task_id, Duration::from_secs(600)).await;
    assert_eq!(task["status"], "COMPLETED", "{task}");

    let (status, body) = correct(
        &app,
        &file_id,
        json!([{"sheet": 0, "row": 6, "field": "email", "value": "w@x.test"},
               {"sheet": 0, "row": 6, "field": "amount", "value": "60"}]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let errors = body["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{body}");
    assert_eq!(errors[0]["message"], "over the limit");
    assert_eq!(errors[0]["value"], "77");
    let asked = checker.received();
    assert_eq!(asked.len(), 2, "the upload's batch and the correction's");
    assert!(asked[1].id.starts_with(&format!("{task_id}.r1.1.")));
    assert_eq!(asked[1].json()["rows"][0]["values"]["amount"], 77);
}
