//! Every record of an upload accounted for over HTTP: the task's `result.sheets[].layout`
//! names the header rows, the data range and every range set aside, and the rows served add
//! up with them to the sheet's records.

use harness::app::TestApp;
use reqwest::StatusCode;
use serde_json::{json, Value};

/// A statistics office's table: a title and a source line above, a blank row in the data,
/// then the same table again for another region, and a note.
const REPORT: &str = "Table 1. Population by region\n\
                      Source: statistics office\n\
                      \n\
                      region,men,women\n\
                      North,1204,1310\n\
                      South,980,1012\n\
                      \n\
                      East,455,470\n\
                      \n\
                      region,men,women\n\
                      West,10,12\n\
                      \n\
                      Note: provisional figures\n";

#[tokio::test]
async fn the_task_result_accounts_for_every_record_of_the_sheet() {
    let app = TestApp::spawn().await;
    let resp = app
        .upload("population.csv", REPORT.as_bytes().to_vec(), None)
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let upload: Value = resp.json().await.expect("upload body");
    let task_id = upload["task"]["id"].as_str().expect("task id").to_owned();
    let file_id = upload["source_file"]["id"].as_str().expect("id").to_owned();
    let task = app.run_worker_until_completed(&task_id).await;

    let sheet = &task["result"]["sheets"][0];
    assert_eq!(sheet["header_row"], 4);
    assert_eq!(
        sheet["layout"],
        json!({
            "records": 13,
            "header_rows": [4],
            "data": {"first_row": 5, "last_row": 8, "blank_rows": 1},
            "set_aside": [
                {"from_row": 1, "to_row": 3, "kind": "above", "rows": 3},
                {"from_row": 9, "to_row": 11, "kind": "table", "rows": 3, "header_row": 10},
                {"from_row": 12, "to_row": 13, "kind": "notes", "rows": 2},
            ],
        })
    );
    let (status, page) = app
        .get_json(&format!("/api/v1/files/{file_id}/rows?sheet=0"))
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let served = page["rows"].as_array().expect("rows").len() as u64;
    assert_eq!(served, 3);
    assert_eq!(sheet["rows"], served);
    let layout = &sheet["layout"];
    let aside: u64 = layout["set_aside"]
        .as_array()
        .expect("ranges")
        .iter()
        .filter_map(|r| r["rows"].as_u64())
        .sum();
    let header = layout["header_rows"].as_array().expect("rows").len() as u64;
    let blank = layout["data"]["blank_rows"].as_u64().expect("blank rows");
    assert_eq!(
        Some(header + served + blank + aside),
        layout["records"].as_u64()
    );
}

#[tokio::test]
async fn the_openapi_document_types_the_task_result_and_its_layout() {
    let app = TestApp::spawn().await;
    let (status, doc) = app.get_json("/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    let schemas = &doc["components"]["schemas"];
    for name in [
        "TaskResult",
        "SheetResult",
        "SheetLayout",
        "DataRange",
        "SetAside",
    ] {
        assert!(schemas[name].is_object(), "{name} is a component");
    }
    assert_eq!(
        schemas["SetAsideKind"]["enum"],
        json!(["above", "notes", "table"])
    );
    let required = &schemas["SheetLayout"]["required"];
    for field in ["records", "header_rows", "set_aside"] {
        assert!(
            required
                .as_array()
                .is_some_and(|r| r.contains(&json!(field))),
            "{field} is required: {required}"
        );
    }
}
