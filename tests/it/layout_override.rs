//! A person moves the header or the table's end (`PUT /api/v1/tasks/{id}/layout`, the layout
//! extension) on real Postgres and Azurite with a real worker: a CSV and an xlsx whose guess is
//! wrong come out with the forced layout and its rows, the old rows replaced; every refusal
//! leaves the task as it was; the override survives a rescued attempt and a redelivered message
//! stores nothing twice; an import session may set it for its own files only.

use harness::app::{authenticated_client, code_of, TestApp};
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::time::Duration;

use uuid::Uuid;

/// A customs office's export: a title and a unit line, the table with years as its columns,
/// then a source line and a revised row the office added under it.
const IMPORTS: &str = "Imports by year\n\
                       Unit: tonnes\n\
                       \n\
                       country,1989,1990,1991\n\
                       France,12,13,14\n\
                       Spain,16,17,18\n\
                       \n\
                       Source: customs office\n\
                       Italy (revised),20,21,22\n";

/// A workbook: a cover sheet, then a report printed over two pages, the second page under a
/// repeated header, as a report exported page by page comes out.
fn workbook() -> Vec<u8> {
    use rust_xlsxwriter::Workbook;
    let mut book = Workbook::new();
    let cover = book.add_worksheet();
    cover.set_name("Cover").expect("name");
    cover.write_string(0, 0, "Population, 2026").expect("write");
    cover
        .write_string(1, 0, "Prepared by the office")
        .expect("write");
    let data = book.add_worksheet();
    data.set_name("Data").expect("name");
    let rows: [(u32, &str, f64); 4] = [
        (1, "North", 10.0),
        (2, "South", 20.0),
        (5, "East", 30.0),
        (6, "West", 40.0),
    ];
    for header_row in [0, 4] {
        data.write_string(header_row, 0, "Region").expect("write");
        data.write_string(header_row, 1, "Count").expect("write");
    }
    for (r, region, count) in rows {
        data.write_string(r, 0, region).expect("write");
        data.write_number(r, 1, count).expect("write");
    }
    book.save_to_buffer().expect("xlsx")
}

/// Uploads `bytes` as `name` (with `fields` before the file); its task id and file id.
async fn upload(
    app: &TestApp,
    name: &str,
    bytes: &[u8],
    fields: &[(&str, &str)],
) -> (String, String) {
    let resp = app.upload_with(name, bytes.to_vec(), fields).await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let body: Value = resp.json().await.expect("upload body");
    let id = |v: &Value| v["id"].as_str().expect("id").to_owned();
    (id(&body["task"]), id(&body["source_file"]))
}

async fn put_layout(app: &TestApp, task_id: &str, body: &Value) -> (StatusCode, Value) {
    app.put_json(&format!("/api/v1/tasks/{task_id}/layout"), body)
        .await
}

/// The values of the rows served for sheet `sheet` of file `file_id`.
async fn rows(app: &TestApp, file_id: &str, sheet: u32) -> Vec<Value> {
    let (status, page) = app
        .get_json(&format!("/api/v1/files/{file_id}/rows?sheet={sheet}"))
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    page["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["values"].clone())
        .collect()
}

async fn count(app: &TestApp, sql: &str, id: &str) -> i64 {
    let id: Uuid = id.parse().expect("uuid");
    sqlx::query_scalar(sql)
        .bind(id)
        .fetch_one(&app.db)
        .await
        .expect("count")
}

/// Rows stored for a file, over its chunks.
async fn stored(app: &TestApp, file_id: &str) -> i64 {
    let sql =
        "SELECT coalesce(sum(row_count), 0)::int8 FROM parsed_row_chunks WHERE source_file_id = $1";
    count(app, sql, file_id).await
}

/// Header rows + stored rows + blank rows + set-aside rows of a sheet's layout: its records.
fn accounted(sheet: &Value) -> u64 {
    let layout = &sheet["layout"];
    let aside: u64 = layout["set_aside"]
        .as_array()
        .expect("ranges")
        .iter()
        .filter_map(|r| r["rows"].as_u64())
        .sum();
    let header = layout["header_rows"].as_array().expect("header rows").len() as u64;
    let blank = layout["data"]["blank_rows"].as_u64().unwrap_or(0);
    header + sheet["rows"].as_u64().expect("rows") + blank + aside
}

#[tokio::test]
async fn a_csv_whose_table_end_was_guessed_wrong_is_parsed_again_with_the_end_a_person_set() {
    let app = TestApp::spawn().await;
    let (task_id, file_id) = upload(&app, "imports.csv", IMPORTS.as_bytes(), &[]).await;
    let guessed = app.run_worker_until_completed(&task_id).await;
    // The guess keeps the source line as a row of the table.
    let sheet = &guessed["result"]["sheets"][0];
    assert_eq!(sheet["layout"]["data"]["last_row"], 9, "{guessed}");
    assert!(rows(&app, &file_id, 0)
        .await
        .iter()
        .any(|r| r[0] == "Source: customs office"));

    let body = json!({"sheets": [{"sheet": 0, "header_row": 4, "last_row": 6}]});
    let (status, task) = put_layout(&app, &task_id, &body).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{task}");
    assert_eq!(task["status"], "PENDING");
    assert_eq!(task["result"], Value::Null);
    assert_eq!(task["layout_override"], body);
    // What the guess stored is gone with the status change: the file waits as a new upload.
    assert_eq!(stored(&app, &file_id).await, 0);
    let (status, _) = app.get_json(&format!("/api/v1/files/{file_id}/rows")).await;
    assert_eq!(status, StatusCode::CONFLICT);

    let task = app.run_worker_until_completed(&task_id).await;
    let sheet = &task["result"]["sheets"][0];
    assert_eq!(
        sheet["layout"],
        json!({
            "records": 9,
            "header_rows": [4],
            "data": {"first_row": 5, "last_row": 6, "blank_rows": 0},
            "set_aside": [
                {"from_row": 1, "to_row": 3, "kind": "above", "rows": 3},
                {"from_row": 7, "to_row": 9, "kind": "table", "rows": 3, "header_row": 9},
            ],
        }),
        "{task}"
    );
    assert_eq!(sheet["columns"], json!(["country", "1989", "1990", "1991"]));
    assert_eq!(accounted(sheet), 9);
    assert_eq!(task["layout_override"], body);
    assert_eq!(
        rows(&app, &file_id, 0).await,
        [json!(["France", 12, 13, 14]), json!(["Spain", 16, 17, 18])]
    );
    assert_eq!(stored(&app, &file_id).await, 2);
    // The re-parse wrote its event, as the first parse did.
    let events = "SELECT count(*) FROM events WHERE task_id = $1 AND type = 'task.completed'";
    assert_eq!(count(&app, events, &task_id).await, 2);

    // An empty override goes back to what detection finds.
    let (status, task) = put_layout(&app, &task_id, &json!({"sheets": []})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{task}");
    let task = app.run_worker_until_completed(&task_id).await;
    assert_eq!(
        task["result"]["sheets"][0]["layout"],
        guessed["result"]["sheets"][0]["layout"]
    );
    assert_eq!(stored(&app, &file_id).await, 4);
}

#[tokio::test]
async fn an_xlsx_sheet_whose_second_page_was_set_aside_runs_to_its_end_and_the_other_sheet_stays() {
    let app = TestApp::spawn().await;
    let (task_id, file_id) = upload(&app, "regions.xlsx", &workbook(), &[]).await;
    let guessed = app.run_worker_until_completed(&task_id).await;
    let sheets = &guessed["result"]["sheets"];
    assert_eq!(sheets[1]["name"], "Data");
    // The guess takes the repeated header for a second table and sets the second page aside.
    assert_eq!(sheets[1]["rows"], 2, "{guessed}");
    assert_eq!(
        sheets[1]["layout"]["set_aside"][0]["kind"], "table",
        "{guessed}"
    );

    let body = json!({"sheets": [{"sheet": 1, "header_row": 1, "last_row": null}]});
    let (status, task) = put_layout(&app, &task_id, &body).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{task}");
    let task = app.run_worker_until_completed(&task_id).await;
    let sheets = &task["result"]["sheets"];
    // The cover sheet, not named, is read as detected.
    assert_eq!(sheets[0], guessed["result"]["sheets"][0]);
    assert_eq!(
        sheets[1]["layout"],
        json!({
            "records": 7,
            "header_rows": [1],
            "data": {"first_row": 2, "last_row": 7, "blank_rows": 1},
            "set_aside": [],
        }),
        "{task}"
    );
    assert_eq!(accounted(&sheets[1]), 7);
    assert_eq!(
        rows(&app, &file_id, 1).await,
        [
            json!(["North", 10]),
            json!(["South", 20]),
            json!(["Region", "Count"]),
            json!(["East", 30]),
            json!(["West", 40]),
        ]
    );
    // The cover sheet's one row and the five of the data sheet.
    assert_eq!(stored(&app, &file_id).await, 1 + 5);

    // A header forced below the sheet's top sets the rows above it aside, in a workbook too.
    let body = json!({"sheets": [{"sheet": 1, "header_row": 5}]});
    let (status, task) = put_layout(&app, &task_id, &body).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{task}");
    let task = app.run_worker_until_completed(&task_id).await;
    let sheet = &task["result"]["sheets"][1];
    assert_eq!(sheet["header_row"], 5);
    assert_eq!(
        sheet["layout"]["set_aside"],
        json!([{"from_row": 1, "to_row": 4, "kind": "above", "rows": 4}])
    );
    assert_eq!(
        rows(&app, &file_id, 1).await,
        [json!(["East", 30]), json!(["West", 40])]
    );
}

#[tokio::test]
async fn every_refusal_answers_its_code_and_leaves_the_task_as_it_was() {
    let app = TestApp::spawn().await;
    let (task_id, file_id) = upload(&app, "imports.csv", IMPORTS.as_bytes(), &[]).await;
    let any = json!({"sheets": [{"sheet": 0, "last_row": 6}]});
    // Not parsed yet: nothing to correct.
    let (status, body) = put_layout(&app, &task_id, &any).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("not_reparsable")),
        "{body}"
    );
    let done = app.run_worker_until_completed(&task_id).await;

    let invalid = [
        (
            json!([{"sheet": 0, "header_row": 10}]),
            "/sheets/0/header_row",
        ),
        (
            json!([{"sheet": 0, "header_row": 0}]),
            "/sheets/0/header_row",
        ),
        (
            json!([{"sheet": 0, "header_row": 4, "last_row": 3}]),
            "/sheets/0/last_row",
        ),
        (
            json!([{"sheet": 0, "header_row": 4, "last_row": 4}]),
            "/sheets/0/last_row",
        ),
        (json!([{"sheet": 0, "last_row": 12}]), "/sheets/0/last_row"),
        (json!([{"sheet": 1}]), "/sheets/0/sheet"),
        (json!([{"sheet": 0}, {"sheet": 0}]), "/sheets/1/sheet"),
    ];
    for (sheets, pointer) in invalid {
        let (status, body) = put_layout(&app, &task_id, &json!({ "sheets": sheets })).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{sheets}: {body}");
        assert_eq!(body["error"]["code"], "invalid_layout");
        assert_eq!(body["error"]["details"][0]["pointer"], pointer, "{body}");
    }
    let unknown_key = json!({"sheets": [{"sheet": 0, "header": 4}]});
    let (status, body) = put_layout(&app, &task_id, &unknown_key).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_body"))
    );
    let (status, _) = put_layout(&app, &Uuid::now_v7().to_string(), &any).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // Another tenant's task is not found either.
    let other = app.client_for("other-tenant").await;
    let resp = other
        .put(app.url(&format!("/api/v1/tasks/{task_id}/layout")))
        .json(&any)
        .send()
        .await
        .expect("PUT");
    assert_eq!(
        code_of(resp).await,
        (StatusCode::NOT_FOUND, "not_found".to_owned())
    );

    // Nothing was written: the task, its rows and its outbox are as the parse left them.
    let (_, task) = app.get_json(&format!("/api/v1/tasks/{task_id}")).await;
    assert_eq!(task["status"], "COMPLETED");
    assert_eq!(task["result"], done["result"]);
    assert!(task.get("layout_override").is_none(), "{task}");
    assert_eq!(stored(&app, &file_id).await, 4);
    let messages = "SELECT count(*) FROM outbox_messages WHERE payload->>'task_id' = $1::text";
    assert_eq!(count(&app, messages, &task_id).await, 1);

    // A failure that is not about the table: no layout cures it.
    let (empty_task, _) = upload(&app, "blank.csv", b"\n\n,,\n", &[]).await;
    let failed = app.run_worker_until_final(&empty_task).await;
    assert_eq!(failed["error"]["code"], "empty_file", "{failed}");
    let (status, body) = put_layout(&app, &empty_task, &json!({"sheets": []})).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("not_reparsable")),
        "{body}"
    );
}

/// The override's outbox message as the relay would send it.
async fn override_message(app: &TestApp, task_id: &str) -> String {
    let (id, payload): (Uuid, Value) = sqlx::query_as(
        "SELECT id, payload FROM outbox_messages WHERE payload->>'task_id' = $1 \
         ORDER BY created_at DESC LIMIT 1",
    )
    .bind(task_id)
    .fetch_one(&app.db)
    .await
    .expect("the override's message");
    shared::domain::Envelope {
        message_id: id,
        event_type: shared::domain::PARSE_TASK.to_owned(),
        payload,
        created_at: chrono::Utc::now(),
    }
    .encode(shared::domain::MessageEncoding::Base64)
}

#[tokio::test]
async fn a_rescued_attempt_parses_with_the_override_and_a_redelivered_message_stores_nothing_twice()
{
    let app = TestApp::spawn().await;
    let (task_id, file_id) = upload(&app, "imports.csv", IMPORTS.as_bytes(), &[]).await;
    app.run_worker_until_completed(&task_id).await;
    let body = json!({"sheets": [{"sheet": 0, "last_row": 6}]});
    let (status, _) = put_layout(&app, &task_id, &body).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    // A consumer took the override's message, started the task and died: its lease ran out,
    // and the message comes back (a copy of it here, beside the one the relay sends).
    sqlx::query(
        "UPDATE tasks SET status = 'RUNNING', attempts = attempts + 1, started_at = now(), \
         lease_expires_at = now() - interval '1 second' WHERE id = $1::uuid",
    )
    .bind(&task_id)
    .execute(&app.db)
    .await
    .expect("a dead consumer's attempt");
    let storage = &app.config.storage;
    let queue = shared::storage::QueueClient::new(storage, &storage.queue_name).expect("queue");
    let message = override_message(&app, &task_id).await;
    queue.send(&message).await.expect("redeliver");

    let task = app.run_worker_until_completed(&task_id).await;
    let layout = &task["result"]["sheets"][0]["layout"];
    assert_eq!(layout["data"]["last_row"], 6, "{task}");
    assert_eq!(stored(&app, &file_id).await, 2);

    // Delivered once more after the commit: a duplicate, deleted; nothing is stored again.
    queue.send(&message).await.expect("redeliver");
    let worker = harness::worker::RunningWorker::start(harness::worker::run_config(
        &app.config.database.url,
        storage.clone(),
    ));
    harness::worker::eventually(Duration::from_secs(30), "the queue drained", || async {
        queue.approximate_length().await.is_ok_and(|n| n == 0)
    })
    .await;
    worker.stop().await;
    let (_, again) = app.get_json(&format!("/api/v1/tasks/{task_id}")).await;
    assert_eq!(again["finished_at"], task["finished_at"]);
    assert_eq!(again["result"], task["result"]);
    assert_eq!(stored(&app, &file_id).await, 2);
    let events = "SELECT count(*) FROM events WHERE task_id = $1 AND type = 'task.completed'";
    assert_eq!(count(&app, events, &task_id).await, 2);
}

/// A template whose required `invoice` no header names: the upload waits for a review.
async fn with_review_template(app: &TestApp) {
    let template = json!({"schema": {"fields": [
        {"name": "invoice", "type": "string", "constraints": {"required": true}},
        {"name": "amount", "type": "number"},
        {"name": "Note", "type": "string"}
    ]}});
    let (status, body) = app.put_json("/api/v1/templates/invoices", &template).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

/// A title, a blank line, the table with its own column names, and a last row that is a
/// leftover of another export.
const EXPORT: &[u8] = b"Monthly export\n\nRef,Sum,Note\nA-1,5,x\nA-2,7,y\n";

#[tokio::test]
async fn a_task_in_review_shows_its_layout_and_is_reviewed_again_with_the_override() {
    let app = TestApp::spawn().await;
    with_review_template(&app).await;
    let (task_id, file_id) = upload(&app, "export.csv", EXPORT, &[("template", "invoices")]).await;
    let task = app.run_worker_until_review(&task_id).await;
    assert_eq!(task["status"], "NEEDS_REVIEW", "{task}");
    let review = &task["review"];
    assert_eq!(review["sheet_index"], 0, "{task}");
    assert_eq!(review["layout"]["header_rows"], json!([3]));
    assert_eq!(review["layout"]["records"], 5);

    let body = json!({"sheets": [{"sheet": 0, "last_row": 4}]});
    let (status, pending) = put_layout(&app, &task_id, &body).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{pending}");
    assert!(pending.get("review").is_none(), "{pending}");
    let task = app.run_worker_until_review(&task_id).await;
    assert_eq!(task["status"], "NEEDS_REVIEW", "{task}");
    assert_eq!(
        task["review"]["layout"]["set_aside"],
        json!([
            {"from_row": 1, "to_row": 2, "kind": "above", "rows": 2},
            {"from_row": 5, "to_row": 5, "kind": "notes", "rows": 1},
        ]),
        "{task}"
    );
    // The mapping answered, the file completes with the forced end.
    let mapping = json!({"mapping": {"invoice": 0, "amount": 1, "Note": 2}});
    let (status, body) = app
        .put_json(&format!("/api/v1/tasks/{task_id}/mapping"), &mapping)
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let task = app.run_worker_until_completed(&task_id).await;
    assert_eq!(task["result"]["sheets"][0]["rows"], 1, "{task}");
    assert_eq!(rows(&app, &file_id, 0).await, [json!(["A-1", 5, "x"])]);
}

#[tokio::test]
async fn an_import_session_sets_the_layout_of_its_own_files_only() {
    let app = TestApp::spawn().await;
    let template = json!({"schema": {"fields": [{"name": "id", "type": "integer"},
                                                {"name": "name", "type": "string"}]}});
    let (status, body) = app.put_json("/api/v1/templates/people", &template).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let session = json!({"template": "people", "end_user": {"id": "u-1"},
                         "allowed_origins": ["https://app.example.com"]});
    let resp = app
        .client
        .post(app.url("/api/v1/sessions"))
        .json(&session)
        .send()
        .await
        .expect("POST /sessions");
    assert_eq!(resp.status(), StatusCode::CREATED);
    let session: Value = resp.json().await.expect("session");
    let client = authenticated_client(session["token"].as_str().expect("token"));
    let csv = b"id,name\n1,Ada\n2,Grace\n\nadded by hand\n".to_vec();
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(csv.clone()).file_name("p.csv"),
    );
    let resp = client
        .post(app.url("/api/v1/files"))
        .multipart(form)
        .send()
        .await
        .expect("upload");
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let mine: Value = resp.json().await.expect("upload body");
    let mine = mine["task"]["id"].as_str().expect("task id").to_owned();
    let (theirs, _) = upload(&app, "p.csv", &csv, &[]).await;
    app.run_worker_until_all_final(&[&mine, &theirs], |_| {})
        .await;

    let body = json!({"sheets": [{"sheet": 0, "last_row": 2}]});
    let put = |task: String| {
        client
            .put(app.url(&format!("/api/v1/tasks/{task}/layout")))
            .json(&body)
            .send()
    };
    let resp = put(theirs.clone()).await.expect("PUT");
    assert_eq!(
        code_of(resp).await,
        (StatusCode::NOT_FOUND, "not_found".to_owned())
    );
    let (_, theirs_now) = app.get_json(&format!("/api/v1/tasks/{theirs}")).await;
    assert_eq!(theirs_now["status"], "COMPLETED");
    let resp = put(mine.clone()).await.expect("PUT");
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let task = app.run_worker_until_completed(&mine).await;
    assert_eq!(task["result"]["sheets"][0]["rows"], 1, "{task}");
    assert_eq!(task["result"]["validation"]["rows_valid"], 1, "{task}");
}

#[tokio::test]
async fn the_openapi_document_describes_the_layout_override_and_its_refusals() {
    let app = TestApp::spawn().await;
    let (status, doc) = app.get_json("/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    let put = &doc["paths"]["/api/v1/tasks/{task_id}/layout"]["put"];
    for code in ["202", "400", "404", "409", "422"] {
        assert!(put["responses"][code].is_object(), "{code}: {put}");
    }
    let schemas = &doc["components"]["schemas"];
    let sheet = &schemas["SheetOverride"];
    assert_eq!(sheet["required"], json!(["sheet"]), "{sheet}");
    for key in ["header_row", "last_row"] {
        let types = &sheet["properties"][key]["type"];
        assert!(
            types.as_array().is_some_and(|t| t.contains(&json!("null"))),
            "{key} may be null: {sheet}"
        );
    }
    assert!(schemas["TaskView"]["properties"]["layout_override"].is_object());
}

#[tokio::test]
async fn a_file_its_template_rejected_for_the_notes_under_its_table_completes_once_they_are_set_aside(
) {
    let app = TestApp::spawn().await;
    let template = json!({"on_invalid": "reject_file",
                          "schema": {"fields": [{"name": "id", "type": "integer"},
                                                {"name": "name", "type": "string"}]}});
    let (status, body) = app.put_json("/api/v1/templates/people", &template).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let csv = b"id,name\n1,Ada\n2,Grace\n\nSource: HR export\n";
    let (task_id, file_id) = upload(&app, "people.csv", csv, &[("template", "people")]).await;
    let failed = app.run_worker_until_final(&task_id).await;
    assert_eq!(failed["error"]["code"], "validation_failed", "{failed}");
    let errors = "SELECT count(*) FROM validation_errors WHERE source_file_id = $1";
    assert!(count(&app, errors, &file_id).await > 0);

    let body = json!({"sheets": [{"sheet": 0, "last_row": 3}]});
    let (status, task) = put_layout(&app, &task_id, &body).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{task}");
    assert_eq!(task["error"], Value::Null);
    // The old report went with the status change.
    assert_eq!(count(&app, errors, &file_id).await, 0);
    let task = app.run_worker_until_completed(&task_id).await;
    assert_eq!(task["result"]["validation"]["errors_total"], 0, "{task}");
    assert_eq!(
        task["result"]["sheets"][0]["layout"]["set_aside"],
        json!([{"from_row": 4, "to_row": 5, "kind": "notes", "rows": 2}])
    );
    assert_eq!(
        rows(&app, &file_id, 0).await,
        [json!([1, "Ada"]), json!([2, "Grace"])]
    );
    let failures = "SELECT count(*) FROM events WHERE task_id = $1 AND type = 'task.failed'";
    assert_eq!(count(&app, failures, &task_id).await, 1);
}
