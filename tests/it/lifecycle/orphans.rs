//! The orphan-blob sweep: a blob no file names is deleted once older than the grace, a younger
//! one is kept (an upload in flight), and a file's blob is never touched.

use std::time::Duration;

use bytes::Bytes;
use harness::app::TestApp;
use worker::maintenance::orphans::{self, Swept};

use super::{blob_of, id_of, unparsed_file};

#[tokio::test]
async fn the_sweep_deletes_an_old_orphan_and_keeps_young_ones_and_every_files_blob() {
    let app = TestApp::spawn().await;
    let mut kept = Vec::new();
    for name in ["a.csv", "b.csv", "c.csv"] {
        let file = id_of(&unparsed_file(&app, &app.client, name).await);
        kept.push(blob_of(&app, file).await);
    }
    // What an upload whose transaction failed after its blob was written leaves behind.
    let orphan = "2026/11/26/0190b6a0-0000-7000-8000-000000000000";
    let body = futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(b"a\n1\n"))]);
    app.blobs
        .upload(orphan, "text/csv", body)
        .await
        .expect("write the orphan");
    let grace = Duration::from_secs(24 * 3600);

    // Today it is younger than the grace: an upload that may still commit its rows. Pages of
    // two names: the listing is followed through its markers.
    let now = chrono::Utc::now();
    let swept = orphans::sweep(&app.db, &app.blobs, grace, now, 2)
        .await
        .expect("sweep");
    assert_eq!(
        swept,
        Swept {
            listed: 4,
            deleted: 0
        }
    );

    // A day and an hour later it is an orphan; the files' blobs are as old and stay.
    let later = now + chrono::Duration::hours(25);
    let swept = orphans::sweep(&app.db, &app.blobs, grace, later, 2)
        .await
        .expect("sweep");
    assert_eq!(
        swept,
        Swept {
            listed: 4,
            deleted: 1
        }
    );
    let mut left = app.blob_names().await;
    left.sort();
    kept.sort();
    assert_eq!(left, kept);
}
