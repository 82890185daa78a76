//! Validation hooks (contract v1.3) end to end: a template whose hook is a real HTTP receiver,
//! uploads parsed by a real worker, and the receiver's answers merged into the rows, the report
//! and the counts; requests signed so that the official Standard Webhooks verifier accepts them;
//! every way a hook can fail ending in a bounded outcome (`hook_unavailable`), with no row
//! stored unchecked.

mod corrections;
mod faults;
mod keys;
mod receiver;
mod resume;
mod taken_back;

use std::time::Duration;

use harness::app::TestApp;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::webhooks::verifiers::{python, verdicts};
use receiver::{HookReceiver, Reply};

/// id, email, amount; the last row's amount is not an integer.
const CUSTOMERS: &str = "id,email,amount\n\
                         1,a@x.test,10\n\
                         2,b@x.test,20\n\
                         3,c@x.test,30\n\
                         4,d@x.test,40\n\
                         5,e@x.test,x\n";

/// A webhook endpoint that takes no events, for hooks: its id and secret.
async fn endpoint(app: &TestApp, url: &str) -> (String, String) {
    let resp = app
        .client
        .post(app.url("/api/v1/webhooks"))
        .json(&json!({"url": url, "events": []}))
        .send()
        .await
        .expect("create the endpoint");
    assert_eq!(resp.status(), StatusCode::CREATED);
    let body: Value = resp.json().await.expect("endpoint");
    assert_eq!(body["events"], json!([]), "{body}");
    let id = body["id"].as_str().expect("id").to_owned();
    (id, body["secret"].as_str().expect("secret").to_owned())
}

/// Template `customers` with `hook` as its one hook.
async fn template(app: &TestApp, hook: Value, on_invalid: &str) {
    let body = json!({
        "schema": {"fields": [
            {"name": "id", "type": "integer", "constraints": {"required": true, "unique": true}},
            {"name": "email"},
            {"name": "amount", "type": "integer", "constraints": {"minimum": 0}}
        ]},
        "on_invalid": on_invalid,
        "hooks": [hook]
    });
    let (status, stored) = app.put_json("/api/v1/templates/customers", &body).await;
    assert_eq!(status, StatusCode::CREATED, "{stored}");
}

/// Template `customers` with `hook`'s receiver as its one hook, at batch 2, and `on_invalid`;
/// then `csv` uploaded against it: (task id, file id).
async fn upload_hooked(
    app: &TestApp,
    hook: &HookReceiver,
    on_invalid: &str,
    csv: &str,
) -> (String, String) {
    let (webhook, _) = endpoint(app, &hook.url()).await;
    template(
        app,
        json!({"webhook": webhook, "batch_size": 2}),
        on_invalid,
    )
    .await;
    upload(app, csv).await
}

/// Uploads `csv` against `customers` with metadata: (task id, file id).
async fn upload(app: &TestApp, csv: &str) -> (String, String) {
    let resp = app
        .upload_with(
            "customers.csv",
            csv.as_bytes().to_vec(),
            &[("template", "customers"), ("metadata", r#"{"crm":"acme"}"#)],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let upload: Value = resp.json().await.expect("upload body");
    let id = |v: &Value| v["id"].as_str().expect("id").to_owned();
    (id(&upload["task"]), id(&upload["source_file"]))
}

/// Runs a worker with `HOOK_RETRY_FOR` = `retry_for` until the task is final.
async fn final_task(app: &TestApp, task_id: &str, retry_for: Duration) -> Value {
    app.run_worker_with_until_final(task_id, |cfg| cfg.consumer.hook_retry_for = retry_for)
        .await
}

fn answer(errors: Value, values: Value) -> Reply {
    Reply::Json(200, json!({"errors": errors, "values": values}))
}

/// What the application says about the customers: customer 2 does not exist; customer 1's
/// amount is written back as text, customer 3's as a negative number, customer 4's as a word.
fn customers_hook(_: usize, request: &Value) -> Reply {
    let mut errors = Vec::new();
    let mut values = Vec::new();
    for row in request["rows"].as_array().into_iter().flatten() {
        let n = row["row"].clone();
        match row["values"]["id"].as_i64() {
            Some(1) => values.push(json!({"row": n, "field": "amount", "value": "12"})),
            Some(2) => errors.push(json!({"row": n, "field": "email",
                "message": "no such customer", "code": "unknown_customer"})),
            Some(3) => values.push(json!({"row": n, "field": "amount", "value": -5})),
            Some(4) => values.push(json!({"row": n, "field": "amount", "value": "abc"})),
            _ => {}
        }
    }
    answer(json!(errors), json!(values))
}

#[tokio::test]
async fn a_hooks_errors_join_the_report_and_its_written_values_are_checked_again() {
    let app = TestApp::spawn().await;
    let hook = HookReceiver::start(customers_hook).await;
    let (webhook, secret) = endpoint(&app, &hook.url()).await;
    template(
        &app,
        json!({"webhook": webhook, "batch_size": 2}),
        "drop_invalid_rows",
    )
    .await;
    let (_, stored) = app.get_json("/api/v1/templates/customers").await;
    assert_eq!(
        stored["hooks"],
        json!([{"webhook": webhook, "batch_size": 2}])
    );

    let (task_id, file_id) = upload(&app, CUSTOMERS).await;
    let task = final_task(&app, &task_id, Duration::from_secs(600)).await;
    assert_eq!(task["status"], "COMPLETED", "{task}");
    let v = &task["result"]["validation"];
    assert_eq!(v["rows_valid"], 1, "{v}");
    assert_eq!(v["rows_rejected"], 4, "{v}");
    assert_eq!(v["errors_total"], 4, "{v}");
    assert_eq!(
        v["errors_by_code"],
        json!({"constraint-error": 1, "hook-error": 1, "type-error": 2})
    );
    assert_eq!(v["errors_by_field"], json!({"amount": 3, "email": 1}));
    assert_eq!(task["result"]["rows_total"], 1, "{task}");

    let (_, report) = app
        .get_json(&format!("/api/v1/files/{file_id}/errors"))
        .await;
    let records: Vec<Value> = report["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| {
            json!([
                e["row"],
                e["field"],
                e["code"],
                e["constraint"],
                e["value"],
                e["column"]
            ])
        })
        .collect();
    assert_eq!(
        records,
        [
            json!([
                3,
                "email",
                "hook-error",
                "unknown_customer",
                "b@x.test",
                "email"
            ]),
            json!([4, "amount", "constraint-error", "minimum", "-5", "amount"]),
            json!([5, "amount", "type-error", null, "abc", "amount"]),
            json!([6, "amount", "type-error", null, "x", "amount"]),
        ],
        "{report}"
    );
    assert_eq!(report["errors"][0]["message"], "no such customer");

    // The one valid row, with the value the hook wrote, typed by the template.
    let (_, rows) = app.get_json(&format!("/api/v1/files/{file_id}/rows")).await;
    assert_eq!(
        rows["rows"],
        json!([{"index": 0, "values": [1, "a@x.test", 12]}])
    );

    // Two batches of the four stored rows (the invalid fifth is not asked about).
    let got = hook.received();
    let ids: Vec<&str> = got.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, [format!("{task_id}.0"), format!("{task_id}.1")]);
    let first = got[0].json();
    assert_eq!(
        first,
        json!({"type": "rows.validate", "task_id": task_id, "source_file_id": file_id,
               "template": "customers", "template_version": 1, "metadata": {"crm": "acme"},
               "end_user": null, "batch": 0, "rows": [
                   {"row": 2, "values": {"id": 1, "email": "a@x.test", "amount": 10}},
                   {"row": 3, "values": {"id": 2, "email": "b@x.test", "amount": 20}}]})
    );
    let cases: Vec<Value> = got
        .iter()
        .map(|r| {
            json!({"secret": secret, "body": r.body, "headers": {
                "webhook-id": r.id, "webhook-timestamp": r.timestamp,
                "webhook-signature": r.signature}})
        })
        .collect();
    let verdicts = verdicts(&python(), "verify.py", &json!(cases)).await;
    assert_eq!(verdicts, vec![json!({"ok": true}); 2]);
}

#[tokio::test]
async fn with_keep_invalid_rows_every_row_is_asked_and_stored_and_the_counts_stay_exact() {
    let app = TestApp::spawn().await;
    let hook = HookReceiver::start(ids_only_hook).await;
    let (webhook, _) = endpoint(&app, &hook.url()).await;
    template(
        &app,
        json!({"webhook": webhook, "fields": ["id"]}),
        "keep_invalid_rows",
    )
    .await;
    let (task_id, file_id) = upload(&app, CUSTOMERS).await;
    let task = final_task(&app, &task_id, Duration::from_secs(600)).await;
    assert_eq!(task["status"], "COMPLETED", "{task}");
    let v = &task["result"]["validation"];
    // Row 3's hook error and row 6's type error; the hook is sent `id` only.
    assert_eq!(v["rows_valid"], 3, "{v}");
    assert_eq!(v["rows_rejected"], 2, "{v}");
    assert_eq!(task["result"]["rows_total"], 5, "{task}");
    let got = hook.received();
    assert_eq!(got.len(), 1);
    let sent: Vec<Value> = got[0].json()["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["values"].clone())
        .collect();
    assert_eq!(sent.len(), 5, "every stored row, the invalid one too");
    assert_eq!(sent[4], json!({"id": 5}));
    let (_, report) = app
        .get_json(&format!("/api/v1/files/{file_id}/errors"))
        .await;
    let codes: Vec<&str> = report["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| e["code"].as_str().expect("code"))
        .collect();
    assert_eq!(codes, ["hook-error", "type-error"], "{report}");
}

/// Answers for `id`s only: customer 2 does not exist.
fn ids_only_hook(_: usize, request: &Value) -> Reply {
    let errors: Vec<Value> = request["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["values"]["id"] == 2)
        .map(|r| json!({"row": r["row"], "field": "id", "message": "no such customer"}))
        .collect();
    answer(json!(errors), json!([]))
}

#[tokio::test]
async fn a_hook_that_fails_then_answers_is_asked_again_with_the_same_id() {
    let app = TestApp::spawn().await;
    let hook = HookReceiver::start(|n, request| {
        if n == 0 {
            Reply::Json(500, json!({}))
        } else {
            ids_only_hook(n, request)
        }
    })
    .await;
    let (webhook, _) = endpoint(&app, &hook.url()).await;
    template(&app, json!({"webhook": webhook}), "reject_file").await;
    let (task_id, file_id) = upload(&app, "id,email,amount\n1,a,1\n2,b,2\n").await;
    let task = final_task(&app, &task_id, Duration::from_secs(600)).await;
    // The hook's error rejects the file, as any error does with reject_file.
    assert_eq!(task["status"], "FAILED", "{task}");
    assert_eq!(task["error"]["code"], "validation_failed", "{task}");
    let got = hook.received();
    assert_eq!(got.len(), 2, "asked again after the 500");
    assert_eq!(got[0].id, format!("{task_id}.0"));
    assert_eq!(got[1].id, got[0].id, "the same webhook-id on the retry");
    assert_eq!(got[1].body, got[0].body);
    let (_, report) = app
        .get_json(&format!("/api/v1/files/{file_id}/errors"))
        .await;
    assert_eq!(report["errors"][0]["row"], 3, "{report}");
    assert_eq!(report["errors"][0]["code"], "hook-error", "{report}");
    assert_eq!(report["errors"][0]["constraint"], Value::Null, "{report}");
}

#[tokio::test]
async fn a_template_refuses_hooks_it_cannot_run_at_their_pointers() {
    let app = TestApp::spawn().await;
    let (mine, _) = endpoint(&app, "http://127.0.0.1:9/validate").await;
    let other = app.client_for("other").await;
    let resp = other
        .post(app.url("/api/v1/webhooks"))
        .json(&json!({"url": "http://127.0.0.1:9/other", "events": []}))
        .send()
        .await
        .expect("create");
    let theirs: Value = resp.json().await.expect("endpoint");
    let body = json!({
        "schema": {"fields": [{"name": "id"}]},
        "hooks": [
            {"webhook": mine, "batch_size": 0, "timeout": "61s", "fields": ["id", "nope"]},
            {"webhook": theirs["id"]},
            {"webhook": uuid::Uuid::new_v4()},
            {"webhook": mine, "batch_size": 10000, "timeout": "60s", "fields": ["id"]}
        ]
    });
    let (status, refused) = app.put_json("/api/v1/templates/t", &body).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert_eq!(refused["error"]["code"], "invalid_template");
    let pointers: Vec<&str> = refused["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .map(|d| d["pointer"].as_str().expect("pointer"))
        .collect();
    assert_eq!(
        pointers,
        [
            "/hooks/0/batch_size",
            "/hooks/0/timeout",
            "/hooks/0/fields/1",
            "/hooks/1/webhook",
            "/hooks/2/webhook"
        ],
        "{refused}"
    );
    let (status, _) = app.get_json("/api/v1/templates/t").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "nothing stored");

    // The OpenAPI document describes them.
    let (_, doc) = app.get_json("/openapi.json").await;
    let schemas = &doc["components"]["schemas"];
    assert!(
        schemas["Hook"]["properties"]["batch_size"].is_object(),
        "{}",
        schemas["Hook"]
    );
    assert!(schemas["TemplateView"]["properties"]["hooks"].is_object());
    assert!(schemas["TemplateRequest"]["properties"]["hooks"].is_object());
}
