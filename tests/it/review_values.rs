//! Value mapping in review (contract v1.3) end to end on real Postgres and Azurite with a real
//! worker: a review lists the texts an `enum` or `boolean` field cannot read with the values it
//! allows; the answer's value maps are applied to that file and learned for the tenant's
//! template, so the next file with those texts is read without a review; a bad map is refused
//! whole with a pointer to each problem, and nothing is learned.

use harness::app::TestApp;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::review::rows;

/// States and yes/no in the application's own words.
const STATES: &[u8] = b"id,state,paid\n1,Calif.,Y\n2,N.Y.,N\n3,Tex.,ja\n4,CA,true\n";

async fn states_template(app: &TestApp) {
    let (status, body) = app
        .put_json(
            "/api/v1/templates/states",
            &json!({"schema": {"fields": [
                {"name": "id", "type": "integer"},
                {"name": "state", "constraints": {"required": true, "enum": ["CA", "NY", "TX"]}},
                {"name": "paid", "type": "boolean"}
            ]}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

/// Uploads STATES against `states`: the task id and file id.
async fn upload(app: &TestApp) -> (String, String) {
    let resp = app
        .upload_with("states.csv", STATES.to_vec(), &[("template", "states")])
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let body: Value = resp.json().await.expect("upload body");
    let id = |v: &Value| v["id"].as_str().expect("id").to_owned();
    (id(&body["task"]), id(&body["source_file"]))
}

async fn answer(app: &TestApp, task_id: &str, values: Value) -> (StatusCode, Value) {
    app.put_json(
        &format!("/api/v1/tasks/{task_id}/mapping"),
        &json!({"mapping": {"id": 0, "state": 1, "paid": 2}, "values": values}),
    )
    .await
}

async fn learned(app: &TestApp) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM learned_values WHERE tenant_id = 'default' AND template_name = 'states'",
    )
        .fetch_one(&app.db)
        .await
        .expect("count")
}

#[tokio::test]
async fn mapped_values_are_applied_learned_and_read_the_next_file_without_a_review() {
    let app = TestApp::spawn().await;
    states_template(&app).await;
    // Another tenant's template of the same name knows these texts: that changes nothing here.
    sqlx::query(
        "INSERT INTO learned_values (tenant_id, template_name, field, text, value)
         VALUES ('other', 'states', 'state', 'Calif.', 'CA'), ('other', 'states', 'paid', 'Y', 'true')",
    )
    .execute(&app.db)
    .await
    .expect("another tenant's values");
    let (task_id, file_id) = upload(&app).await;
    let task = app.run_worker_until_review(&task_id).await;
    assert_eq!(task["status"], "NEEDS_REVIEW", "{task}");
    assert_eq!(
        task["review"]["values"],
        json!([
            {"field": "state", "unknown": ["Calif.", "N.Y.", "Tex."], "allowed": ["CA", "NY", "TX"]},
            {"field": "paid", "unknown": ["N", "Y", "ja"],
             "allowed": ["true", "True", "TRUE", "1", "false", "False", "FALSE", "0"]}
        ]),
        "{task}"
    );

    // A bad answer: refused whole, every problem pointed at, nothing learned or changed.
    let (status, body) = answer(
        &app,
        &task_id,
        json!({"state": {"Calif.": "California"}, "id": {"1": "2"}, "paid": {"Y": "true"}}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "invalid_mapping");
    let pointers: Vec<&str> = body["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .filter_map(|d| d["pointer"].as_str())
        .collect();
    assert_eq!(pointers, ["/values/id", "/values/state/Calif."], "{body}");
    assert_eq!(learned(&app).await, 0);

    let (status, body) = answer(
        &app,
        &task_id,
        json!({"state": {"Calif.": "CA", "N.Y.": "NY", "Tex.": "TX"},
               "paid": {"Y": "true", "N": "false", "ja": "true"}}),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let task = app.run_worker_until_completed(&task_id).await;
    assert_eq!(task["result"]["validation"]["errors_total"], 0, "{task}");
    assert_eq!(
        rows(&app, &file_id).await,
        [
            json!([1, "CA", true]),
            json!([2, "NY", false]),
            json!([3, "TX", true]),
            json!([4, "CA", true])
        ]
    );
    assert_eq!(learned(&app).await, 6);

    // Next month's file: the same texts, no review, the same rows.
    let (next_task, next_file) = upload(&app).await;
    let task = app.run_worker_until_completed(&next_task).await;
    assert_eq!(task["status"], "COMPLETED", "{task}");
    assert_eq!(rows(&app, &next_file).await, rows(&app, &file_id).await);

    // A correction is read as an upload is: a learned text typed into a bad cell is its value.
    let resp = app
        .upload_with(
            "states.csv",
            b"id,state,paid\n1,Calif.,Y\n2,Nevada,N\n".to_vec(),
            &[("template", "states")],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let body: Value = resp.json().await.expect("upload body");
    let (bad_task, bad_file) = (
        body["task"]["id"].as_str().expect("task id").to_owned(),
        body["source_file"]["id"]
            .as_str()
            .expect("file id")
            .to_owned(),
    );
    let task = app.run_worker_until_completed(&bad_task).await;
    assert_eq!(task["result"]["validation"]["errors_total"], 1, "{task}");
    let (status, answer) = app
        .patch_json(
            &format!("/api/v1/files/{bad_file}/corrections"),
            &json!({"corrections": [{"sheet": 0, "row": 3, "field": "state", "value": "N.Y."}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["validation"]["errors_total"], 0, "{answer}");
    assert_eq!(
        rows(&app, &bad_file).await,
        [json!([1, "CA", true]), json!([2, "NY", false])]
    );

    // Deleting the template forgets what it learned.
    let resp = app
        .client
        .delete(app.url("/api/v1/templates/states"))
        .send()
        .await
        .expect("DELETE");
    assert!(resp.status().is_success());
    assert_eq!(learned(&app).await, 0);
}
