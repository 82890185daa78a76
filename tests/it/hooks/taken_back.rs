//! A value a hook writes takes back the errors its cell had: the template's (a type error it
//! fixes), and the duplicate error of a later row whose value it took away (that row is the
//! first holder now, or the duplicate of the next). Checked against the oracle the report must
//! equal: the same file with the hook's values written in, uploaded without hooks.

use std::time::Duration;

use harness::app::TestApp;
use reqwest::StatusCode;
use serde_json::{json, Value};

use super::receiver::{HookReceiver, Reply};
use super::{answer, final_task, upload_hooked};

/// Row 3's and 4's amounts are not integers, rows 5 and 6 repeat row 2's id, row 7's amount is
/// below the minimum.
const FILE: &str = "id,email,amount\n\
                    1,a@x.test,10\n\
                    2,b@x.test,x\n\
                    3,c@x.test,y\n\
                    1,d@x.test,40\n\
                    1,e@x.test,50\n\
                    4,f@x.test,-1\n";

/// `FILE` as the hook leaves it: row 2's id is 7, row 3's amount 20, row 4's amount "z".
const AS_WRITTEN: &str = "id,email,amount\n\
                          7,a@x.test,10\n\
                          2,b@x.test,20\n\
                          3,c@x.test,z\n\
                          1,d@x.test,40\n\
                          1,e@x.test,50\n\
                          4,f@x.test,-1\n";

fn rewriting_hook(_: usize, request: &Value) -> Reply {
    let mut values = Vec::new();
    for row in request["rows"].as_array().into_iter().flatten() {
        let n = row["row"].clone();
        match row["values"]["email"].as_str() {
            Some("a@x.test") => values.push(json!({"row": n, "field": "id", "value": 7})),
            Some("b@x.test") => values.push(json!({"row": n, "field": "amount", "value": "20"})),
            Some("c@x.test") => values.push(json!({"row": n, "field": "amount", "value": "z"})),
            _ => {}
        }
    }
    answer(json!([]), json!(values))
}

/// The report's records as (row, field, code, value, message), and the rejected rows' export.
async fn report(app: &TestApp, file_id: &str) -> (Vec<Value>, String) {
    let (status, report) = app
        .get_json(&format!("/api/v1/files/{file_id}/errors"))
        .await;
    assert_eq!(status, StatusCode::OK, "{report}");
    let records = report["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| json!([e["row"], e["field"], e["code"], e["value"], e["message"]]))
        .collect();
    let export = app
        .client
        .get(app.url(&format!("/api/v1/files/{file_id}/errors/export?format=csv")))
        .send()
        .await
        .expect("export")
        .text()
        .await
        .expect("export body");
    (records, export)
}

#[tokio::test]
async fn a_written_value_takes_back_its_cells_errors_and_a_later_rows_duplicate() {
    let app = TestApp::spawn().await;
    let hook = HookReceiver::start(rewriting_hook).await;
    let (task_id, file_id) = upload_hooked(&app, &hook, "keep_invalid_rows", FILE).await;
    let task = final_task(&app, &task_id, Duration::from_secs(600)).await;
    assert_eq!(task["status"], "COMPLETED", "{task}");
    let v = task["result"]["validation"].clone();
    assert_eq!(v["rows_valid"], 3, "{v}");
    assert_eq!(v["rows_rejected"], 3, "{v}");
    assert_eq!(v["errors_total"], 3, "{v}");
    assert_eq!(
        v["errors_by_code"],
        json!({"constraint-error": 1, "type-error": 1, "unique-error": 1}),
        "{v}"
    );
    assert_eq!(v["errors_by_field"], json!({"amount": 2, "id": 1}), "{v}");
    let (records, _) = report(&app, &file_id).await;
    let rows: Vec<(&Value, &Value)> = records.iter().map(|r| (&r[0], &r[2])).collect();
    assert_eq!(
        rows,
        [
            (&json!(4), &json!("type-error")),
            (&json!(6), &json!("unique-error")),
            (&json!(7), &json!("constraint-error"))
        ],
        "{records:?}"
    );
    // Row 6 repeats row 5's id now: row 2 holds 7.
    assert!(
        records[1][4].as_str().is_some_and(|m| m.contains("row 5")),
        "{records:?}"
    );
    assert_eq!(records[0][3], "z", "{records:?}");

    same_as_uploaded_as_written(&app, &task, &file_id, AS_WRITTEN, "keep_invalid_rows").await;
}

/// `FILE` as the hook leaves it with `drop_invalid_rows`: the rows whose amounts are not
/// integers are not asked about (the policy drops them), so only row 2's id is 7.
const AS_WRITTEN_DROPPING: &str = "id,email,amount\n\
                                   7,a@x.test,10\n\
                                   2,b@x.test,x\n\
                                   3,c@x.test,y\n\
                                   1,d@x.test,40\n\
                                   1,e@x.test,50\n\
                                   4,f@x.test,-1\n";

#[tokio::test]
async fn a_duplicate_the_policy_drops_is_stored_once_a_hook_takes_the_earlier_value_away() {
    // Rows 5 and 6 repeat row 2's id, so the parse finds them invalid; row 2's hook writes 7.
    // Row 5 then holds 1 first and is stored, row 6 repeats row 5's. Before, the parse dropped
    // both before any hook was asked, and row 5 stayed rejected as a duplicate of a value no
    // row held.
    let app = TestApp::spawn().await;
    let hook = HookReceiver::start(rewriting_hook).await;
    let (task_id, file_id) = upload_hooked(&app, &hook, "drop_invalid_rows", FILE).await;
    let task = final_task(&app, &task_id, Duration::from_secs(600)).await;
    assert_eq!(task["status"], "COMPLETED", "{task}");
    let (_, served) = app.get_json(&format!("/api/v1/files/{file_id}/rows")).await;
    let emails: Vec<&Value> = served["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| &r["values"][1])
        .collect();
    assert_eq!(emails, [&json!("a@x.test"), &json!("d@x.test")], "{served}");
    let (records, _) = report(&app, &file_id).await;
    assert!(
        records
            .iter()
            .any(|r| r[0] == 6 && r[4].as_str().is_some_and(|m| m.contains("row 5"))),
        "{records:?}"
    );
    same_as_uploaded_as_written(
        &app,
        &task,
        &file_id,
        AS_WRITTEN_DROPPING,
        "drop_invalid_rows",
    )
    .await;
}

/// The oracle: `as_written`, the file as the hook left it, uploaded with `on_invalid` against
/// the same schema without hooks, must give the hooked upload's counts, report records,
/// rejected-rows export and rows.
async fn same_as_uploaded_as_written(
    app: &TestApp,
    task: &Value,
    file_id: &str,
    as_written: &str,
    on_invalid: &str,
) {
    let v = &task["result"]["validation"];
    let (records, export) = report(app, file_id).await;
    let mut plain = app.get_json("/api/v1/templates/customers").await.1;
    let body = json!({"schema": plain["schema"].take(), "on_invalid": on_invalid});
    let (status, stored) = app.put_json("/api/v1/templates/plain", &body).await;
    assert_eq!(status, StatusCode::CREATED, "{stored}");
    let resp = app
        .upload_with(
            "as-written.csv",
            as_written.as_bytes().to_vec(),
            &[("template", "plain")],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let uploaded: Value = resp.json().await.expect("upload body");
    let plain_task = app
        .run_worker_until_final(uploaded["task"]["id"].as_str().expect("task id"))
        .await;
    let plain_file = uploaded["source_file"]["id"].as_str().expect("file id");
    let pv = &plain_task["result"]["validation"];
    for count in [
        "rows_valid",
        "rows_rejected",
        "errors_total",
        "errors_by_code",
        "errors_by_field",
    ] {
        assert_eq!(v[count], pv[count], "{count}: {v} against {pv}");
    }
    let (plain_records, plain_export) = report(app, plain_file).await;
    assert_eq!(records, plain_records);
    assert_eq!(export, plain_export);

    let (_, served) = app.get_json(&format!("/api/v1/files/{file_id}/rows")).await;
    let (_, oracle) = app
        .get_json(&format!("/api/v1/files/{plain_file}/rows"))
        .await;
    assert_eq!(served["rows"], oracle["rows"]);
}
