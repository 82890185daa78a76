//! Blobs found by listing an Azurite container: each imported once as a file with its
//! `origin` and parsed like an upload; an empty blob, one over the size limit, one that is
//! not a spreadsheet and one outside the prefix each with its outcome; an odd name imported
//! as it is; the same blobs listed pass after pass imported once; an overwritten blob (a new
//! ETag) a new file; a blob whose block list is not committed yet left until it is; blobs there
//! before a source that takes only new ones skipped; a credential that stops working shown in
//! the source's status until a new one is given; and `after_import: delete` leaving the
//! container empty.

use harness::app::TestApp;
use harness::worker::{eventually, eventually_some};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::{blobs, call, create, files, put, settled, worker, worker_config, WAIT};
use crate::destinations::{container, people_template};

const CSV: &[u8] = b"id,name\n1,Ada\n2,Grace\n";
const ODD: &str = "in/Zahlen & Daten ü+%#?.csv";

fn by_name<'a>(rows: &'a [Value], name: &str) -> &'a Value {
    rows.iter()
        .find(|b| b["blob"] == name)
        .unwrap_or_else(|| panic!("no blob {name} in {rows:?}"))
}

#[tokio::test]
async fn dropped_blobs_are_imported_once_each_and_the_rest_say_why_not() {
    let app = TestApp::spawn().await;
    people_template(&app).await;
    let (store, url, cs) = container(&app).await;
    let etag_a = put(&store, "in/a.csv", CSV).await;
    put(&store, ODD, CSV).await;
    put(&store, "in/empty.csv", b"").await;
    put(&store, "in/big.csv", &vec![b'x'; 5000]).await;
    put(
        &store,
        "in/photo.png",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    )
    .await;
    put(&store, "elsewhere/b.csv", CSV).await;
    let source = create(
        &app,
        &url,
        &cs,
        json!({"prefix": "in/", "template": "people", "metadata": {"partner": "acme"}}),
    )
    .await;
    let id = source["id"].as_str().expect("id").to_owned();

    let mut cfg = worker_config(&app);
    cfg.sources.max_blob_bytes = 4096;
    let w = harness::worker::RunningWorker::start(cfg);
    let rows = settled(
        &app,
        &id,
        &[
            "in/a.csv",
            ODD,
            "in/empty.csv",
            "in/big.csv",
            "in/photo.png",
        ],
    )
    .await;
    assert_eq!(rows.len(), 5, "nothing outside the prefix: {rows:?}");
    for (name, outcome) in [
        ("in/empty.csv", "empty_file"),
        ("in/big.csv", "file_too_large"),
        ("in/photo.png", "unsupported_format"),
    ] {
        let row = by_name(&rows, name);
        assert_eq!(
            (&row["status"], &row["outcome"]),
            (&json!("SKIPPED"), &json!(outcome))
        );
        assert!(
            row["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{row}"
        );
    }
    let a = by_name(&rows, "in/a.csv");
    assert_eq!(
        (&a["status"], &a["found_by"], &a["etag"]),
        (&json!("IMPORTED"), &json!("listing"), &json!(etag_a))
    );
    let file_id = a["file_id"].as_str().expect("a file").to_owned();

    // The file is an upload like any other, with its origin, parsed against the template.
    let (status, file) = call(&app, Method::GET, &format!("/api/v1/files/{file_id}"), None).await;
    assert_eq!(status, StatusCode::OK, "{file}");
    assert_eq!(file["file_name"], "a.csv");
    assert_eq!(file["metadata"], json!({"partner": "acme"}));
    assert_eq!(
        file["origin"],
        json!({"source_id": id, "blob": "in/a.csv", "etag": etag_a})
    );
    let task = file["task"]["id"].as_str().expect("task").to_owned();
    let done = eventually_some(WAIT, "the task is COMPLETED", || async {
        let (_, t) = call(&app, Method::GET, &format!("/api/v1/tasks/{task}"), None).await;
        (t["status"] == "COMPLETED").then_some(t)
    })
    .await;
    assert_eq!(done["result"]["rows_total"], 2, "{done}");
    let odd = by_name(&rows, ODD);
    let (_, odd_file) = call(
        &app,
        Method::GET,
        &format!(
            "/api/v1/files/{}",
            odd["file_id"].as_str().expect("odd file")
        ),
        None,
    )
    .await;
    assert_eq!(odd_file["origin"]["blob"], ODD);
    assert_eq!(odd_file["file_name"], "Zahlen & Daten ü+%#?.csv");

    // Pass after pass: nothing more.
    eventually(WAIT, "three more listing passes", || async {
        let (_, s) = call(&app, Method::GET, &format!("/api/v1/sources/{id}"), None).await;
        s["status"]["passes"].as_i64() >= Some(4)
    })
    .await;
    assert_eq!(files(&app).await.len(), 2);

    // Overwritten: a new version is a new file, the old one's row pruned once unseen.
    let etag_a2 = put(&store, "in/a.csv", b"id,name\n3,Edsger\n").await;
    assert_ne!(etag_a, etag_a2);
    eventually(WAIT, "the new version imported", || async {
        blobs(&app, &id)
            .await
            .iter()
            .any(|b| b["etag"] == etag_a2.as_str() && b["status"] == "IMPORTED")
    })
    .await;
    assert_eq!(files(&app).await.len(), 3);
    let (_, s) = call(&app, Method::GET, &format!("/api/v1/sources/{id}"), None).await;
    assert_eq!(s["status"]["error"], Value::Null, "{s}");
    w.stop().await;
}

#[tokio::test]
async fn a_source_for_new_blobs_skips_those_already_there_and_deletes_what_it_imported() {
    let app = TestApp::spawn().await;
    let (store, url, cs) = container(&app).await;
    put(&store, "old-1.csv", CSV).await;
    put(&store, "old-2.csv", CSV).await;
    let source = create(
        &app,
        &url,
        &cs,
        json!({"import_existing": false, "after_import": "delete"}),
    )
    .await;
    let id = source["id"].as_str().expect("id").to_owned();
    let w = worker(&app);
    let rows = settled(&app, &id, &["old-1.csv", "old-2.csv"]).await;
    assert!(rows.iter().all(|b| b["outcome"] == "existing"), "{rows:?}");
    put(&store, "new.csv", CSV).await;
    let rows = settled(&app, &id, &["new.csv"]).await;
    assert_eq!(by_name(&rows, "new.csv")["status"], "IMPORTED");
    assert_eq!(files(&app).await.len(), 1);
    eventually(
        WAIT,
        "the imported blob deleted from the container",
        || async {
            let mut names = store.list_names().await.expect("list");
            names.sort();
            names == ["old-1.csv", "old-2.csv"]
        },
    )
    .await;
    w.stop().await;
}

/// 64 imports in flight and one pooled connection for all the work: an import that finds every
/// connection taken waits a moment and is tried again, without counting as a failure (a failed
/// import would wait `SOURCE_RETRY_AFTER`, here far longer than the test waits; without the
/// deferral this test fails), and the lister records its pages through the same squeeze.
#[tokio::test]
async fn imports_beyond_the_pool_wait_for_a_connection_and_none_fails_for_it() {
    let app = TestApp::spawn().await;
    let (store, url, cs) = container(&app).await;
    let names: Vec<String> = (0..64).map(|i| format!("n/{i:02}.csv")).collect();
    for name in &names {
        put(&store, name, CSV).await;
    }
    let source = create(&app, &url, &cs, json!({})).await;
    let id = source["id"].as_str().expect("id").to_owned();
    let mut cfg = worker_config(&app);
    // Each claim loop holds one connection to listen on (five of them): one for the work.
    cfg.database.max_connections = 6;
    cfg.database.acquire_timeout = std::time::Duration::from_millis(5);
    cfg.sources.max_in_flight = 64;
    cfg.sources.concurrency = 64;
    cfg.sources.retry_after = std::time::Duration::from_secs(3600);
    let w = harness::worker::RunningWorker::start(cfg);
    let wanted: Vec<&str> = names.iter().map(String::as_str).collect();
    let rows = settled(&app, &id, &wanted).await;
    for row in &rows {
        assert_eq!(
            (&row["status"], &row["error"]),
            (&json!("IMPORTED"), &Value::Null),
            "{row}"
        );
    }
    assert_eq!(files(&app).await.len(), names.len());
    w.stop().await;
}

#[tokio::test]
async fn a_credential_that_stops_working_is_shown_until_a_new_one_is_given() {
    let app = TestApp::spawn().await;
    let (store, url, cs) = container(&app).await;
    put(&store, "a.csv", CSV).await;
    // A SAS Azurite refuses (its signature is not the account's).
    let source = create(
        &app,
        &url,
        &cs,
        json!({"credential": {"sas": "sv=2024-08-04&ss=b&srt=sco&sp=rl&se=2030-01-01T00:00:00Z&sig=AAAA"}}),
    )
    .await;
    let id = source["id"].as_str().expect("id").to_owned();
    let w = worker(&app);
    let failing = eventually_some(WAIT, "the source shows its error", || async {
        let (_, s) = call(&app, Method::GET, &format!("/api/v1/sources/{id}"), None).await;
        (s["status"]["error"] != Value::Null).then_some(s)
    })
    .await;
    assert_eq!(
        failing["status"]["error"]["code"], "source_unreachable",
        "{failing}"
    );
    assert!(files(&app).await.is_empty());

    let (status, body) = call(
        &app,
        Method::PATCH,
        &format!("/api/v1/sources/{id}"),
        Some(json!({"credential": {"connection_string": cs}})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    settled(&app, &id, &["a.csv"]).await;
    eventually(
        WAIT,
        "the error cleared by a listing that worked",
        || async {
            let (_, s) = call(&app, Method::GET, &format!("/api/v1/sources/{id}"), None).await;
            s["status"]["error"] == Value::Null && s["status"]["imported"] == 1
        },
    )
    .await;
    assert_eq!(files(&app).await.len(), 1);
    w.stop().await;
}

#[tokio::test]
async fn a_missing_container_is_the_sources_error_and_the_worker_goes_on() {
    let app = TestApp::spawn().await;
    let (_, url, cs) = container(&app).await;
    // A container that does not exist (or was deleted) in the same account.
    let gone = format!("{}-gone", url);
    let source = create(&app, &gone, &cs, json!({})).await;
    let id = source["id"].as_str().expect("id").to_owned();
    let w = worker(&app);
    eventually(WAIT, "the source shows its error", || async {
        let (_, s) = call(&app, Method::GET, &format!("/api/v1/sources/{id}"), None).await;
        s["status"]["error"]["code"] == "source_unreachable"
    })
    .await;
    // Uploads are parsed meanwhile: one tenant's broken source stops no one.
    let file = app.upload_parsed("up.csv", CSV.to_vec()).await;
    assert!(!file.is_empty());
    assert!(w.is_running());
    w.stop().await;
}

#[tokio::test]
async fn a_blob_still_being_written_is_imported_once_its_block_list_is_committed() {
    let app = TestApp::spawn().await;
    let (store, url, cs) = container(&app).await;
    // An upload in progress: its blocks staged, its block list not committed yet.
    store
        .stage_block("partial.csv", b"block-0", bytes::Bytes::from_static(CSV))
        .await
        .expect("stage a block");
    put(&store, "marker.csv", CSV).await;
    let source = create(&app, &url, &cs, json!({})).await;
    let id = source["id"].as_str().expect("id").to_owned();
    let w = worker(&app);
    settled(&app, &id, &["marker.csv"]).await;
    eventually(WAIT, "two more listing passes", || async {
        let (_, s) = call(&app, Method::GET, &format!("/api/v1/sources/{id}"), None).await;
        s["status"]["passes"].as_i64() >= Some(3)
    })
    .await;
    assert!(
        blobs(&app, &id)
            .await
            .iter()
            .all(|b| b["blob"] != "partial.csv"),
        "an uncommitted blob is not found"
    );
    store
        .commit_blocks("partial.csv", vec![b"block-0".to_vec()], "text/csv")
        .await
        .expect("commit the block list");
    let rows = settled(&app, &id, &["partial.csv"]).await;
    assert_eq!(by_name(&rows, "partial.csv")["status"], "IMPORTED");
    assert_eq!(files(&app).await.len(), 2);
    w.stop().await;
}
