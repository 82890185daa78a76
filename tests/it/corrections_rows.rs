//! The rows that have errors, whole (`GET /api/v1/files/{id}/errors/rows`, the grid's source):
//! their cells by field as corrected, paged by row number, placed among the rows that `…/rows`
//! pages, revision 0 as uploaded; refused like the error report (`400`, `409 not_parsed`,
//! another tenant's or session's file `404`).

use harness::app::TestApp;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::corrections::{correct, corrected_upload, unparsed_upload, INVOICES};

async fn error_rows(app: &TestApp, file_id: &str, query: &str) -> Value {
    let (status, body) = app
        .get_json(&format!("/api/v1/files/{file_id}/errors/rows{query}"))
        .await;
    assert_eq!(status, StatusCode::OK, "{query}: {body}");
    body
}

/// (row, index, the invoice_no and amount cells, the error codes) of each row of a page.
fn summary(page: &Value) -> Vec<(i64, Value, Value, Value, Vec<String>)> {
    page["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            assert_eq!(r["sheet"], 0);
            let codes = r["errors"]
                .as_array()
                .expect("errors")
                .iter()
                .map(|e| {
                    assert_eq!(e["row"], r["row"], "a row's own records: {r}");
                    e["code"].as_str().expect("code").to_owned()
                })
                .collect();
            (
                r["row"].as_i64().expect("row"),
                r["index"].clone(),
                r["cells"]["invoice_no"].clone(),
                r["cells"]["amount"].clone(),
                codes,
            )
        })
        .collect()
}

/// The codes of row 7's repeated invoice number: unique, and the primary key.
fn dup() -> Vec<String> {
    vec!["unique-error".into(), "primary-key".into()]
}

#[tokio::test]
async fn the_rows_with_errors_come_whole_as_corrected_and_placed_among_the_rows() {
    let app = TestApp::spawn().await;
    let (_, file_id) = corrected_upload(&app, "drop_invalid_rows", INVOICES).await;

    // Two rows a page, by row number; each with every field's text and its own records, at the
    // index of the stored row it comes before.
    let first = error_rows(&app, &file_id, "?limit=2").await;
    assert_eq!(
        summary(&first),
        vec![
            (
                3,
                json!(1),
                json!("INV-0002"),
                json!("twelve"),
                vec!["type-error".into()]
            ),
            (
                5,
                json!(2),
                Value::Null,
                json!("7.5"),
                vec!["constraint-error".into()]
            ),
        ]
    );
    assert_eq!(first["rows"][0]["cells"]["issued_on"], "01/01/2027");
    assert_eq!(first["rows"][0]["errors"][0]["field"], "amount");
    assert_eq!(first["next_after"], 5);
    let second = error_rows(&app, &file_id, "?limit=2&after=5").await;
    assert_eq!(
        summary(&second),
        vec![(7, json!(3), json!("INV-0001"), json!("3"), dup())]
    );
    assert_eq!(second["next_after"], Value::Null);

    // Row 3 fixed (it joins the rows), row 5 given a number off the pattern: its text as
    // corrected, its new error, and the places counted among the merged rows.
    let (status, answer) = correct(
        &app,
        &file_id,
        json!([{"sheet": 0, "row": 3, "field": "amount", "value": "12"},
               {"sheet": 0, "row": 5, "field": "invoice_no", "value": "bad"}]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let latest = error_rows(&app, &file_id, "?sheet=0").await;
    assert_eq!(
        summary(&latest),
        vec![
            (
                5,
                json!(3),
                json!("bad"),
                json!("7.5"),
                vec!["constraint-error".into()]
            ),
            (7, json!(4), json!("INV-0001"), json!("3"), dup()),
        ]
    );
    let (_, rows) = app
        .get_json(&format!("/api/v1/files/{file_id}/rows?limit=1000"))
        .await;
    let numbers: Vec<&str> = rows["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["values"][0].as_str().expect("invoice_no"))
        .collect();
    // Row 5 goes before index 3 (row 6's INV-0004), row 7 before index 4 (row 8's INV-0005).
    assert_eq!(
        numbers,
        ["INV-0001", "INV-0002", "INV-0003", "INV-0004", "INV-0005"]
    );

    // Revision 0: the rows as uploaded, where they were.
    let original = error_rows(&app, &file_id, "?revision=0").await;
    assert_eq!(
        summary(&original),
        summary(&first)
            .into_iter()
            .chain(summary(&second))
            .collect::<Vec<_>>()
    );
    // Page by page, the latest rows are the whole list.
    let mut paged = Vec::new();
    let mut after = String::new();
    loop {
        let page = error_rows(&app, &file_id, &format!("?limit=1{after}")).await;
        paged.extend(summary(&page));
        match page["next_after"].as_i64() {
            Some(n) => after = format!("&after={n}"),
            None => break,
        }
    }
    assert_eq!(paged, summary(&latest));

    for bad in [
        "?limit=0",
        "?limit=1001",
        "?after=-1",
        "?sheet=-1",
        "?revision=2",
        "?limit=x",
    ] {
        let (status, body) = app
            .get_json(&format!("/api/v1/files/{file_id}/errors/rows{bad}"))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert!(body["error"]["code"].is_string(), "{bad}: {body}");
    }
    let (_, body) = app
        .get_json(&format!("/api/v1/files/{file_id}/errors/rows?revision=2"))
        .await;
    assert_eq!(body["error"]["code"], "invalid_parameter");
}

#[tokio::test]
async fn a_kept_invalid_row_is_at_its_own_index_and_an_untemplated_file_has_none() {
    let app = TestApp::spawn().await;
    let (_, file_id) = corrected_upload(&app, "keep_invalid_rows", INVOICES).await;
    let indices: Vec<(i64, Value)> = summary(&error_rows(&app, &file_id, "").await)
        .into_iter()
        .map(|r| (r.0, r.1))
        .collect();
    assert_eq!(indices, vec![(3, json!(1)), (5, json!(3)), (7, json!(5))]);

    let plain = app.upload_parsed("plain.csv", b"a,b\n1,2\n".to_vec()).await;
    let body = error_rows(&app, &plain, "").await;
    assert_eq!(body, json!({"rows": [], "next_after": null}));
}

#[tokio::test]
async fn the_rows_with_errors_are_refused_before_the_report_and_to_other_owners() {
    let app = TestApp::spawn().await;
    let (_, theirs) = corrected_upload(&app, "drop_invalid_rows", INVOICES).await;

    // Not final yet: no report.
    let pending = unparsed_upload(&app).await;
    let (status, body) = app
        .get_json(&format!("/api/v1/files/{pending}/errors/rows"))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "not_parsed");

    // Another tenant's key.
    let other = app.client_for("other-tenant").await;
    let resp = other
        .get(app.url(&format!("/api/v1/files/{theirs}/errors/rows")))
        .send()
        .await
        .expect("GET");
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);

    // A session's token: its own file's rows, not the tenant's other files.
    let (end_user, mine) = crate::corrections::session_upload(&app).await;
    let read = |id: String| {
        end_user
            .get(app.url(&format!("/api/v1/files/{id}/errors/rows")))
            .send()
    };
    let resp = read(mine).await.expect("GET");
    assert_eq!(resp.status(), StatusCode::OK);
    let page: Value = resp.json().await.expect("page");
    assert_eq!(page["rows"].as_array().map(Vec::len), Some(3), "{page}");
    let resp = read(theirs).await.expect("GET");
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
}
