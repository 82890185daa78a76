//! Transforms and `formats` (contract v1.3) end to end: a template that cleans its cells, an
//! upload through a real worker, the rows stored as the transforms left them and an error
//! report that shows both the file's text and the transformed one; a transform that cannot
//! apply refused at its pointer.

use harness::app::TestApp;
use reqwest::StatusCode;
use serde_json::{json, Value};

fn contacts() -> Value {
    json!({
        "schema": {"fields": [
            {"name": "name", "transforms": ["trim", "collapse_spaces", "title"],
             "constraints": {"required": true}},
            {"name": "phone", "transforms": [{"phone": {"region": "DE"}}]},
            {"name": "subscribed", "type": "boolean",
             "transforms": ["trim", {"map": {"ja": "true", "nein": "false", "y": "true", "n": "false"},
                                     "ignore_case": true}]},
            {"name": "joined", "type": "date", "formats": ["%d.%m.%Y", "%Y-%m-%d"]},
            {"name": "country", "transforms": ["upper", {"default": "DE"}],
             "constraints": {"enum": ["DE", "AT", "CH"]}}
        ]},
        "on_invalid": "drop_invalid_rows"
    })
}

const CONTACTS: &str = "name,phone,subscribed,joined,country\n\
                        \"  ada   lovelace \",030 123456,Ja,31.01.2024,\n\
                        grace hopper,(030) 123456,N,2024-02-29,at\n\
                        alan turing,not a number,y,01.03.2024,ch\n\
                        edsger dijkstra,+41 44 668 18 00,maybe,02.03.2024,nl\n";

#[tokio::test]
async fn an_upload_is_stored_as_its_template_transforms_leave_it() {
    let app = TestApp::spawn().await;
    let (status, body) = app
        .put_json("/api/v1/templates/contacts", &contacts())
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // The template reads back with its transforms, as a page shows them.
    let (_, stored) = app.get_json("/api/v1/templates/contacts").await;
    assert_eq!(
        stored["schema"]["fields"][1]["transforms"],
        json!([{"phone": {"region": "DE"}}])
    );

    let resp = app
        .upload_with(
            "contacts.csv",
            CONTACTS.as_bytes().to_vec(),
            &[("template", "contacts")],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let upload: Value = resp.json().await.expect("upload body");
    let task_id = upload["task"]["id"].as_str().expect("task id");
    let file_id = upload["source_file"]["id"].as_str().expect("file id");
    let task = app.run_worker_until_final(task_id).await;
    assert_eq!(task["status"], "COMPLETED", "{task}");
    assert_eq!(task["result"]["validation"]["rows_valid"], 2);
    assert_eq!(task["result"]["validation"]["rows_rejected"], 2);

    let (_, rows) = app.get_json(&format!("/api/v1/files/{file_id}/rows")).await;
    let values: Vec<Value> = rows["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["values"].clone())
        .collect();
    assert_eq!(
        values,
        [
            json!(["Ada Lovelace", "+4930123456", true, "2024-01-31", "DE"]),
            json!(["Grace Hopper", "+4930123456", false, "2024-02-29", "AT"]),
        ]
    );

    let (status, report) = app
        .get_json(&format!("/api/v1/files/{file_id}/errors"))
        .await;
    assert_eq!(status, StatusCode::OK, "{report}");
    let errors: Vec<(i64, String, String, Value, Value)> = report["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| {
            (
                e["row"].as_i64().expect("row"),
                e["field"].as_str().expect("field").to_owned(),
                e["code"].as_str().expect("code").to_owned(),
                e["value"].clone(),
                e.get("transformed").cloned().unwrap_or(Value::Null),
            )
        })
        .collect();
    assert_eq!(
        errors,
        [
            (
                4,
                "phone".into(),
                "type-error".into(),
                json!("not a number"),
                Value::Null
            ),
            (
                5,
                "subscribed".into(),
                "type-error".into(),
                json!("maybe"),
                Value::Null
            ),
            (
                5,
                "country".into(),
                "constraint-error".into(),
                json!("nl"),
                json!("NL")
            ),
        ]
    );
}

#[tokio::test]
async fn a_transform_that_cannot_apply_is_refused_with_its_pointer() {
    let app = TestApp::spawn().await;
    let body = json!({"schema": {"fields": [
        {"name": "n", "type": "integer", "transforms": [{"phone": {"region": "DE"}}]},
        {"name": "s", "transforms": [{"replace": {"pattern": "(", "with": ""}}, "shout"]}
    ]}});
    let (status, answer) = app.put_json("/api/v1/templates/bad", &body).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(answer["error"]["code"], "invalid_template");
    let pointers: Vec<&str> = answer["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .map(|d| d["pointer"].as_str().expect("pointer"))
        .collect();
    assert_eq!(
        pointers,
        [
            "/fields/0/transforms/0/phone",
            "/fields/1/transforms/0/replace/pattern",
            "/fields/1/transforms/1"
        ]
    );
    let (status, _) = app.get_json("/api/v1/templates/bad").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
