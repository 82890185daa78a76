//! The upload API on real Postgres and Azurite: all three rows and the blob, or nothing.

use harness::app::{TestApp, UploadRows, TEST_MAX_UPLOAD_BYTES};
use harness::services::DedicatedPostgres;
use reqwest::StatusCode;
use serde_json::Value;
use shared::domain::digest::sha256_hex;

const CSV: &[u8] = b"id,name,amount\n1,Alice,10.5\n2,Bob,7\n";

async fn error_code(resp: reqwest::Response) -> (StatusCode, String) {
    let status = resp.status();
    let body: Value = resp.json().await.expect("error body is JSON");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(!message.is_empty(), "error has a human message: {body}");
    (
        status,
        body["error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

#[tokio::test]
async fn an_accepted_upload_has_its_blob_and_all_three_rows() {
    let app = TestApp::spawn().await;
    let resp = app.upload("people.csv", CSV.to_vec(), None).await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let location = resp.headers()["location"].to_str().unwrap().to_owned();
    let body: Value = resp.json().await.unwrap();

    let file = &body["source_file"];
    let task = &body["task"];
    assert_eq!(
        location,
        format!("/api/v1/tasks/{}", task["id"].as_str().unwrap())
    );
    assert_eq!(file["file_name"], "people.csv");
    assert_eq!(file["format"], "csv");
    assert_eq!(file["size_bytes"], CSV.len());
    assert_eq!(file["sha256"], sha256_hex(CSV));
    assert_eq!(task["status"], "PENDING");
    assert_eq!(task["attempts"], 0);
    assert_eq!(task["source_file_id"], file["id"]);
    assert_eq!(app.upload_rows().await, UploadRows::each(1));

    let (event, payload): (String, Value) =
        sqlx::query_as("SELECT event_type, payload FROM outbox_messages")
            .fetch_one(&app.db)
            .await
            .unwrap();
    assert_eq!(event, "PARSE_TASK");
    assert_eq!(payload["task_id"], task["id"]);
    assert_eq!(payload["source_file_id"], file["id"]);

    let blob_name: String = sqlx::query_scalar("SELECT blob_name FROM source_files")
        .fetch_one(&app.db)
        .await
        .unwrap();
    assert_eq!(app.blob_names().await, vec![blob_name.clone()]);
    let mut stored = Vec::new();
    app.blobs
        .download_to(&blob_name, &mut stored)
        .await
        .unwrap();
    assert_eq!(stored, CSV);
}

#[tokio::test]
async fn a_failure_between_the_inserts_leaves_no_row_and_no_blob() {
    let app = TestApp::spawn().await;
    // Make the last of the three inserts fail inside the upload's transaction.
    sqlx::raw_sql(
        "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS
           $$ BEGIN RAISE EXCEPTION 'injected outbox failure'; END; $$;
         CREATE TRIGGER refuse BEFORE INSERT ON outbox_messages
           FOR EACH ROW EXECUTE FUNCTION refuse();",
    )
    .execute(&app.db)
    .await
    .unwrap();

    let resp = app.upload("people.csv", CSV.to_vec(), None).await;
    assert_eq!(
        error_code(resp).await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "upload_not_recorded".into()
        )
    );
    assert_eq!(app.upload_rows().await, UploadRows::NONE);
    assert!(
        app.blob_names().await.is_empty(),
        "the blob of the failed upload is deleted"
    );
}

#[tokio::test]
async fn rejected_uploads_get_their_code_and_leave_nothing_behind() {
    let app = TestApp::spawn().await;

    let no_file_part = reqwest::multipart::Form::new().text("other", "x");
    let resp = app
        .client
        .post(app.url("/api/v1/files"))
        .multipart(no_file_part)
        .send()
        .await
        .unwrap();
    assert_eq!(
        error_code(resp).await,
        (StatusCode::BAD_REQUEST, "missing_file_part".into())
    );

    let not_multipart = app
        .client
        .post(app.url("/api/v1/files"))
        .body("a,b")
        .send()
        .await
        .unwrap();
    assert_eq!(
        error_code(not_multipart).await,
        (StatusCode::BAD_REQUEST, "malformed_multipart".into())
    );

    let broken = app
        .client
        .post(app.url("/api/v1/files"))
        .header("content-type", "multipart/form-data; boundary=XYZ")
        .body("--XYZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.csv\"\r\n\r\na,b\n1,2")
        .send()
        .await
        .unwrap();
    assert_eq!(
        error_code(broken).await,
        (StatusCode::BAD_REQUEST, "malformed_multipart".into())
    );

    // Over the limit, streamed without a Content-Length so the api must count.
    let big = vec![b'a'; TEST_MAX_UPLOAD_BYTES as usize + 1];
    let resp = app.upload("big.csv", big, None).await;
    assert_eq!(
        error_code(resp).await,
        (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large".into())
    );

    let pdf = b"%PDF-1.7\n%\xE2\xE3\xCF\xD3\n1 0 obj\n<<>>\nendobj\n".to_vec();
    let resp = app.upload("report.xlsx", pdf, None).await;
    assert_eq!(
        error_code(resp).await,
        (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_format".into()
        )
    );

    let resp = app
        .upload("a.csv", CSV.to_vec(), Some(&"k".repeat(201)))
        .await;
    assert_eq!(
        error_code(resp).await,
        (StatusCode::BAD_REQUEST, "invalid_idempotency_key".into())
    );

    assert_eq!(app.upload_rows().await, UploadRows::NONE);
    assert!(app.blob_names().await.is_empty());
}

#[tokio::test]
async fn an_upload_over_the_limit_by_content_length_is_refused_before_reading() {
    let app = TestApp::spawn().await;
    let resp = app
        .client
        .post(app.url("/api/v1/files"))
        .header("content-type", "multipart/form-data; boundary=XYZ")
        .header("content-length", (10 * TEST_MAX_UPLOAD_BYTES).to_string())
        .body(vec![b'x'; 16])
        .send()
        .await;
    // The api answers without waiting for the announced body; either we read its 413 or it
    // closed the connection after answering.
    if let Ok(resp) = resp {
        assert_eq!(
            error_code(resp).await,
            (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large".into())
        );
    }
    assert_eq!(app.upload_rows().await, UploadRows::NONE);
}

#[tokio::test]
async fn an_idempotent_retry_returns_the_original_and_creates_nothing_new() {
    let app = TestApp::spawn().await;
    let first: Value = app
        .upload("a.csv", CSV.to_vec(), Some("retry-1"))
        .await
        .json()
        .await
        .unwrap();
    let again = app.upload("a.csv", CSV.to_vec(), Some("retry-1")).await;
    assert_eq!(again.status(), StatusCode::ACCEPTED);
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["task"]["id"], first["task"]["id"]);
    assert_eq!(again["source_file"], first["source_file"]);
    assert_eq!(app.upload_rows().await, UploadRows::each(1));
    assert_eq!(app.blob_names().await.len(), 1);

    let other: Value = app
        .upload("a.csv", CSV.to_vec(), Some("retry-2"))
        .await
        .json()
        .await
        .unwrap();
    assert_ne!(other["task"]["id"], first["task"]["id"]);
    assert_eq!(app.upload_rows().await, UploadRows::each(2));
}

#[tokio::test]
async fn concurrent_retries_with_one_key_create_one_upload() {
    let app = TestApp::spawn().await;
    let responses = futures::future::join_all(
        (0..8).map(|_| app.upload("a.csv", CSV.to_vec(), Some("same-key"))),
    )
    .await;
    let mut task_ids = Vec::new();
    for resp in responses {
        assert_eq!(resp.status(), StatusCode::ACCEPTED);
        let body: Value = resp.json().await.unwrap();
        task_ids.push(body["task"]["id"].as_str().unwrap().to_owned());
    }
    task_ids.dedup();
    assert_eq!(task_ids.len(), 1, "every retry sees the same task");
    assert_eq!(app.upload_rows().await, UploadRows::each(1));
    assert_eq!(
        app.blob_names().await.len(),
        1,
        "the losers' blobs are deleted"
    );
}

#[tokio::test]
async fn fifty_concurrent_uploads_all_land() {
    let app = TestApp::spawn().await;
    let app = &app;
    let responses = futures::future::join_all((0..50).map(|i| async move {
        app.upload(&format!("f{i}.csv"), format!("n\n{i}\n").into_bytes(), None)
            .await
    }))
    .await;
    assert!(responses.iter().all(|r| r.status() == StatusCode::ACCEPTED));
    assert_eq!(app.upload_rows().await, UploadRows::each(50));
    assert_eq!(app.blob_names().await.len(), 50);
}

#[tokio::test]
async fn formats_are_decided_by_content_and_name_together() {
    let app = TestApp::spawn().await;
    let format_of = |name: &'static str, bytes: Vec<u8>| {
        let app = &app;
        async move {
            let body: Value = app.upload(name, bytes, None).await.json().await.unwrap();
            body["source_file"]["format"]
                .as_str()
                .unwrap_or("refused")
                .to_owned()
        }
    };
    assert_eq!(format_of("data.xlsx", CSV.to_vec()).await, "csv");
    assert_eq!(format_of("data.tsv", b"a\tb\n1\t2\n".to_vec()).await, "tsv");
    let zip =
        b"PK\x03\x04\x14\0\0\0\x08\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x13\0\0\0[Content_Types].xml"
            .to_vec();
    assert_eq!(format_of("book.xlsm", zip.clone()).await, "xlsm");
    assert_eq!(format_of("book.xlsx", zip).await, "xlsx");
    let cfb = vec![0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1, 0, 0];
    assert_eq!(format_of("old.xls", cfb).await, "xls");
}

#[tokio::test]
async fn tasks_and_files_can_be_read_back_and_unknown_ids_are_404() {
    let app = TestApp::spawn().await;
    let body: Value = app
        .upload("a.csv", CSV.to_vec(), None)
        .await
        .json()
        .await
        .unwrap();
    let task_id = body["task"]["id"].as_str().unwrap();
    let file_id = body["source_file"]["id"].as_str().unwrap();

    let (status, task) = app.get_json(&format!("/api/v1/tasks/{task_id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(task["status"], "PENDING");
    assert_eq!(task["error"], Value::Null);
    assert_eq!(task["result"], Value::Null);

    let (status, file) = app.get_json(&format!("/api/v1/files/{file_id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(file["file_name"], "a.csv");
    assert_eq!(file["task"]["id"], task_id);

    let (status, rows) = app.get_json(&format!("/api/v1/files/{file_id}/rows")).await;
    assert_eq!(
        (status, rows["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("not_parsed"))
    );
    let (status, rows) = app
        .get_json(&format!("/api/v1/files/{file_id}/rows?limit=0"))
        .await;
    assert_eq!(
        (status, rows["error"]["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_parameter"))
    );

    let unknown = uuid::Uuid::new_v4();
    for path in [
        format!("/api/v1/tasks/{unknown}"),
        format!("/api/v1/files/{unknown}"),
        format!("/api/v1/files/{unknown}/rows"),
    ] {
        let (status, body) = app.get_json(&path).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (StatusCode::NOT_FOUND, Some("not_found")),
            "{path}"
        );
    }
    let (status, body) = app.get_json("/api/v1/tasks/not-a-uuid").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
}

#[tokio::test]
async fn operations_endpoints_answer() {
    let app = TestApp::spawn().await;
    let (status, _) = app.get_json("/healthz").await;
    assert_eq!(status, StatusCode::OK);
    let (status, ready) = app.get_json("/readyz").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        ready,
        serde_json::json!({"postgres": true, "blob_storage": true})
    );

    let (status, doc) = app.get_json("/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    for path in [
        "/api/v1/files",
        "/api/v1/files/{source_file_id}",
        "/api/v1/files/{source_file_id}/rows",
        "/api/v1/files/{source_file_id}/rows/export",
        "/api/v1/files/{source_file_id}/errors",
        "/api/v1/files/{source_file_id}/errors/export",
        "/api/v1/tasks/{task_id}",
        "/api/v1/templates",
        "/api/v1/templates/{name}",
        "/healthz",
        "/readyz",
        "/openapi.json",
    ] {
        assert!(doc["paths"][path].is_object(), "OpenAPI documents {path}");
    }
    assert!(
        doc["paths"]["/metrics"].is_null(),
        "metrics are not on the public port"
    );
    let schemes = &doc["components"]["securitySchemes"];
    assert_eq!(schemes["api_key"]["scheme"], "bearer");
    assert_eq!(schemes["entra_id"]["scheme"], "bearer");
    let upload = &doc["paths"]["/api/v1/files"]["post"];
    assert!(upload["security"].is_array());
    assert!(upload["responses"]["401"].is_object());
    let export = &doc["paths"]["/api/v1/files/{source_file_id}/rows/export"]["get"];
    for content_type in ["text/csv", "application/x-ndjson"] {
        assert!(
            export["responses"]["200"]["content"][content_type].is_object(),
            "the export documents {content_type}"
        );
    }
    let form = &upload["requestBody"]["content"]["multipart/form-data"]["schema"];
    assert!(!form.is_null(), "the upload body has a schema");
    let limit = doc["paths"]["/api/v1/files/{source_file_id}/rows"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "limit")
        .unwrap()
        .clone();
    assert_eq!(limit["schema"]["maximum"], 1000);
    let key = upload["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "Idempotency-Key")
        .unwrap();
    assert_eq!(key["schema"]["maxLength"], 200);
    // What the edge and the runtime may answer is on every operation.
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let responses = &op["responses"];
            for status in ["414", "431", "500"] {
                assert!(responses[status].is_object(), "{method} {path} {status}");
            }
            if path.starts_with("/api/v1/") {
                assert!(responses["503"].is_object(), "{method} {path} 503");
            }
        }
    }

    app.upload("a.csv", CSV.to_vec(), None).await;
    let metrics = api::metrics::handle().render();
    assert!(metrics.contains("sheetrelay_uploads_total"), "{metrics}");
    assert!(metrics.contains("sheetrelay_http_requests_total"));
}

#[tokio::test]
async fn readyz_turns_503_while_postgres_is_stopped() {
    let pg = DedicatedPostgres::start().await;
    let url = pg.create_database("readyz").await;
    let app = TestApp::spawn_with(|cfg| cfg.database.url = url).await;
    assert_eq!(app.get_json("/readyz").await.0, StatusCode::OK);

    pg.stop().await;
    let (status, body) = app.get_json("/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        body,
        serde_json::json!({"postgres": false, "blob_storage": true, "error": {
            "code": "database_unavailable",
            "message": "not ready: Postgres does not answer"
        }})
    );
    let resp = app.upload("a.csv", CSV.to_vec(), None).await;
    assert_eq!(
        error_code(resp).await,
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "database_unavailable".into()
        )
    );
    assert!(
        app.blob_names().await.is_empty(),
        "the blob is deleted when the rows cannot be written"
    );

    pg.restart().await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while app.get_json("/readyz").await.0 != StatusCode::OK {
        assert!(
            std::time::Instant::now() < deadline,
            "ready again after the restart"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
