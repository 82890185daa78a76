//! Retention: files older than their tenant's retention go with everything that hangs on them,
//! without a `file.deleted` event; young files, other tenants' files and files still being
//! parsed stay.

use harness::app::TestApp;
use reqwest::StatusCode;
use worker::maintenance::{retention, LifecycleConfig, Pace, Progress};

use super::{age, api, blob_of, id_of, parse_all, remains_of, show, templated_file, unparsed_file};

async fn run_retention(app: &TestApp, batch: i64) -> u64 {
    let mut pace = Pace::new(batch);
    let (removed, progress) =
        retention::run_once(&app.db, &app.blobs, &LifecycleConfig::default(), &mut pace)
            .await
            .expect("retention runs");
    assert_eq!(progress, Progress::Done);
    removed
}

#[tokio::test]
async fn retention_deletes_old_files_with_everything_and_announces_nothing() {
    let app = TestApp::spawn().await;
    let neighbour = app.client_for("neighbour").await;
    let old = templated_file(&app, &app.client).await;
    let young = templated_file(&app, &app.client).await;
    let theirs = templated_file(&app, &neighbour).await;
    parse_all(&app).await;
    for file in [old, theirs] {
        age(&app, file, 40).await;
    }
    let before = remains_of(&app, old).await;
    for table in [
        "parsed_row_chunks",
        "validation_errors",
        "rejected_rows",
        "events",
    ] {
        assert!(
            before.iter().any(|(t, _)| *t == table),
            "{table}: {before:?}"
        );
    }
    let old_blob = blob_of(&app, old).await;
    let stored_before = show(&app, "default")["stored_bytes"]
        .as_i64()
        .expect("bytes");
    // Two files of 600 rows each (invalid ones kept), and what they take in the row store.
    let usage_before = show(&app, "default");
    assert_eq!(usage_before["row_store_rows"], 1200);
    let row_bytes_before = usage_before["row_store_bytes"].as_i64().expect("bytes");
    assert!(row_bytes_before > 0);

    let (ok, _, err) = api(&app, &["tenants", "set", "default", "--retention", "30d"]);
    assert!(ok, "{err}");
    assert_eq!(show(&app, "default")["retention"], "30d");
    // Small batches: the file's 3 chunks, 60 error records and 60 rejected rows take many
    // statements.
    assert_eq!(run_retention(&app, 7).await, 1);

    assert_eq!(remains_of(&app, old).await, vec![]);
    let blobs = app.blob_names().await;
    assert!(!blobs.contains(&old_blob), "{blobs:?}");
    assert_eq!(blobs.len(), 2, "the young file's and the neighbour's");
    // The neighbour keeps files for ever (no RETENTION), the young file is 0 days old.
    for file in [young, theirs] {
        assert!(remains_of(&app, file).await.len() >= 6, "{file}");
    }
    let announced: i64 =
        sqlx::query_scalar("SELECT count(*) FROM events WHERE type = 'file.deleted'")
            .fetch_one(&app.db)
            .await
            .expect("count");
    assert_eq!(announced, 0, "retention writes no file.deleted event");
    let (status, _) = app.get_json(&format!("/api/v1/files/{old}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let stored_after = show(&app, "default")["stored_bytes"]
        .as_i64()
        .expect("bytes");
    // The counter holds the tenant's template too, which stays.
    let template_bytes: i64 = sqlx::query_scalar(
        "SELECT coalesce(sum(template_bytes(schema)), 0)::bigint FROM templates \
         WHERE tenant_id = 'default'",
    )
    .fetch_one(&app.db)
    .await
    .expect("template bytes");
    assert_eq!(
        (stored_after - template_bytes) * 2,
        stored_before - template_bytes,
        "the quota counter gave the file's bytes back"
    );
    let usage_after = show(&app, "default");
    assert_eq!(
        usage_after["row_store_rows"], 600,
        "the old file's rows went"
    );
    assert_eq!(
        usage_after["row_store_bytes"].as_i64().expect("bytes") * 2,
        row_bytes_before,
        "and its bytes (the two files are alike)"
    );
    // Nothing more to do on the next run.
    assert_eq!(run_retention(&app, 7).await, 0);
}

#[tokio::test]
async fn a_file_still_being_parsed_is_kept_until_its_task_is_final() {
    let app = TestApp::spawn().await;
    let upload = unparsed_file(&app, &app.client, "pending.csv").await;
    let file = id_of(&upload);
    age(&app, file, 40).await;
    // The retention changes while the file waits to be parsed, then while it is parsed.
    let (ok, _, err) = api(&app, &["tenants", "set", "default", "--retention", "1d"]);
    assert!(ok, "{err}");
    assert_eq!(run_retention(&app, 100).await, 0, "PENDING: kept");
    sqlx::query(
        "UPDATE tasks SET status = 'RUNNING', attempts = 1, started_at = now(),
                lease_expires_at = now() + interval '1 hour'
         WHERE source_file_id = $1",
    )
    .bind(file)
    .execute(&app.db)
    .await
    .expect("a consumer holds the task");
    assert_eq!(run_retention(&app, 100).await, 0, "RUNNING: kept");
    let (status, _) = app.get_json(&format!("/api/v1/files/{file}")).await;
    assert_eq!(status, StatusCode::OK);

    // The consumer's attempt ends (its lease runs out and the task is parsed again). The file
    // is young while a real worker parses it, so that worker's own retention job leaves it to
    // the run below.
    sqlx::query(
        "UPDATE tasks SET lease_expires_at = now() - interval '1 second' WHERE source_file_id = $1",
    )
    .bind(file)
    .execute(&app.db)
    .await
    .expect("the lease runs out");
    age(&app, file, 0).await;
    parse_all(&app).await;
    age(&app, file, 40).await;
    assert_eq!(run_retention(&app, 100).await, 1, "final: deleted");
    assert_eq!(remains_of(&app, file).await, vec![]);
    assert_eq!(app.blob_names().await, Vec::<String>::new());
}
