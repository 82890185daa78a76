//! Reading a parsed file back over HTTP: the task's summary, the rows endpoint's typed values
//! and keyset pages, and its refusals. The file is parsed by a real worker running beside the
//! api, as in production.

use harness::app::TestApp;
use reqwest::StatusCode;
use serde_json::{json, Value};

/// Typed columns, a value that must stay text (`00123`), an empty cell, a quoted newline, and
/// one ragged row that brings a seventh column.
const ORDERS: &str = "id,name,amount,paid,day,zip\n\
                      1,Alice,2.5,true,2024-01-15,00123\n\
                      2,山田,3,FALSE,2024-02-01,98101\n\
                      3,,4.25,true,,01234\n\
                      4,\"two\nlines\",5,false,2024-03-31,10001,late\n\
                      5,Eve,-1.5,false,2024-12-31,99999\n";

#[tokio::test]
async fn a_parsed_csv_reads_back_typed_and_in_keyset_pages() {
    let app = TestApp::spawn().await;
    let resp = app
        .upload("orders.csv", ORDERS.as_bytes().to_vec(), None)
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let upload: Value = resp.json().await.expect("upload body");
    let task_id = upload["task"]["id"].as_str().expect("task id").to_owned();
    let file_id = upload["source_file"]["id"]
        .as_str()
        .expect("file id")
        .to_owned();
    let rows_path = format!("/api/v1/files/{file_id}/rows");

    // Before the worker has run, there is nothing to page through.
    let (status, body) = app.get_json(&rows_path).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (StatusCode::CONFLICT, &json!("not_parsed"))
    );

    let task = app.run_worker_until_completed(&task_id).await;

    let columns = json!(["id", "name", "amount", "paid", "day", "zip", "column_7"]);
    let types = json!(["integer", "text", "decimal", "boolean", "date", "text", "text"]);
    assert_eq!(
        task["result"],
        json!({
            "rows_total": 5,
            "sheets": [{
                "index": 0,
                "name": "Sheet1",
                "hidden": false,
                "header_row": 1,
                "rows": 5,
                "columns": columns,
                "column_types": types,
                "extra_columns": 1,
                "layout": {
                    "records": 6,
                    "header_rows": [1],
                    "data": {"first_row": 2, "last_row": 6, "blank_rows": 0},
                    "set_aside": [],
                },
            }],
            "skipped_parts": [],
        })
    );

    let mut pages = Vec::new();
    let mut after: Option<i64> = None;
    loop {
        let path = match after {
            None => format!("{rows_path}?sheet=0&limit=2"),
            Some(a) => format!("{rows_path}?sheet=0&limit=2&after={a}"),
        };
        let (status, page) = app.get_json(&path).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        assert_eq!(
            page["sheet"],
            json!({"index": 0, "name": "Sheet1", "hidden": false, "columns": columns, "column_types": types})
        );
        after = page["next_after"].as_i64();
        pages.push(page["rows"].clone());
        if after.is_none() || pages.len() > 5 {
            break;
        }
    }
    assert_eq!(
        pages,
        [
            json!([
                {"index": 0, "values": [1, "Alice", 2.5, true, "2024-01-15", "00123", null]},
                {"index": 1, "values": [2, "山田", 3, false, "2024-02-01", "98101", null]},
            ]),
            json!([
                {"index": 2, "values": [3, null, 4.25, true, null, "01234", null]},
                {"index": 3, "values": [4, "two\nlines", 5, false, "2024-03-31", "10001", "late"]},
            ]),
            json!([
                {"index": 4, "values": [5, "Eve", -1.5, false, "2024-12-31", "99999", null]},
            ]),
        ]
    );

    for (query, status, code) in [
        ("?limit=0", StatusCode::BAD_REQUEST, "invalid_parameter"),
        ("?limit=1001", StatusCode::BAD_REQUEST, "invalid_parameter"),
        ("?after=-1", StatusCode::BAD_REQUEST, "invalid_parameter"),
        ("?sheet=abc", StatusCode::BAD_REQUEST, "invalid_parameter"),
        ("?sheet=1", StatusCode::NOT_FOUND, "not_found"),
    ] {
        let (got, body) = app.get_json(&format!("{rows_path}{query}")).await;
        assert_eq!(
            (got, &body["error"]["code"]),
            (status, &json!(code)),
            "{query}"
        );
    }
    let (got, body) = app
        .get_json(&format!("/api/v1/files/{}/rows", uuid::Uuid::nil()))
        .await;
    assert_eq!(
        (got, &body["error"]["code"]),
        (StatusCode::NOT_FOUND, &json!("not_found"))
    );
}
