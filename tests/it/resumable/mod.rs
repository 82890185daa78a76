//! Resumable (tus 1.0) uploads at `/api/v1/uploads` on real Postgres and Azurite: the protocol's
//! answers, the rows a completed upload writes, and the refusals that must leave the offset
//! where it was.

mod client;
mod cuts;
mod expiry;
mod tuspy;

use harness::app::{TestApp, UploadRows};
use reqwest::StatusCode;
use serde_json::Value;
use shared::domain::digest::sha256_hex;

use client::{checksum, csv_of, error_code, header, rows_of, stored_state, Tus, OCTETS, TUS};

#[tokio::test]
async fn options_announce_the_version_extensions_size_and_checksum() {
    let app = TestApp::spawn().await;
    let resp = app
        .client
        .request(reqwest::Method::OPTIONS, app.url("/api/v1/uploads"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    let h = resp.headers();
    assert_eq!(header(h, "tus-resumable"), "1.0.0");
    assert_eq!(header(h, "tus-version"), "1.0.0");
    assert_eq!(
        header(h, "tus-extension"),
        "creation,termination,checksum,expiration"
    );
    assert_eq!(header(h, "tus-max-size"), (5u64 << 30).to_string());
    assert_eq!(header(h, "tus-checksum-algorithm"), "sha256");
}

#[tokio::test]
async fn a_file_sent_in_several_patches_parses_to_the_same_rows_as_a_multipart_upload() {
    let app = TestApp::spawn().await;
    let tus = Tus::new(&app);
    // Over two blocks, so the blob is committed from several staged blocks.
    let csv = csv_of(9 * 1024 * 1024);
    let resp = tus.create_with(csv.len() as u64, "big.csv", &[]).await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    assert_eq!(header(resp.headers(), "tus-resumable"), "1.0.0");
    assert!(header(resp.headers(), "upload-expires").ends_with(" GMT"));
    let location = header(resp.headers(), "location");
    assert!(location.starts_with("/api/v1/uploads/"), "{location}");

    let head = tus.head(&location).await;
    assert_eq!(head.status(), StatusCode::OK);
    assert_eq!(header(head.headers(), "upload-offset"), "0");
    assert_eq!(
        header(head.headers(), "upload-length"),
        csv.len().to_string()
    );
    assert_eq!(header(head.headers(), "cache-control"), "no-store");
    let (status, body) = tus.result(&location).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("upload_incomplete"))
    );

    // A first piece with a checksum, then the rest in uneven pieces without.
    let first = csv[..3_000_000].to_vec();
    let resp = tus
        .patch(&location, 0, first.clone(), Some(checksum(&first)))
        .await;
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    assert_eq!(header(resp.headers(), "upload-offset"), "3000000");
    assert_eq!(
        app.upload_rows().await,
        UploadRows::NONE,
        "nothing recorded before the last byte"
    );
    tus.send_rest(&location, &csv, 5_000_001).await;

    let (status, body) = tus.result(&location).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let file = &body["source_file"];
    assert_eq!(file["file_name"], "big.csv");
    assert_eq!(file["format"], "csv");
    assert_eq!(file["size_bytes"], csv.len());
    assert_eq!(file["sha256"], sha256_hex(&csv));
    assert_eq!(body["task"]["status"], "PENDING");
    assert_eq!(app.upload_rows().await, UploadRows::each(1));
    let blob_name: String = sqlx::query_scalar("SELECT blob_name FROM source_files")
        .fetch_one(&app.db)
        .await
        .unwrap();
    let mut stored = Vec::new();
    app.blobs
        .download_to(&blob_name, &mut stored)
        .await
        .unwrap();
    assert!(stored == csv, "the committed blob is the file");

    let task_id = body["task"]["id"].as_str().unwrap();
    app.run_worker_until_completed(task_id).await;
    let tus_rows = rows_of(&app, file["id"].as_str().unwrap()).await;

    // The same file through a multipart upload (over the test's multipart limit, so raise it).
    let multipart = TestApp::spawn_with(|c| c.max_upload_bytes = 64 * 1024 * 1024).await;
    let multipart_id = multipart.upload_parsed("big.csv", csv.clone()).await;
    let multipart_rows = rows_of(&multipart, &multipart_id).await;
    assert!(tus_rows.len() > 100_000, "{}", tus_rows.len());
    assert!(tus_rows == multipart_rows, "the same rows either way");
}

#[tokio::test]
async fn a_patch_at_another_offset_is_409_and_moves_nothing() {
    let app = TestApp::spawn().await;
    let tus = Tus::new(&app);
    let csv = csv_of(1000);
    let location = tus.create(csv.len() as u64, "a.csv").await;
    let resp = tus.patch(&location, 0, csv[..400].to_vec(), None).await;
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    for wrong in [0, 300, 401, 1000] {
        let resp = tus
            .patch(&location, wrong, csv[400..500].to_vec(), None)
            .await;
        assert_eq!(
            error_code(resp).await,
            (StatusCode::CONFLICT, "offset_mismatch".into())
        );
    }
    assert_eq!(stored_state(&app, &location).await, (400, 1));
    tus.send_rest(&location, &csv, 10_000).await;
    assert_eq!(tus.result(&location).await.0, StatusCode::OK);
}

#[tokio::test]
async fn a_checksum_mismatch_is_460_and_none_of_the_body_counts() {
    let app = TestApp::spawn().await;
    let tus = Tus::new(&app);
    // Over one block, so a block was staged before the mismatch was known.
    let csv = csv_of(5 * 1024 * 1024);
    let location = tus.create(csv.len() as u64, "a.csv").await;
    let resp = tus
        .patch(&location, 0, csv.clone(), Some(checksum(b"other bytes")))
        .await;
    assert_eq!(
        error_code(resp).await,
        (
            StatusCode::from_u16(460).unwrap(),
            "checksum_mismatch".into()
        )
    );
    assert_eq!(tus.offset(&location).await, 0);
    assert_eq!(stored_state(&app, &location).await, (0, 0));
    let resp = tus
        .patch(&location, 0, csv.clone(), Some("md5 AAAA".into()))
        .await;
    assert_eq!(
        error_code(resp).await,
        (
            StatusCode::BAD_REQUEST,
            "unsupported_checksum_algorithm".into()
        )
    );
    let resp = tus
        .patch(&location, 0, csv.clone(), Some(checksum(&csv)))
        .await;
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    let (status, body) = tus.result(&location).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["source_file"]["sha256"], sha256_hex(&csv));
}

#[tokio::test]
async fn more_bytes_than_the_upload_length_are_refused_and_not_kept() {
    let app = TestApp::spawn().await;
    let tus = Tus::new(&app);
    let csv = csv_of(1000);
    let location = tus.create(500, "a.csv").await;
    // Declared by Content-Length: refused before a byte is read.
    let resp = tus.patch(&location, 0, csv.clone(), None).await;
    assert_eq!(
        error_code(resp).await,
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            "upload_length_exceeded".into()
        )
    );
    // Undeclared (chunked): refused when the bytes pass the length.
    let body = reqwest::Body::wrap_stream(futures::stream::iter(
        csv.chunks(100)
            .map(|c| Ok::<_, std::io::Error>(c.to_vec()))
            .collect::<Vec<_>>(),
    ));
    let resp = app
        .client
        .patch(app.url(&location))
        .header(TUS.0, TUS.1)
        .header("Upload-Offset", 0)
        .header("Content-Type", OCTETS)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(
        error_code(resp).await,
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            "upload_length_exceeded".into()
        )
    );
    assert_eq!(tus.offset(&location).await, 0);
    assert_eq!(app.upload_rows().await, UploadRows::NONE);
}

#[tokio::test]
async fn bad_requests_get_tus_statuses_and_json_errors() {
    let app = TestApp::spawn().await;
    let tus = Tus::new(&app);
    let location = tus.create(10, "a.csv").await;

    let resp = app
        .client
        .patch(app.url(&location))
        .header("Upload-Offset", 0)
        .header("Content-Type", OCTETS)
        .body("id\n1\n2\n3\n")
        .send()
        .await
        .unwrap();
    assert_eq!(header(resp.headers(), "tus-version"), "1.0.0");
    assert_eq!(
        error_code(resp).await,
        (
            StatusCode::PRECONDITION_FAILED,
            "tus_version_unsupported".into()
        )
    );
    let resp = app
        .client
        .patch(app.url(&location))
        .header(TUS.0, TUS.1)
        .header("Upload-Offset", 0)
        .header("Content-Type", "text/csv")
        .body("id\n1\n2\n3\n")
        .send()
        .await
        .unwrap();
    assert_eq!(
        error_code(resp).await,
        (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "wrong_content_type".into()
        )
    );
    let resp = tus.create_with(6 << 30, "huge.csv", &[]).await;
    assert_eq!(
        error_code(resp).await,
        (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large".into())
    );
    let resp = tus.create_with(10, "a.csv", &[("template", "nope")]).await;
    assert_eq!(
        error_code(resp).await,
        (StatusCode::UNPROCESSABLE_ENTITY, "unknown_template".into())
    );
    let resp = app
        .client
        .post(app.url("/api/v1/uploads"))
        .header(TUS.0, TUS.1)
        .send()
        .await
        .unwrap();
    assert_eq!(header(resp.headers(), "tus-resumable"), "1.0.0");
    assert_eq!(
        error_code(resp).await,
        (StatusCode::BAD_REQUEST, "invalid_parameter".into())
    );
    let resp = reqwest::Client::new()
        .head(app.url(&location))
        .header(TUS.0, TUS.1)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(header(resp.headers(), "tus-resumable"), "1.0.0");
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM resumable_uploads")
        .fetch_one(&app.db)
        .await
        .unwrap();
    assert_eq!(count, 1, "only the first creation stored an upload");
}

#[tokio::test]
async fn a_file_that_is_no_spreadsheet_is_415_at_its_last_byte_and_nothing_is_kept() {
    let app = TestApp::spawn().await;
    let tus = Tus::new(&app);
    let bytes = b"\x00\x01\x02\x03binary\xff\xfe".repeat(100);
    let location = tus.create(bytes.len() as u64, "a.bin").await;
    let resp = tus.patch(&location, 0, bytes, None).await;
    assert_eq!(
        error_code(resp).await,
        (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_format".into()
        )
    );
    assert_eq!(tus.head(&location).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(app.upload_rows().await, UploadRows::NONE);
    assert!(app
        .blobs
        .list_names_with_uncommitted()
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn another_tenants_key_finds_no_upload() {
    let app = TestApp::spawn().await;
    let tus = Tus::new(&app);
    let csv = csv_of(1000);
    let location = tus.create(csv.len() as u64, "a.csv").await;
    let other = Tus {
        app: &app,
        client: app.client_for("other").await,
    };
    assert_eq!(other.head(&location).await.status(), StatusCode::NOT_FOUND);
    let resp = other.patch(&location, 0, csv.clone(), None).await;
    assert_eq!(
        error_code(resp).await,
        (StatusCode::NOT_FOUND, "not_found".into())
    );
    assert_eq!(other.result(&location).await.0, StatusCode::NOT_FOUND);
    let resp = other
        .client
        .delete(app.url(&location))
        .header(TUS.0, TUS.1)
        .send()
        .await
        .unwrap();
    assert_eq!(
        error_code(resp).await,
        (StatusCode::NOT_FOUND, "not_found".into())
    );
    assert_eq!(tus.offset(&location).await, 0, "still there for its owner");
    tus.send_rest(&location, &csv, 10_000).await;
    assert_eq!(other.result(&location).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn delete_ends_an_upload_and_drops_its_staged_blocks() {
    let app = TestApp::spawn().await;
    let tus = Tus::new(&app);
    let csv = csv_of(1000);
    let location = tus.create(csv.len() as u64, "a.csv").await;
    let resp = tus.patch(&location, 0, csv[..500].to_vec(), None).await;
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        app.blobs.list_names_with_uncommitted().await.unwrap().len(),
        1
    );
    let resp = app
        .client
        .delete(app.url(&location))
        .header(TUS.0, TUS.1)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    assert_eq!(header(resp.headers(), "tus-resumable"), "1.0.0");
    assert_eq!(tus.head(&location).await.status(), StatusCode::NOT_FOUND);
    let resp = tus.patch(&location, 500, csv[500..].to_vec(), None).await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    assert!(app
        .blobs
        .list_names_with_uncommitted()
        .await
        .unwrap()
        .is_empty());
    assert_eq!(app.upload_rows().await, UploadRows::NONE);
}

#[tokio::test]
async fn of_two_patches_from_one_offset_one_counts_and_the_other_is_409() {
    let app = TestApp::spawn().await;
    let tus = Tus::new(&app);
    let csv = csv_of(6 * 1024 * 1024);
    let location = tus.create(csv.len() as u64, "a.csv").await;
    let half = csv[..3 * 1024 * 1024].to_vec();
    let (a, b) = tokio::join!(
        tus.patch(&location, 0, half.clone(), None),
        tus.patch(&location, 0, half.clone(), None)
    );
    let mut statuses = [a.status(), b.status()];
    statuses.sort();
    assert_eq!(statuses, [StatusCode::NO_CONTENT, StatusCode::CONFLICT]);
    assert_eq!(stored_state(&app, &location).await, (half.len() as i64, 1));
    tus.send_rest(&location, &csv, 4 << 20).await;
    let (status, body) = tus.result(&location).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["source_file"]["sha256"], sha256_hex(&csv));
}

#[tokio::test]
async fn an_upload_with_a_template_and_a_key_is_recorded_with_them() {
    let app = TestApp::spawn().await;
    let (status, body) = app
        .put_json(
            "/api/v1/templates/people",
            &serde_json::json!({"schema": {"fields": [{"name": "id", "type": "integer"}]}}),
        )
        .await;
    assert!(status.is_success(), "{body}");
    let tus = Tus::new(&app);
    let csv = csv_of(2000);
    let resp = app
        .client
        .post(app.url("/api/v1/uploads"))
        .header(TUS.0, TUS.1)
        .header("Upload-Length", csv.len())
        .header("Idempotency-Key", "k-1")
        .header(
            "Upload-Metadata",
            client::metadata(&[
                ("filename", "p.csv"),
                ("template", "people"),
                ("on_invalid", "keep_invalid_rows"),
            ]),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    let location = header(resp.headers(), "location");
    tus.send_rest(&location, &csv, 1000).await;
    let (status, body) = tus.result(&location).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (name, policy, key): (Option<String>, Option<String>, Option<String>) =
        sqlx::query_as("SELECT template_name, on_invalid, idempotency_key FROM source_files")
            .fetch_one(&app.db)
            .await
            .unwrap();
    assert_eq!(name.as_deref(), Some("people"));
    assert_eq!(policy.as_deref(), Some("keep_invalid_rows"));
    assert_eq!(key.as_deref(), Some("k-1"));

    // The same key and bytes through a multipart retry: the same file, nothing new.
    let again = app.upload("p.csv", csv.clone(), Some("k-1")).await;
    assert_eq!(again.status(), StatusCode::ACCEPTED);
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["source_file"]["id"], body["source_file"]["id"]);
    assert_eq!(app.upload_rows().await, UploadRows::each(1));
}

#[tokio::test]
async fn a_page_of_an_allowed_origin_may_speak_tus_and_read_its_headers() {
    let origin = "https://app.example";
    let app = TestApp::spawn_with(|c| c.http.cors_allowed_origins = vec![origin.into()]).await;
    let tus = Tus::new(&app);
    let location = tus.create(10, "a.csv").await;
    let preflight = reqwest::Client::new()
        .request(reqwest::Method::OPTIONS, app.url(&location))
        .header("Origin", origin)
        .header("Access-Control-Request-Method", "PATCH")
        .header(
            "Access-Control-Request-Headers",
            "authorization,content-type,tus-resumable,upload-offset,upload-checksum",
        )
        .send()
        .await
        .unwrap();
    assert!(preflight.status().is_success(), "{}", preflight.status());
    let h = preflight.headers();
    assert_eq!(header(h, "access-control-allow-origin"), origin);
    assert!(header(h, "access-control-allow-methods").contains("PATCH"));
    let allowed = header(h, "access-control-allow-headers");
    for name in [
        "authorization",
        "tus-resumable",
        "upload-offset",
        "upload-checksum",
    ] {
        assert!(allowed.contains(name), "{name} in {allowed}");
    }

    let head = app
        .client
        .head(app.url(&location))
        .header(TUS.0, TUS.1)
        .header("Origin", origin)
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), StatusCode::OK);
    assert_eq!(
        header(head.headers(), "access-control-allow-origin"),
        origin
    );
    let exposed = header(head.headers(), "access-control-expose-headers");
    for name in [
        "upload-offset",
        "upload-length",
        "location",
        "tus-resumable",
    ] {
        assert!(exposed.contains(name), "{name} in {exposed}");
    }
    let elsewhere = app
        .client
        .head(app.url(&location))
        .header(TUS.0, TUS.1)
        .header("Origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert!(elsewhere
        .headers()
        .get("access-control-allow-origin")
        .is_none());
}

#[tokio::test]
async fn the_quota_is_checked_with_the_declared_length_and_again_exactly_at_the_last_byte() {
    let app = TestApp::spawn().await;
    let tus = Tus::new(&app);
    let csv = csv_of(2000);
    shared::db::limits::set(&app.db, "default", None, Some(1000))
        .await
        .unwrap();
    let resp = tus.create_with(csv.len() as u64, "a.csv", &[]).await;
    assert_eq!(
        error_code(resp).await,
        (StatusCode::FORBIDDEN, "quota_exceeded".into())
    );

    // Room at creation, none left at the last byte (another upload took it meanwhile).
    shared::db::limits::set(&app.db, "default", None, Some(3000))
        .await
        .unwrap();
    let location = tus.create(csv.len() as u64, "a.csv").await;
    let resp = tus.patch(&location, 0, csv[..1500].to_vec(), None).await;
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    let other = app.upload("other.csv", csv_of(1500), None).await;
    assert_eq!(other.status(), StatusCode::ACCEPTED);
    let resp = tus.patch(&location, 1500, csv[1500..].to_vec(), None).await;
    assert_eq!(
        error_code(resp).await,
        (StatusCode::FORBIDDEN, "quota_exceeded".into())
    );
    assert_eq!(
        app.upload_rows().await,
        UploadRows::each(1),
        "only the other upload"
    );
    assert_eq!(tus.head(&location).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        app.blobs.list_names_with_uncommitted().await.unwrap().len(),
        1
    );
}

#[tokio::test]
async fn a_resumable_upload_carries_its_metadata_and_refuses_a_bad_one_at_creation() {
    let app = TestApp::spawn().await;
    let tus = Tus::new(&app);
    let csv = csv_of(3000);
    let metadata = serde_json::json!({"order": "A-17", "source": "portal"});
    let resp = tus
        .create_with(
            csv.len() as u64,
            "m.csv",
            &[("metadata", &metadata.to_string())],
        )
        .await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    let location = header(resp.headers(), "location");
    tus.send_rest(&location, &csv, 1000).await;
    let (status, body) = tus.result(&location).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["source_file"]["metadata"], metadata);
    let id = body["source_file"]["id"].as_str().expect("id");
    let (_, file) = app.get_json(&format!("/api/v1/files/{id}")).await;
    assert_eq!(file["metadata"], metadata);

    // Refused before a byte is stored: no upload row, no blob.
    let resp = tus.create_with(10, "bad.csv", &[("metadata", "[1]")]).await;
    assert_eq!(
        error_code(resp).await,
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_metadata".into())
    );
    let uploads: i64 = sqlx::query_scalar("SELECT count(*) FROM resumable_uploads")
        .fetch_one(&app.db)
        .await
        .expect("count");
    assert_eq!(uploads, 1, "only the first upload");
}
