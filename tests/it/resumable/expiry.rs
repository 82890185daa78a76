//! Expiration: an unfinished upload past its `Upload-Expires` is refused with `410`, and the
//! worker's maintenance deletes it with its staged blocks; a finished upload's row goes too once
//! its time is up, while its file and blob stay.

use harness::app::{TestApp, UploadRows};
use reqwest::StatusCode;

use super::client::{csv_of, error_code, Tus};

async fn expire_all(app: &TestApp) {
    sqlx::query("UPDATE resumable_uploads SET expires_at = now() - interval '1 second'")
        .execute(&app.db)
        .await
        .expect("expire the uploads");
}

#[tokio::test]
async fn an_expired_upload_is_refused_and_the_worker_deletes_it_with_its_blocks() {
    let app = TestApp::spawn().await;
    let tus = Tus::new(&app);
    let csv = csv_of(1000);
    let location = tus.create(csv.len() as u64, "a.csv").await;
    let resp = tus.patch(&location, 0, csv[..600].to_vec(), None).await;
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    expire_all(&app).await;

    assert_eq!(tus.head(&location).await.status(), StatusCode::GONE);
    let resp = tus.patch(&location, 600, csv[600..].to_vec(), None).await;
    assert_eq!(
        error_code(resp).await,
        (StatusCode::GONE, "upload_expired".into())
    );
    assert_eq!(tus.result(&location).await.0, StatusCode::GONE);
    assert_eq!(
        app.blobs.list_names_with_uncommitted().await.unwrap().len(),
        1,
        "the staged block is there until the worker comes"
    );

    let deleted = worker::maintenance::resumable_expiry::purge_expired(&app.db, &app.blobs)
        .await
        .unwrap();
    assert_eq!(deleted, 1);
    assert_eq!(tus.head(&location).await.status(), StatusCode::NOT_FOUND);
    assert!(app
        .blobs
        .list_names_with_uncommitted()
        .await
        .unwrap()
        .is_empty());
    assert_eq!(app.upload_rows().await, UploadRows::NONE);
}

#[tokio::test]
async fn a_finished_upload_is_pruned_at_its_expiry_and_its_file_stays() {
    let app = TestApp::spawn().await;
    let tus = Tus::new(&app);
    let csv = csv_of(1000);
    let location = tus.create(csv.len() as u64, "a.csv").await;
    tus.send_rest(&location, &csv, 1000).await;
    assert_eq!(tus.result(&location).await.0, StatusCode::OK);
    let fresh = worker::maintenance::resumable_expiry::purge_expired(&app.db, &app.blobs)
        .await
        .unwrap();
    assert_eq!(fresh, 0, "nothing is due yet");
    expire_all(&app).await;
    let deleted = worker::maintenance::resumable_expiry::purge_expired(&app.db, &app.blobs)
        .await
        .unwrap();
    assert_eq!(deleted, 1);
    assert_eq!(tus.result(&location).await.0, StatusCode::NOT_FOUND);
    assert_eq!(app.upload_rows().await, UploadRows::each(1));
    assert_eq!(app.blob_names().await.len(), 1, "the file's blob stays");
}
