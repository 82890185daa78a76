//! Corrections (contract v1.3) end to end on a real worker, Postgres and Azurite: cells fixed in
//! place re-checked by the upload's engine against the whole file, the latest revision served
//! by rows, exports, the error report and the task's counts while revision 0 stays as it was,
//! the `file.corrected` event, a rejected file completed by its last correction, bad requests
//! refused whole, two corrections of one cell at once taking turns, a revision whose connection
//! dies midway leaving nothing, a session's token, and the
//! reference validator agreeing with the corrected report.

use harness::app::TestApp;
use reqwest::StatusCode;
use serde_json::{json, Value};

/// An invoice template: a unique invoice number (the primary key too), a non-negative amount,
/// a date in day/month/year.
fn invoice_template(on_invalid: &str) -> Value {
    json!({
        "schema": {
            "fields": [
                {"name": "invoice_no", "type": "string",
                 "constraints": {"required": true, "unique": true, "pattern": "INV-[0-9]{4}"}},
                {"name": "amount", "type": "number", "constraints": {"required": true, "minimum": 0}},
                {"name": "issued_on", "type": "date", "format": "%d/%m/%Y"}
            ],
            "primaryKey": ["invoice_no"]
        },
        "on_invalid": on_invalid
    })
}

/// Five good rows and three bad ones: `twelve` as an amount (row 3), a blank invoice number
/// (row 5), a repeated invoice number (row 7, INV-0001 is row 2's).
pub(crate) const INVOICES: &str = "invoice_no,amount,issued_on\n\
                        INV-0001,1.5,31/12/2026\n\
                        INV-0002,twelve,01/01/2027\n\
                        INV-0003,10,02/01/2027\n\
                        ,7.5,03/01/2027\n\
                        INV-0004,0,04/01/2027\n\
                        INV-0001,3,05/01/2027\n\
                        INV-0005,4,06/01/2027\n";

/// A template `invoices` with `on_invalid`, and INVOICES uploaded against it and parsed: the
/// final task and the file id.
pub(crate) async fn corrected_upload(
    app: &TestApp,
    on_invalid: &str,
    csv: &str,
) -> (Value, String) {
    let (status, body) = app
        .put_json("/api/v1/templates/invoices", &invoice_template(on_invalid))
        .await;
    assert!(status.is_success(), "{body}");
    let resp = app
        .upload_with(
            "invoices.csv",
            csv.as_bytes().to_vec(),
            &[("template", "invoices")],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let upload: Value = resp.json().await.expect("upload body");
    let task_id = upload["task"]["id"].as_str().expect("task id").to_owned();
    let file_id = upload["source_file"]["id"]
        .as_str()
        .expect("file id")
        .to_owned();
    (app.run_worker_until_final(&task_id).await, file_id)
}

/// INVOICES uploaded again against `invoices` and left unparsed (no worker runs): its file id.
pub(crate) async fn unparsed_upload(app: &TestApp) -> String {
    let resp = app
        .upload_with(
            "later.csv",
            INVOICES.as_bytes().to_vec(),
            &[("template", "invoices")],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let upload: Value = resp.json().await.expect("upload");
    upload["source_file"]["id"].as_str().expect("id").to_owned()
}

pub(crate) async fn correct(
    app: &TestApp,
    file_id: &str,
    corrections: Value,
) -> (StatusCode, Value) {
    app.patch_json(
        &format!("/api/v1/files/{file_id}/corrections"),
        &json!({ "corrections": corrections }),
    )
    .await
}

/// (row, field, code) of every record of the error report (`query`: e.g. `?revision=0`).
async fn report(app: &TestApp, file_id: &str, query: &str) -> Vec<(i64, String, String)> {
    let sep = if query.is_empty() { "?" } else { "&" };
    let (status, body) = app
        .get_json(&format!(
            "/api/v1/files/{file_id}/errors{query}{sep}limit=1000"
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| {
            (
                e["row"].as_i64().expect("row"),
                e["field"].as_str().unwrap_or_default().to_owned(),
                e["code"].as_str().expect("code").to_owned(),
            )
        })
        .collect()
}

/// The invoice numbers of the file's rows, in order.
async fn invoice_numbers(app: &TestApp, file_id: &str) -> Vec<String> {
    let (status, body) = app
        .get_json(&format!("/api/v1/files/{file_id}/rows?limit=1000"))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let rows = body["rows"].as_array().expect("rows");
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(
            row["index"],
            json!(i),
            "indices count the merged rows: {body}"
        );
    }
    rows.iter()
        .map(|r| r["values"][0].as_str().unwrap_or("∅").to_owned())
        .collect()
}

/// The file's events' types, oldest first.
async fn event_types(app: &TestApp, file_id: &str) -> Vec<(String, Value)> {
    let id: uuid::Uuid = file_id.parse().expect("uuid");
    sqlx::query_as::<_, (String, Value)>(
        "SELECT type, data FROM events WHERE source_file_id = $1 ORDER BY created_at, id",
    )
    .bind(id)
    .fetch_all(&app.db)
    .await
    .expect("events")
}

fn errors_of(v: &[(i64, String, String)]) -> Vec<(i64, &str, &str)> {
    v.iter()
        .map(|(r, f, c)| (*r, f.as_str(), c.as_str()))
        .collect()
}

#[tokio::test]
async fn a_corrected_cell_is_checked_again_and_its_row_joins_the_rows_in_its_place() {
    let app = TestApp::spawn().await;
    let (task, file_id) = corrected_upload(&app, "drop_invalid_rows", INVOICES).await;
    assert_eq!(task["status"], "COMPLETED", "{task}");
    assert_eq!(task["result"]["validation"]["revision"], 0);
    let original = report(&app, &file_id, "").await;
    let rows: std::collections::BTreeSet<i64> = original.iter().map(|e| e.0).collect();
    assert_eq!(
        rows.into_iter().collect::<Vec<_>>(),
        [3, 5, 7],
        "{original:?}"
    );
    assert!(errors_of(&original).contains(&(3, "amount", "type-error")));
    assert!(errors_of(&original).contains(&(7, "invoice_no", "primary-key")));
    assert_eq!(
        invoice_numbers(&app, &file_id).await,
        ["INV-0001", "INV-0003", "INV-0004", "INV-0005"]
    );

    // A still-wrong value first: the answer says what is still wrong, nothing joins.
    let (status, answer) = correct(
        &app,
        &file_id,
        json!([{"sheet": 0, "row": 3, "field": "amount", "value": "-2"}]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["revision"], 1);
    assert_eq!(answer["applied"], 1);
    assert_eq!(answer["errors"][0]["code"], "constraint-error");
    assert_eq!(answer["errors"][0]["constraint"], "minimum");
    assert_eq!(answer["errors"][0]["row"], 3);
    assert_eq!(answer["validation"]["revision"], 1);
    assert_eq!(
        answer["validation"]["errors_by_code"]["constraint-error"],
        2
    );
    assert!(
        answer["validation"]["errors_by_code"]
            .get("type-error")
            .is_none(),
        "{answer}"
    );

    let (status, answer) = correct(
        &app,
        &file_id,
        json!([{"sheet": 0, "row": 3, "field": "amount", "value": "12"}]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["revision"], 2);
    assert_eq!(answer["errors"], json!([]));
    let rows_valid = task["result"]["validation"]["rows_valid"]
        .as_u64()
        .expect("rows_valid");
    assert_eq!(answer["validation"]["rows_valid"], rows_valid + 1);
    assert_eq!(
        answer["validation"]["errors_total"],
        task["result"]["validation"]["errors_total"]
            .as_u64()
            .expect("total")
            - 1
    );

    // The row is back between its neighbours, typed by the template; the export agrees.
    assert_eq!(
        invoice_numbers(&app, &file_id).await,
        ["INV-0001", "INV-0002", "INV-0003", "INV-0004", "INV-0005"]
    );
    let (status, page) = app
        .get_json(&format!("/api/v1/files/{file_id}/rows?after=0&limit=1"))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        page["rows"][0]["values"],
        json!(["INV-0002", 12, "2027-01-01"])
    );
    assert_eq!(page["next_after"], 1);
    let (status, csv) = app
        .get_text(&format!("/api/v1/files/{file_id}/rows/export?format=csv"))
        .await;
    assert_eq!(status, StatusCode::OK);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 6, "{csv}");
    assert!(lines[2].starts_with("INV-0002,12,2027-01-01"), "{csv}");

    // The report is the latest revision's; revision 0 is the upload's, unchanged.
    let latest = report(&app, &file_id, "").await;
    assert!(latest.iter().all(|e| e.0 != 3), "{latest:?}");
    assert_eq!(latest.len(), original.len() - 1);
    assert_eq!(report(&app, &file_id, "?revision=0").await, original);
    let (status, _) = app
        .get_json(&format!("/api/v1/files/{file_id}/errors?revision=1"))
        .await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "only 0 and the latest are kept"
    );

    // The task's counts and the events.
    let (_, file) = app.get_json(&format!("/api/v1/files/{file_id}")).await;
    assert_eq!(file["task"]["result"]["validation"]["revision"], 2);
    assert_eq!(
        file["task"]["result"]["validation"]["rows_valid"],
        rows_valid + 1
    );
    let events = event_types(&app, &file_id).await;
    let corrected: Vec<&Value> = events
        .iter()
        .filter(|(t, _)| t == "file.corrected")
        .map(|(_, d)| d)
        .collect();
    assert_eq!(corrected.len(), 2, "{events:?}");
    assert_eq!(corrected[1]["revision"], 2);
    assert_eq!(corrected[1]["summary"]["rows_valid"], rows_valid + 1);
    assert_eq!(corrected[1]["source_file_id"], json!(file_id));
}

#[tokio::test]
async fn a_rejected_file_whose_last_error_is_corrected_completes_with_its_rows() {
    let app = TestApp::spawn().await;
    let (task, file_id) = corrected_upload(&app, "reject_file", INVOICES).await;
    assert_eq!(task["status"], "FAILED", "{task}");
    assert_eq!(task["error"]["code"], "validation_failed");
    let (status, _) = app.get_json(&format!("/api/v1/files/{file_id}/rows")).await;
    assert_eq!(status, StatusCode::CONFLICT);

    let (status, answer) = correct(
        &app,
        &file_id,
        json!([
            {"sheet": 0, "row": 3, "field": "amount", "value": "12"},
            {"sheet": 0, "row": 5, "field": "invoice_no", "value": "INV-0009"},
        ]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let (_, file) = app.get_json(&format!("/api/v1/files/{file_id}")).await;
    assert_eq!(file["task"]["status"], "FAILED", "one error is left");

    let (status, answer) = correct(
        &app,
        &file_id,
        json!([{"sheet": 0, "row": 7, "field": "invoice_no", "value": "INV-0007"}]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["validation"]["errors_total"], 0);
    assert_eq!(answer["validation"]["rows_rejected"], 0);
    let (_, file) = app.get_json(&format!("/api/v1/files/{file_id}")).await;
    assert_eq!(file["task"]["status"], "COMPLETED", "{file}");
    assert_eq!(file["task"]["error"], Value::Null);
    assert_eq!(file["task"]["result"]["rows_total"], 7);
    assert_eq!(
        invoice_numbers(&app, &file_id).await,
        ["INV-0001", "INV-0002", "INV-0003", "INV-0009", "INV-0004", "INV-0007", "INV-0005"]
    );
    let types: Vec<String> = event_types(&app, &file_id)
        .await
        .into_iter()
        .map(|(t, _)| t)
        .collect();
    assert_eq!(
        types,
        [
            "task.failed",
            "file.corrected",
            "file.corrected",
            "task.completed"
        ]
    );
    assert!(report(&app, &file_id, "").await.is_empty());
}

#[tokio::test]
async fn bad_corrections_are_refused_whole_with_every_problem() {
    let app = TestApp::spawn().await;
    let (_, file_id) = corrected_upload(&app, "keep_invalid_rows", INVOICES).await;
    let (status, body) = correct(
        &app,
        &file_id,
        json!([
            {"sheet": 0, "row": 3, "field": "amount", "value": "12"},
            {"sheet": 0, "row": 3, "field": "colour", "value": "red"},
            {"sheet": 0, "row": 4, "field": "amount", "value": "1"},
            {"sheet": 0, "row": 900, "field": "amount", "value": "1"},
            {"sheet": 2, "row": 3, "field": "amount", "value": "1"},
        ]),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "invalid_correction");
    let pointers: Vec<&str> = body["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .map(|d| d["pointer"].as_str().expect("pointer"))
        .collect();
    assert_eq!(
        pointers,
        [
            "/corrections/1/field",
            "/corrections/2/row",
            "/corrections/3/row",
            "/corrections/4/sheet"
        ]
    );

    // None, or more than 10,000.
    let (status, body) = correct(&app, &file_id, json!([])).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            &json!("invalid_correction")
        )
    );
    let many: Vec<Value> = (0..10_001)
        .map(|_| json!({"sheet": 0, "row": 3, "field": "amount", "value": "1"}))
        .collect();
    let (status, body) = correct(&app, &file_id, Value::Array(many)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["details"][0]["pointer"], "/corrections");

    // No template; not final yet.
    let plain = app.upload_parsed("plain.csv", b"a,b\n1,2\n".to_vec()).await;
    let (status, body) = correct(
        &app,
        &plain,
        json!([{"sheet": 0, "row": 2, "field": "a", "value": "3"}]),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "invalid_correction");
    let pending = &unparsed_upload(&app).await;
    let (status, body) = correct(
        &app,
        pending,
        json!([{"sheet": 0, "row": 3, "field": "amount", "value": "3"}]),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "not_parsed");
}

#[tokio::test]
async fn keep_invalid_rows_has_the_corrected_values_in_the_rows_own_place() {
    let app = TestApp::spawn().await;
    let (_, file_id) = corrected_upload(&app, "keep_invalid_rows", INVOICES).await;
    let before = invoice_numbers(&app, &file_id).await;
    assert_eq!(before.len(), 7);
    let (status, answer) = correct(
        &app,
        &file_id,
        json!([{"sheet": 0, "row": 5, "field": "invoice_no", "value": "INV-0042"}]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let after = invoice_numbers(&app, &file_id).await;
    assert_eq!(after.len(), 7);
    assert_eq!(after[3], "INV-0042");
    assert_eq!(answer["validation"]["rows_valid"], 5);
}

#[tokio::test]
async fn correcting_the_first_of_a_duplicate_value_clears_the_later_rows_error() {
    // Rows 2 and 4 share INV-0009; row 2 also has a bad amount. Moving row 2 to INV-0010 and
    // fixing its amount leaves row 4 the only holder: it is valid too, and joins.
    let csv = "invoice_no,amount,issued_on\n\
               INV-0009,x,31/12/2026\n\
               INV-0001,1,01/01/2027\n\
               INV-0009,2,02/01/2027\n";
    let app = TestApp::spawn().await;
    let (task, file_id) = corrected_upload(&app, "drop_invalid_rows", csv).await;
    assert_eq!(task["result"]["validation"]["rows_rejected"], 2, "{task}");
    assert_eq!(invoice_numbers(&app, &file_id).await, ["INV-0001"]);
    let (status, answer) = correct(
        &app,
        &file_id,
        json!([
            {"sheet": 0, "row": 2, "field": "invoice_no", "value": "INV-0010"},
            {"sheet": 0, "row": 2, "field": "amount", "value": "5"},
        ]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["validation"]["errors_total"], 0, "{answer}");
    assert_eq!(answer["validation"]["rows_valid"], 3);
    assert_eq!(
        invoice_numbers(&app, &file_id).await,
        ["INV-0010", "INV-0001", "INV-0009"]
    );
    // And back: row 2 takes INV-0009 again, which row 4 now holds. The value typed is the
    // duplicate, whatever the order: row 2 has the error naming row 4, and leaves the rows.
    let (status, body) = correct(
        &app,
        &file_id,
        json!([{"sheet": 0, "row": 2, "field": "invoice_no", "value": "INV-0009"}]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // The field is unique and the primary key: both records, as an upload gives them.
    let errors: Vec<(i64, &str, bool)> = body["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| {
            let message = e["message"].as_str().unwrap_or("");
            (
                e["row"].as_i64().unwrap_or(0),
                e["code"].as_str().unwrap_or(""),
                message.contains("already appears in row 4"),
            )
        })
        .collect();
    assert_eq!(
        errors,
        [(2, "unique-error", true), (2, "primary-key", true)],
        "{body}"
    );
    assert_eq!(
        invoice_numbers(&app, &file_id).await,
        ["INV-0001", "INV-0009"]
    );
    // Row 4 moving away leaves row 2 the only holder: checked again, it joins once more.
    let (status, body) = correct(
        &app,
        &file_id,
        json!([{"sheet": 0, "row": 4, "field": "invoice_no", "value": "INV-0011"}]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["validation"]["errors_total"], 0, "{body}");
    assert_eq!(
        invoice_numbers(&app, &file_id).await,
        ["INV-0009", "INV-0001", "INV-0011"]
    );
}

/// Buckets of the file's key index.
async fn key_buckets(app: &TestApp, file_id: &str) -> i64 {
    let id: uuid::Uuid = file_id.parse().expect("file id");
    sqlx::query_scalar("SELECT count(*) FROM file_keys WHERE source_file_id = $1")
        .bind(id)
        .fetch_one(&app.db)
        .await
        .expect("count key buckets")
}

#[tokio::test]
async fn only_a_sheet_with_errors_keeps_a_key_index_and_a_clean_ones_rows_are_not_correctable() {
    let app = TestApp::spawn().await;
    let clean = "invoice_no,amount,issued_on\n\
                 INV-0001,1.5,31/12/2026\n\
                 INV-0002,2,01/01/2027\n";
    let (task, clean_id) = corrected_upload(&app, "drop_invalid_rows", clean).await;
    assert_eq!(task["result"]["validation"]["errors_total"], 0, "{task}");
    assert_eq!(key_buckets(&app, &clean_id).await, 0);
    let (status, body) = correct(
        &app,
        &clean_id,
        json!([{"sheet": 0, "row": 2, "field": "amount", "value": "3"}]),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "invalid_correction", "{body}");

    let (_, messy_id) = corrected_upload(&app, "drop_invalid_rows", INVOICES).await;
    assert!(key_buckets(&app, &messy_id).await > 0);
}

#[tokio::test]
async fn a_revision_whose_connection_dies_midway_leaves_nothing_and_the_api_answers() {
    let app = TestApp::spawn().await;
    let (_, file_id) = corrected_upload(&app, "drop_invalid_rows", INVOICES).await;
    let before = report(&app, &file_id, "").await;
    let fix = json!([{"sheet": 0, "row": 3, "field": "amount", "value": "12"}]);

    // Hold the events table, so the revision waits at its event, its rows, key buckets and
    // revision already written in its transaction; then end its connection there, as a killed
    // api (or a failover) would.
    let mut locker = app.db.begin().await.expect("begin");
    let holder: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut *locker)
        .await
        .expect("pid");
    sqlx::query("LOCK TABLE events IN SHARE ROW EXCLUSIVE MODE")
        .execute(&mut *locker)
        .await
        .expect("lock events");
    let kill = async {
        let victim: i32 = harness::worker::eventually_some(
            std::time::Duration::from_secs(60),
            "the revision waiting for the events table",
            || async {
                sqlx::query_scalar(
                    "SELECT pid FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))",
                )
                .bind(holder)
                .fetch_optional(&app.db)
                .await
                .expect("blocked backends")
            },
        )
        .await;
        let ended: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
            .bind(victim)
            .fetch_one(&app.db)
            .await
            .expect("terminate");
        locker.commit().await.expect("release");
        ended
    };
    let ((status, body), ended) = tokio::join!(correct(&app, &file_id, fix.clone()), kill);
    assert!(ended);
    assert!(status.is_server_error(), "{status} {body}");
    assert!(body["error"]["code"].is_string(), "{body}");

    // Nothing of it: no revision, no key bucket moved, the report and rows as they were.
    let id: uuid::Uuid = file_id.parse().expect("file id");
    let revisions: i64 =
        sqlx::query_scalar("SELECT count(*) FROM file_revisions WHERE source_file_id = $1")
            .bind(id)
            .fetch_one(&app.db)
            .await
            .expect("revisions");
    assert_eq!(revisions, 0);
    assert_eq!(report(&app, &file_id, "").await, before);
    assert_eq!(
        invoice_numbers(&app, &file_id).await,
        ["INV-0001", "INV-0003", "INV-0004", "INV-0005"]
    );

    // The api is still there, and the same request is revision 1, whole.
    let (status, answer) = correct(&app, &file_id, fix).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["revision"], 1, "{answer}");
    assert_eq!(
        invoice_numbers(&app, &file_id).await,
        ["INV-0001", "INV-0002", "INV-0003", "INV-0004", "INV-0005"]
    );
}

#[tokio::test]
async fn two_corrections_of_one_cell_at_once_take_turns_and_the_later_revision_wins() {
    let app = TestApp::spawn().await;
    let (_, file_id) = corrected_upload(&app, "keep_invalid_rows", INVOICES).await;
    let one = correct(
        &app,
        &file_id,
        json!([{"sheet": 0, "row": 3, "field": "amount", "value": "111"}]),
    );
    let two = correct(
        &app,
        &file_id,
        json!([{"sheet": 0, "row": 3, "field": "amount", "value": "222"}]),
    );
    let ((s1, a1), (s2, a2)) = tokio::join!(one, two);
    assert_eq!((s1, s2), (StatusCode::OK, StatusCode::OK), "{a1} {a2}");
    let mut revisions = [a1["revision"].as_i64(), a2["revision"].as_i64()];
    revisions.sort_unstable();
    assert_eq!(revisions, [Some(1), Some(2)]);
    let later = if a1["revision"] == 2 { "111" } else { "222" };
    let (_, page) = app
        .get_json(&format!("/api/v1/files/{file_id}/rows?after=0&limit=1"))
        .await;
    assert_eq!(
        page["rows"][0]["values"][1],
        json!(later.parse::<i64>().expect("int"))
    );
    let (_, file) = app.get_json(&format!("/api/v1/files/{file_id}")).await;
    assert_eq!(file["task"]["result"]["validation"]["revision"], 2);
    // Counted once: the row went from one error to none, whichever came second.
    assert_eq!(file["task"]["result"]["validation"]["rows_valid"], 5);
}

/// An import session for `invoices` and its end user's upload of `INVOICES`, parsed: the end
/// user's client and the file's id.
pub(crate) async fn session_upload(app: &TestApp) -> (reqwest::Client, String) {
    let resp = app
        .client
        .post(app.url("/api/v1/sessions"))
        .json(&json!({"template": "invoices", "end_user": {"id": "u-1"},
                      "allowed_origins": ["https://app.example"]}))
        .send()
        .await
        .expect("POST /sessions");
    assert_eq!(resp.status(), StatusCode::CREATED);
    let session: Value = resp.json().await.expect("session");
    let end_user = harness::app::authenticated_client(session["token"].as_str().expect("token"));
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(INVOICES.as_bytes().to_vec()).file_name("mine.csv"),
    );
    let resp = end_user
        .post(app.url("/api/v1/files"))
        .multipart(form)
        .send()
        .await
        .expect("upload");
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let upload: Value = resp.json().await.expect("upload");
    let mine = upload["source_file"]["id"].as_str().expect("id").to_owned();
    app.run_worker_until_final(upload["task"]["id"].as_str().expect("task"))
        .await;
    (end_user, mine)
}

#[tokio::test]
async fn a_sessions_token_corrects_its_own_files_and_no_other() {
    let app = TestApp::spawn().await;
    let (_, theirs) = corrected_upload(&app, "drop_invalid_rows", INVOICES).await;
    let (end_user, mine) = session_upload(&app).await;
    let body = json!({"corrections": [{"sheet": 0, "row": 3, "field": "amount", "value": "12"}]});
    let patch = |id: &str| {
        end_user
            .patch(app.url(&format!("/api/v1/files/{id}/corrections")))
            .json(&body)
            .send()
    };
    let resp = patch(&mine).await.expect("PATCH");
    assert_eq!(resp.status(), StatusCode::OK);
    let answer: Value = resp.json().await.expect("answer");
    assert_eq!(answer["revision"], 1);
    let resp = patch(&theirs).await.expect("PATCH");
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
}

/// The corrected file written out (the upload's text with each corrected cell's new text) and
/// judged by `frictionless` gives the records the report gives after the corrections.
#[tokio::test]
async fn the_reference_validator_agrees_with_the_report_after_corrections() {
    let schema = json!({
        "fields": [
            {"name": "code", "type": "string",
             "constraints": {"required": true, "unique": true, "pattern": "C-[0-9]{3}"}},
            {"name": "qty", "type": "integer", "constraints": {"minimum": 1, "maximum": 99}},
            {"name": "day", "type": "date"}
        ]
    });
    let mut rows: Vec<[String; 3]> = (1..=40)
        .map(|i| {
            [
                format!("C-{i:03}"),
                (i % 90 + 1).to_string(),
                "2026-11-28".to_owned(),
            ]
        })
        .collect();
    // Planted: a type error, a minimum, a pattern, a missing required value, duplicates, a
    // bad date.
    rows[3][1] = "four".into();
    rows[5][1] = "0".into();
    rows[7][0] = "c-8".into();
    rows[9][0] = String::new();
    rows[12][0] = "C-001".into();
    rows[14][0] = "C-002".into();
    rows[15][2] = "28/11/2026".into();
    rows[20][1] = "100".into();
    let csv = |rows: &[[String; 3]]| {
        let mut text = String::from("code,qty,day\n");
        for r in rows {
            text.push_str(&r.join(","));
            text.push('\n');
        }
        text
    };
    let app = TestApp::spawn().await;
    let (status, body) = app
        .put_json(
            "/api/v1/templates/codes",
            &json!({"schema": schema, "on_invalid": "drop_invalid_rows"}),
        )
        .await;
    assert!(status.is_success(), "{body}");
    let resp = app
        .upload_with(
            "codes.csv",
            csv(&rows).into_bytes(),
            &[("template", "codes")],
        )
        .await;
    let upload: Value = resp.json().await.expect("upload");
    let file_id = upload["source_file"]["id"].as_str().expect("id").to_owned();
    app.run_worker_until_final(upload["task"]["id"].as_str().expect("task"))
        .await;

    // Fixes, a fix that is still wrong, and taking C-001 from row 2 (the first holder, which
    // has no error, cannot be corrected, so the duplicate moves instead).
    let fixes: [(usize, usize, &str); 6] = [
        (3, 1, "4"),
        (5, 1, "-3"),
        (7, 0, "C-008"),
        (9, 0, "C-010"),
        (12, 0, "C-013"),
        (15, 2, "2026-11-29"),
    ];
    let fields = ["code", "qty", "day"];
    let corrections: Vec<Value> = fixes
        .iter()
        .map(|&(i, c, v)| json!({"sheet": 0, "row": i + 2, "field": fields[c], "value": v}))
        .collect();
    let (status, answer) = correct(&app, &file_id, Value::Array(corrections)).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    for &(i, c, v) in &fixes {
        rows[i][c] = v.to_owned();
    }

    let dir = tempfile::tempdir().expect("temp dir");
    let (data, schema_path) = (dir.path().join("codes.csv"), dir.path().join("schema.json"));
    std::fs::write(&data, csv(&rows)).expect("write the corrected file");
    std::fs::write(&schema_path, schema.to_string()).expect("write the schema");
    let python = harness::venvs::python("SHEETRELAY_FRICTIONLESS", "oracle-venv", "frictionless");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("oracle/verdict.py");
    let output = std::process::Command::new(python)
        .arg(script)
        .arg(&data)
        .arg(&schema_path)
        .output()
        .expect("run verdict.py");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let verdict: Vec<Value> = serde_json::from_slice(&output.stdout).expect("verdict JSON");
    let key = |e: &Value| {
        (
            e["row"].as_i64(),
            e["field"].as_str().map(str::to_owned),
            e["code"].as_str().map(str::to_owned),
            e["constraint"].as_str().map(str::to_owned),
        )
    };
    let mut theirs: Vec<_> = verdict.iter().map(key).collect();
    theirs.sort();
    let (status, page) = app
        .get_json(&format!("/api/v1/files/{file_id}/errors?limit=1000"))
        .await;
    assert_eq!(status, StatusCode::OK);
    let mut ours: Vec<_> = page["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(key)
        .collect();
    ours.sort();
    assert_eq!(ours, theirs);
    assert_eq!(
        ours.len(),
        3,
        "the minimum, the duplicate and the maximum: {ours:?}"
    );
}

#[tokio::test]
async fn a_workbooks_row_is_corrected_with_its_typed_cells_kept() {
    use rust_xlsxwriter::{ExcelDateTime, Format, Workbook};
    let mut book = Workbook::new();
    let data = book.add_worksheet();
    for (c, h) in ["invoice_no", "amount", "issued_on"].iter().enumerate() {
        data.write_string(0, c as u16, *h).expect("write");
    }
    let date = Format::new().set_num_format("dd/mm/yyyy");
    let day = |d| ExcelDateTime::from_ymd(2026, 12, d).expect("date");
    data.write_string(1, 0, "INV-0001").expect("write");
    data.write_number(1, 1, 12.5).expect("write");
    data.write_datetime_with_format(1, 2, day(31), &date)
        .expect("write");
    data.write_string(2, 0, "INV-0002").expect("write");
    data.write_string(2, 1, "twelve").expect("write");
    data.write_datetime_with_format(2, 2, day(30), &date)
        .expect("write");
    let bytes = book.save_to_buffer().expect("xlsx");

    let app = TestApp::spawn().await;
    let (status, body) = app
        .put_json(
            "/api/v1/templates/invoices",
            &invoice_template("drop_invalid_rows"),
        )
        .await;
    assert!(status.is_success(), "{body}");
    let resp = app
        .upload_with("book.xlsx", bytes, &[("template", "invoices")])
        .await;
    let upload: Value = resp.json().await.expect("upload");
    let file_id = upload["source_file"]["id"].as_str().expect("id").to_owned();
    let task = app
        .run_worker_until_final(upload["task"]["id"].as_str().expect("task"))
        .await;
    assert_eq!(task["result"]["validation"]["rows_rejected"], 1, "{task}");
    let (status, answer) = correct(
        &app,
        &file_id,
        json!([{"sheet": 0, "row": 3, "field": "amount", "value": "12"}]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(
        answer["errors"],
        json!([]),
        "the date cell casts as it did at upload"
    );
    let (_, page) = app.get_json(&format!("/api/v1/files/{file_id}/rows")).await;
    assert_eq!(
        page["rows"][1]["values"],
        json!(["INV-0002", 12, "2026-12-30"])
    );
}
