//! The caller's files over HTTP: the list, newest first in keyset pages; a whole sheet exported
//! as CSV and NDJSON, CSV text that a spreadsheet would run written with a `'` in front; and a
//! delete that takes the blob, task, outbox message and rows with it.

use harness::app::{TestApp, UploadRows};
use reqwest::StatusCode;
use serde_json::{json, Value};

const ORDERS: &str = "id,name,amount,note\n\
                      1,Alice,2.5,\"a, quoted\"\n\
                      2,山田,3,\n\
                      3,\"two\nlines\",-1.5,x\n";

#[tokio::test]
async fn the_file_list_is_the_callers_newest_first_in_keyset_pages() {
    let app = TestApp::spawn().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let resp = app
            .upload(&format!("f{i}.csv"), b"a\n1\n".to_vec(), None)
            .await;
        let body: Value = resp.json().await.expect("json");
        ids.push(body["source_file"]["id"].as_str().expect("id").to_owned());
    }
    let other = app.client_for("someone-else").await;
    let part = reqwest::multipart::Part::bytes(b"a\n1\n".to_vec()).file_name("theirs.csv");
    other
        .post(app.url("/api/v1/files"))
        .multipart(reqwest::multipart::Form::new().part("file", part))
        .send()
        .await
        .expect("upload");

    let mut seen = Vec::new();
    let mut path = "/api/v1/files?limit=2".to_owned();
    loop {
        let (status, page) = app.get_json(&path).await;
        assert_eq!(status, StatusCode::OK);
        let files = page["files"].as_array().expect("files");
        assert!(files.len() <= 2);
        for f in files {
            seen.push(f["id"].as_str().expect("id").to_owned());
            assert_eq!(f["task"]["status"], "PENDING");
            assert_eq!(f["task"]["source_file_id"], f["id"]);
        }
        match page["next_after"].as_str() {
            Some(after) => path = format!("/api/v1/files?limit=2&after={after}"),
            None => break,
        }
    }
    ids.reverse();
    assert_eq!(
        seen, ids,
        "all five, newest first, none of the other tenant's"
    );
}

#[tokio::test]
async fn a_sheet_exports_as_csv_and_ndjson_typed_like_the_rows_endpoint() {
    let app = TestApp::spawn().await;
    let id = app
        .upload_parsed("orders.csv", ORDERS.as_bytes().to_vec())
        .await;

    let resp = app
        .client
        .get(app.url(&format!(
            "/api/v1/files/{id}/rows/export?sheet=0&format=csv"
        )))
        .send()
        .await
        .expect("export");
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "text/csv; charset=utf-8");
    assert!(resp.headers()["content-disposition"]
        .to_str()
        .expect("ascii")
        .starts_with("attachment; filename=\"orders-"));
    let csv = resp.text().await.expect("text");
    assert_eq!(
        csv,
        "id,name,amount,note\n1,Alice,2.5,\"a, quoted\"\n2,山田,3,\n3,\"two\nlines\",-1.5,x\n"
    );

    let ndjson = app
        .client
        .get(app.url(&format!("/api/v1/files/{id}/rows/export?format=ndjson")))
        .send()
        .await
        .expect("export")
        .text()
        .await
        .expect("text");
    let lines: Vec<Value> = ndjson
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(
        lines,
        [
            json!([1, "Alice", 2.5, "a, quoted"]),
            json!([2, "山田", 3, null]),
            json!([3, "two\nlines", -1.5, "x"]),
        ]
    );
    // The same values as the rows endpoint gives.
    let (_, page) = app.get_json(&format!("/api/v1/files/{id}/rows")).await;
    let values: Vec<Value> = page["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["values"].clone())
        .collect();
    assert_eq!(values, lines);

    let (status, body) = app
        .get_json(&format!("/api/v1/files/{id}/rows/export?format=xml"))
        .await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (StatusCode::BAD_REQUEST, &json!("invalid_parameter"))
    );
    let (status, _) = app
        .get_json(&format!("/api/v1/files/{id}/rows/export?sheet=3"))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// Text a spreadsheet would run as a formula (in a header too), numbers that are text (a text
/// column: `-x` is not a number), and a cell that begins with the `'` the export adds.
const FORMULAS: &str = "id,=cmd,note\n\
                        1,\"=HYPERLINK(\"\"http://x\"\",\"\"click\"\")\",-12.5\n\
                        2,@SUM(A1),+3\n\
                        3,'quoted,-x\n";

#[tokio::test]
async fn a_csv_export_puts_a_quote_mark_before_text_a_spreadsheet_would_run() {
    let app = TestApp::spawn().await;
    let id = app
        .upload_parsed("formulas.csv", FORMULAS.as_bytes().to_vec())
        .await;
    let export = |format: &str| {
        let url = app.url(&format!("/api/v1/files/{id}/rows/export?format={format}"));
        let request = app.client.get(url);
        async move {
            let resp = request.send().await.expect("export");
            assert_eq!(resp.status(), StatusCode::OK);
            resp.text().await.expect("text")
        }
    };
    assert_eq!(
        export("csv").await,
        "id,\"'=cmd\",note\n\
         1,\"'=HYPERLINK(\"\"http://x\"\",\"\"click\"\")\",-12.5\n\
         2,\"'@SUM(A1)\",+3\n\
         3,\"''quoted\",\"'-x\"\n"
    );
    // Only CSV is read by spreadsheets: NDJSON and the rows endpoint keep the text as it is.
    let (_, page) = app.get_json(&format!("/api/v1/files/{id}/rows")).await;
    assert_eq!(page["sheet"]["columns"], json!(["id", "=cmd", "note"]));
    let values: Vec<Value> = page["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["values"].clone())
        .collect();
    let stored = [
        json!([1, "=HYPERLINK(\"http://x\",\"click\")", "-12.5"]),
        json!([2, "@SUM(A1)", "+3"]),
        json!([3, "'quoted", "-x"]),
    ];
    assert_eq!(values, stored);
    let ndjson: Vec<Value> = export("ndjson")
        .await
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(ndjson, stored);
}

#[tokio::test]
async fn a_delete_takes_the_blob_task_outbox_message_and_rows_with_it() {
    let app = TestApp::spawn().await;
    let id = app
        .upload_parsed("orders.csv", ORDERS.as_bytes().to_vec())
        .await;
    let kept = app.upload("kept.csv", b"a\n1\n".to_vec(), None).await;
    assert_eq!(kept.status(), StatusCode::ACCEPTED);
    assert_eq!(app.blob_names().await.len(), 2);

    let resp = app
        .client
        .delete(app.url(&format!("/api/v1/files/{id}")))
        .send()
        .await
        .expect("delete");
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);

    assert_eq!(
        app.upload_rows().await,
        UploadRows::each(1),
        "only the other upload's rows"
    );
    assert_eq!(app.blob_names().await.len(), 1);
    let leftovers: i64 = sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM parsed_sheets) + (SELECT count(*) FROM parsed_row_chunks)",
    )
    .fetch_one(&app.db)
    .await
    .expect("count");
    assert_eq!(leftovers, 0);
    let (status, _) = app.get_json(&format!("/api/v1/files/{id}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let again = app
        .client
        .delete(app.url(&format!("/api/v1/files/{id}")))
        .send()
        .await
        .expect("delete");
    assert_eq!(again.status(), StatusCode::NOT_FOUND);
}
