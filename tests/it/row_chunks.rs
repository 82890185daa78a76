//! Rows are stored in chunks; keyset pages cut across them. Written and read through the same
//! functions the worker and the api use, on a real Postgres.

use harness::worker::WorkerEnv;
use serde_json::json;
use shared::db::rows::{self, CopyRows};

/// Sheet 0 gets 600 rows (chunks of 256, 256 and 88 rows), sheet 1 gets 3; row `i` is `[i]`.
async fn store(env: &WorkerEnv) -> uuid::Uuid {
    let upload = env.create_upload("wide.csv", b"n\n1\n").await;
    let mut copy_rows = CopyRows::new(upload.source_file_id);
    let mut buf = Vec::new();
    copy_rows.begin(&mut buf);
    for (sheet, n) in [(0, 600), (1, 3)] {
        for i in 0..n {
            copy_rows.push(&mut buf, sheet, i, &format!("[{i}]"));
        }
    }
    copy_rows.end(&mut buf);
    let mut conn = env.db.acquire().await.expect("connection");
    let mut copy = rows::copy_in(&mut conn).await.expect("COPY starts");
    copy.send(buf).await.expect("COPY data");
    copy.finish().await.expect("COPY ends");
    upload.source_file_id
}

#[tokio::test]
async fn keyset_pages_cut_across_row_chunks() {
    let env = WorkerEnv::new().await;
    let file = store(&env).await;
    let chunks: Vec<(i64, i32)> = sqlx::query_as(
        "SELECT first_row, row_count FROM parsed_row_chunks
         WHERE source_file_id = $1 AND sheet_index = 0 ORDER BY first_row",
    )
    .bind(file)
    .fetch_all(&env.db)
    .await
    .expect("chunks");
    assert_eq!(chunks, [(0, 256), (256, 256), (512, 88)]);

    let page = |sheet, after, limit| {
        let db = env.db.clone();
        async move {
            rows::page(&db, file, sheet, after, limit)
                .await
                .expect("page")
                .into_iter()
                .map(|r| {
                    assert_eq!(r.values, json!([r.row_index]), "row {}", r.row_index);
                    r.row_index
                })
                .collect::<Vec<i64>>()
        }
    };
    assert_eq!(page(0, None, 3).await, [0, 1, 2]);
    // Inside one chunk, across one boundary, across two, and the sheet's end.
    assert_eq!(page(0, Some(9), 3).await, [10, 11, 12]);
    assert_eq!(page(0, Some(253), 5).await, [254, 255, 256, 257, 258]);
    let long = page(0, Some(254), 300).await;
    assert_eq!(long, (255..555).collect::<Vec<_>>());
    assert_eq!(page(0, Some(597), 10).await, [598, 599]);
    assert!(page(0, Some(599), 10).await.is_empty());
    assert_eq!(page(0, None, 1000).await.len(), 600);
    // The other sheet's rows stay apart.
    assert_eq!(page(1, None, 10).await, [0, 1, 2]);
    assert!(page(2, None, 10).await.is_empty());
}
